"""Every notebook matches its source, carries no stored errors, and follows the lab's shape."""

import json
import re
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "tools" / "notebook_sources").glob("[0-9][0-9]_*.py"))
NOTEBOOKS = [ROOT / "notebooks" / f"{source.stem}.ipynb" for source in SOURCES]


def _check(root: pathlib.Path, *names: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "tools" / "build_notebooks.py"), "--check", *names],
                          capture_output=True, text=True, timeout=120)


def test_notebooks_match_their_sources():
    done = _check(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_executes_nothing_and_names_the_notebook_whose_source_changed(tmp_path):
    """--check compares cells only: a changed source fails it with one line naming that notebook,
    and no notebook is rebuilt (--check 02 used to re-execute notebook 02 over the stored one)."""
    for folder in ("tools", "notebooks"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    source = tmp_path / "tools" / "notebook_sources" / SOURCES[2].name
    source.write_text(source.read_text() + "\n# %%\nprint('a new cell')\n")
    stored = (tmp_path / "notebooks" / NOTEBOOKS[2].name).read_bytes()

    everything, only_that_one, another_one = _check(tmp_path), _check(tmp_path, SOURCES[2].stem[:2]), \
        _check(tmp_path, SOURCES[0].stem[:2])
    assert everything.returncode == only_that_one.returncode == 1
    assert everything.stdout.splitlines() == only_that_one.stdout.splitlines()
    assert len(everything.stdout.splitlines()) == 1 and NOTEBOOKS[2].name in everything.stdout
    assert another_one.returncode == 0, another_one.stdout
    assert (tmp_path / "notebooks" / NOTEBOOKS[2].name).read_bytes() == stored


def test_an_unknown_notebook_gets_one_sentence():
    done = _check(ROOT, "99")
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0 and "No notebook '99'" in done.stderr


def test_each_notebook_has_the_teaching_shape():
    assert NOTEBOOKS
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for part in ("What you will learn", "Time:", "Exercise", "In your own project", "What to remember",
                     "Question", "Further reading"):
            assert part in markdown, f"{path.name} lacks '{part}'"
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert re.search(r"torch\.library\.|torch\.compile\(|set_logs|TORCH_LOGS", source), \
            f"{path.name} shows no plain torch (torch.library, torch.compile, set_logs)"
        assert "https://" in markdown, f"{path.name} links nothing to read further"
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(c["execution_count"] is not None for c in code), f"{path.name} has unexecuted cells"
        assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"], path.name
        assert any("assert " in "".join(c["source"]) for c in code), f"{path.name} asserts nothing"
