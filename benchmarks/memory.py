"""Kernel memory after a notebook has run and every state of its widgets has been shown.

    python -m benchmarks.memory              # every notebook, one fresh kernel each
    python -m benchmarks.memory 02 04        # only the notebooks whose names start with 02, 04
    python -m benchmarks.memory --limit-mb 1500 -v

For each notebook: start a fresh ``python3`` kernel with nbclient (working directory
``notebooks/``), execute every cell, then, in that same kernel, find every live
``labkit.widgets.LabWidget`` (``gc.get_objects()``) and ``set`` it to every combination of
its controls' options (dropdowns and toggles: all their options; free-text fields: a few
sample names), as a learner clicking through the whole widget would.

Measured, per notebook:
  peak RSS   = the kernel process's VmHWM (/proc/<pid>/status): its high-water resident memory;
  RSS after  = the kernel's RSS (psutil) once every widget state has been shown;
  tree peak  = the largest sum over the kernel and its child processes (Inductor's compile
               workers, the C++ compiler), sampled every 0.25 s: RSS, and PSS (shared pages
               counted once, closer to what a container's memory limit sees). No Jupyter server
               runs here; on Binder it adds its own memory on top of these figures.
The target is a peak of at most 1.5 GB (Binder gives 1-2 GB): the script exits with status 1
when a kernel's peak exceeds ``--limit-mb``. A benchmark, not a test: it takes minutes per
notebook on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

if __package__ != "benchmarks":  # run as a script: the lab's folder, and so tools/, is not on sys.path
    raise SystemExit(f"Run it from the lab's folder as a module: python -m benchmarks.{Path(__file__).stem}")
from tools.repo import ROOT

NOTEBOOKS = ROOT / "notebooks"
MARK = "@@labkit-memory@@"

# Run in the kernel after the notebook: find the widgets, show every state, report.
DRIVE = r"""
import gc as _gc, json as _json, time as _time
import labkit.widgets as _lw

_seen, _rows = set(), []
# type(), not isinstance(): isinstance() on a dead weakref.proxy in the heap raises ReferenceError
for _widget in [o for o in _gc.get_objects() if issubclass(type(o), _lw.LabWidget)]:
    if id(_widget) in _seen:
        continue
    _seen.add(id(_widget))
    _start, _before, _errors, _states = _time.perf_counter(), len(_widget._cache), [], 0
    for _values in _widget.every_state():                # every option; free text: a few sample names
        _widget.set(**_values)
        _states += 1
        if "could not compute" in _widget.view.value:
            _errors.append({"state": {k: str(v) for k, v in _values.items()}, "view": _widget.view.value[:400]})
    _rows.append({"widget": type(_widget).__name__, "states": _states,
                  "new_states": len(_widget._cache) - _before, "errors": _errors,
                  "seconds": round(_time.perf_counter() - _start, 1)})
print(MARK + _json.dumps(_rows))
""".replace("MARK", repr(MARK))


# --- memory of a process tree: psutil, and /proc for the peak ---------------------------------------

def _peak_kb(pid: int) -> int:
    """The process's high-water resident memory, VmHWM of /proc/<pid>/status (psutil has no peak on
    Linux); 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def _rss_kb(pid: int) -> int:
    try:
        return psutil.Process(pid).memory_info().rss // 1024
    except psutil.Error:  # gone, or not ours to read
        return 0


