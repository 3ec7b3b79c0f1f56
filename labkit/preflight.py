"""Workshop pre-flight: is this machine ready for the lab? Runs in seconds, prints ✔/✘ lines.

    python -m labkit.preflight        (or, in a notebook: labkit.preflight.run())
"""

from __future__ import annotations

import sys
import time


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
        labkit.widgets.DeclarationLab(namespace="preflight")  # builds the controls, compiles one state
        line(True, "widgets build and compute (that they *render* is seen in the notebook: a dropdown appears)")
    except Exception as error:  # noqa: BLE001
        line(False, f"widgets: {type(error).__name__}: {error}")
    device = labkit.env.pick_device()
    for backend in ("aot_eager", "inductor"):
        try:
            op = labkit.declare(name="preflight::bump", writes=("x",), mutates_args=("x",), returns="none")
            report = labkit.compile_and_compare(lambda x: (op(x), x * 2)[1], torch.ones(4, device=device),
                                                backend=backend)
            line(report.ok and report.verdict.agree, f"torch.compile backend={backend} on {device.type}")
        except Exception as error:  # noqa: BLE001
            line(False, f"torch.compile backend={backend}: {type(error).__name__}: {error}")
    labkit.drop_namespace("preflight")
    print(f"{'ready' if ok else 'NOT ready'} — checked in {time.perf_counter() - start:.0f} s")
    return ok


if __name__ == "__main__":
    sys.exit(0 if run() else 1)
