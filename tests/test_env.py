import pytest
import torch

from labkit import env, warmup
from labkit.env import TorchTooOld, check_torch, torch_version


def test_version_parsing():
    assert torch_version("2.13.0+cpu") == (2, 13, 0)
    assert torch_version("2.6.0.dev20241001") == (2, 6, 0)
    assert torch_version("3") == (3, 0, 0)


@pytest.mark.parametrize("old", ["2.3.1", "2.5.1+cu121", "1.13.0"])
def test_too_old_torch_gets_one_sentence(old):
    with pytest.raises(TorchTooOld) as info:
        check_torch(old)
    message = str(info.value)
    assert message.count(". ") == 0 and "pip install 'torch>=2.6'" in message and old in message


def test_installed_torch_passes_and_a_newer_one_gets_a_note():
    assert check_torch() is None or "newer" in check_torch()
    assert "newer than the releases" in check_torch("9.0.0")


def test_report_names_the_essentials():
    info = env.report()
    assert info["torch"] == torch.__version__
    assert info["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert info["c++ compiler"]


def test_pick_device_matches_the_machine():
    assert env.pick_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_warmup_runs_once_and_finishes():
    warmup.start()
    assert not warmup.start()
    seconds = warmup.wait(timeout=300)
    assert seconds is not None and warmup.status().startswith("done")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_report_names_the_gpu():
    info = env.report()
    assert info["gpu"] and "triton" in info
