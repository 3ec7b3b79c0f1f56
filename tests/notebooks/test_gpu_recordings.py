"""GPU recordings (labkit/gpu_recordings/*.json) say exactly what they are evidence of.

On any machine:
- every GPU cell declares what it needs (``# needs:``), and uses no name those cells do not bind;
- the label each GPU cell shows in the stored notebooks (current / earlier code / none) is true, checked here
  by comparing the notebook's sources with the recorded code directly, not through labkit.recordings;
- the label follows the code a kernel really ran (IPython's history), edits included.
Nothing here fails because a recording is old: an old recording is labelled, not blocked.
On a machine with CUDA and Triton: a fresh run prints what each current recording says, up to lines that name a
changing quantity.
"""

import ast
import builtins
import json
import re

import nbformat
import pytest
import record_gpu
from IPython.core.interactiveshell import InteractiveShell

from labkit import recordings, views

RECORDINGS = sorted(record_gpu.RECORDINGS.glob("*.json"))
SOURCES = {source.stem: source for source in record_gpu.build_notebooks.all_sources()}
GPU_SOURCES = [source for source in SOURCES.values() if record_gpu.gpu_cells(source)]
ENVIRONMENT_NAMES = {"torch", "labkit"}   # their versions are in the recording


def _titled_cells():
    return [(source, code) for source in SOURCES.values() for code in record_gpu.code_cells(source)
            if recordings.title(code) is not None]


def test_notebooks_with_gpu_cells_exist():
    assert GPU_SOURCES, "no notebook has a '# GPU cell' any more: drop this test file and tools/record_gpu.py"


@pytest.mark.parametrize("source", GPU_SOURCES, ids=lambda s: s.stem[:2])
def test_every_gpu_cell_shows_its_recording_without_a_gpu(source):
    """A CPU run of a GPU cell shows the recording, labelled, in one branch that comes first."""
    for code in record_gpu.gpu_cells(source):
        lines = [line for line in code.splitlines()[1:] if line.strip() and not line.lstrip().startswith("#")]
        assert lines[:2] == ["if not GPU:", "    labkit.show_gpu_recording()"], \
            f"{source.name}: {code.splitlines()[0]!r}: code starts 'if not GPU:' / 'labkit.show_gpu_recording()'"


def test_titles_are_unique_across_the_lab():
    """A kernel can run every notebook; a title names one cell in all of them (labkit finds cells by title)."""
    titles = [recordings.title(code) for _, code in _titled_cells()]
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)


@pytest.mark.parametrize("source", GPU_SOURCES, ids=lambda s: s.stem[:2])
def test_what_a_cell_needs_stands_above_it_in_its_notebook(source):
    seen = set()
    for code in record_gpu.code_cells(source):
        name = recordings.title(code)
        if name is None:
            continue
        missing = [need for need in recordings.needs(code) if need not in seen]
        assert not missing, f"{source.name}: {name!r} needs {missing}, which no titled cell above it has"
        seen.add(name)


def _bound_and_used(code: str) -> tuple[set, set]:
    tree = ast.parse(code)
    bound, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, used


@pytest.mark.parametrize("source", GPU_SOURCES, ids=lambda s: s.stem[:2])
def test_a_gpu_cell_uses_only_names_that_what_it_needs_binds(source):
    """What travels in names is covered: a GPU cell, and each cell it needs, reads only what the closure binds."""
    cells = record_gpu.titled(source)
    for code in record_gpu.gpu_cells(source):
        covered = recordings.closure(recordings.title(code), cells.get)
        bound = set().union(*(_bound_and_used(text)[0] for text in covered.values()))
        for name, text in covered.items():
            free = _bound_and_used(text)[1] - bound - set(dir(builtins)) - ENVIRONMENT_NAMES
            assert not free, (f"{source.name}: {name!r} (needed by {recordings.title(code)!r}) reads {sorted(free)}, "
                              "which no cell it needs binds: add that cell to '# needs:' (titled '# GPU setup: ...')")


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_a_recording_says_where_it_was_made_and_from_which_code(recording):
    data = json.loads(recording.read_text())
    assert data["format"] == recordings.FORMAT
    assert {"device", "torch", "triton", "labkit", "commit", "date", "notebook", "cells"} <= data.keys()
    assert data["device"] and data["triton"], "a recording comes from a machine with CUDA and Triton"
    for cell in data["cells"]:
        assert recordings.title(cell["code"][cell["title"]]) == cell["title"], "the cell's own code is kept"
        assert "did not run here" not in cell["output"], "a recording of a skipped cell is no recording"
    assert not recordings.problems()


