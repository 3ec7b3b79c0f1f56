"""Where the lab is running: torch, Python, device, compiler; and the too-old-torch gate.

Not here: changing anything (it only reads; the gate raises one sentence), private torch (the adapter), and
printing: ``labkit.setup()`` prints :func:`report_text`.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys
import threading
import unicodedata

import torch

from . import _torch as internals
from .language import say

# The oldest torch on which every notebook passes, measured by tools/torch_matrix.py
# (docs/torch-versions.md). Written here from pyproject's [tool.lab] minimum_torch so that the gate
# works where pyproject.toml is absent (Colab installs labkit with --no-deps).
# BEGIN minimum-torch: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit
MINIMUM_TORCH = (2, 11)
# END minimum-torch
REQUIRED_FEATURES = (
    ("torch.library.custom_op", lambda: torch.library.custom_op),
    ("torch.library.opcheck", lambda: torch.library.opcheck),
    ("torch.compiler.config.cache_key_tag", lambda: torch.compiler.config.cache_key_tag),
    ("torch.compiler.config.force_disable_caches", lambda: torch.compiler.config.force_disable_caches),
)


def minimum_torch_text() -> str:
    return ".".join(map(str, MINIMUM_TORCH))


class TorchTooOld(RuntimeError):
    """torch is older than the lab's minimum. In Jupyter it shows as its one sentence, not a traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return [f"TorchTooOld: {self}"]


class CompilerUnavailable(RuntimeError):
    """This process cannot run the experiment honestly: a comparison would report eager against eager.

    Shown in Jupyter as its one sentence, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"CompilerUnavailable: {self}"]


def compiler_unavailable() -> str | None:
    """Why a labkit experiment cannot compile here, in one sentence naming the fix; None when it can.

    Two cases: Dynamo switched off (every "compiled" run would be eager, so a verdict would say "agree"
    with no graph compiled), and a thread other than the main one (torch's compile stack is not
    thread-safe, pytorch #105943: another thread's compile gives false differences and leaves torch's
    global state changed). The Jupyter kernel's own threads count as the main one (:func:`_kernel_runs_this_thread`).
    """
    if not _kernel_runs_this_thread():
        return ("labkit compiles on the main thread only (torch's compiler is not thread-safe): call it from "
                "the notebook or script itself, not from a worker thread.")
    if internals.dynamo_disabled():
        return ("torch.compile is switched off in this process (TORCHDYNAMO_DISABLE=1 or "
                "torch._dynamo.config.disable = True), so a compiled run would be eager: unset it and try again.")
    return None


def _kernel_runs_this_thread() -> bool:
    """The main thread, or one of the Jupyter kernel's own (ipykernel 7 runs a widget's callbacks on a subshell
    thread when JupyterLab asks it to): the kernel runs its messages one at a time, as the main thread would.
    A thread the learner started (``threading.Thread``, a thread pool) is neither."""
    thread = threading.current_thread()
    return thread is threading.main_thread() or type(thread).__module__.startswith("ipykernel.")


def refuse_if_compiler_unavailable() -> None:
    """Raise :class:`CompilerUnavailable` with :func:`compiler_unavailable`'s sentence, if it has one."""
    reason = compiler_unavailable()
    if reason is not None:
        raise CompilerUnavailable(reason)


def torch_version(text: str | None = None) -> tuple[int, int, int]:
    """``"2.13.0+cpu"`` -> ``(2, 13, 0)``; pre-release suffixes are ignored."""
    numbers = re.findall(r"\d+", (text or torch.__version__).split("+")[0])[:3]
    return tuple(int(n) for n in numbers + ["0"] * (3 - len(numbers)))  # type: ignore[return-value]


def check_torch(version: str | None = None) -> str | None:
    """Raise :class:`TorchTooOld` with one sentence if torch is too old for the lab.

    Returns a short note when torch is newer than the releases labkit was checked on
    (the lab still runs; its asserting cells will say if a lesson changed), else None.
    """
    found = torch_version(version)
    need = minimum_torch_text()
    upgrade = f"run  pip install -U 'torch>={need}'  and restart the kernel."
    if found[:2] < MINIMUM_TORCH:
        raise TorchTooOld(f"This lab needs torch >= {need}, but torch {version or torch.__version__} "
                          f"is installed: {upgrade}")
    lacking = [name for name, probe in REQUIRED_FEATURES if not _has(probe)]
    lacking += [] if version else internals.missing_private_names()
    if lacking:
        raise TorchTooOld(f"This lab needs torch >= {need}, and torch {torch.__version__} lacks "
                          f"{', '.join(lacking)}: {upgrade}")
    newest = max(torch_version(v) for v in internals.CHECKED_ON)
    if found[:2] > newest[:2]:
        return (f"torch {version or torch.__version__} is newer than the releases this lab was checked on "
                f"({', '.join(internals.CHECKED_ON)}); cells that assert torch's behaviour will tell you "
                "if a lesson changed.")
    return None


def _has(probe) -> bool:
    try:
        probe()
        return True
    except AttributeError:
        return False


def pick_device() -> torch.device:
    """CUDA when a GPU is present, else the CPU: every lesson runs on both."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _compiler_version(path: str) -> str:
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        return first.splitlines()[0] if first else path
    except (OSError, subprocess.SubprocessError):
        return path


def report() -> dict[str, str]:
    """A small dict describing this environment; stable enough to print in a notebook."""
    device = pick_device()
    info = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "device": str(device),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        try:
            import triton

            info["triton"] = triton.__version__
        except ImportError:
            info["triton"] = "missing (Inductor cannot generate GPU kernels)"
    compiler = internals.cpp_compiler() or shutil.which("g++") or shutil.which("gcc") or ""
    info["c++ compiler"] = _compiler_version(compiler) if compiler else "none found (Inductor on CPU needs one)"
    info["in Colab"] = str("google.colab" in sys.modules)
    return info


def report_text(info: dict[str, str] | None = None) -> str:
    """The report as setup prints it: its keys in the language labkit speaks (the dict keeps them in English), in a
    column as wide as the widest key on screen (a Chinese character takes two columns of a monospace font)."""
    info = info if info is not None else report()
    keys = {key: say(key) for key in info}
    width = max(map(_columns, keys.values()))
    return "\n".join(f"{keys[key]}{' ' * (width - _columns(keys[key]))}  "
                     f"{say(value) if value in REPORT_WORDS else value}" for key, value in info.items())


# The report's keys and its sentences that are not a version or a name, said in the language labkit speaks.
REPORT_WORDS = ("platform", "device", "gpu", "triton", "c++ compiler", "in Colab",
                "missing (Inductor cannot generate GPU kernels)", "none found (Inductor on CPU needs one)")


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
