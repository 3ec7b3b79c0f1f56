"""Run every notebook on several torch releases and write the table of what passed.

    python tools/torch_matrix.py 2.11.0 2.13.0 2.15.0 --colab
    python tools/torch_matrix.py 2.12.1 --keep-venvs --venv-root /scratch/venvs
    python tools/torch_matrix.py 2.11.0 2.13.0 --doctor mypkg.ops --doctor-pip mypkg==1.2 [--doctor-out r.json]
    python tools/torch_matrix.py 2.15.0 --notebooks 02 03

For each release: a throwaway virtual environment (under --venv-root, deleted afterwards
unless --keep-venvs; one that already holds that torch is reused), that torch from PyPI
(machine-wide pip constraints are ignored so the release asked for is the one installed),
the lab's requirements, nbval and labkit; then every notebook under ``pytest --nbval-lax``
from an empty Inductor cache, and a probe of the behaviours the lessons depend on.
``--colab`` adds the Colab row: Python 3.13, torch 2.11.0, ipywidgets 7.7.1 and labkit
installed with ``--no-deps``, as the notebooks' Colab cell does.

``--doctor MODULE`` runs ``labkit doctor MODULE`` instead of the notebooks, in each release's environment (plus
the packages of ``--doctor-pip``, installed with that torch pinned as a constraint so they cannot move it), and
prints one row per release: the doctor's exit status and verdicts, and the ops with findings; ``--doctor-out``
writes every release's JSON report to one file. It writes nothing under docs/.

``--notebooks 12`` (numbers or names) runs only those notebooks, and the probe, on each release, and saves a
*partial* row: a notebook added later costs its own rows, not the whole matrix. A partial row never replaces a
full one; a later run of a notebook replaces its earlier result on that release (:func:`latest_results`).

Results accumulate in docs/torch-versions.json (one entry per run, in the order they ran; a full row replaces
every earlier row of its release); docs/torch-versions.md is rewritten from it. The lab's range
(:func:`lab_range`, labkit's CHECKED_ON, tests/labkit/test_env.py checks) is the releases with a full row on
which every notebook of the full rows passes; a notebook only partial rows ran has its own range
(:func:`supported`), which README names where it is narrower.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from repo import ROOT

RESULTS = ROOT / "docs" / "torch-versions.json"
TABLE = ROOT / "docs" / "torch-versions.md"
COLAB = {"python": "/root/.pyenv/versions/3.13.0/bin/python3", "torch": "2.11.0", "ipywidgets": "7.7.1"}

# The findings under the table are written by hand in docs/torch-versions.md, from this heading on; the table
# above it is rewritten from docs/torch-versions.json.
FINDINGS_HEADING = "## What the behaviour columns mean, and what was found"

# Run by the row's own Python: each behaviour a lesson depends on, as torch shows it there.
PROBE = ROOT / "tools" / "torch_matrix_probe.py"


def sh(command: list[str], log, **kwargs) -> int:
    log.write(f"\n$ {' '.join(command)}\n")
    log.flush()
    return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, **kwargs).returncode


def python_version(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def installed_torch(venv: Path) -> str | None:
    done = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def install(venv: Path, python: str, torch_version: str, colab: bool, log) -> bool:
    """Make ``venv`` with that torch and the lab; False when pip failed."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    env = dict(os.environ, PIP_CONSTRAINT="/dev/null")  # the release asked for, whatever the machine caps
    have = installed_torch(venv)
    if not (have and have.split("+")[0] == torch_version):
        if sh(pip + [f"torch=={torch_version}"], log, env=env):
            return False
    if colab:  # what the Colab cell does: Colab's own packages, then labkit and tlparse alone
        steps = [pip + [f"ipywidgets=={COLAB['ipywidgets']}", "matplotlib", "ipykernel", "nbval"],
                 pip + ["--no-deps", "--force-reinstall", str(ROOT), "tlparse>=0.4"]]
    else:
        steps = [pip + ["-r", str(ROOT / "requirements.txt"), "nbval"],
                 pip + ["--no-deps", "--force-reinstall", str(ROOT)]]
    return all(sh(step, log, env=env) == 0 for step in steps)