def _expected_label(source, code, recorded: dict) -> tuple[str, list[str]]:
    """The label a Run All of this source must show, decided from the source and the JSON alone."""
    name = recordings.title(code)
    if name not in recorded:
        return "No GPU recording of this cell exists yet", []
    cells, pending, covered = record_gpu.titled(source), [name], {}
    while pending:
        title = pending.pop()
        if title not in covered:
            covered[title] = cells[title]
            pending += [n.strip() for n in (cells[title].split("\n")[1].removeprefix("# needs:").split(";")
                                            if cells[title].split("\n")[1].startswith("# needs:") else [])]
    differs = sorted(t for t in set(covered) | set(recorded[name]) if covered.get(t) != recorded[name].get(t))
    return ("Recorded from this code on" if not differs else "for an earlier version of this code"), differs


@pytest.mark.parametrize("source", GPU_SOURCES, ids=lambda s: s.stem[:2])
def test_the_label_each_gpu_cell_shows_is_true(source):
    """The stored notebook (what a reader opens) labels each GPU cell as its sources and the recording imply."""
    recorded = {cell["title"]: cell["code"] for path in RECORDINGS
                for cell in json.loads(path.read_text())["cells"]}
    notebook = nbformat.read(record_gpu.ROOT / "notebooks" / f"{source.stem}.ipynb", as_version=4)
    shown = {recordings.title(cell.source): record_gpu.printed_text(cell)
             for cell in notebook.cells if cell.cell_type == "code" and recordings.is_gpu_cell(cell.source)}
    for code in record_gpu.gpu_cells(source):
        phrase, differs = _expected_label(source, code, recorded)
        text = shown[recordings.title(code)]
        assert text.startswith("This kernel lacks ") and "so this cell did not run here" in text, text[:200]
        assert phrase in text.splitlines()[1], f"{recordings.title(code)!r}: expected {phrase!r}, shows {text[:300]!r}"
        for title in differs:
            mentioned = "this cell" if title == recordings.title(code) else f"'{title}'"
            assert mentioned in text.splitlines()[1], f"the label names what changed: {mentioned}"


def _sections(notebook) -> list[list]:
    """The notebook's cells cut at each markdown cell that holds a '## ' heading (a section's first cell)."""
    sections: list[list] = [[]]
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and re.search(r"^## ", cell.source, re.M):
            sections.append([])
        sections[-1].append(cell)
    return sections


def _a_cpu_lesson(cell) -> bool:
    """A code cell a CPU reader runs and sees: untitled (no GPU cell, no GPU setup), no collapsed check, and it
    printed or drew something."""
    shows = any(o.get("output_type") == "stream" and o.get("name") == "stdout" or "image/png" in o.get("data", {})
                for o in cell.get("outputs", []))
    return (cell.cell_type == "code" and shows and recordings.title(cell.source) is None
            and "check" not in cell.metadata.get("tags", []))


