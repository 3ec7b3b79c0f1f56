"""GPU recordings (labkit/gpu_recordings/*.json) stay true to the notebooks they were recorded from.

On any machine: every recording names cells that still exist unchanged (a recording of a cell
that has since been edited is stale and must be re-recorded), and says where it was made.
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
    assert {"device", "torch", "date", "cells"} <= data.keys()
    source = SOURCES.get(data["notebook"])
    assert source is not None, f"{recording.name} records {data['notebook']}, which no longer exists"
    current = [record_gpu.cell_digest(cell.source) for cell in record_gpu.gpu_cells(source)]
    recorded = [cell["digest"] for cell in data["cells"]]
    assert recorded == current, f"{recording.name} is stale: re-run python tools/record_gpu.py {source.stem[:2]}"


def _comparable(text):
    """Printed lines without the ones that name per-run quantities (addresses, timings, temp paths)."""
    return [line for line in text.splitlines() if not any(word in line for word in ("0x", "/tmp/", " s "))]


@pytest.mark.skipif(record_gpu.gpu_ready() is not None, reason="needs CUDA and Triton")
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_a_fresh_gpu_run_prints_what_was_recorded(recording):
    data = json.loads(recording.read_text())
    cells = record_gpu.run(SOURCES[data["notebook"]])      # raises if any cell fails
    for cell, recorded in zip(cells, data["cells"]):
        assert _comparable(record_gpu.printed_text(cell)) == _comparable(recorded["output"]), cell.source.splitlines()[0]
