"""Record what a notebook's GPU cells print on a machine with CUDA and Triton.

    python tools/record_gpu.py                          # every notebook with GPU cells, into labkit/gpu_recordings/
    python tools/record_gpu.py 09 --into /tmp/new       # writes there instead (gpu_check.sh does this)
    python tools/record_gpu.py 09 --executed /tmp/runs  # also keeps each executed notebook, failed or not
    python tools/record_gpu.py --status                 # on any machine: each GPU cell against its recording,
                                                        # and how the recorded code differs

A *GPU cell* is a code cell whose first line is ``# GPU cell: <title>``; its second line may declare what it
needs, ``# needs: <title>; <title>``, naming ``# GPU setup: <title>`` cells or earlier GPU cells
(labkit/recordings.py). The notebook is built from its source in lessons/ and executed in a
fresh kernel, as nbval would; each GPU cell's printed text is stored with the code it ran (the cell and,
transitively, what it needs), the device, the torch and Triton versions (read inside that kernel), labkit's
version and commit, and the date. A notebook shows a recording only through ``labkit.show_gpu_recording()``,
labelled with how it relates to the code the reader's kernel ran: never as that kernel's output.

Without CUDA and Triton there is nothing true to record: the tool says so in one sentence and exits with
status 1, and it refuses to keep a run in which a GPU cell did not run.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

import build_notebooks  # a sibling tool (tools/ is on sys.path: python tools/x.py, pytest's pythonpath)
from labkit import recordings  # the format, and how a notebook reads it
from repo import ROOT, commit

RECORDINGS = recordings.FOLDER        # inside labkit, as package data: Colab has them too
ENV_MARK = "@@gpu-recording-environment@@"
# Appended to the notebook before it runs: the kernel itself says what it ran on.
ENVIRONMENT_CELL = f"""
import datetime as _dt, importlib.util as _iu, json as _json, torch as _torch, labkit as _labkit
print({ENV_MARK!r} + _json.dumps({{
    "device": _torch.cuda.get_device_name(0) if _torch.cuda.is_available() else None,
    "torch": _torch.__version__,
    "triton": __import__("triton").__version__ if _iu.find_spec("triton") else None,
    "labkit": _labkit.__version__,
    "date": _dt.date.today().isoformat()}}))
"""


def code_cells(source: pathlib.Path) -> list[str]:
    return [cell.source.rstrip("\n") for cell in build_notebooks.source_cells(source) if cell.cell_type == "code"]


def gpu_cells(source: pathlib.Path) -> list[str]:
    """The sources of a notebook's GPU cells, in order."""
    return [code for code in code_cells(source) if recordings.is_gpu_cell(code)]


def titled(source: pathlib.Path) -> dict[str, str]:
    """{title: source} of a notebook's GPU cells and GPU setup cells."""
    return {recordings.title(code): code for code in code_cells(source) if recordings.title(code) is not None}


def source_status(source: pathlib.Path, found: dict | None = None) -> list[recordings.Status]:
    """Each GPU cell of a notebook source against its recording: what a Run All of that source shows."""
    cells = titled(source)
    return [recordings.status(recordings.title(code), cells.get, found) for code in gpu_cells(source)]


