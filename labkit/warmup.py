"""Pay Inductor's one-time start-up cost in ``setup()``, visibly, on the kernel's main thread.

The first Inductor compile of a kernel process takes seconds (imports, the C++
toolchain, codegen caches); later ones take a fraction of a second. ``run()``
compiles a tiny function once, with a progress line, so that the cost lands in
the setup cell that says so instead of silently in a learner's first lesson cell.

Why not in the background: torch's compile stack is not thread-safe (pytorch
#105943). On torch 2.11 an Inductor compile on another thread, even one already
joined, makes the next compile on the main thread segfault in FakeTensorMode
and kills the kernel. So labkit never compiles off the thread that called it:
by design, on every torch, not by a version check.

Not here: any compile off the calling thread, and any lesson: this is the one tiny function of ``setup()``.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import torch

from . import language

_state: dict = {"seconds": None, "error": None}


class NotOnMainThread(RuntimeError):
    pass


def _tiny_compile() -> None:
    compiled = torch.compile(lambda x: (x * 2).sin() + 1, backend="inductor")
    compiled(torch.ones(4))


def _say_now(text: str) -> None:
    print(text, flush=True)  # flushed: the line must show before the seconds it announces


def run(say: Callable[[str], None] = _say_now) -> float | None:
    """Compile one tiny function with Inductor, now, on this thread; its seconds (None if it failed).

    Runs once per process: later calls return the first duration. A failed warm-up is
    reported in one line and never raised: the lesson cells report torch's errors themselves.
    """
    if threading.current_thread() is not threading.main_thread():
        raise NotOnMainThread("labkit warms Inductor up on the main thread only (torch's compiler is not "
                              "thread-safe, pytorch #105943): call labkit.setup() from the notebook itself.")
    if _state["seconds"] is not None:
        return None if _state["error"] else _state["seconds"]
    say(language.say("Warming up Inductor, torch's compiler: its first compile in a kernel takes seconds, once..."))
    start = time.perf_counter()
    try:
        _tiny_compile()
    except Exception as error:  # noqa: BLE001 - a failed warm-up must never stop the setup cell
        _state["error"] = f"{type(error).__name__}: {error}"
    _state["seconds"] = time.perf_counter() - start
    if _state["error"]:
        say(language.say("Inductor warm-up failed ({error}); the first compile will be slow.",
                         error=_state["error"].splitlines()[0]))
        return None
    say(language.say("Inductor is warm: later compiles take a fraction of a second."))
    return _state["seconds"]


def status() -> str:
    if _state["seconds"] is None:
        return "not run"
    if _state["error"]:
        return f"failed: {_state['error']}"
    return f"done in {_state['seconds']:.1f} s"
