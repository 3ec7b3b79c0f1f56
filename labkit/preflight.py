"""Workshop pre-flight: is this machine ready for the lab? Runs in seconds, prints ✔/✘ lines.

    python -m labkit.preflight        (or, in a notebook: labkit.preflight.run())
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

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


def first_cells_in_child(code: str = FIRST_CELLS, timeout: float = 600) -> str | None:
    """Run ``code`` in a fresh Python over an empty Inductor cache; None, or one sentence on what failed.
    The child's cache and temporary files (Inductor's precompiled headers too) go in one folder, removed
    afterwards whatever happened: a learner's disk keeps nothing of the check."""
    with tempfile.TemporaryDirectory(prefix="labkit-preflight-", ignore_cleanup_errors=True) as cache_dir:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, TMPDIR=cache_dir)
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"a fresh kernel's first cells (labkit.setup(), then a compile) took over {timeout:.0f} s."
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        return (f"a fresh kernel crashed ({name}) running labkit.setup() then a compile: notebooks would die "
                "with 'Kernel died'; report your torch version to the lab.")
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"a fresh kernel's first cells failed: {last}"
    return None


def run() -> bool:
    ok = True

    def line(passed: bool, text: str) -> None:
        nonlocal ok
        ok &= passed
        print(("✔ " if passed else "✘ ") + text)

    start = time.perf_counter()
    try:
        import torch

        import labkit
    except Exception as error:  # noqa: BLE001 - the one sentence is the point
        line(False, f"import: {error}")
        return False
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
    problem = first_cells_in_child()
    line(problem is None, problem or "a fresh kernel runs labkit.setup() and its first Inductor compile")
    print(f"{'ready' if ok else 'NOT ready'} — checked in {time.perf_counter() - start:.0f} s")
    return ok


if __name__ == "__main__":
    sys.exit(0 if run() else 1)
