"""The workshop pre-flight: ``python -m labkit.preflight`` (labkit/preflight.py), and ``python3 preflight.py``, the
lab folder's script for any Python 3, which hands a Python without torch over to the lab's .venv or says, in one
line, what to run. Each runs a notebook's first cells in a fresh kernel and leaves no temporary folder behind.
"""

import os
import shutil
import subprocess
import sys

import pytest

from labkit import preflight
from repo import ROOT


def test_preflight_reports_a_crashing_kernel_in_one_sentence():
    problem = preflight.first_cells_in_child("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert problem is not None and "crashed (SIGSEGV)" in problem and problem.count(". ") == 0


@pytest.mark.parametrize("code", [
    "import os, pathlib; pathlib.Path(os.environ['TORCHINDUCTOR_CACHE_DIR'], 'k').write_text('x')",
    "import pathlib, tempfile; pathlib.Path(tempfile.gettempdir(), 'pch').write_text('x')",
    "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
    "raise SystemExit('failed')",
])
def test_preflight_leaves_no_temporary_folder_behind(tmp_path, monkeypatch, code):
    """Its cache folder, and what the child writes to its temporary folder (Inductor's precompiled headers)."""
    monkeypatch.setattr(preflight.tempfile, "tempdir", str(tmp_path))  # where mkdtemp and its kin make folders
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the child's default, were it not given its own
    preflight.first_cells_in_child(code)
    assert list(tmp_path.iterdir()) == []


def test_preflight_passes_here_and_runs_a_notebooks_first_cells_in_a_fresh_kernel(capsys, monkeypatch):
    """One preflight run (its fresh-kernel child takes seconds) for both checks. The child checks, as a
    learner's first kernel does, which vector instructions the compiler builds (./lab test skips that)."""
    monkeypatch.delenv("TORCHINDUCTOR_VEC_ISA_OK", raising=False)
    assert preflight.run()
    out = capsys.readouterr().out
    assert "ready" in out
    # first_cells_in_child() is None
    assert "✔ a fresh kernel runs labkit.setup() and its first Inductor compile" in out


# Prints which it is; a broken shim (pyenv's, with no version selected) prints neither and exits non-zero.
_HAS_TORCH = "try:\n    import torch\nexcept ModuleNotFoundError:\n    print('no torch')\nelse:\n    print('torch')"


def _python_without_torch() -> str | None:
    """A working Python on this machine that has no torch (the system one, on CI's machine), or None. A ``python3``
    that runs no Python at all (a maintainer's broken pyenv shim first on PATH) is passed over, not taken for one
    without torch."""
    for name in ("python3", "python3.11", "python3.12", "python3.10"):
        path = shutil.which(name)
        if not path:
            continue
        said = subprocess.run([path, "-c", _HAS_TORCH], capture_output=True, text=True, timeout=60)
        if said.returncode == 0 and said.stdout.strip() == "no torch":
            return path
    return None


def test_a_broken_python3_first_on_path_is_not_taken_for_a_python_without_torch(tmp_path, monkeypatch):
    """Issue 77: four tests below ran a maintainer's broken pyenv shim as "a Python without torch" and failed."""
    shim = tmp_path / "python3"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert shutil.which("python3") == str(shim), "the shim is first on PATH"
    found = _python_without_torch()
    assert found != str(shim)
    if found is not None:   # what it found runs, and has no torch
        assert subprocess.run([found, "-c", _HAS_TORCH], capture_output=True, text=True).stdout.strip() == "no torch"


@pytest.mark.skipif(_python_without_torch() is None, reason="every Python here has torch")
def test_preflight_on_a_python_without_torch_is_one_sentence():
    """`python -m labkit.preflight`, the form an instructor lists first, run with the wrong Python: its own ✘ line."""
    done = subprocess.run([_python_without_torch(), "-m", "labkit.preflight"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 1
    assert done.stdout.startswith("✘ torch is not installed in this Python") and done.stdout.count("\n") == 1
    assert done.stderr == "", "no traceback"


def _without_pythonpath() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.mark.skipif(_python_without_torch() is None, reason="every Python here has torch")
def test_the_lab_folders_preflight_script_on_a_python_without_torch_or_labkit_is_one_sentence(tmp_path):
    """`python3 preflight.py`, run with a Python that has neither torch nor labkit, where ./lab has not made
    .venv yet (the script alone, called by its path from another folder): its own ✘ line, no traceback."""
    shutil.copy(ROOT / "preflight.py", tmp_path / "preflight.py")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([_python_without_torch(), str(tmp_path / "preflight.py")], cwd=elsewhere,
                          capture_output=True, text=True, timeout=60, env=_without_pythonpath())
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert done.stdout.startswith("✘ torch is not installed in this Python") and done.stdout.count("\n") == 1
    assert "run ./lab once in the lab's folder" in done.stdout


@pytest.mark.skipif(_python_without_torch() is None, reason="every Python here has torch")
def test_the_lab_folders_preflight_script_hands_a_python_without_torch_to_the_labs_venv(tmp_path):
    """Where ./lab made .venv, the script runs the check with .venv's Python, from the lab's folder."""
    shutil.copy(ROOT / "preflight.py", tmp_path / "preflight.py")
    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text('#!/bin/sh\necho "venv python: $* in $(pwd)"\nexit 3\n')
    venv_python.chmod(0o755)
    done = subprocess.run([_python_without_torch(), str(tmp_path / "preflight.py")], cwd=ROOT.parent,
                          capture_output=True, text=True, timeout=60, env=_without_pythonpath())
    assert done.returncode == 3, done.stdout + done.stderr
    assert "has no torch: checking with the lab's .venv/bin/python" in done.stdout
    assert f"venv python: -m labkit.preflight in {tmp_path}" in done.stdout


def test_the_lab_folders_preflight_script_runs_the_check_with_a_python_that_has_torch(monkeypatch, capsys):
    """With torch, `python3 preflight.py` is labkit.preflight.run() (not run again here: its result is passed on)."""
    import runpy

    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts the lab's folder first
    for result, status in ((True, 0), (False, 1)):
        monkeypatch.setattr(preflight, "run", lambda result=result: result)
        with pytest.raises(SystemExit) as exited:
            runpy.run_path(str(ROOT / "preflight.py"), run_name="__main__")
        assert exited.value.code == status


@pytest.mark.skipif(_python_without_torch() is None, reason="every Python here has torch")
def test_the_lab_folders_preflight_script_hands_over_to_a_real_venv_made_from_the_same_python(tmp_path):
    """A venv's python is a link to the Python that made it (./lab makes .venv from python3): still .venv's."""
    shutil.copy(ROOT / "preflight.py", tmp_path / "preflight.py")
    made = subprocess.run([_python_without_torch(), "-m", "venv", "--without-pip", str(tmp_path / ".venv")],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    done = subprocess.run([_python_without_torch(), str(tmp_path / "preflight.py")], cwd=ROOT.parent,
                          capture_output=True, text=True, timeout=60, env=_without_pythonpath())
    assert "has no torch: checking with the lab's .venv/bin/python" in done.stdout, done.stdout + done.stderr
    assert done.returncode != 0  # that .venv has no labkit: -m labkit.preflight fails there, as it should
