"""tests/ stays a folder of test files, never a package: tests/conftest.py refuses to start while a folder of it
holds an ``__init__.py`` (tests/labkit would shadow labkit, tests/torch torch)."""

import subprocess
import sys

from conftest import packages_under
from repo import ROOT


def test_packages_under_names_each_folder_with_an_init_and_only_those(tmp_path):
    tests = tmp_path / "tests"
    for folder in ("labkit", "torch", "notebooks"):
        (tests / folder).mkdir(parents=True)
    assert packages_under(tests) == []
    (tests / "torch" / "__init__.py").write_text("")
    (tests / "__init__.py").write_text("")
    assert packages_under(tests) == ["tests", "tests/torch"]


def test_the_suite_refuses_to_start_in_one_sentence_while_tests_holds_an_init(tmp_path):
    """The real conftest on a copy of tests/ with an __init__.py added: pytest stops, naming the file to delete."""
    import shutil

    copy = tmp_path / "lab"
    shutil.copytree(ROOT / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "tests" / "torch" / "__init__.py").write_text("")
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/torch"], cwd=copy, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "tests/torch/__init__.py: delete it" in done.stdout + done.stderr, (done.stdout + done.stderr)[-2000:]


def test_tests_conftest_is_the_lab_s_only_conftest():
    """./lab test loads tests/conftest.py as a plugin with --noconftest (so that `./lab test notebooks/02_...ipynb`
    runs the notebook as the suite does, twice): a conftest.py anywhere else would be silently left out there."""
    found = sorted(str(path.relative_to(ROOT)) for folder in ("tests", "notebooks", "lessons", "tools", "labkit")
                   for path in (ROOT / folder).rglob("conftest.py")) + (["conftest.py"] if (ROOT / "conftest.py")
                                                                        .exists() else [])
    assert found == ["tests/conftest.py"], f"{found}: put its fixtures and hooks in tests/conftest.py"
    lab = (ROOT / "lab").read_text()
    assert "-m pytest -p conftest --noconftest" in lab
