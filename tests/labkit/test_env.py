import os
import shutil
import subprocess
import sys
import threading

import pytest
import torch

import labkit
from labkit import _torch_internals as internals
from labkit import env, preflight, warmup
from labkit.env import TorchTooOld, check_torch, torch_version

from repo import ROOT


def test_version_parsing():
    assert torch_version("2.13.0+cpu") == (2, 13, 0)
    assert torch_version("2.6.0.dev20241001") == (2, 6, 0)
    assert torch_version("3") == (3, 0, 0)


@pytest.mark.parametrize("old", ["2.9.1", "2.6.0", "2.5.1+cu121", "1.13.0"])
def test_too_old_torch_gets_one_sentence(old):
    with pytest.raises(TorchTooOld) as info:
        check_torch(old)
    message = str(info.value)
    need = env.minimum_torch_text()
    assert message.count(". ") == 0 and f"pip install -U 'torch>={need}'" in message and old in message


def test_this_torch_has_every_private_name_labkit_imports():
    assert internals.missing_private_names() == []


# MINIMUM_TORCH, CHECKED_ON, the dependency floors and README's sentence are written from pyproject's
# [tool.lab] and docs/torch-versions.json by tools/build_notebooks.py --facts, which also refuses a
# minimum that is not the table's oldest passing release; tests/test_notebooks_sources.py checks they
# are current. What is left to check here is the measurement itself.


def test_checked_on_is_a_measured_range_and_the_table_says_so():
    assert list(internals.CHECKED_ON) == sorted(internals.CHECKED_ON, key=torch_version) and internals.CHECKED_ON
    assert torch_version(internals.CHECKED_ON[0])[:2] == env.MINIMUM_TORCH
    table = (ROOT / "docs" / "torch-versions.md").read_text()
    assert f"Every notebook passes on: {', '.join(internals.CHECKED_ON)};" in table


def test_installed_torch_passes_and_a_newer_one_gets_a_note():
    newest = max(torch_version(v) for v in internals.CHECKED_ON)
    installed_is_newer = torch_version()[:2] > newest[:2]
    note = check_torch()
    assert (note is not None and "newer than the releases" in note) if installed_is_newer else note is None, note
    assert all(check_torch(checked) is None for checked in internals.CHECKED_ON)  # a checked release: no note
    assert "newer than the releases" in check_torch(f"{newest[0]}.{newest[1] + 1}.0")
    assert "newer than the releases" in check_torch("9.0.0")


