"""Widget latency and memory, against a bare torch.compile of the same function.

    python -m benchmarks.widgets

For every widget the lab shows (tools/showings.py), every state (after one warm-up compile; each distinct
state once); for the declaration and dynamic-mode widgets also against a bare compile of the same function:
  new state  = time of ``widget.set(...)`` for a state it has not shown;
  bare       = ``torch.compiler.reset()`` + ``torch.compile(fn, backend, dynamic)`` + the same calls,
               in the same process, with torch's default caches;
  uncached   = the same bare compile with the FX-graph and AOTAutograd caches bypassed, as the
               widgets do (they must trace for real to show each stage's graph): the ratio to it
               is labkit's own overhead (eager run, recording, rendering);
  back       = time of ``widget.set(...)`` back to a state already shown.
Prints one JSON line per widget and a final line with the peak memory (RSS) of the process.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import pathlib
import resource
import statistics
import time

import torch

import labkit
from labkit import _torch as internals, experiments as e, widgets as w

if __package__ != "benchmarks":  # run as a script: the lab's folder, and so tools/, is not on sys.path
    raise SystemExit(f"Run it from the lab's folder as a module: python -m benchmarks.{pathlib.Path(__file__).stem}")
from tools.showings import SHOWINGS, widget_classes


def bare(fn, calls, backend, dynamic, caches: bool = True, fullgraph: bool = False) -> float:
    torch.compiler.reset()
    start = time.perf_counter()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=fullgraph)
    with contextlib.nullcontext() if caches else internals.graph_caches_off():
        for args in calls:
            compiled(*(a.clone() for a in args))
    return time.perf_counter() - start


def both(fn, calls, backend, dynamic, fullgraph: bool = False) -> tuple[float, float]:
    """(bare with torch's caches, bare with the graph caches bypassed)."""
    return (bare(fn, calls, backend, dynamic, fullgraph=fullgraph),
            bare(fn, calls, backend, dynamic, caches=False, fullgraph=fullgraph))


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def declaration_states():
    lab = w.DeclarationLab(namespace="bench_d")
    rows = []
    for declaration, backend, dynamic in itertools.product(e.DECLARATIONS, ["aot_eager", "inductor"],
                                                      e.DYNAMIC_CHOICES):
        new = timed(lambda: lab.set(declaration=declaration, backend=backend, dynamic=dynamic))  # noqa: B023 - called now
        op = labkit.ops.live_ops()[e.declaration_spec(declaration, "bench_d").name]
        try:
            reference = both(e.uses_result(op), [(torch.arange(4.0),), (torch.arange(6.0),)], backend,
                             e.DYNAMIC_CHOICES[dynamic])
        except Exception:  # noqa: BLE001 - the error states fail in torch too; no fair reference
            reference = None
        rows.append((new, reference))
    back = timed(lambda: lab.set(declaration="correct", backend="aot_eager", dynamic="False"))
    return "DeclarationLab", rows, back


def dynamic_states():
    """Every state of every control (output size and fullgraph included), each distinct state once."""
    lab = w.DynamicLab(namespace="bench_c")
    rows, seen = [], {lab.state}       # the state it opened with is computed already
    for values in lab.every_state():
        new = timed(lambda: lab.set(**values))  # noqa: B023 - called now
        if lab.state in seen:       # the output size only matters for one declaration: a state seen already
            continue
        seen.add(lab.state)
        op = lab.result()[0]
        calls = [(torch.ones(n, device=values["device"]),) for n in e.SHAPE_SEQUENCES[values["shapes"]]]
        rows.append((new, both(e.discards_result(op), calls, "inductor", e.DYNAMIC_CHOICES[values["dynamic"]],
                               e.FULLGRAPH_CHOICES[values["fullgraph"]])))
    back = timed(lambda: lab.set(dynamic="None", declaration="pure, result unused", shapes="4 → 6 → 8"))
    return "DynamicLab", rows, back


def every_state_timed(showing):
    """A widget without a bare-torch reference of its own: the time of each new state, every state once."""
    lab = showing.build()
    rows, seen = [], {lab.state}
    for values in lab.every_state():
        new = timed(lambda: lab.set(**values))  # noqa: B023 - called now
        if lab.state not in seen:
            seen.add(lab.state)
            rows.append((new, None))
    opened_with = showing.options
    back = timed(lambda: lab.set(**{k: v for k, v in opened_with.items() if k != "namespace"}))
    labkit.drop_namespace(lab.namespace)
    return showing.widget.__name__, rows, back


# The widgets with a bare-torch reference here; every other widget the lab shows is timed by every_state_timed.
REFERENCED = {w.DeclarationLab: declaration_states, w.DynamicLab: dynamic_states}


def benchmarks():
    first_showing = {}
    for showing in SHOWINGS:
        first_showing.setdefault(showing.widget, showing)
    return [REFERENCED[cls]() if cls in REFERENCED else every_state_timed(first_showing[cls])
            for cls in widget_classes()]


if __name__ == "__main__":
    labkit.warmup.run()
    for name, rows, back in benchmarks():
        if not any(ref for _, ref in rows):
            print(json.dumps({"widget": name, "states": len(rows), "switch_back_s": round(back, 4),
                              "new_state_s_median": round(statistics.median(n for n, _ in rows), 3)}))
            continue
        timed_rows = [(new, ref) for new, ref in rows if ref]
        ratios = [new / ref[0] for new, ref in timed_rows]
        uncached = [new / ref[1] for new, ref in timed_rows]
        print(json.dumps({
            "widget": name, "states": len(rows),
            "new_state_s_median": round(statistics.median(n for n, _ in rows), 3),
            "bare_compile_s_median": round(statistics.median(r[0] for _, r in timed_rows), 3),
            "ratio_median": round(statistics.median(ratios), 2), "ratio_max": round(max(ratios), 2),
            "uncached_compile_s_median": round(statistics.median(r[1] for _, r in timed_rows), 3),
            "ratio_to_uncached_median": round(statistics.median(uncached), 2),
            "ratio_to_uncached_max": round(max(uncached), 2),
            "switch_back_s": round(back, 4)}))
    print(json.dumps({"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
