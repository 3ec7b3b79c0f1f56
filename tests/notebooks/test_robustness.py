"""Notebooks survive what learners do: Run All twice, and running after the other notebooks in one kernel.

Run All twice: ``./lab test`` runs every code cell of each notebook a second time after its last, in the kernel
nbval started for it (tests/conftest.py, ``RunAllAgainCell``); the tests below check that this covers all thirteen and
the translations, and that a cell which fails only on its second run fails the suite.
"""

import json
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from repo import ROOT

NOTEBOOKS = [ROOT / "notebooks" / f"{source.stem}.ipynb"
             for source in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))]
# The translations (notebooks/zh-CN/): run twice by the suite like the rest; their code is the English notebook's,
# so the one-kernel test below runs the English ones only.
TRANSLATED = [ROOT / "notebooks" / source.parent.name / f"{source.stem}.ipynb"
              for source in sorted((ROOT / "lessons").glob("*/[0-9][0-9]_*.py"))]


def _errors(cell) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for o in cell.get("outputs", []) if o.get("output_type") == "error"]


# Notebooks run a second time in the cross-notebook kernel: 00-03, the lessons whose ops every later one builds on,
# run again after all the others. Every notebook's own second Run All is a test of its own (see above).
RERUN_BELOW = "04"


def _collect(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--nbval-lax", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow  # a pytest collection of all the notebooks in a child process
def test_the_suite_runs_every_notebook_twice_each_in_its_own_kernel():
    """Every code cell of every notebook, again, after that notebook's last cell (same file: same kernel, same
    worker); ./lab quick (-m "not slow") leaves the second runs out."""
    ids = _collect("notebooks", "tests/notebooks/test_robustness.py")
    quick = _collect("notebooks", "tests/notebooks/test_robustness.py", "-m", "not slow")
    assert len(NOTEBOOKS) == len(list((ROOT / "lessons").glob("[0-9][0-9]_*.py"))) >= 13 and TRANSLATED
    for path in NOTEBOOKS + TRANSLATED:
        code_cells = sum(cell["cell_type"] == "code" for cell in json.loads(path.read_text())["cells"])
        name = path.relative_to(ROOT).as_posix()
        mine = [i.split("::", 1)[1] for i in ids if i.startswith(f"{name}::")]
        first = [f"Cell {n}" for n in range(code_cells)]
        assert mine == first + [f"{cell} (Run All again)" for cell in first], f"{name}: {mine}"
        assert [i.split("::", 1)[1] for i in quick if i.startswith(f"{name}::")] == first, name


@pytest.mark.slow  # a pytest run in a child process, with a kernel
def test_a_cell_that_fails_only_on_the_second_run_fails_the_suite(tmp_path):
    """A notebook whose cell defines what it first checks is absent passes one Run All and fails the second."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("assert 'seen' not in globals()\nseen = 1"),
                                               nbformat.v4.new_code_cell("print('fine')")])
    nbformat.write(notebook, tmp_path / "twice.ipynb")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "conftest", "--nbval-lax",
                           "--nbval-current-env", "-rA", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                           str(tmp_path / "twice.ipynb")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    results = sorted(re.findall(r"^(PASSED|FAILED) \S*::(Cell \d+(?: \(Run All again\))?)", done.stdout, re.M))
    assert results == [("FAILED", "Cell 0 (Run All again)"), ("PASSED", "Cell 0"), ("PASSED", "Cell 1"),
                       ("PASSED", "Cell 1 (Run All again)")], done.stdout[-3000:]


@pytest.mark.slow  # sixteen notebook runs: the longest test of the suite
def test_all_notebooks_in_one_kernel_in_reverse_order_each_run_twice():
    """The hardest order: later notebooks first, then every cell of notebooks 00-03 a second time.

    Custom-op re-registration, stale handles and leftover compile state are the usual culprits.
    """
    notebooks = [nbformat.read(path, 4) for path in reversed(NOTEBOOKS)]
    host = nbformat.v4.new_notebook()
    client = NotebookClient(host, timeout=900, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    problems = []
    with client.setup_kernel():
        for path, nb in zip(reversed(NOTEBOOKS), notebooks):
            for attempt in ("first run", "second run")[:2 if path.name < RERUN_BELOW else 1]:
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type != "code":
                        continue
                    cell = nbformat.from_dict(dict(cell, outputs=[]))
                    client.nb.cells = [cell]
                    client.execute_cell(cell, 0)
                    problems += [f"{path.name} cell {index} ({attempt}): {e}" for e in _errors(cell)]
    assert not problems, "\n".join(problems)