@pytest.mark.parametrize("source", GPU_SOURCES, ids=lambda s: s.stem[:2])
def test_a_cpu_reader_sees_no_diff_and_no_gpu_cell_without_a_cpu_lesson_beside_it(source):
    """What a reader without a GPU opens (the stored notebook): no GPU cell shows a maintainer's diff of the
    recorded code, and a GPU cell that has no recording to show follows a CPU lesson that ran here: in its section,
    after the last GPU cell there that showed a recording (what that lesson taught is not this cell's)."""
    notebook = nbformat.read(record_gpu.ROOT / "notebooks" / f"{source.stem}.ipynb", as_version=4)
    diffs = {status.title: status.diff for status in record_gpu.source_status(source)}
    for section in _sections(notebook):
        since_evidence = []
        for cell in section:
            if not (cell.cell_type == "code" and recordings.is_gpu_cell(cell.source)):
                since_evidence.append(cell)
                continue
            title = recordings.title(cell.source)
            shown = record_gpu.printed_text(cell) + "".join(o.get("data", {}).get("text/html", "")
                                                            for o in cell.get("outputs", []))
            assert "recorded code differs" not in shown, f"{title!r} shows a diff of the recorded code"
            diff_lines = [line for line in diffs[title] if line[:1] in "+-" and len(line) > 3]
            assert not [line for line in diff_lines if line in shown], f"{title!r} shows a line of the diff"
            if "No GPU recording of this cell exists yet" not in shown:
                since_evidence = []
            else:
                assert any(map(_a_cpu_lesson, since_evidence)), f"{title!r}: no recording, and no CPU lesson before it"


SETUP = "# GPU setup: t gpu flag\nGPU = False"
CELL = "# GPU cell: t the cell\n# needs: t gpu flag\nif not GPU:\n    labkit.show_gpu_recording()\nelse:\n    print(1)"


def test_the_label_follows_the_code_this_kernel_ran(capfd, tmp_path, monkeypatch):
    """In a real IPython shell, cells run without history as nbval runs them: the recorded code is current; a cell it
    needs, edited and re-run, makes it earlier code."""
    recording = {"format": recordings.FORMAT, "notebook": "99_t", "device": "GPU-X", "torch": "2.99", "triton": "9",
                 "labkit": "0.1.0", "commit": "abc", "date": "2026-01-01",
                 "cells": [{"title": "t the cell", "output": "1\n", "code": {"t the cell": CELL, "t gpu flag": SETUP}}]}
    (tmp_path / "99_t.json").write_text(json.dumps(recording))
    monkeypatch.setattr(recordings, "FOLDER", tmp_path)
    shell = InteractiveShell.instance()
    recordings.listen()      # what `import labkit` does in a kernel (labkit was imported here before the shell)
    try:
        for code in ("import labkit", SETUP, CELL):
            shell.run_cell(code, store_history=False)
        shown = capfd.readouterr().out
        assert "Recorded from this code on GPU-X (torch 2.99, Triton 9, labkit 0.1.0 at abc) on 2026-01-01" in shown
        for code in (SETUP + "  # a learner's edit", CELL):
            shell.run_cell(code, store_history=False)
        shown = capfd.readouterr().out
        assert "for an earlier version of this code: since then, 't gpu flag' changed (2 lines)" in shown
        assert "a learner's edit" not in shown, "a learner reads what changed, not a diff of it"
    finally:
        InteractiveShell.clear_instance()


def test_a_cell_with_no_recording_says_it_is_unverified():
    shown = views.gpu_recording_text(recordings.status("a cell nobody recorded", lambda _: None))
    assert shown.splitlines()[1].startswith("No GPU recording of this cell exists yet")


def test_show_gpu_recording_outside_a_gpu_cell_is_one_sentence(capsys):
    views.show_gpu_recording()
    assert capsys.readouterr().out.count("\n") == 1


def _comparable(text):
    """Printed lines without the ones that name per-run quantities (addresses, temporary paths)."""
    return [line for line in text.splitlines() if not any(word in line for word in ("0x", "/tmp/"))]


@pytest.mark.skipif(record_gpu.gpu_ready() is not None, reason="needs CUDA and Triton")
@pytest.mark.parametrize("source", GPU_SOURCES, ids=lambda s: s.stem[:2])
def test_a_fresh_gpu_run_prints_what_a_current_recording_says(source):
    """On another GPU or torch, a difference is a real finding: the message names both runs."""
    current = {status.title: status.recording for status in record_gpu.source_status(source)
               if status.kind == "current"}
    cells, environment = record_gpu.run(source)      # raises if any cell fails
    for cell in cells:
        recording = current.get(recordings.title(cell.source))
        if recording is not None:
            assert _comparable(record_gpu.printed_text(cell)) == _comparable(recording.output), (
                f"{recording.title}: recorded on {recording.where()}; "
                f"this run on {environment['device']}, torch {environment['torch']}")
