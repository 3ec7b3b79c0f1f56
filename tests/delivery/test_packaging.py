"""Requirements stay friendly to Colab (torch already there, ipywidgets 7.7) and Binder (CPU torch),
and the reference torch is stated once, in pyproject.toml's [tool.lab]."""

import os
import pathlib
import subprocess
import sys

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: requirements.txt installs tomli there
    import tomli as tomllib

from requirement_files import lines, requirements

from repo import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REFERENCE_TORCH = PYPROJECT["tool"]["lab"]["reference_torch"]


def _named(path, name):
    return [str(r) for r in requirements(ROOT / path) if r.name == name]


def test_torch_is_a_range_never_a_pin_for_users():
    """Which floor is written by tools/build_notebooks.py --facts; that it is a floor, never a pin, here."""
    for torch in (_named("requirements.txt", "torch"),
                  [d for d in PYPROJECT["project"]["dependencies"] if d.startswith("torch")]):
        assert len(torch) == 1 and torch[0].startswith("torch>=") and "," not in torch[0], torch


def test_ipywidgets_accepts_colabs_7_7():
    assert _named("requirements.txt", "ipywidgets") == ["ipywidgets<9,>=7.7"]
    assert "ipywidgets>=7.7,<9" in PYPROJECT["project"]["dependencies"]


def test_binder_installs_labkit():
    assert "-e ." in lines(ROOT / "binder" / "requirements.txt")  # its torch pin: tools/facts.py writes it


def test_the_lab_script_installs_the_reference_torch_from_pyproject():
    """./lab reads [tool.lab] reference_torch itself (no copy of the number in the script)."""
    lab = (ROOT / "lab").read_text()
    assert "whl/cpu" in lab and REFERENCE_TORCH not in lab
    printed = subprocess.run(["bash", "-c", "source <(sed -n '/^reference_torch()/,/^}/p' lab); reference_torch"],
                             cwd=ROOT, capture_output=True, text=True)
    assert printed.stdout.strip() == REFERENCE_TORCH, printed.stderr


def test_ci_runs_exactly_the_readme_test_command():
    assert "exec ./lab test" in (ROOT / ".ci" / "run").read_text()
    assert "./lab test" in (ROOT / "README.md").read_text()


def _lab_test_collects(*args: str, **extra_env: str) -> list[str]:
    """The node ids `./lab test --collect-only -q ARGS` lists, with this Python's virtual environment (as ./lab
    test runs it); skipped where ./lab's setup would install something first (a venv other than ./lab's, or one
    older than the requirements): a test does not download."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("not in a virtual environment: ./lab runs in one")
    stamps = {".lab-installed": "requirements.txt pyproject.toml", ".lab-tests-installed": "tests/requirements.txt"}
    for marker, files in stamps.items():
        stamp = subprocess.run(f"cat {files} | cksum", shell=True, cwd=ROOT, capture_output=True, text=True).stdout
        installed = pathlib.Path(sys.prefix, marker)
        if not installed.exists() or installed.read_text() != stamp:
            pytest.skip(f"./lab's setup would install first ({marker} is missing or stale): run ./lab test once")
    env = {**os.environ, "LAB_VENV": sys.prefix, "LAB_CI": "", **extra_env}   # as on a maintainer's machine
    done = subprocess.run(["bash", "./lab", "test", "--collect-only", "-q", "-n", "0", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow  # four runs of ./lab (its setup check, torch imported for nbval's mode, a collection): ~40 s
def test_lab_test_runs_only_the_paths_it_is_given_and_everything_without_one():
    """`./lab test tests/labkit/test_ops.py` is the fast loop: that file alone (it used to add tests/ and notebooks/
    to any path), a node id that one test, a notebook that notebook, run as in the suite. With no path,
    pyproject.toml's testpaths: both folders, and an option's value that happens to name a folder (-k notebooks)
    stays a value."""
    this_one = "tests/delivery/test_packaging.py::test_ci_runs_exactly_the_readme_test_command"
    named = _lab_test_collects("tests/labkit/test_ops.py", this_one, "notebooks/00_start_here.ipynb")
    assert this_one in named and {item.split("::")[0] for item in named} == {
        "tests/labkit/test_ops.py", "tests/delivery/test_packaging.py", "notebooks/00_start_here.ipynb"}
    assert len([item for item in named if item.startswith("tests/delivery/")]) == 1, named
    # a notebook named alone runs as in the suite: tests/conftest.py adds its second Run All
    cells = [item for item in named if item.startswith("notebooks/")]
    assert len(cells) % 2 == 0 and sum(item.endswith("(Run All again)") for item in cells) == len(cells) // 2
    everything = {item.split("::")[0] for item in _lab_test_collects("-k", "notebooks")}
    assert {path.split("/")[0] for path in everything} == {"tests", "notebooks"}, everything
    assert "tests/notebooks/test_sources.py" in everything and "notebooks/02_mutates_args.ipynb" in everything
    # pytest's cache: on here (--lf reruns what failed last), off in CI (a clean clone has nothing to remember)
    assert _lab_test_collects("--lf", "tests/labkit/test_describe.py")
    with pytest.raises(AssertionError, match="unrecognized arguments: --lf"):
        _lab_test_collects("--lf", "tests/labkit/test_describe.py", LAB_CI="1")
