"""Record what a notebook's GPU cells print on a machine with CUDA and Triton.

    python tools/record_gpu.py 05 09                    # writes labkit/gpu_recordings/<notebook>.json
    python tools/record_gpu.py 09 --executed /tmp/runs  # also keeps each executed notebook, failed or not

A *GPU cell* is a code cell whose first line is ``# GPU cell: <what it shows>``. The notebook is built from its
source in tools/notebook_sources/ and executed in a fresh kernel, as nbval would; the text each GPU cell
printed is stored with the device, the torch and Triton versions and the date, so that a notebook
can show it labelled "recorded on <device>, torch <version>, <date>" — never as its own output.

Without CUDA and Triton there is nothing true to record: the tool says so in one sentence and
exits with status 1 (a CPU run would only record the cells' "skipped" lines).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import pathlib
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_notebooks  # noqa: E402  (a sibling tool, not a package)

RECORDINGS = ROOT / "labkit" / "gpu_recordings"    # package data: Colab has them too
MARKER = "# GPU cell"


def is_gpu_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(MARKER)


def cell_digest(source: str) -> str:
    """Identifies the cell a recording was made from: a changed cell makes its recording stale."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def gpu_cells(source: pathlib.Path) -> list:
    """The GPU cells of a notebook source, in order."""
    return [cell for cell in build_notebooks.source_cells(source) if is_gpu_cell(cell)]


def printed_text(cell) -> str:
    """What a cell printed (stream output), which is what a recording keeps."""
    return "".join(output.get("text", "") for output in cell.get("outputs", [])
                   if output.get("output_type") == "stream" and output.get("name") == "stdout")


def environment() -> dict:
    import torch

    triton = importlib.util.find_spec("triton")
    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": __import__("triton").__version__ if triton else None,
            "date": datetime.date.today().isoformat()}


def run(source: pathlib.Path, timeout: int = 600, keep_in: pathlib.Path | None = None) -> list:
    """Execute the notebook built from source in a fresh kernel; return its GPU cells with outputs.

    With keep_in, the executed notebook is written there too — also when a cell fails, which is
    when it is most needed: a GPU machine is borrowed for minutes, and its outputs are the evidence.
    """
    nb = build_notebooks.built_notebook(source)
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    finally:
        if keep_in is not None:
            keep_in.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, keep_in / f"{source.stem}.ipynb")
    return [cell for cell in nb.cells if is_gpu_cell(cell)]


def record(source: pathlib.Path, keep_in: pathlib.Path | None = None) -> pathlib.Path:
    cells = run(source, keep_in=keep_in)
    recording = {**environment(), "notebook": source.stem,
                 "cells": [{"digest": cell_digest(cell.source), "first_line": cell.source.splitlines()[0],
                            "output": printed_text(cell)} for cell in cells]}
    RECORDINGS.mkdir(parents=True, exist_ok=True)
    target = RECORDINGS / f"{source.stem}.json"
    target.write_text(json.dumps(recording, indent=1) + "\n")
    return target


def gpu_ready() -> str | None:
    """None when this machine can record; otherwise the reason, as one sentence."""
    import torch

    if not torch.cuda.is_available():
        return "No CUDA device here: run this on a machine with a GPU."
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed: install torch's CUDA build, which brings it."
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="two-digit numbers (05 09); all with GPU cells when none")
    parser.add_argument("--executed", type=pathlib.Path, help="keep each executed notebook in this folder")
    args = parser.parse_args(argv)
    if (reason := gpu_ready()) is not None:
        sys.exit(reason)
    failed = []
    for source in build_notebooks.all_sources():
        if gpu_cells(source) and (not args.notebooks or source.stem[:2] in args.notebooks):
            try:
                print("recorded", record(source, keep_in=args.executed).relative_to(ROOT), flush=True)
            except Exception as error:  # noqa: BLE001 - one notebook's failure must not hide the others'
                print(f"not recorded {source.stem}: {type(error).__name__}: {str(error)[-2000:]}", flush=True)
                failed.append(source.stem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
