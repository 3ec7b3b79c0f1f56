"""What the lab's GPU runs showed: one summary per run of tools/gpu_check.sh, and the tables made from them.

    python tools/gpu_runs.py take /path/to/out     # after bash tools/gpu_check.sh: take its evidence in
    python tools/gpu_runs.py summarize /path/out   # (gpu_check.sh runs this) write out/gpu-run.json
    python tools/gpu_runs.py table                 # the table of which notebooks ran on a GPU, and when
    python tools/gpu_runs.py room                  # the same evidence as INSTRUCTORS.md's GPU-room note

``take`` copies the run's recordings into labkit/gpu_recordings/, its summary and log into docs/gpu-runs/,
rewrites the generated facts (docs/maintaining.md's table, INSTRUCTORS.md's GPU-room note) and rebuilds the
notebooks with GPU cells on this machine's torch, so that their labels read "recorded from this code". A
summary keeps, per notebook, how many of its cells passed or failed under nbval-lax with CUDA, and a digest of
its source then: the table says "changed since" once the source differs. Nothing here needs a GPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import sys

import nbformat

from repo import ROOT, commit

RUNS = ROOT / "docs" / "gpu-runs"
SOURCES = ROOT / "lessons"
CELL_LINE = re.compile(r"\b(PASSED|FAILED|ERROR)\s+notebooks/(\d\d_\w+)(?:\.ipynb)?::ipynb::Cell (\d+)")
STEP_LINE = re.compile(r"^=== (\S+): rc (\d+), (\d+) s$", re.M)


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cell_verdicts(log: str) -> dict[str, dict[int, str]]:
    """{notebook: {cell number: PASSED/FAILED/ERROR}} from nbval's verbose lines (the last verdict wins)."""
    found: dict[str, dict[int, str]] = {}
    for verdict, notebook, cell in CELL_LINE.findall(log):
        found.setdefault(notebook, {})[int(cell)] = verdict
    return found


def nbval_items(notebook: pathlib.Path) -> int:
    """How many items nbval makes of a notebook: one per code cell."""
    return sum(cell.cell_type == "code" for cell in nbformat.read(notebook, as_version=4).cells)


def summary(out: pathlib.Path, environment: dict, sources: dict[str, str], items: dict[str, int]) -> dict:
    """A run's summary from its output folder (gpu_check.sh's log and nbval's cell verdicts)."""
    log = (out / "gpu_check.log").read_text()
    verdicts = cell_verdicts((out / "nbval_cells.log").read_text() if (out / "nbval_cells.log").exists() else "")
    notebooks = {}
    for stem, text in sorted(sources.items()):
        cells = verdicts.get(stem, {})
        notebooks[stem] = {"cells": items[stem], "passed": sum(v == "PASSED" for v in cells.values()),
                           "failed": sum(v != "PASSED" for v in cells.values()), "source": source_digest(text)}
    steps = {name: {"rc": int(rc), "seconds": int(s)} for name, rc, s in STEP_LINE.findall(log)}
    return {**environment, "steps": steps,
            "recorded": sorted(p.stem for p in (out / "recordings").glob("*.json")), "notebooks": notebooks}


