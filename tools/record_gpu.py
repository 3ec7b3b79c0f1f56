"""Record what a notebook's GPU cells print on a machine with CUDA and Triton.

    python tools/record_gpu.py 05 09                    # writes labkit/gpu_recordings/<notebook>.json
    python tools/record_gpu.py 09 --into /tmp/new       # writes there instead (compare before replacing)
    python tools/record_gpu.py 09 --executed /tmp/runs  # also keeps each executed notebook, failed or not

A *GPU cell* is a code cell whose first line is ``# GPU cell: <what it shows>``. The notebook is built from its
source in tools/notebook_sources/ and executed in a fresh kernel, as nbval would; the text each GPU cell
printed is stored with the device, the torch and Triton versions (read inside that kernel) and the date,
so that a notebook can show it labelled "recorded on <device>, torch <version>, <date>" — never as its
own output. Each GPU cell's digest covers every code cell up to and including it: a recording is stale
once anything it ran has changed, not only the cell itself.

Without CUDA and Triton there is nothing true to record: the tool says so in one sentence and
exits with status 1, and it refuses to keep a run in which a GPU cell printed its "skipped" line.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import pathlib
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_notebooks  # noqa: E402  (a sibling tool, not a package)

sys.path.insert(0, str(ROOT))
from labkit.render import GPU_RECORDINGS  # noqa: E402  (where labkit reads them from)

RECORDINGS = GPU_RECORDINGS          # inside labkit, as package data: Colab has them too
MARKER = "# GPU cell"
ENV_MARK = "@@gpu-recording-environment@@"
# Appended to the notebook before it runs: the kernel itself says what it ran on.
ENVIRONMENT_CELL = f"""
import datetime as _dt, importlib.util as _iu, json as _json, torch as _torch
print({ENV_MARK!r} + _json.dumps({{
    "device": _torch.cuda.get_device_name(0) if _torch.cuda.is_available() else None,
    "torch": _torch.__version__,
    "triton": __import__("triton").__version__ if _iu.find_spec("triton") else None,
    "date": _dt.date.today().isoformat()}}))
"""


def is_gpu_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(MARKER)


def gpu_cells_with_digests(source: pathlib.Path) -> list[tuple]:
    """Each GPU cell of a notebook source, in order, with the digest of every code cell up to it."""
    running, found = hashlib.sha256(), []
    for cell in build_notebooks.source_cells(source):
        if cell.cell_type != "code":
            continue
        running.update(cell.source.encode() + b"\0")
        if is_gpu_cell(cell):
            found.append((cell, running.copy().hexdigest()[:16]))
    return found


def gpu_cells(source: pathlib.Path) -> list:
    """The GPU cells of a notebook source, in order."""
    return [cell for cell, _ in gpu_cells_with_digests(source)]


def printed_text(cell) -> str:
    """What a cell printed (stream output), which is what a recording keeps."""
    return "".join(output.get("text", "") for output in cell.get("outputs", [])
                   if output.get("output_type") == "stream" and output.get("name") == "stdout")


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
    return [cell for cell in nb.cells if is_gpu_cell(cell)], environment


def record(source: pathlib.Path, into: pathlib.Path = RECORDINGS, keep_in: pathlib.Path | None = None) -> pathlib.Path:
    cells, environment = run(source, keep_in=keep_in)
    skipped = [cell.source.splitlines()[0] for cell in cells if printed_text(cell).startswith("skipped")]
    if skipped or environment["device"] is None:
        raise RuntimeError(f"the kernel ran without a GPU ({skipped[0] if skipped else 'no CUDA'}): not recorded")
    digests = [digest for _, digest in gpu_cells_with_digests(source)]
    recording = {**environment, "notebook": source.stem,
                 "cells": [{"digest": digest, "first_line": cell.source.splitlines()[0], "output": printed_text(cell)}
                           for cell, digest in zip(cells, digests, strict=True)]}
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{source.stem}.json"
    with tempfile.NamedTemporaryFile("w", dir=into, suffix=".tmp", delete=False) as handle:
        handle.write(json.dumps(recording, indent=1) + "\n")
    os.replace(handle.name, target)       # readers (a notebook running beside this) never see half a file
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
    parser.add_argument("--into", type=pathlib.Path, default=RECORDINGS, help="where to write the recordings")
    parser.add_argument("--executed", type=pathlib.Path, help="keep each executed notebook in this folder")
    args = parser.parse_args(argv)
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
