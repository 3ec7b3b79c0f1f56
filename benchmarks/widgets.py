"""Widget latency and memory, against a bare torch.compile of the same function.

    python benchmarks/widgets.py

For every state of the declaration and dynamic-mode widgets (after one warm-up compile):
  new state  = time of ``widget.set(...)`` for a state it has not shown;
  bare       = ``torch.compiler.reset()`` + ``torch.compile(fn, backend, dynamic)`` + the same calls,
               in the same process, with torch's default caches;
  back       = time of ``widget.set(...)`` back to a state already shown.
Prints one JSON line per widget and a final line with the peak memory (RSS) of the process.
"""

from __future__ import annotations

import itertools
import json
import resource
import statistics
import time

import torch

import labkit
from labkit import scenarios, widgets as w


def bare(fn, calls, backend, dynamic) -> float:
    torch.compiler.reset()
    start = time.perf_counter()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    for args in calls:
        compiled(*(a.clone() for a in args))
    return time.perf_counter() - start


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def declaration_states():
    lab = w.DeclarationLab(namespace="bench_d")
    rows = []
    for declaration, backend, dynamic in itertools.product(w.DECLARATIONS, ["aot_eager", "inductor"], w.DYNAMIC_CHOICES):
        new = timed(lambda: lab.set(declaration=declaration, backend=backend, dynamic=dynamic))
        op = labkit.ops.live_ops()[w.declaration_spec(declaration, "bench_d").name]

        def step(x):
            out = op(x)
            return x * 2 if out is None else x + out

        try:
            reference = bare(step, [(torch.arange(4.0),), (torch.arange(6.0),)], backend, w.DYNAMIC_CHOICES[dynamic])
        except Exception:  # noqa: BLE001 - the error states fail in torch too; time to the failure
            reference = None
        rows.append((new, reference))
    back = timed(lambda: lab.set(declaration="correct", backend="aot_eager", dynamic="False"))
    return "DeclarationLab", rows, back


def dynamic_states():
    lab = w.DynamicLab(namespace="bench_c")
    rows = []
    for dynamic, declaration, shapes in itertools.product(w.DYNAMIC_CHOICES, w.DCE_DECLARATIONS, w.SHAPE_SEQUENCES):
        new = timed(lambda: lab.set(dynamic=dynamic, declaration=declaration, shapes=shapes))
        op = lab.result()[0]
        calls = [(torch.ones(n),) for n in w.SHAPE_SEQUENCES[shapes]]
        rows.append((new, bare(scenarios.discards_result(op), calls, "inductor", w.DYNAMIC_CHOICES[dynamic])))
    back = timed(lambda: lab.set(dynamic="None", declaration="pure, result unused", shapes="4 → 6 → 8"))
    return "DynamicLab", rows, back


if __name__ == "__main__":
    labkit.warmup.start()
    labkit.warmup.wait()
    for name, rows, back in (declaration_states(), dynamic_states()):
        ratios = [new / ref for new, ref in rows if ref]
        print(json.dumps({
            "widget": name, "states": len(rows),
            "new_state_s_median": round(statistics.median(n for n, _ in rows), 3),
            "bare_compile_s_median": round(statistics.median(r for _, r in rows if r), 3),
            "ratio_median": round(statistics.median(ratios), 2), "ratio_max": round(max(ratios), 2),
            "switch_back_s": round(back, 4)}))
    print(json.dumps({"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