def printed_text(cell) -> str:
    """What a cell printed or displayed, as text (stdout, and the plain text of what it displayed), in order."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            parts.append(output.get("text", ""))
        elif output.get("output_type") in ("display_data", "execute_result"):
            parts.append(output.get("data", {}).get("text/plain", "") + "\n")
    return "".join(parts)


def run(source: pathlib.Path, timeout: int = 600, keep_in: pathlib.Path | None = None) -> tuple[list, dict]:
    """Execute the notebook built from source in a fresh kernel; return its GPU cells and the kernel's environment.

    With keep_in, the executed notebook is written there too — also when a cell fails, which is
    when it is most needed: a GPU machine is borrowed for minutes, and its outputs are the evidence.
    """
    nb = build_notebooks.built_notebook(source)
    nb.cells.append(nbformat.v4.new_code_cell(ENVIRONMENT_CELL))
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    finally:
        if keep_in is not None:
            keep_in.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, keep_in / f"{source.stem}.ipynb")
    printed = printed_text(nb.cells.pop())
    environment = json.loads(printed[printed.index(ENV_MARK) + len(ENV_MARK):])
    return [cell for cell in nb.cells if cell.cell_type == "code" and recordings.is_gpu_cell(cell.source)], \
        environment


def recording_of(source: pathlib.Path, outputs: dict[str, str], environment: dict) -> dict:
    """The JSON of a notebook's recording: each GPU cell's output with the code it ran (labkit/recordings.py)."""
    cells = titled(source)
    return {"format": recordings.FORMAT, "notebook": source.stem, **environment,
            "cells": [{"title": name, "output": outputs[name], "code": recordings.closure(name, cells.get)}
                      for name in (recordings.title(code) for code in gpu_cells(source))]}


def write(recording: dict, into: pathlib.Path) -> pathlib.Path:
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{recording['notebook']}.json"
    with tempfile.NamedTemporaryFile("w", dir=into, suffix=".tmp", delete=False) as handle:
        handle.write(json.dumps(recording, indent=1) + "\n")
    os.replace(handle.name, target)       # readers (a notebook running beside this) never see half a file
    return target


def record(source: pathlib.Path, into: pathlib.Path = RECORDINGS, keep_in: pathlib.Path | None = None) -> pathlib.Path:
    cells, environment = run(source, keep_in=keep_in)
    skipped = [cell.source.splitlines()[0] for cell in cells if "so this cell did not run here" in printed_text(cell)]
    if skipped or environment["device"] is None:
        raise RuntimeError(f"the kernel ran without a GPU ({skipped[0] if skipped else 'no CUDA'}): not recorded")
    outputs = {recordings.title(cell.source): printed_text(cell) for cell in cells}
    return write(recording_of(source, outputs, {**environment, "commit": commit()}), into)


def gpu_ready() -> str | None:
    """None when this machine can record; otherwise the reason, as one sentence."""
    import torch

    if not torch.cuda.is_available():
        return "No CUDA device here: run this on a machine with a GPU."
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed: install torch's CUDA build, which brings it."
    return None


def print_status() -> int:
    """Each GPU cell of the lab against its recording; 0 always (a status is information, not a failure)."""
    found = recordings.load()
    for source in build_notebooks.all_sources():
        for cell in source_status(source, found):
            when = f" ({cell.recording.environment.get('date')})" if cell.recording else ""
            print(f"{source.stem[:2]} {cell.kind:<9} {cell.title}{when}"
                  + (f": {'; '.join(cell.changes)}" if cell.changes else ""))
            for line in cell.diff:       # the maintainer's view: a notebook shows what changed, never the diff
                print(f"      {line}")
    for problem in recordings.problems():
        print(problem)
    print(f"(checked {datetime.date.today().isoformat()}; re-record on a GPU: bash tools/gpu_check.sh)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="two-digit numbers (05 09); all with GPU cells when none")
    parser.add_argument("--into", type=pathlib.Path, default=RECORDINGS, help="where to write the recordings")
    parser.add_argument("--executed", type=pathlib.Path, help="keep each executed notebook in this folder")
    parser.add_argument("--status", action="store_true", help="print each GPU cell's status; records nothing")
    args = parser.parse_args(argv)
    if args.status:
        return print_status()
    with_gpu_cells = [source for source in build_notebooks.all_sources() if gpu_cells(source)]
    chosen = [source for source in with_gpu_cells if not args.notebooks or source.stem[:2] in args.notebooks]
    if not chosen:
        parser.error(f"no notebook with GPU cells matches {args.notebooks}; "
                     f"these have some: {' '.join(source.stem[:2] for source in with_gpu_cells)}")
    if (reason := gpu_ready()) is not None:
        sys.exit(reason)
    failed = []
    for source in chosen:
        try:
            print("recorded", record(source, args.into, keep_in=args.executed), flush=True)
        except Exception as error:  # noqa: BLE001 - one notebook's failure must not hide the others'
            print(f"not recorded {source.stem}: {type(error).__name__}: {str(error)[-2000:]}", flush=True)
            failed.append(source.stem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