def notebook_results(junit: Path) -> dict[str, str]:
    """Per notebook: 'pass', or 'FAIL: cell N (first line of the error)'."""
    results: dict[str, str] = {}
    if not junit.exists():
        return results
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        notebook = Path(case.get("file") or case.get("classname", "").replace(".", "/")).stem
        notebook = notebook or case.get("classname", "?")
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None and results.get(notebook, "pass") == "pass":
            text = re.sub(r"(\x1b|#x1B)\[[0-9;]*m", "", problem.text or problem.get("message") or "")
            errors = re.findall(r"^\s*(\w+(?:Error|Exception|Interrupt)\b.*|.*[Kk]ernel died.*)$", text, re.M)
            detail = errors[-1].strip() if errors else "see the log"
            results[notebook] = f"FAIL: {case.get('name')} ({detail[:110]})"
        results.setdefault(notebook, "pass")
    return results


@contextlib.contextmanager
def cold_dirs():
    """An empty working directory and an environment whose Inductor cache is another empty directory; both
    are removed afterwards.

    The two are apart on purpose: Inductor names its cache's subfolders after hash prefixes (``z3``, ``ok``,
    ...), and a ``python -c`` started in that folder imports them as packages (a folder ``z3`` shadowed the
    z3 solver and broke every compile of the thread probe, at random)."""
    cache_dir = tempfile.mkdtemp(prefix="torch-matrix-inductor-")
    work_dir = tempfile.mkdtemp(prefix="torch-matrix-run-")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    try:
        yield work_dir, env
    finally:
        for folder in (cache_dir, work_dir):
            shutil.rmtree(folder, ignore_errors=True)


def run_probe(venv_python: str, env: dict[str, str], work_dir: str, log) -> dict:
    probe = subprocess.run([venv_python, str(PROBE)], capture_output=True, text=True, env=env, cwd=work_dir)
    log.write(probe.stdout + probe.stderr)
    line = next((ln for ln in probe.stdout.splitlines() if ln.startswith("PROBE ")), None)
    return json.loads(line[6:]) if line else {"probe": f"crashed (exit {probe.returncode})"}


def venv_for(torch_version: str, python: str, colab: bool, venv_root: Path) -> Path:
    return venv_root / f"torch-{torch_version}-py{python_version(python)}{'-colab' if colab else ''}"


def reprobe_row(row: dict, python: str, venv_root: Path) -> dict:
    """Only the behaviour probes again, in the row's kept environment; its notebook results stay."""
    venv = venv_for(row["torch"], python, row["colab"], venv_root)
    if not (venv / "bin" / "python").exists():
        raise SystemExit(f"no kept environment for the {row['row']} row at {venv}: run the row again instead")
    with cold_dirs() as (work_dir, env), open(row["log"], "a") as log:
        behaviours = run_probe(str(venv / "bin" / "python"), env, work_dir, log)
    print(f"[{row['row']}] probes again: {behaviours}", flush=True)
    return {**row, "behaviours": behaviours, "probed": f"{time.strftime('%Y-%m-%d')} ({current_commit()})"}