def test_report_names_the_essentials():
    info = env.report()
    assert info["torch"] == torch.__version__
    assert info["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert info["c++ compiler"]


def test_pick_device_matches_the_machine():
    assert env.pick_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_warmup_compiles_once_on_the_main_thread():
    said, fresh = [], warmup.status() == "not run"  # another test in this process may have warmed up
    seconds = warmup.run(say=said.append)
    assert seconds is not None and warmup.status().startswith("done")
    assert len(said) == (2 if fresh else 0) and (not fresh or "Warming up Inductor" in said[0])
    assert warmup.run(say=said.append) == seconds and len(said) == 2  # once per process


def test_warmup_refuses_to_compile_on_another_thread():
    """torch's compiler is not thread-safe (pytorch #105943): labkit never compiles off the main thread."""
    errors = []

    def off_main():
        try:
            warmup.run(say=lambda _: None)
        except warmup.NotOnMainThread as error:
            errors.append(str(error))

    thread = threading.Thread(target=off_main)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "labkit.setup()" in errors[0]


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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_report_names_the_gpu():
    info = env.report()
    assert info["gpu"] and "triton" in info


def test_too_old_torch_shows_as_one_sentence_in_jupyter():
    """IPython renders an exception through _render_traceback_ when it has one: no traceback for the gate."""
    from labkit.env import TorchTooOld, check_torch

    with pytest.raises(TorchTooOld) as caught:
        check_torch("2.10.0")
    assert caught.value._render_traceback_() == [f"TorchTooOld: {caught.value}"]
    assert "pip install" in str(caught.value) and "\n" not in str(caught.value)


def test_setup_returns_its_report_as_a_dict_that_a_notebook_does_not_show_twice(capsys):
    """A cell ending in labkit.setup() shows the printed table only, not the same facts again as the cell's value."""
    from IPython.core.formatters import DisplayFormatter

    info = labkit.setup(warm_inductor=False)
    assert isinstance(info, dict) and info == labkit.env.report(), "setup() still returns the report, as a dict"
    assert info["device"] in capsys.readouterr().out, "…after printing it"
    assert DisplayFormatter().format(info) == ({}, {}), "IPython displays nothing for it as a cell's value"


def _python_without_torch() -> str | None:
    """A Python on this machine that has no torch (the system one, on CI's machine), or None."""
    import shutil

    for name in ("python3", "python3.11", "python3.12", "python3.10"):
        path = shutil.which(name)
        if path and subprocess.run([path, "-c", "import torch"], capture_output=True).returncode != 0:
            return path
    return None


@pytest.mark.skipif(_python_without_torch() is None, reason="every Python here has torch")
def test_preflight_on_a_python_without_torch_is_one_sentence():
    """`python -m labkit.preflight`, the form an instructor lists first, run with the wrong Python: its own ✘ line."""
    done = subprocess.run([_python_without_torch(), "-m", "labkit.preflight"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 1
    assert done.stdout.startswith("✘ torch is not installed in this Python") and done.stdout.count("\n") == 1
    assert done.stderr == "", "no traceback"


def _entry_points():
    """Every labkit call that compiles, each as a thunk returning what the learner would see."""
    import labkit
    from labkit import logs, naming, stages

    def f(x):
        return x.sin() + 1

    return {
        "compile_and_compare": lambda: stages.compile_and_compare(f, torch.ones(3)),
        "serving": lambda: stages.serving(f, [(torch.ones(3),)]),
        "inductor_code": lambda: logs.inductor_code(f, torch.ones(3)),
        "audit": lambda: labkit.audit(torch.ops.aten.sin.default, torch.ones(3)),
        "naming.run": lambda: naming.run(naming.SCHEMES[1], naming.ORDERS[0], "fingerprinted"),
    }


def _sentence_of(thunk) -> str:
    """The refusal a learner reads: a raised CompilerUnavailable's text, or the report's own sentence."""
    try:
        result = thunk()
    except env.CompilerUnavailable as error:
        return str(error)
    if hasattr(result, "findings"):      # audit never raises: its one finding is the refusal
        assert [f.check for f in result.findings] == ["input"] and result.checks_run == []
        return result.findings[0].problem
    return result.problem                 # naming.run never raises either


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_nothing_compiles_while_dynamo_is_switched_off(entry):
    """With Dynamo off every 'compiled' run is eager: a verdict would say 'agree' with 0 graphs compiled."""
    import torch._dynamo

    with torch._dynamo.config.patch(disable=True):   # what TORCHDYNAMO_DISABLE=1 sets
        sentence = _sentence_of(_entry_points()[entry])
    assert "TORCHDYNAMO_DISABLE" in sentence and "\n" not in sentence


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_nothing_compiles_off_the_main_thread(entry):
    """Compiles on a worker thread gave false findings and left torch's state changed: labkit refuses them."""
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_sentence_of(_entry_points()[entry])))
    thread.start()
    thread.join()
    assert len(seen) == 1 and "main thread" in seen[0] and "\n" not in seen[0]


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


def test_the_jupyter_kernels_own_threads_may_compile():
    """In JupyterLab 4.6 with ipykernel 7.4 a widget's callback ran off the main thread (tests/test_browser.py
    failed on it while plain Python passed); ipykernel runs its subshells and control channel on its own threads."""
    from ipykernel.thread import BaseThread

    seen, done = [], threading.Event()
    kernel_thread = BaseThread(daemon=True)
    kernel_thread.start()
    kernel_thread.io_loop.add_callback(lambda: (seen.append(env.compiler_unavailable()), done.set()))
    done.wait(30)
    kernel_thread.stop()
    assert seen == [None], seen
