"""labkit.env: the torch this kernel runs (versions, the too-old gate, CHECKED_ON), the device and compiler report,
and the refusal to compile where a compile would mislead: Dynamo switched off, a thread other than the main one."""

import re
import threading

import pytest
import torch

import labkit
from labkit import _torch as internals
from labkit import env
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
# minimum that is not the table's oldest passing release; tests/notebooks/test_sources.py checks they
# are current. What is left to check here is the measurement itself.


def test_checked_on_is_a_measured_range_and_the_table_says_so():
    assert list(internals.CHECKED_ON) == sorted(internals.CHECKED_ON, key=torch_version) and internals.CHECKED_ON
    assert torch_version(internals.CHECKED_ON[0])[:2] == env.MINIMUM_TORCH
    table = (ROOT / "docs" / "torch-versions.md").read_text()
    lab_range = re.escape(", ".join(internals.CHECKED_ON))
    assert re.search(rf"Every notebook (but [\d ,]+ )?passes on: {lab_range};", table), "one added later: narrower"


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


def test_the_jupyter_kernels_own_threads_may_compile():
    """In JupyterLab 4.6 with ipykernel 7.4 a widget's callback ran off the main thread (tests/delivery/test_browser.py
    failed on it while plain Python passed); ipykernel runs its subshells and control channel on its own threads."""
    from ipykernel.thread import BaseThread

    seen, done = [], threading.Event()
    kernel_thread = BaseThread(daemon=True)
    kernel_thread.start()
    kernel_thread.io_loop.add_callback(lambda: (seen.append(env.compiler_unavailable()), done.set()))
    done.wait(30)
    kernel_thread.stop()
    assert seen == [None], seen
