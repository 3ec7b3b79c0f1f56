"""Every notebook matches its source, carries no stored errors, and follows the lab's shape."""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_notebooks_match_their_sources():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_notebooks.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_each_notebook_has_the_teaching_shape():
    assert NOTEBOOKS
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for part in ("What you will learn", "Time:", "Exercise", "What to remember"):
            assert part in markdown, f"{path.name} lacks '{part}'"
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(c["execution_count"] is not None for c in code), f"{path.name} has unexecuted cells"
        assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"], path.name
        assert any("assert " in "".join(c["source"]) for c in code), f"{path.name} asserts nothing"