def summarize(out: pathlib.Path) -> pathlib.Path:
    """Write out/gpu-run.json for the checkout this runs in (gpu_check.sh calls it at the end)."""
    import torch

    triton = None
    try:
        import triton
        triton = triton.__version__
    except ImportError:
        pass
    environment = {"date": __import__("datetime").date.today().isoformat(),
                   "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                   "torch": torch.__version__, "triton": triton, "commit": commit()}
    sources = {p.stem: p.read_text() for p in sorted(SOURCES.glob("[0-9][0-9]_*.py"))}
    items = {stem: nbval_items(ROOT / "notebooks" / f"{stem}.ipynb") for stem in sources}
    target = out / "gpu-run.json"
    target.write_text(json.dumps(summary(out, environment, sources, items), indent=1) + "\n")
    return target


def runs(folder: pathlib.Path = RUNS) -> list[dict]:
    """Every kept summary, oldest first."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def result(entry: dict) -> str:
    if entry["failed"]:
        return f"{entry['failed']} of {entry['cells']} cells failed"
    if entry["passed"] == entry["cells"]:
        return f"every cell passed ({entry['cells']})"
    if entry["passed"]:
        return f"the first {entry['passed']} of {entry['cells']} cells passed, then the run's time ran out"
    return "not reached"


def table(root: pathlib.Path = ROOT) -> list[str]:
    """Per notebook: its latest GPU run (date, device, torch), the result, and whether its code changed since."""
    kept = runs(root / "docs" / "gpu-runs")
    lines = ["| Notebook | Last run on a GPU | Result there | Its code since |", "|---|---|---|---|"]
    for source in sorted((root / "lessons").glob("[0-9][0-9]_*.py")):
        last = next((run for run in reversed(kept) if run["notebooks"].get(source.stem, {}).get("passed")
                     or run["notebooks"].get(source.stem, {}).get("failed")), None)
        if last is None:
            lines.append(f"| {source.stem[:2]} | never | — | — |")
            continue
        entry = last["notebooks"][source.stem]
        since = "the same" if entry["source"] == source_digest(source.read_text()) else "changed"
        lines.append(f"| {source.stem[:2]} | {last['date']}, {last['device']}, torch {last['torch']} | "
                     f"{result(entry)} | {since} |")
    return lines


def has_gpu_cells(source_text: str) -> bool:
    """Whether a notebook source has a GPU cell: a code cell whose first line is ``# GPU cell: <title>``
    (labkit/recordings.py's rule, read here without importing labkit)."""
    return re.search(r"(?m)^# %%[^\n]*\n# GPU cell:", source_text) is not None


def numbers_with_gpu_cells(root: pathlib.Path = ROOT) -> list[str]:
    """The numbers of the notebooks whose sources have a GPU cell, in order: the GPU-room note names them, and
    ``take`` rebuilds them."""
    sources = sorted((root / "lessons").glob("[0-9][0-9]_*.py"))
    return [source.stem[:2] for source in sources if has_gpu_cells(source.read_text())]


def room(root: pathlib.Path = ROOT) -> list[str]:
    """INSTRUCTORS.md's GPU-room note: the notebooks with GPU cells, then per device and torch of the latest
    run of each notebook, which ran whole, which stopped where, which never ran, and which changed since."""
    kept = runs(root / "docs" / "gpu-runs")
    sources = sorted((root / "lessons").glob("[0-9][0-9]_*.py"))
    with_gpu = numbers_with_gpu_cells(root)
    lines = ["- Notebooks with GPU cells (they run on a GPU; on a CPU each shows a GPU's recording, labelled, or says "
             f"that none exists): {', '.join(with_gpu) or 'none'}."]
    groups: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    never, changed = [], []
    for source in sources:
        number = source.stem[:2]
        last = next((run for run in reversed(kept) if run["notebooks"].get(source.stem, {}).get("passed")
                     or run["notebooks"].get(source.stem, {}).get("failed")), None)
        if last is None:
            never.append(number)
            continue
        entry = last["notebooks"][source.stem]
        group = groups.setdefault((last["device"], last["torch"], last["date"]), {"whole": [], "other": []})
        if entry["passed"] == entry["cells"] and not entry["failed"]:
            group["whole"].append(number)
        else:
            group["other"].append(f"{number}: {result(entry)}")
        if entry["source"] != source_digest(source.read_text()):
            changed.append(number)
    for (device, torch, date), group in groups.items():
        parts = ([f"every cell of {', '.join(group['whole'])} passed"] if group["whole"] else []) + group["other"]
        lines.append(f"- On {device}, torch {torch} ({date}): {'; '.join(parts)}.")
    lines.append(f"- Never run on a GPU: {', '.join(never)}." if never else "- Every notebook has run on a GPU.")
    if changed:
        lines.append(f"- Changed since their last GPU run (the evidence is for older code): {', '.join(changed)}.")
    return lines


def take(out: pathlib.Path) -> list[str]:
    """Take a gpu_check.sh output folder in; returns what changed, one line each."""
    from labkit import recordings  # where the recordings live: inside labkit, as package data

    run = json.loads((out / "gpu-run.json").read_text())
    if not run.get("device"):
        raise SystemExit(f"{out}/gpu-run.json says the run had no GPU: nothing to take in.")
    done = []
    for recording in sorted((out / "recordings").glob("*.json")):
        shutil.copy(recording, recordings.FOLDER / recording.name)
        done.append(f"recording {recording.name}")
    RUNS.mkdir(exist_ok=True)
    stem = f"{run['date']}-{re.sub(r'[^A-Za-z0-9]+', '-', run['device']).strip('-')}"
    n = 1 + sum(1 for _ in RUNS.glob(f"{stem}*.json"))
    name = f"{stem}-run{n}"
    shutil.copy(out / "gpu-run.json", RUNS / f"{name}.json")
    shutil.copy(out / "gpu_check.log", RUNS / f"{name}.log")
    done.append(f"docs/gpu-runs/{name}.json and .log")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build_notebooks.py"), "--facts"], check=True)
    with_gpu_cells = numbers_with_gpu_cells(ROOT)
    subprocess.run([sys.executable, str(ROOT / "tools" / "build_notebooks.py"), *with_gpu_cells], check=True)
    return done + ["docs/maintaining.md's GPU table and INSTRUCTORS.md's GPU-room note",
                   f"notebooks {' '.join(with_gpu_cells)} rebuilt with their new labels"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("take", "summarize", "table", "room"))
    parser.add_argument("out", nargs="?", type=pathlib.Path, help="the output folder of bash tools/gpu_check.sh")
    args = parser.parse_args(argv)
    if args.command in ("take", "summarize") and (args.out is None or not args.out.is_dir()):
        parser.error(f"{args.command} needs the folder bash tools/gpu_check.sh wrote (its OUT)")
    if args.command in ("table", "room"):
        print("\n".join(table() if args.command == "table" else room()))
    elif args.command == "summarize":
        print("wrote", summarize(args.out))
    else:
        print("\n".join(take(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
