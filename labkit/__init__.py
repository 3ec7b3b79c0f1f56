"""labkit: the helper package of the lab on torch.compile and custom operators.

The core (UI-free, tested against real torch), each module one job, lowest first:

* :mod:`labkit._torch` — the one place private torch is touched (nothing of labkit's here).
* :mod:`labkit.describe`, :mod:`labkit.errors`, :mod:`labkit.lessons` — a value in one line; torch's
  errors as data; which notebook teaches a topic.
* :mod:`labkit.op_names` — which names an op may take, and which labkit holds (it owns only what it made).
* :mod:`labkit.ops`      — declare custom ops from a spec; count real kernel calls.
* :mod:`labkit.cache`    — keep the persistent compile caches honest (pytorch #187319).
* :mod:`labkit.graphs`   — each stage's FX graph, copied out; :mod:`labkit.compare` — private copies of the
  inputs and the eager-vs-compiled verdict; :mod:`labkit.state` — what a function reaches, saved and put back.
* :mod:`labkit.stages`   — ``compile_and_compare``: runs a function eagerly and compiled with the above.
* :mod:`labkit.naming`   — the one-name-or-two experiment under each cache policy.
* :mod:`labkit.auditing` — ``labkit.audit(op, *inputs)``; :mod:`labkit.checks` — opcheck as data.
* :mod:`labkit.doctor`   — ``labkit doctor mypkg.ops``: audit and more on every op a project registers, for its CI
  (a package of one-job modules; :mod:`labkit.doctor.formats` writes its table, JSON, JUnit XML;
  ``labkit_pytest`` (beside the package), its pytest items).
* :mod:`labkit.env`      — device, versions, the too-old-torch gate.
* :mod:`labkit.recordings` — GPU recordings and whether this kernel's code is the code that made them.
* :mod:`labkit.boundaries` — a kernel from outside torch (``ctypes``), and the cost of one call per boundary.

Thin layers on top: :mod:`labkit.render` (a report as text, HTML), :mod:`labkit.pictures` (every figure of a
graph or a tensor; :mod:`labkit.charts`, bars of measured numbers),
:mod:`labkit.views` (each lab's panel, a GPU cell's recording), :mod:`labkit.widgets` (controls over
:mod:`labkit.experiments`) and :mod:`labkit.warmup`.

Importing labkit changes nothing in torch; ``setup()`` turns the cache policy on and says so.

Not here: any of that work. This file gathers the public names and ``setup()``, the first cell's call.
"""

import importlib
import os
import sys


def _started_as_the_doctor() -> bool:
    """Whether this process is the doctor's command line (``python -m labkit ...`` or ``labkit-doctor``)."""
    argv = getattr(sys, "orig_argv", [])
    return "-mlabkit" in argv or any(a == "-m" and b == "labkit" for a, b in zip(argv, argv[1:])) or \
        any(os.path.splitext(os.path.basename(a))[0] == "labkit-doctor" for a in argv[1:2])


class _CtrlCWhileStarting:
    """Importing torch takes the doctor's first seconds: a Ctrl-C there ends the command line in one sentence, not
    a screen of torch's import traceback. Anywhere else (a notebook, a test) the interrupt goes on as it came."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if kind is KeyboardInterrupt and _started_as_the_doctor():
            print("labkit doctor: stopped by Ctrl-C while starting (importing torch and labkit); nothing was examined.",
                  file=sys.stderr)
            raise SystemExit(2) from None
        return False


with _CtrlCWhileStarting():
    try:
        import torch  # noqa: F401 - labkit is about torch: without it, one sentence instead of a traceback
    except ImportError:
        _fix = ("run ./lab once in the lab's folder (it installs torch into .venv), then use .venv/bin/python; "
                "on Colab, torch is already there")
        if "labkit.preflight" in getattr(sys, "orig_argv", ()):     # python -m labkit.preflight: its own ✘ line
            print(f"✘ torch is not installed in this Python ({sys.executable}): {_fix}.")
            raise SystemExit(1) from None
        raise ImportError(f"labkit needs torch, and this Python ({sys.executable}) has none: {_fix}.") from None

    from .env import TorchTooOld, check_torch  # noqa: E402

    _version_note = check_torch()  # raises TorchTooOld, one sentence, on a torch that is too old

    # Importing labkit changes nothing in torch: the cache policy starts in setup() (cache.enable()).
    from . import auditing, cache, checks, env, exercises, experiments, naming, ops, recordings, stages, warmup  # noqa: E402
    from .auditing import audit  # noqa: E402 - labkit.audit(op, *sample_inputs), as documented
    from .logs import torch_logs  # noqa: E402
    from .ops import (  # noqa: E402
        LabOpError, OpSpec, StaleOpError, declare, drop, drop_namespace, name_problem, scoped,
    )
    from .pictures import draw_fate  # noqa: E402 - figures live in pictures; importing it loads no matplotlib
    from .render import show, summary, text  # noqa: E402
    from .views import show_gpu_recording  # noqa: E402
    from .errors import TorchError  # noqa: E402
    from . import language  # noqa: E402
    from .language import use_language  # noqa: E402 - labkit.use_language("zh-CN"): what labkit says, in Chinese
    from .stages import StageReport, compile_and_compare  # noqa: E402

    recordings.listen()  # which GPU cells' code ran (IPython's hooks; nothing in torch)

# Imported on first use: ipywidgets is heavy, and the cache demo's subprocesses never need it.
_LAZY_MODULES = ("widgets", "cache_demo", "preflight", "doctor", "boundaries", "charts")


def __getattr__(name):
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = [
    "OpSpec", "declare", "drop", "drop_namespace", "scoped", "name_problem", "LabOpError", "StaleOpError",
    "compile_and_compare", "torch_logs", "StageReport", "TorchError", "show", "summary", "text", "draw_fate", "setup",
    "show_gpu_recording", "recordings", "use_language", "language",
    "audit", "auditing", "cache", "cache_demo", "checks", "env", "exercises", "experiments", "naming", "ops", "render",
    "views", "stages", "warmup", "widgets", "pictures", "doctor", "boundaries", "charts", "TorchTooOld", "check_torch",
]


class _Reported(dict):
    """What setup() has just printed, as a dict: a notebook cell ending in ``labkit.setup()`` shows it once, as the
    table above, not a second time as the cell's value."""

    def _ipython_display_(self) -> None:
        pass


def setup(warm_inductor: bool = True) -> dict[str, str]:
    """The first cell of every notebook: report the environment and warm Inductor up.

    The warm-up is one tiny Inductor compile, on this (the kernel's main) thread, announced
    by a progress line: it moves the first compile's seconds out of a lesson cell, where they
    would be a silent freeze, into this one. It never runs on a background thread: torch's
    compiler is not thread-safe (pytorch #105943; on torch 2.11 that crashed the kernel).
    Prints nothing that changes between runs on the same machine, so notebooks can store it.
    """
    info = env.report()
    print(env.report_text(info))
    if _version_note:
        print("note:", _version_note)
    print(cache.enable())
    if warm_inductor:
        warmup.run()
    return _Reported(info)