def run_row(label: str, torch_version: str, python: str, colab: bool, venv_root: Path, keep: bool,
            notebooks: list[Path] | None = None) -> dict:
    """One release's row: install, run ``notebooks`` (every notebook when None) under nbval-lax from a cold
    Inductor cache, then the probe. A row of named notebooks says so (``partial``), install failure included."""
    venv = venv_for(torch_version, python, colab, venv_root)
    log_path = Path(tempfile.gettempdir()) / f"torch-matrix-{venv.name}.log"
    row = {"row": label, "torch": torch_version, "python": python_version(python), "colab": colab,
           "date": time.strftime("%Y-%m-%d"), "commit": current_commit(), "log": str(log_path)}
    if notebooks:
        row["partial"] = True
    with open(log_path, "w") as log:
        print(f"[{label}] installing into {venv} (log: {log_path})", flush=True)
        if not install(venv, python, torch_version, colab, log):
            row["result"] = "install failed"
            print(f"[{label}] install failed", flush=True)
            return row
        venv_python = str(venv / "bin" / "python")
        row["torch_build"] = installed_torch(venv)
        with cold_dirs() as (work_dir, env):
            junit = Path(work_dir) / "junit.xml"
            paths = [str(p) for p in (notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")))]
            print(f"[{label}] running {len(paths)} notebooks under nbval-lax (cold Inductor cache)", flush=True)
            started = time.perf_counter()
            sh([venv_python, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider",
                "-o", "addopts=", "-o", "junit_family=xunit1", "--rootdir", work_dir, f"--junitxml={junit}",
                *paths], log, env=env, cwd=work_dir)
            row["notebooks_s"] = round(time.perf_counter() - started)
            row["notebooks"] = notebook_results(junit)
            print(f"[{label}] probing behaviours", flush=True)
            row["behaviours"] = run_probe(venv_python, env, work_dir, log)
            passed = bool(row["notebooks"]) and all(v == "pass" for v in row["notebooks"].values())
            if notebooks:
                row["result"] = "the named notebooks pass" if passed else "notebooks fail"
            else:
                row["result"] = "all notebooks pass" if passed else "notebooks fail"
    if not keep:
        shutil.rmtree(venv, ignore_errors=True)
    print(f"[{label}] {row['result']}", flush=True)
    return row


def run_doctor_row(torch_version: str, python: str, venv_root: Path, keep: bool, module: str, pip_specs: list[str],
                   cwd: Path) -> dict:
    """``labkit doctor MODULE --json`` in a fresh environment with this torch (and the project's packages): one row."""
    venv = venv_for(torch_version, python, False, venv_root)
    log_path = Path(tempfile.gettempdir()) / f"torch-matrix-doctor-{venv.name}.log"
    row = {"torch": torch_version, "date": time.strftime("%Y-%m-%d"), "log": str(log_path)}
    with open(log_path, "w") as log:
        print(f"[doctor {torch_version}] installing into {venv} (log: {log_path})", flush=True)
        ok = install(venv, python, torch_version, False, log)
        if ok and pip_specs:
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pin:
                pin.write(f"torch=={torch_version}\n")   # the project's packages must not move this torch
            ok = sh([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                     "-c", pin.name, *pip_specs], log, env=dict(os.environ, PIP_CONSTRAINT="/dev/null")) == 0
            os.unlink(pin.name)
        row["torch_build"] = installed_torch(venv)
        if not ok or not (row["torch_build"] or "").startswith(torch_version):
            row["result"] = f"install failed (torch {row['torch_build']})"
            print(f"[doctor {torch_version}] {row['result']}", flush=True)
            return row
        with cold_dirs() as (work_dir, env):
            out = Path(work_dir) / "doctor.json"
            env["PYTHONPATH"] = str(cwd)
            print(f"[doctor {torch_version}] labkit doctor {module} (cold Inductor cache)", flush=True)
            status = sh([str(venv / "bin" / "python"), "-m", "labkit", "doctor", module, "--json", str(out)], log,
                        env=env, cwd=cwd)
            report = json.loads(out.read_text()) if out.exists() else None
    if not keep:
        shutil.rmtree(venv, ignore_errors=True)
    row["exit_status"] = status
    if report is None:
        row["result"] = f"the doctor wrote no report (exit {status}: see the log)"
    else:
        row["counts"] = report["counts"]
        row["findings"] = {r["op"]: sorted({f["check"] for f in r["findings"]}) for r in report["results"]
                           if r["verdict"] == "fail"}
        row["report"] = report
        row["result"] = {0: "clean", 1: "findings"}.get(status, f"nothing checked or stopped (exit {status}: "
                                                                 "see the log)")
    print(f"[doctor {torch_version}] {row['result']}", flush=True)
    return row


def doctor_table(rows: list[dict]) -> str:
    lines = ["| torch | exit | passed / with findings / skipped | ops with findings |", "|---|---|---|---|"]
    for row in rows:
        counts = row.get("counts", {})
        found = "; ".join(f"`{op}`: {', '.join(checks)}" for op, checks in row.get("findings", {}).items())
        lines.append(f"| {row.get('torch_build') or row['torch']} | {row.get('exit_status', '—')} | "
                     f"{counts.get('pass', '—')} / {counts.get('fail', '—')} / {counts.get('skip', '—')} | "
                     f"{found or row['result']} |")
    return "\n".join(lines)


def named_notebooks(names: list[str]) -> list[Path]:
    """The notebooks ``--notebooks`` names, by number (``02``) or name (``02_mutates_args``, with or without
    ``.ipynb``), in the lab's order. ValueError, in one sentence that lists them, for a name that is none of them."""
    lab = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    chosen = []
    for name in names:
        stem = Path(name).name.removesuffix(".ipynb")
        match = [p for p in lab if stem in (p.stem, p.stem[:2])]
        if not match:
            raise ValueError(f"--notebooks: {name!r} is not one of the lab's notebooks; give a number or a name "
                             f"({', '.join(p.stem for p in lab) or 'none are built: build them first'})")
        chosen += [p for p in match if p not in chosen]
    return sorted(chosen)


def partial_report(row: dict) -> str:
    """What a partial run found, per notebook, then the probe (the row is saved too)."""
    lines = [f"[{row['row']}] {row.get('torch_build') or row['torch']}: {row['result']} "
             f"(a partial run, saved in {RESULTS.name})"]
    lines += [f"  {nb}: {result}" for nb, result in sorted(row.get("notebooks", {}).items())]
    lines += [f"  {SHORT.get(k, k)}: {v}" for k, v in row.get("behaviours", {}).items()]
    return "\n".join(lines)


def load() -> list[dict]:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else []


def save(row: dict) -> list[dict]:
    """Add ``row`` after the earlier runs; safe with several runs at once. A full row replaces every earlier row
    of its release (row and Python); a partial row replaces only the earlier partial results of its notebooks
    there, and never a full row, whose other notebooks' results stay."""
    with open(RESULTS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = [kept for r in load() if (kept := _after(r, row))] + [row]
        RESULTS.write_text(json.dumps(rows, indent=1) + "\n")
        write_table(rows)
    return rows


def save_probes(row: dict) -> list[dict]:
    """Put a full row whose probes ran again back in its place: its release's later partial rows stay newer."""
    with open(RESULTS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = [row if (r["row"], r["python"], r.get("partial")) == (row["row"], row["python"], None) else r
                for r in load()]
        RESULTS.write_text(json.dumps(rows, indent=1) + "\n")
        write_table(rows)
    return rows


def _after(old: dict, new: dict) -> dict | None:
    """What is left of an earlier row ``old`` once ``new`` is saved: itself, fewer notebooks, or None."""
    if (old["row"], old["python"]) != (new["row"], new["python"]):
        return old
    if not new.get("partial"):
        return None
    if not old.get("partial"):
        return old
    left = {nb: r for nb, r in old.get("notebooks", {}).items() if nb not in new.get("notebooks", {})}
    if not left:
        return None
    passed = all(r == "pass" for r in left.values())
    return {**old, "notebooks": left, "result": "the named notebooks pass" if passed else "notebooks fail"}


def latest_results(rows: list[dict], stems: list[str]) -> dict[tuple[str, str], dict[str, str]]:
    """{(torch release, Python): {notebook: the result of its latest run there}} for the notebooks ``stems``,
    from the non-Colab rows, full and partial, in the order they ran."""
    merged: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        if not row["colab"]:
            merged.setdefault((row["torch"], row["python"]), {}).update(
                {nb: r for nb, r in row.get("notebooks", {}).items() if nb in stems})
    return merged


def supported(rows: list[dict], stem: str) -> list[str]:
    """The releases on which notebook ``stem`` ran and its latest run passed, on every Python it ran with there."""
    runs: dict[str, list[str]] = {}
    for (torch, _), results in latest_results(rows, [stem]).items():
        if stem in results:
            runs.setdefault(torch, []).append(results[stem])
    return _by_version(v for v, results in runs.items() if all(r == "pass" for r in results))


def lab_range(rows: list[dict], stems: list[str]) -> list[str]:
    """The releases with a full (non-Colab) row of today's notebooks on which every notebook the full rows ran
    passes in its latest run, on every Python a full row ran there; a notebook only partial rows ran is judged
    by :func:`supported` instead."""
    full = [r for r in rows if not r["colab"] and not r.get("partial") and r.get("notebooks")
            and set(r["notebooks"]) <= set(stems)]
    core = {nb for r in full for nb in r["notebooks"]}
    merged = latest_results(rows, stems)
    good = {(r["torch"], r["python"]) for r in full if all(merged[(r["torch"], r["python"])].get(nb) == "pass"
                                                           for nb in core)}
    return _by_version(r["torch"] for r in full if all(k in good for k in {(r["torch"], f["python"])
                                                                            for f in full if f["torch"] == r["torch"]}))


def narrower(rows: list[dict], stems: list[str]) -> dict[str, list[str]]:
    """{notebook: its releases} for each notebook whose range leaves out a release of the lab's range."""
    lab = set(lab_range(rows, stems))
    return {stem: releases for stem in stems if not lab <= set(releases := supported(rows, stem))}


def _by_version(versions) -> list[str]:
    return sorted(set(versions), key=lambda v: tuple(int(p) for p in v.split(".")))


def version_key(row: dict) -> tuple:
    return (row["colab"], tuple(int(p) for p in row["torch"].split(".")), row["python"])


SHORT = {  # column headers for the probe's behaviours
    "#198031 reproduces (y = x.clone(); op(y, x) compiled as op(x, x))": "#198031 reproduces",
    "#198031: src declared too, y read afterwards, right": "#198031, src declared too: y right",
    "#187319 reproduces (stale artifact from the default cache)": "#187319 reproduces",
    "a clone passed as another written argument gets its result": "clone as other written arg: wrong",
    "Tag.out: returning x.clone() and out.clone() leaves out holding x": "Tag.out buffer reused: wrong",
    "compile on a thread, then on the main thread": "compile on a thread, then main",
    "seeded op, result unused, removed by Inductor": "unused seeded op removed",
    "mutates_args='unknown', a clone of the written argument as the other: x wrong": "'unknown' + clone: wrong",
    "Tag.inplace op on a slice cut inside the compiled function: x written wrongly": "Tag.inplace on a slice: wrong",
}


def current_commit() -> str:
    """The lab's commit the row ran (uncommitted changes marked), so a table says what it measured."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)docs/torch-versions.*"],          # this tool's own output
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return commit + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def current_notebooks() -> list[str]:
    return sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def ran_current_notebooks(row: dict) -> bool:
    """A full row speaks for today's notebooks when it ran none that is gone (older rows stay, marked)."""
    return set(row.get("notebooks", {})) <= set(current_notebooks())


def write_table(rows: list[dict]) -> None:
    notebooks = current_notebooks()
    behaviours = sorted({b for row in rows for b in row.get("behaviours", {})})
    lines = [
        "# torch versions the lab runs on",
        "",
        "Measured by `python tools/torch_matrix.py` (do not edit the table by hand: it rewrites it from",
        "`docs/torch-versions.json`; the findings below it are written by hand, and kept).",
        "Each row: a fresh virtual environment with that torch from PyPI",
        "(CUDA builds, run on a CPU-only machine, except 2.13.0+cpu), every notebook under",
        "`pytest --nbval-lax` from an empty Inductor cache, then a probe of the behaviours the lessons",
        "depend on. The *Colab stack* row is Python 3.13 + ipywidgets 7.7.1 + labkit installed with",
        f"`--no-deps`, as the notebooks' Colab cell does. Columns {notebooks[0][:2]}–{notebooks[-1][:2]}: today's "
        "notebooks (a row run on",
        "an earlier set of notebooks says so, and does not count below); then the",
        "behaviours, explained below the table.",
        "",
        "| row | torch | Python | result | " + " | ".join(nb[:2] for nb in notebooks) + " | "
        + " | ".join(SHORT.get(b, b) for b in behaviours) + " | date |",
        "|---" * (5 + len(notebooks) + len(behaviours)) + "|",
    ]
    for row in sorted(rows, key=version_key):
        result = row["result"] if ran_current_notebooks(row) else (
            f"earlier notebook set ({len(row.get('notebooks', {}))} notebooks): {row['result']}")
        missing = [nb[:2] for nb in notebooks if nb not in row.get("notebooks", {})]
        if not row.get("partial") and ran_current_notebooks(row) and missing:
            result += f" ({', '.join(missing)} not run: see {'its' if len(missing) == 1 else 'their'} partial rows)"
        if row.get("partial"):
            result = f"partial ({', '.join(nb[:2] for nb in sorted(row.get('notebooks', {}))) or 'none'}): {result}"
        cells = [row["row"], row.get("torch_build") or row["torch"], row["python"], result]
        cells += [row.get("notebooks", {}).get(nb, "—") for nb in notebooks]
        cells += [str(row.get("behaviours", {}).get(b, "—")) for b in behaviours]
        cells.append(f"{row['date']} ({row.get('commit', 'commit not recorded')})")
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    first = "the first list" if narrower(rows, notebooks) else "these"
    lines += ["", range_sentence(rows, notebooks) + f"; the oldest of {first} is the lab's",
              "minimum (`labkit.env.MINIMUM_TORCH`, pyproject's `[tool.lab] minimum_torch`). A partial row ran the",
              "notebooks it names, added after the full rows (`--notebooks`); a notebook's latest run on a release",
              "is the one that counts.", "", findings()]
    TABLE.write_text("\n".join(lines))


def findings() -> str:
    """What docs/torch-versions.md holds from :data:`FINDINGS_HEADING` on: the findings, written by hand, kept."""
    text = TABLE.read_text() if TABLE.is_file() else ""
    if FINDINGS_HEADING not in text:
        raise SystemExit(f"{TABLE} has no line {FINDINGS_HEADING!r}: the findings under the table start there "
                         "(restore it from git) and are kept when the table is rewritten")
    return text[text.index(FINDINGS_HEADING):]


def range_sentence(rows: list[dict], stems: list[str]) -> str:
    """"Every notebook passes on: ...", naming each notebook whose own range is narrower."""
    narrow = narrower(rows, stems)
    if not narrow:
        return f"Every notebook passes on: {', '.join(lab_range(rows, stems)) or 'none'}"
    but = ", ".join(nb[:2] for nb in narrow)
    return (f"Every notebook but {but} passes on: {', '.join(lab_range(rows, stems)) or 'none'}; "
            + "; ".join(f"{nb[:2]} on: {', '.join(r) or 'none yet'}" for nb, r in narrow.items()))


def checked_on(rows: list[dict], notebooks: list[str] | None = None) -> list[str]:
    """The lab's range (:func:`lab_range`) for today's notebooks (or those named): labkit's CHECKED_ON, which
    tools/build_notebooks.py --facts writes from this, for pyproject's registered notebooks."""
    return lab_range(rows, current_notebooks() if notebooks is None else notebooks)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", help="torch releases, e.g. 2.11.0 2.13.0")
    parser.add_argument("--colab", action="store_true", help="add the Colab stack row (Python 3.13, torch 2.11.0)")
    parser.add_argument("--python", default=sys.executable, help="Python for the rows (default: this one)")
    parser.add_argument("--colab-python", default=COLAB["python"])
    parser.add_argument("--venv-root", type=Path, default=Path(tempfile.gettempdir()) / "torch-matrix-venvs")
    parser.add_argument("--keep-venvs", action="store_true", help="keep each environment (they take GBs)")
    parser.add_argument("--table-only", action="store_true", help="rewrite the table from the JSON, run nothing")
    parser.add_argument("--probes-only", action="store_true",
                        help="re-run only the behaviour probes of the named rows, in their kept environments")
    parser.add_argument("--doctor", metavar="MODULE",
                        help="run labkit doctor MODULE per release instead of the notebooks (writes nothing in docs/)")
    parser.add_argument("--doctor-pip", action="append", default=[], metavar="SPEC",
                        help="a package the doctor's module needs (pip spec), installed with torch pinned; repeatable")
    parser.add_argument("--doctor-cwd", type=Path, default=Path.cwd(),
                        help="the folder the doctor runs in (the project's root; default: here)")
    parser.add_argument("--doctor-out", type=Path, help="write every release's doctor report (JSON) to this file")
    parser.add_argument("--notebooks", nargs="+", metavar="NN",
                        help="run only these notebooks (numbers or names), saved as a partial row")
    args = parser.parse_args(argv)
    if args.notebooks is not None:
        if args.doctor or args.table_only or args.probes_only:
            parser.error("--notebooks runs named notebooks on releases: it does not go with --doctor, "
                         "--table-only or --probes-only")
        try:
            args.notebooks = named_notebooks(args.notebooks)
        except ValueError as error:
            parser.error(str(error))
    if args.doctor:
        if not args.versions:
            parser.error("--doctor: name the torch releases to run it on, e.g. 2.11.0 2.13.0")
        args.venv_root.mkdir(parents=True, exist_ok=True)
        rows = [run_doctor_row(v, args.python, args.venv_root, args.keep_venvs, args.doctor, args.doctor_pip,
                               args.doctor_cwd.resolve()) for v in args.versions]
        if args.doctor_out:
            args.doctor_out.write_text(json.dumps(rows, indent=1) + "\n")
        print(doctor_table(rows))
        raise SystemExit(0 if all(r.get("exit_status") == 0 for r in rows) else 1)
    if not args.versions and not args.colab and not args.table_only:
        parser.error("name at least one torch release, or --colab, or --table-only")
    args.venv_root.mkdir(parents=True, exist_ok=True)
    rows = load()
    todo, failed = [(v, v, args.python, False) for v in args.versions], False
    if args.colab:
        todo.append(("Colab stack", COLAB["torch"], args.colab_python, True))
    for label, version, python, colab in ([] if args.table_only else todo):
        if args.probes_only:
            old = next((r for r in rows if r["row"] == label and not r.get("partial")), None)
            if old is None:
                parser.error(f"--probes-only: no {label} row in {RESULTS.name} yet")
            rows = save_probes(reprobe_row(old, python, args.venv_root))
            continue
        row = run_row(label, version, python, colab, args.venv_root, args.keep_venvs, args.notebooks)
        rows = save(row)
        if args.notebooks:
            print(partial_report(row), flush=True)
            failed = failed or row["result"] != "the named notebooks pass"
    if args.notebooks:
        raise SystemExit(1 if failed else 0)
    write_table(rows)
    table = TABLE.relative_to(ROOT) if TABLE.is_relative_to(ROOT) else TABLE
    sentence = range_sentence(rows, current_notebooks())
    print(f"wrote {table}; {sentence[0].lower()}{sentence[1:]}")


if __name__ == "__main__":
    main()
