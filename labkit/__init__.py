"""labkit: the helper package of the lab on torch.compile and custom operators.

The core (pure, tested against real torch):

* :mod:`labkit.ops`    — declare custom ops from a spec; count real kernel calls.
* :mod:`labkit.stages` — run a function eagerly and compiled; keep each stage's graph/code;
  compare outputs *and* mutated inputs; torch's errors come back as data.
* :mod:`labkit.cache`  — keep the persistent compile caches honest (pytorch #187319).
* :mod:`labkit.env`    — device, versions, the too-old-torch gate.

Thin layers on top: :mod:`labkit.render` (text, HTML, pictures) and :mod:`labkit.warmup`.
"""

from .env import TorchTooOld, check_torch

_version_note = check_torch()  # raises TorchTooOld, one sentence, on a torch that is too old

import warnings  # noqa: E402

from . import (  # noqa: E402
    audit, cache, cache_demo, checks, env, exercises, naming, ops, render, scenarios, stages,
    warmup, widgets,
)
from .ops import LabOpError, OpSpec, StaleOpError, declare, drop, drop_namespace, name_problem, scoped  # noqa: E402
from .render import draw_fate, show, summary, text  # noqa: E402
from .stages import StageReport, TorchError, compile_and_compare  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "OpSpec", "declare", "drop", "drop_namespace", "scoped", "name_problem", "LabOpError", "StaleOpError",
    "compile_and_compare", "StageReport", "TorchError", "show", "summary", "text", "draw_fate", "setup",
    "audit", "cache", "cache_demo", "checks", "env", "exercises", "naming", "ops", "render", "scenarios", "stages",
    "warmup", "widgets", "TorchTooOld", "check_torch",
]

cache.set_policy("fingerprinted")
# torch warns once when caches are off; the lab turns them off on purpose in cache lessons.
warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")


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
    if warm_inductor:
        warmup.run()
    return info