def _tree(pid: int) -> list[psutil.Process]:
    """The process and every process below it (gone ones left out)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _tree_memory_kb(pid: int) -> tuple[int, int, int]:
    """(RSS, PSS, processes) summed over the tree; PSS counts shared pages once."""
    rss = pss = count = 0
    for process in _tree(pid):
        try:
            full = process.memory_full_info()
        except psutil.Error:  # exited between the listing and the read
            continue
        rss, pss, count = rss + full.rss // 1024, pss + full.pss // 1024, count + 1
    return rss, pss, count


class TreeSampler:
    """Sample the summed RSS and PSS of a process and its descendants on a thread; keep the peaks."""

    def __init__(self, pid: int, every_s: float = 0.25):
        self.pid, self.every_s = pid, every_s
        self.peak_rss_kb = self.peak_pss_kb = self.most_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss, pss, count = _tree_memory_kb(self.pid)
            self.peak_rss_kb = max(self.peak_rss_kb, rss)
            self.peak_pss_kb = max(self.peak_pss_kb, pss)
            self.most_processes = max(self.most_processes, count)
            self._stop.wait(self.every_s)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


# --- one notebook ----------------------------------------------------------------------------------

def kernel_pid(client: NotebookClient) -> int:
    """The kernel's process id: jupyter_client 8's local provisioner keeps it (and the Popen)."""
    provisioner = client.km.provisioner
    pid = getattr(provisioner, "pid", None) or provisioner.process.pid
    return int(pid)


def measure(path: Path, verbose: bool = False) -> dict:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=900,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    cells = failed = 0
    widgets: list[dict] = []
    with client.setup_kernel():
        pid = kernel_pid(client)
        with TreeSampler(pid) as tree:
            for index, cell in enumerate(list(nb.cells)):
                if cell.cell_type != "code":
                    continue
                cells += 1
                try:
                    client.execute_cell(cell, index)
                except CellExecutionError as error:
                    failed += 1
                    if verbose:
                        print(f"  {path.name} cell {index} raised: {str(error).splitlines()[-1][:200]}")
            notebook_s = time.perf_counter() - start
            rss_notebook_kb = _rss_kb(pid)

            client.timeout = None          # showing every state of a widget can take longer than 900 s
            drive = nbformat.v4.new_code_cell(DRIVE)
            nb.cells.append(drive)
            client.execute_cell(drive, len(nb.cells) - 1)
            text = "".join(o.get("text", "") for o in drive.outputs if o.get("output_type") == "stream")
            widgets = json.loads(text.split(MARK, 1)[1].splitlines()[0])
            peak_kb, rss_kb = _peak_kb(pid), _rss_kb(pid)
    return {
        "notebook": path.stem, "cells": cells, "failed_cells": failed, "widgets": widgets,
        "states": sum(w["states"] for w in widgets), "new_states": sum(w["new_states"] for w in widgets),
        "errors": sum(len(w["errors"]) for w in widgets),
        "peak_mb": peak_kb / 1024, "rss_notebook_mb": rss_notebook_kb / 1024, "rss_after_mb": rss_kb / 1024,
        "tree_rss_mb": tree.peak_rss_kb / 1024, "tree_pss_mb": tree.peak_pss_kb / 1024,
        "processes": tree.most_processes,
        "notebook_s": notebook_s, "seconds": time.perf_counter() - start,
    }


def select(names: list[str]) -> list[Path]:
    every = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return every
    chosen = [p for p in every if any(p.name.startswith(n) or p.stem == n for n in names)]
    if not chosen:
        sys.exit(f"no notebook matches {names}; there are {[p.name for p in every]}")
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook name prefixes (02, 04_dce...); all by default")
    parser.add_argument("--limit-mb", type=float, default=1500, help="peak kernel RSS allowed (default 1500)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each widget's figures and errors")
    args = parser.parse_args()

    head = (f"{'notebook':<34} {'cells':>5} {'states':>6} {'new':>4} {'errors':>6} "
            f"{'peak RSS MB':>11} {'RSS after nb MB':>15} {'RSS after MB':>12} {'seconds':>7}")
    print(head)
    print("-" * len(head))
    results = []
    for path in select(args.notebooks):
        r = measure(path, args.verbose)
        results.append(r)
        flag = "  <-- over the limit" if r["peak_mb"] > args.limit_mb else ""
        print(f"{r['notebook']:<34} {r['cells']:>5} {r['states']:>6} {r['new_states']:>4} {r['errors']:>6} "
              f"{r['peak_mb']:>11.0f} {r['rss_notebook_mb']:>15.0f} {r['rss_after_mb']:>12.0f} "
              f"{r['seconds']:>7.0f}{flag}", flush=True)
        if args.verbose:
            print(f"  cells: {r['notebook_s']:.0f} s, {r['failed_cells']} raised")
            for w in r["widgets"]:
                print(f"  {w['widget']}: {w['states']} states set, {w['new_states']} computed, "
                      f"{len(w['errors'])} could not compute, {w['seconds']} s")
                for e in w["errors"]:
                    print(f"    {e['state']}: {e['view'][:200]}")

    print("\nTotal without a Jupyter server (kernel + its child processes, peak of sampled sums):")
    for r in results:
        print(f"  {r['notebook']:<34} RSS {r['tree_rss_mb']:>6.0f} MB, PSS {r['tree_pss_mb']:>6.0f} MB, "
              f"up to {r['processes']} processes")

    problems = [f"{r['notebook']}: {r['errors']} widget state(s) could not compute" for r in results if r["errors"]]
    problems += [f"{r['notebook']}: {r['failed_cells']} cell(s) raised" for r in results if r["failed_cells"]]
    over = [r for r in results if r["peak_mb"] > args.limit_mb]
    problems += [f"{r['notebook']}: peak RSS {r['peak_mb']:.0f} MB > {args.limit_mb:.0f} MB" for r in over]
    for problem in problems:
        print("!! " + problem)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
