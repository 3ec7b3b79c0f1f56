"""GPU recordings (labkit/gpu_recordings/*.json) stay true to the notebooks they were recorded from.

On any machine: every recording matches the code it ran — each GPU cell's digest covers every code
cell up to and including it, so an edit to any of them makes the recording stale — and says where it
was made.
On a machine with CUDA and Triton: a fresh run of the notebook passes, and prints what the
recording says each GPU cell printed, up to lines that name a changing quantity.
"""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import record_gpu  # noqa: E402

from labkit import render  # noqa: E402

RECORDINGS = sorted(record_gpu.RECORDINGS.glob("*.json"))
SOURCES = {source.stem: source for source in record_gpu.build_notebooks.all_sources()}


def test_notebooks_with_gpu_cells_skip_them_in_one_line_without_a_gpu():
    """Each GPU cell starts by checking for the GPU, so that a CPU run prints one line and goes on."""
    gpu_sources = [source for source in SOURCES.values() if record_gpu.gpu_cells(source)]
    assert gpu_sources, "no notebook has a '# GPU cell' any more: drop this test or the tool"
    for source in gpu_sources:
        for cell in record_gpu.gpu_cells(source):
            lines = cell.source.splitlines()
            assert lines[1] == "if not GPU:" and lines[2].strip().startswith('print("skipped'), \
                f"{source.name}: the GPU cell {lines[0]!r} must start with 'if not GPU: print(\"skipped: ...\")'"


@pytest.mark.skipif(not RECORDINGS, reason="no GPU recording exists yet")
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_a_recording_matches_the_cells_it_was_made_from(recording):
    data = json.loads(recording.read_text())
    assert {"device", "torch", "triton", "date", "notebook", "cells"} <= data.keys()
    source = SOURCES.get(data["notebook"])
    assert source is not None, f"{recording.name} records {data['notebook']}, which no longer exists"
    current = [digest for _, digest in record_gpu.gpu_cells_with_digests(source)]
    recorded = [cell["digest"] for cell in data["cells"]]
    assert recorded == current, (
        f"{recording.name} is stale: a code cell up to one of its GPU cells changed. Re-record on a GPU "
        f"(python tools/record_gpu.py {source.stem[:2]}), or delete the recording: the notebook then says none exists.")
    assert not any(cell["output"].startswith("skipped") for cell in data["cells"])
    shown = render.gpu_recording(data["notebook"])          # what a CPU reader sees
    assert shown.startswith(f"Recorded on {data['device']}, torch {data['torch']}")


def _comparable(text):
    """Printed lines without the ones that name per-run quantities (addresses, temporary paths)."""
    return [line for line in text.splitlines() if not any(word in line for word in ("0x", "/tmp/"))]


@pytest.mark.skipif(record_gpu.gpu_ready() is not None, reason="needs CUDA and Triton")
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_a_fresh_gpu_run_prints_what_was_recorded(recording):
    """On another GPU or torch, a difference is a real finding: the message names both runs."""
    data = json.loads(recording.read_text())
    cells, environment = record_gpu.run(SOURCES[data["notebook"]])      # raises if any cell fails
    assert len(cells) == len(data["cells"])
    for cell, recorded in zip(cells, data["cells"]):
        assert _comparable(record_gpu.printed_text(cell)) == _comparable(recorded["output"]), (
            f"{cell.source.splitlines()[0]}: recorded on {data['device']}, torch {data['torch']}; "
            f"this run on {environment['device']}, torch {environment['torch']}")


PENDING = sorted((ROOT / "tools").glob("gpu_pending*.patch"))


@pytest.mark.parametrize("patch", PENDING, ids=lambda p: p.name)
def test_a_patch_waiting_for_a_gpu_still_applies(patch):
    """Edits to digest-covered cells wait in tools/gpu_pending*.patch for a session that can re-record
    (docs/notebook-style.md says how). Once a change to main breaks one, it fails here, not on the GPU."""
    import subprocess

    done = subprocess.run(["git", "apply", "--check", str(patch)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, (
        f"{patch.name} no longer applies to this checkout. Redo it in a scratch worktree: git worktree add "
        f"/tmp/redo && cd /tmp/redo && git apply -3 tools/{patch.name}, resolve the conflicts, then "
        f"git diff HEAD -- tools/notebook_sources tests docs > <this checkout>/tools/{patch.name}.\n"
        f"{done.stderr[-1500:]}")
