"""Wall time of the whole notebook collection under nbval, with torch.compile's caches cold.

    python -m benchmarks.nbval_cold                  # every notebook, empty compile caches
    python -m benchmarks.nbval_cold 00 02            # only the notebooks whose names start with 00, 02
    python -m benchmarks.nbval_cold --warm           # the same over the usual cache directories
    python -m benchmarks.nbval_cold --each           # each notebook alone, from its own empty caches
    python -m benchmarks.nbval_cold -- -x            # anything after -- goes to pytest as is

Runs, in one subprocess (the honest "whole collection" figure: one pytest, one kernel per notebook,
as ``./lab test`` and CI run it):

    python -m pytest <notebooks> --nbval-lax --nbval-current-env --nbval-sanitize-with tests/sanitize.cfg
           -p no:cacheprovider -q --junitxml=<a temporary file>

Cold: ``TORCHINDUCTOR_CACHE_DIR`` (Inductor's FX-graph, AOTAutograd and compiled C++/Python
kernels), ``TRITON_CACHE_DIR`` and ``TORCH_EXTENSIONS_DIR`` point into a fresh empty temporary
directory, removed afterwards; a learner's very first session on a new machine. labkit's own
policy (declarations fingerprinted into the cache key) is left as it is. Not made cold: the
operating system's file cache and Python's bytecode caches (importing torch is still fast the
second time). ``--warm`` leaves the environment alone: torch's usual cache directory, as filled
by earlier runs (run it twice for a warm figure).

Prints the wall time and pytest's summary line, then the time per notebook (the sum of its cells'
times in pytest's JUnit XML report: setup, call and teardown; the first cell's setup includes
starting the kernel).
Targets (issue 16), on a 2-core CPU: the whole collection at most 5 minutes; with --each, every notebook
alone — a learner's Restart & Run All on a new machine, kernel start and warm-up included — at most 45 s
(issue 22; the cross-process cache demo of 04 included). Exits with pytest's status.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

if __package__ != "benchmarks":  # run as a script: the lab's folder, and so tools/, is not on sys.path
    raise SystemExit(f"Run it from the lab's folder as a module: python -m benchmarks.{Path(__file__).stem}")
from tools.repo import ROOT

NOTEBOOKS = ROOT / "notebooks"
TARGET_S = 300                      # the whole collection
EACH_TARGET_S = 45                  # one notebook alone


def select(names: list[str]) -> list[str]:
    if not names:
        return ["notebooks/"]
    every = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    chosen = [p for p in every if any(p.name.startswith(n) or p.stem == n for n in names)]
    if not chosen:
        sys.exit(f"no notebook matches {names}; there are {[p.name for p in every]}")
    return [str(p.relative_to(ROOT)) for p in chosen]


def cold_env(root: str) -> dict[str, str]:
    """The environment with every torch.compile cache directory fresh and empty."""
    dirs = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton", "TORCH_EXTENSIONS_DIR": "extensions"}
    env = dict(os.environ)
    for variable, name in dirs.items():
        env[variable] = os.path.join(root, name)
        os.makedirs(env[variable])
    return env


def run(targets: list[str], env: dict[str, str] | None, extra: list[str], report: Path) -> tuple[float, int, str]:
    command = [sys.executable, "-m", "pytest", *targets, "--nbval-lax", "--nbval-current-env",
               "--nbval-sanitize-with", "tests/sanitize.cfg", "-p", "no:cacheprovider", "-q",
               f"--junitxml={report}", *extra]
    print("$ " + " ".join(command[1:]), flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode, done.stdout + done.stderr


def summary_line(output: str) -> str:
    """pytest's last "N passed / failed" line."""
    return next((line.strip() for line in reversed(output.splitlines())
                 if re.search(r"\d+ (passed|failed|error)", line)), "(no pytest summary line)")


def per_notebook(report: Path) -> dict[str, tuple[int, float]]:
    """Notebook -> (cells, seconds), from pytest's JUnit XML report (classname "notebooks.NN_name.ipynb")."""
    cells: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    if not report.exists():
        return {}
    for case in ElementTree.parse(report).iter("testcase"):
        classname = case.get("classname", "")
        if classname.endswith(".ipynb"):
            notebook = classname.removesuffix(".ipynb").rsplit(".", 1)[-1]
            cells[notebook] += 1
            seconds[notebook] += float(case.get("time", 0))
    return {nb: (cells[nb], seconds[nb]) for nb in sorted(seconds)}


def each_alone(targets: list[str], extra: list[str]) -> int:
    """Run every notebook in its own pytest over its own empty caches; print wall time against its target."""
    worst = 0
    print(f"{'notebook':<34} {'wall s':>7} {'target s':>8}  pytest")
    if targets == ["notebooks/"]:                               # every notebook, one by one
        targets = select([p.name[:2] for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))])
    for target in targets:
        root = tempfile.mkdtemp(prefix="nbval-cold-")
        try:
            wall, status, output = run([target], cold_env(root), extra, Path(root) / "report.xml")
        finally:
            shutil.rmtree(root, ignore_errors=True)
        name = Path(target).stem
        limit = EACH_TARGET_S
        summary = summary_line(output)
        print(f"{name:<34} {wall:>7.1f} {limit:>8}  {summary}{'   !! over' if wall > limit else ''}", flush=True)
        worst = max(worst, status)
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook name prefixes (00, 02_mutates...); all by default")
    parser.add_argument("--warm", action="store_true", help="use the usual cache directories, not empty ones")
    parser.add_argument("--log", help="also write pytest's whole output to this file")
    parser.add_argument("--each", action="store_true", help="each notebook alone, each from empty caches")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]

    targets = select(args.notebooks)
    if args.each:
        if args.warm or args.log:
            parser.error("--each always runs cold and prints its own table: leave out --warm and --log")
        return each_alone(targets, extra)
    root = tempfile.mkdtemp(prefix="nbval-cold-")
    report = Path(root) / "report.xml"
    try:
        env = None if args.warm else cold_env(root)
        wall, status, output = run(targets, env, extra, report)
        rows = per_notebook(report)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.log:
        Path(args.log).write_text(output)

    summary = summary_line(output)
    if status:
        print(output[-6000:])
    print(f"\n{'caches':<10} {'notebooks':<40} {'wall s':>7} {'target s':>8}  pytest")
    which = ", ".join(Path(t).stem[:2] if t.endswith(".ipynb") else "all" for t in targets)
    target = TARGET_S if targets == ["notebooks/"] else "-"      # the whole collection's target
    print(f"{'warm' if args.warm else 'cold':<10} {which:<40} {wall:>7.1f} {target:>8}  {summary}")
    if rows:
        print(f"\n{'notebook':<34} {'cells':>5} {'seconds':>8}")
        for notebook, (cells, seconds) in rows.items():
            print(f"{notebook:<34} {cells:>5} {seconds:>8.1f}")
        print(f"{'sum of cells (rest: pytest start-up, collection)':<40} {sum(s for _, s in rows.values()):>8.1f}")
    if targets == ["notebooks/"] and wall > TARGET_S:   # the target is for the whole collection
        print(f"!! {wall:.0f} s is over the {TARGET_S} s target")
    return status


if __name__ == "__main__":
    sys.exit(main())
