"""ruff (configured in pyproject.toml [tool.ruff]) finds nothing in the lab's Python code."""
import subprocess
import sys

import pytest

from repo import ROOT

PATHS = ["labkit", "labkit_pytest.py", "lessons", "tests", "tools", "benchmarks", "preflight.py"]


def _ruff(*args, cwd=ROOT):
    try:
        import ruff  # noqa: F401
    except ImportError:
        pytest.fail("ruff is not installed: install tests/requirements.txt (pip install -r tests/requirements.txt).")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True)


def test_ruff_finds_nothing():
    r = _ruff("check", "--output-format", "concise", "--no-cache", *PATHS)
    assert r.returncode == 0, f"ruff found problems:\n{r.stdout}{r.stderr}"


def test_ruff_check_is_not_vacuous(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    r = _ruff("check", "--output-format", "concise", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
              str(bad), cwd=tmp_path)
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr


def test_ruff_lints_every_lesson_and_every_python_file_the_lab_tracks():
    """What ruff reads is every tracked .py file: a folder left out of pyproject.toml's include, or of PATHS
    (the lessons when they moved from tools/ to lessons/), would otherwise stop being linted without a word."""
    listed = _ruff("check", "--show-files", "--no-cache", *PATHS)
    linted = {line.strip().removeprefix(str(ROOT) + "/") for line in listed.stdout.splitlines() if line.strip()}
    lessons = {f"lessons/{p.name}" for p in (ROOT / "lessons").glob("[0-9][0-9]_*.py")}
    assert lessons and lessons <= linted, sorted(lessons - linted)
    try:
        tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    except OSError:
        tracked = []
    if not tracked:
        pytest.skip("not a git checkout (or no git): no list of the lab's files to compare with")
    assert set(tracked) - linted == set(), ("ruff does not lint these: add their folder to pyproject.toml's include "
                                            "and to PATHS here (a top-level file: to PATHS)")
