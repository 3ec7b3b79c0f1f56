"""tools/gpu_runs.py: a GPU run's summary is read from what gpu_check.sh wrote, and README's table from the
summaries, marking a notebook changed since its run. No GPU needed: the folder is what the script writes."""

import json

import gpu_runs
import pytest

LOG = """GPU 0: NVIDIA H200 (UUID: GPU-x)
=== preflight: rc 0, 97 s
=== nbval_lax: rc 124, 240 s
"""
CELLS = """[gw1] [ 4%] PASSED notebooks/08_training_with_custom_ops::ipynb::Cell 0
[gw1] [ 4%] PASSED notebooks/08_training_with_custom_ops::ipynb::Cell 1
[gw2] [ 5%] FAILED notebooks/04_names_and_caches::ipynb::Cell 0
[gw2] [ 5%] PASSED notebooks/04_names_and_caches::ipynb::Cell 1
"""


def _out(tmp_path):
    (tmp_path / "recordings").mkdir()
    (tmp_path / "gpu_check.log").write_text(LOG)
    (tmp_path / "nbval_cells.log").write_text(CELLS)
    return tmp_path


def test_a_summary_counts_each_notebooks_cells_and_the_steps(tmp_path):
    sources = {"04_names_and_caches": "a", "08_training_with_custom_ops": "b", "10_beyond_the_shape": "c"}
    run = gpu_runs.summary(_out(tmp_path), {"device": "NVIDIA H200"}, sources,
                           {"04_names_and_caches": 3, "08_training_with_custom_ops": 2, "10_beyond_the_shape": 5})
    assert run["notebooks"]["04_names_and_caches"] == {"cells": 3, "passed": 1, "failed": 1,
                                                       "source": gpu_runs.source_digest("a")}
    assert run["notebooks"]["08_training_with_custom_ops"]["passed"] == 2
    assert run["notebooks"]["10_beyond_the_shape"]["passed"] == 0
    assert run["steps"] == {"preflight": {"rc": 0, "seconds": 97}, "nbval_lax": {"rc": 124, "seconds": 240}}


@pytest.mark.parametrize("entry, said", [
    ({"cells": 3, "passed": 3, "failed": 0}, "every cell passed (3)"),
    ({"cells": 24, "passed": 8, "failed": 0}, "the first 8 of 24 cells passed, then the run's time ran out"),
    ({"cells": 3, "passed": 1, "failed": 1}, "1 of 3 cells failed"),
])
def test_a_result_says_what_ran(entry, said):
    assert gpu_runs.result(entry) == said


def test_the_table_marks_a_notebook_whose_source_changed_since_its_run(tmp_path):
    (tmp_path / "lessons").mkdir(parents=True)
    (tmp_path / "docs" / "gpu-runs").mkdir(parents=True)
    for stem, text in (("00_a", "same"), ("01_b", "now"), ("02_c", "never run")):
        (tmp_path / "lessons" / f"{stem}.py").write_text(text)
    run = {"date": "2026-11-30", "device": "GPU-X", "torch": "2.99", "notebooks": {
        "00_a": {"cells": 2, "passed": 2, "failed": 0, "source": gpu_runs.source_digest("same")},
        "01_b": {"cells": 2, "passed": 2, "failed": 0, "source": gpu_runs.source_digest("then")}}}
    (tmp_path / "docs" / "gpu-runs" / "2026-11-30-GPU-X-run1.json").write_text(json.dumps(run))
    rows = gpu_runs.table(tmp_path)[2:]
    assert rows == ["| 00 | 2026-11-30, GPU-X, torch 2.99 | every cell passed (2) | the same |",
                    "| 01 | 2026-11-30, GPU-X, torch 2.99 | every cell passed (2) | changed |",
                    "| 02 | never | — | — |"]


def test_take_refuses_a_run_that_had_no_gpu(tmp_path):
    (tmp_path / "gpu-run.json").write_text(json.dumps({"device": None}))
    with pytest.raises(SystemExit, match="had no GPU"):
        gpu_runs.take(tmp_path)


def test_the_gpu_room_note_groups_by_device_and_names_what_never_ran_or_changed(tmp_path):
    """INSTRUCTORS.md's GPU-room note is made from the same summaries as the table."""
    (tmp_path / "lessons").mkdir(parents=True)
    (tmp_path / "docs" / "gpu-runs").mkdir(parents=True)
    texts = {"00_a": "# %%\nprint('cpu')\n", "01_b": "# %%\n# GPU cell: a kernel\nprint(1)\n", "02_c": "never run",
             "03_d": "cut short"}
    for stem, text in texts.items():
        (tmp_path / "lessons" / f"{stem}.py").write_text(text)
    run = {"date": "2026-11-30", "device": "GPU-X", "torch": "2.99", "notebooks": {
        "00_a": {"cells": 2, "passed": 2, "failed": 0, "source": gpu_runs.source_digest(texts["00_a"])},
        "01_b": {"cells": 2, "passed": 2, "failed": 0, "source": gpu_runs.source_digest("older")},
        "03_d": {"cells": 9, "passed": 3, "failed": 0, "source": gpu_runs.source_digest(texts["03_d"])}}}
    (tmp_path / "docs" / "gpu-runs" / "2026-11-30-GPU-X-run1.json").write_text(json.dumps(run))
    assert gpu_runs.room(tmp_path) == [
        "- Notebooks with GPU cells (they run on a GPU; on a CPU each shows a GPU's recording, labelled, or says "
        "that none exists): 01.",
        "- On GPU-X, torch 2.99 (2026-11-30): every cell of 00, 01 passed; "
        "03: the first 3 of 9 cells passed, then the run's time ran out.",
        "- Never run on a GPU: 02.",
        "- Changed since their last GPU run (the evidence is for older code): 01."]


def test_instructors_carries_the_gpu_room_note_of_the_kept_runs():
    """The note an instructor reads is the one the GPU runs make (--facts writes it, --check keeps it true)."""
    text = (gpu_runs.ROOT / "INSTRUCTORS.md").read_text()
    region = text.split("<!-- BEGIN gpu-room:", 1)[1].split("<!-- END gpu-room -->", 1)[0]
    assert region.splitlines()[2:-1] == gpu_runs.room(gpu_runs.ROOT)
    assert (gpu_runs.ROOT / "README.md").read_text().count("INSTRUCTORS.md#a-room-with-gpus") == 1
    assert "\n## A room with GPUs\n" in text
