"""Workshop pre-flight: is this machine ready for the lab? Prints one ✔/✘ line per check, then ready or not.

    python -m labkit.preflight        (from the lab's folder, or .venv/bin/python -m labkit.preflight;
                                       in a notebook: labkit.preflight.run(); any Python: python3 preflight.py)

It takes 40 s to 2 minutes on a 2-core machine (benchmarks/preflight.py; docs/measurements.md), on purpose: its
last check starts a fresh Python that runs a notebook's first cells over an empty Inductor cache. That child
starts first and runs while this process checks torch, ipywidgets, a widget and two backends, so the wait is
the longer of the two.

Not here: fixing anything. Each ✘ line says what to do; the lab's own setup is ``./lab``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable

# What a notebook's first cells do, in a fresh process over an empty Inductor cache (a learner's
# first notebook on a new machine). A crash there kills a learner's kernel without a message
# (torch 2.11 did, pytorch #105943), and no in-process check can see it: only a child process can.
FIRST_CELLS = """
import torch, labkit
labkit.setup()
op = labkit.declare(name="preflight_child::bump", writes=("x",), mutates_args=("x",), returns="none")
report = labkit.compile_and_compare(lambda x: (op(x), x * 2)[1], torch.ones(4), backend="inductor")
assert report.ok and report.verdict.agree, report
"""


def start_first_cells(code: str = FIRST_CELLS, timeout: float = 600) -> Callable[[], tuple[str | None, float]]:
    """Start ``code`` now in a fresh Python over an empty Inductor cache; the function returned waits for it and
    gives (None, or one sentence on what failed; the child's own seconds). The child's cache and temporary files
    (Inductor's precompiled headers too) go in one folder, removed afterwards whatever happened: a learner's disk
    keeps nothing of the check. Its output is read on a thread, so it never blocks on a full pipe."""
    folder = tempfile.TemporaryDirectory(prefix="labkit-preflight-", ignore_cleanup_errors=True)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=folder.name, TMPDIR=folder.name)
    start = time.perf_counter()
    try:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env)
    except BaseException:
        folder.cleanup()
        raise
    done: dict = {}

    def read() -> None:
        done["stderr"] = child.communicate()[1]
        done["seconds"] = time.perf_counter() - start

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def finish(stop: bool = False) -> tuple[str | None, float]:
        if stop:  # this process was interrupted: the child goes too
            child.kill()
        try:
            reader.join(max(0.0, start + timeout - time.perf_counter()))
            if reader.is_alive():
                return (f"a fresh kernel's first cells (labkit.setup(), then a compile) took over {timeout:.0f} s.",
                        time.perf_counter() - start)
        finally:
            if child.poll() is None:  # past its time, or this process interrupted: nothing left behind
                child.kill()
                reader.join()
            folder.cleanup()
        seconds = done["seconds"]
        if child.returncode < 0:
            name = signal.Signals(-child.returncode).name
            return (f"a fresh kernel crashed ({name}) running labkit.setup() then a compile: notebooks would die "
                    "with 'Kernel died'; report your torch version to the lab.", seconds)
        if child.returncode:
            last = (done["stderr"].strip().splitlines() or ["no message"])[-1]
            return f"a fresh kernel's first cells failed: {last}", seconds
        return None, seconds

    return finish


def first_cells_in_child(code: str = FIRST_CELLS, timeout: float = 600) -> str | None:
    """Run ``code`` in a fresh Python over an empty Inductor cache and wait; None, or one sentence on what failed."""
    return start_first_cells(code, timeout)()[0]


def run() -> bool:
    ok = True

    def line(passed: bool, text: str) -> None:
        nonlocal ok
        ok &= passed
        print(("✔ " if passed else "✘ ") + text, flush=True)

    start = time.perf_counter()
    try:
        import torch

        import labkit
    except Exception as error:  # noqa: BLE001 - the one sentence is the point
        line(False, f"import: {error}")
        return False
    finish = start_first_cells()  # the longest check, in a child process: it runs beside the ones below
    try:
        line(True, f"torch {torch.__version__}, labkit {labkit.__version__}, Python {sys.version.split()[0]}")
        try:
            import ipywidgets

            major_minor = tuple(int(p) for p in ipywidgets.__version__.split(".")[:2])
            line((7, 7) <= major_minor < (9, 0), f"ipywidgets {ipywidgets.__version__} (the lab needs >=7.7,<9)")
            labkit.widgets.DeclarationLab(namespace="preflight").close()  # builds the controls, compiles one state
            line(True, "widgets build and compute (that they *render* is seen in the notebook: a dropdown appears)")
        except Exception as error:  # noqa: BLE001
            line(False, f"widgets: {type(error).__name__}: {error}")
        device = labkit.env.pick_device()
        for backend in ("aot_eager", "inductor"):
            try:
                op = labkit.declare(name="preflight::bump", writes=("x",), mutates_args=("x",), returns="none")
                report = labkit.compile_and_compare(lambda x: (op(x), x * 2)[1], torch.ones(4, device=device),  # noqa: B023 - compiled now
                                                    backend=backend)
                line(report.ok and report.verdict.agree, f"torch.compile backend={backend} on {device.type}")
            except Exception as error:  # noqa: BLE001
                line(False, f"torch.compile backend={backend}: {type(error).__name__}: {error}")
        labkit.drop_namespace("preflight")
    except BaseException:  # Ctrl-C (a check's own failure is a line above): leave no child running
        finish(stop=True)
        raise
    problem, seconds = finish()
    took = f"{seconds:.0f} s"
    line(problem is None, f"{problem} ({took})" if problem else
         f"a fresh kernel runs labkit.setup() and its first Inductor compile ({took}, over an empty cache on purpose)")
    print(f"{'ready' if ok else 'NOT ready'} — checked in {time.perf_counter() - start:.0f} s")
    return ok


if __name__ == "__main__":
    sys.exit(0 if run() else 1)
