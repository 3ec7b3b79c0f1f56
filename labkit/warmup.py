"""Pay Inductor's one-time start-up cost in the background, not in a learner's face.

The first Inductor compile of a kernel process takes seconds (imports, the C++
toolchain, codegen caches); later ones take a fraction of a second. ``start()``
compiles a tiny function on a daemon thread while the learner reads. Dynamo
serialises compiles behind one lock, so a compile the learner starts meanwhile
simply waits for the warm-up instead of repeating its work.
"""

from __future__ import annotations

import threading
import time

import torch

_state: dict = {"thread": None, "started": None, "seconds": None, "error": None}


def _warm() -> None:
    try:
        compiled = torch.compile(lambda x: (x * 2).sin() + 1, backend="inductor")
        compiled(torch.ones(4))
    except Exception as error:  # noqa: BLE001 - a failed warm-up must never reach the learner
        _state["error"] = f"{type(error).__name__}: {error}"
    finally:
        _state["seconds"] = time.perf_counter() - _state["started"]


def start() -> bool:
    """Start warming Inductor up once per process; False if it already started."""
    if _state["thread"] is not None:
        return False
    _state["started"] = time.perf_counter()
    _state["thread"] = threading.Thread(target=_warm, name="labkit-inductor-warmup", daemon=True)
    _state["thread"].start()
    return True


def wait(timeout: float | None = None) -> float | None:
    """Block until the warm-up ends; its duration in seconds (None if it never started)."""
    if _state["thread"] is None:
        return None
    _state["thread"].join(timeout)
    return _state["seconds"]


def status() -> str:
    if _state["thread"] is None:
        return "not started"
    if _state["seconds"] is None:
        return f"running for {time.perf_counter() - _state['started']:.0f} s"
    if _state["error"]:
        return f"failed: {_state['error']}"
    return f"done in {_state['seconds']:.1f} s"
