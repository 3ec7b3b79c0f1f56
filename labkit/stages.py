"""Run a function eagerly and through ``torch.compile``, and keep what each stage made.

``compile_and_compare(fn, x)`` is the lab's one experiment:

1. run ``fn`` eagerly on copies of the inputs (the reference);
2. run a fresh copy of ``fn`` through ``torch.compile`` on fresh copies of the inputs,
   from the same random and module state, recording the Dynamo graph(s), AOTAutograd's
   forward graph(s) and Inductor's generated code;
3. with ``backward=True``, call ``.backward()`` in each run too, recording AOTAutograd's
   backward graph(s), and keep the gradients of every input and parameter that requires grad;
4. count the real kernel calls of every lab op in each run, and compare the two
   runs on their outputs, on the final values of their inputs, on their gradients and on
   the state the function reaches outside its arguments (closure, globals, module buffers and
   attributes, optimizer state, generators), which each run starts from and which is put back.

Whatever torch raises comes back as a :class:`TorchError` with torch's own words,
so a notebook can show the message instead of a traceback.

This module orchestrates; each job it orchestrates has its own module: :mod:`labkit.graphs` (what a stage
made), :mod:`labkit.errors` (torch's errors as data), :mod:`labkit.compare` (copies of the inputs, and the
verdict) and :mod:`labkit.state` (what the function reaches, saved and put back). Also here: two lesson
helpers that watch torch.compile from outside, :func:`serving` and :func:`calling_stage`.

Not here: private torch (:mod:`labkit._torch`), and printing (:mod:`labkit.render`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

import torch

from . import _torch as internals
from . import cache
from . import ops as lab_ops
from .compare import (
    Verdict, backward_loss, check_inputs, clear_input_grads, compare_runs, copy_inputs, input_grads, input_names,
    with_gradients,
)
from .describe import brief
from .env import refuse_if_compiler_unavailable
from .errors import TorchError, as_torch_error
from .language import said
from .graphs import GraphSnapshot, recording_backend, snapshot
from .ops import split_qualname
from .state import FunctionState, fresh_copy

# Moved to their own modules, and importable from here as before (lessons and tests use these names):
from .compare import call_shapes, for_inputs, snapshot_tensor  # noqa: F401 - moved to labkit.compare
from .errors import ERROR_KINDS, InputError, raised  # noqa: F401 - moved to labkit.errors
from .graphs import NodeInfo  # noqa: F401 - moved to labkit.graphs

BACKENDS = ("eager", "aot_eager", "inductor")
DYNAMIC_MODES = (False, True, None)


# --- the experiment -----------------------------------------------------------------------------


@dataclasses.dataclass
class StageReport:
    """Everything one eager-vs-compiled experiment saw."""

    backend: str
    dynamic: bool | None
    shapes: list[str]
    dynamo_graphs: list[GraphSnapshot]
    aot_graphs: list[GraphSnapshot]
    inductor_code: list[str]  # every module Inductor generated, in compile order (a backward one after .backward())
    eager_calls: dict[str, int]
    compiled_calls: dict[str, int]
    graphs_per_call: list[int]  # how many graphs Dynamo compiled during each call
    verdict: Verdict | None
    error: TorchError | None
    eager_error: TorchError | None
    compile_seconds: float
    cache: dict[str, int]
    backward_graphs: list[GraphSnapshot] = dataclasses.field(default_factory=list)  # AOTAutograd's, backward=True

    @property
    def ok(self) -> bool:
        return self.error is None and self.eager_error is None

    @property
    def graph_count(self) -> int:
        return sum(self.graphs_per_call)

    @property
    def recompiles(self) -> int:
        """Graphs compiled after the first call: each one is a recompilation."""
        return sum(self.graphs_per_call[1:])

    def fate(self, op_name: str) -> dict[str, bool | None]:
        """Whether ``op_name`` is present at each stage, from the graphs and code that exist (None: the stage
        made none). ``ran``: its kernel ran compiled; None when torch raised before it could have."""
        namespace, name = split_qualname(op_name)
        code = "\n".join(self.inductor_code)
        ran = self.compiled_calls.get(op_name, 0) > 0
        return {
            "dynamo": any(g.has(op_name) for g in self.dynamo_graphs) if self.dynamo_graphs else None,
            "aot": any(g.has(op_name) for g in self.aot_graphs) if self.aot_graphs else None,
            "inductor": (f"torch.ops.{namespace}.{name}." in code) if self.inductor_code else None,
            "ran": ran if self.error is None or ran else None,
        }

    def made(self, stage: str) -> bool:
        """Whether ``stage`` (``dynamo``, ``aot``, ``inductor``) produced a graph or code in this experiment."""
        return bool({"dynamo": self.dynamo_graphs, "aot": self.aot_graphs, "inductor": self.inductor_code}[stage])

    def stages(self) -> tuple[str, ...]:
        """The stages this backend runs, in order: ``dynamo``, then ``aot`` and ``inductor`` where it has them."""
        return ("dynamo",) + {"eager": (), "aot_eager": ("aot",), "inductor": ("aot", "inductor")}[self.backend]


def _check_arguments(fn, args, calls, backend, dynamic, fullgraph, backward) -> list[tuple]:
    """The calls to make, or ValueError with one sentence naming the fix."""
    if not callable(fn):
        raise ValueError(f"fn must be a function (or module) to run, not {type(fn).__name__}.")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {brief(backend)}.")
    if not any(dynamic is mode for mode in DYNAMIC_MODES):
        raise ValueError(f"dynamic must be one of {DYNAMIC_MODES}, not {brief(dynamic)}.")
    if not isinstance(fullgraph, bool):
        raise ValueError(f"fullgraph must be True or False, not {brief(fullgraph)}.")
    if not (isinstance(backward, bool) or callable(backward)):
        raise ValueError(f"backward must be True, False, or a function from fn's output to a scalar loss, "
                         f"not {brief(backward)}.")
    if calls is None:
        return [tuple(args)]
    if args:
        raise ValueError("pass the inputs either as *args (one call) or as calls=[...] (several), not both.")
    if isinstance(calls, (str, bytes, torch.Tensor)) or not isinstance(calls, Sequence) or not calls \
            or not all(isinstance(c, (tuple, list)) for c in calls):
        raise ValueError("calls must be a non-empty list of argument tuples, e.g. calls=[(x1,), (x2,)].")
    return [tuple(c) for c in calls]


def _run_all(fn: Callable, call_args: list[tuple], names: list[str], stage: str, backward=False,
             state: FunctionState | None = None):
    """Call ``fn`` on a private copy of each call's inputs: ``(runs, error, grads)``.

    With ``backward``, each call is followed by ``.backward()``; ``grads`` holds, per call, the
    gradient of every input and parameter that requires grad (None: nothing to differentiate).
    """
    runs, grads = [], []
    for c in call_args:
        copies = copy_inputs(c, names)
        try:
            if backward:
                clear_input_grads(copies)
                if state is not None:
                    state.take_grads()
            output = fn(*copies)
            runs.append((output, copies))
            if backward:
                loss = backward_loss(output, backward)
                if loss is not None:
                    loss.backward()
                grads.append(None if loss is None else
                             {**input_grads(copies, names), **(state.take_grads() if state else {})})
        except Exception as error:  # noqa: BLE001 - torch's errors become data
            return runs, as_torch_error(error, stage), grads
    return runs, None, grads


_DYNAMO_ERRORS = {"TorchRuntimeError", "Unsupported", "UserError", "InternalTorchDynamoError",
                  "UncapturedHigherOrderOpError"}


def _raised_in(error: TorchError, backend: str, made: tuple[int, int, int]) -> str:
    """Where torch raised during a compiled call, from the exception chain and what that call produced
    (new Dynamo graphs, AOTAutograd graphs, Inductor modules): a stage while compiling, or "run time"."""
    types = {part.split(":", 1)[0] for part in error.full.split("\n\ncaused by ")}
    dynamo, aot, inductor = made
    if "BackendCompilerFailed" in types:
        return "Inductor" if backend == "inductor" and aot else "AOTAutograd"
    if types & _DYNAMO_ERRORS and not aot and not inductor:
        return "Dynamo"
    return "run time"


def _random_caveat(backend: str, graphs: list[GraphSnapshot], verdict: Verdict) -> Verdict:
    """Inductor draws random numbers its own way: say so instead of an unexplained DIFFER."""
    if verdict.agree or backend != "inductor" or internals.inductor_falls_back_to_eager_random() \
            or not any(g.draws_random_numbers for g in graphs):
        return verdict
    note = said("the program draws random numbers, and Inductor generates them with its own algorithm, so they "
                "differ from eager's by design; set torch._inductor.config.fallback_random = True to compare them")
    return dataclasses.replace(verdict, caveats=verdict.caveats + (note,))


def compile_and_compare(
    fn: Callable,
    *args: Any,
    calls: Sequence[Sequence[Any]] | None = None,
    backend: str = "aot_eager",
    dynamic: bool | None = False,
    fullgraph: bool = False,
    backward: bool | Callable[[Any], torch.Tensor] = False,
) -> StageReport:
    """Run ``fn`` eagerly and compiled, on copies of the same inputs, and report.

    Pass the inputs of one call as ``*args``, or several calls as ``calls=[(x1,), (x2,)]``
    (to watch recompilation under ``dynamic``).

    ``backward=True`` makes each call a training step: after ``fn`` runs, ``.backward()`` is
    called on the sum of every output that requires grad (or pass ``backward=loss_fn``, a
    function from ``fn``'s output to a scalar). The report then holds AOTAutograd's backward
    graph(s) (``report.backward_graphs``; AOTAutograd compiles the backward lazily, so it only
    exists once ``.backward()`` has run) and the verdict compares the gradient of every input
    and parameter that requires grad. Both runs use the same autograd formula for a custom op,
    so this catches what *compiling* gets wrong, not a wrong formula: check that with
    ``torch.autograd.gradcheck`` and ``torch.library.opcheck``.

    Contract:

    * The caller's data is never changed. Each run gets its own copy of the inputs, taken as
      a whole (nested lists/dicts, shared storage, ``requires_grad``, ``.grad``, ``mark_dynamic``
      and ``torch.Generator`` state kept). What ``fn`` reaches otherwise is saved first, both
      runs start from it, the verdict compares where each run left it, and afterwards it holds
      what it held before: tensors in closures, globals, an ``nn.Module``'s parameters, buffers
      and plain attributes (``self.count += 1``), the names ``fn`` can rebind (``global n``,
      ``nonlocal``, attributes), a ``torch.Generator`` it uses, an optimizer's state (each run
      steps its own copy), and the global random generators. Gradients too: the caller's
      ``.grad`` tensors are never written; each run accumulates into its own copy, so a ``fn``
      that calls ``.backward()`` itself has its gradients compared (``x.grad``, ``w.grad``).
      Saved tensors keep the original's footprint: the storage is copied, not the elements
      (``torch.zeros(1).expand(2**28)`` costs 4 bytes, not 1 GiB). Not restored: the contents
      of plain Python lists, dicts and sets ``fn`` changes in place.
    * Values are compared as ``torch.testing.assert_close`` compares them: each dtype's default
      tolerance (bf16/fp16 get theirs, not fp32's), NaN equal to NaN; a Python float gets
      float32's tolerance.
    * Counts start from zero without ``torch.compiler.reset()``: a fresh copy of ``fn`` is
      compiled, so the caller's own compiled functions and compile callbacks are untouched.
      Dynamo's memory of changing sizes (automatic dynamic shapes) is given a clean slate
      during the compiled run and put back after it. Functions ``fn`` calls across a graph
      break keep the compiled code Dynamo already has for them.
    * Every graph is traced for real: the FX-graph and AOTAutograd caches are bypassed.
    * Whatever torch raises comes back as a :class:`TorchError`; a bad argument to this
      function raises ValueError with one sentence naming the fix.
    * It refuses to run (:class:`labkit.env.CompilerUnavailable`, one sentence) off the main thread
      and where Dynamo is switched off: both would give a verdict about runs that never compiled
      honestly.
    """
    call_args = _check_arguments(fn, args, calls, backend, dynamic, fullgraph, backward)
    refuse_if_compiler_unavailable()
    names = input_names(fn, len(call_args[0]))
    for c in call_args:
        check_inputs(c, input_names(fn, len(c)))
    shapes = [", ".join(str(list(a.shape)) for a in c if isinstance(a, torch.Tensor)) for c in call_args]
    state = FunctionState(fn)
    learners_counts = lab_ops.call_counts()       # op.calls as the learner left them: put back afterwards
    try:
        lab_ops.reset_calls()
        state.start_run()
        eager_runs, eager_error, eager_grads = _run_all(fn, call_args, names, "eager", backward, state)
        eager_calls, eager_state = lab_ops.call_counts(), state.now()
        state.restore()
        state.start_run()

        dynamo_graphs, aot_graphs, backward_graphs, code, per_call = [], [], [], [], []
        lab_ops.reset_calls()
        cache_before = internals.cache_counters()
        recording = recording_backend(backend, dynamo_graphs, aot_graphs, backward_graphs)
        compiled = torch.compile(fresh_copy(fn), backend=recording, dynamic=dynamic, fullgraph=fullgraph)
        start = time.perf_counter()
        compiled_runs, compiled_grads, error = [], [], None
        with internals.graph_caches_off(), internals.collect_inductor_code(code), \
                internals.own_automatic_dynamic_state():
            for i, c in enumerate(call_args):
                before = (len(dynamo_graphs), len(aot_graphs), len(code))
                runs, error, grads = _run_all(compiled, [c], names, "compiled", backward, state)
                compiled_runs += runs
                compiled_grads += grads
                per_call.append(len(dynamo_graphs) - before[0])
                if error is not None:
                    made = (len(dynamo_graphs) - before[0], len(aot_graphs) - before[1], len(code) - before[2])
                    error = dataclasses.replace(error, raised_in=_raised_in(error, backend, made), call=i)
                    break
        seconds = time.perf_counter() - start
        compiled_calls, compiled_state = lab_ops.call_counts(), state.now()
        cache_after = internals.cache_counters()
    finally:
        state.restore()
        lab_ops.set_calls(learners_counts)

    if eager_error is not None:
        eager_error = dataclasses.replace(eager_error, call=len(eager_runs))
    # Report the ops this experiment involved (run eagerly, run compiled, or traced), not every op alive in
    # the process. (A merged dict would let compiled's 0 hide eager's runs of an op no graph holds.)
    involved = {name for counts in (eager_calls, compiled_calls) for name, n in counts.items() if n} | {
        node.custom_op for graph in dynamo_graphs for node in graph.nodes if node.custom_op in compiled_calls}
    eager_calls = {name: eager_calls.get(name, 0) for name in sorted(involved)}
    compiled_calls = {name: compiled_calls.get(name, 0) for name in sorted(involved)}

    verdict = None
    if error is None and eager_error is None:
        verdict = compare_runs(call_args, eager_runs, compiled_runs, names, with_grads=not backward)
        state_problems, state_caveats = state.problems(eager_state, compiled_state)
        verdict = dataclasses.replace(verdict, state_match=not state_problems,
                                      problems=verdict.problems + tuple(state_problems),
                                      caveats=verdict.caveats + tuple(state_caveats))
        if backward:
            verdict = with_gradients(verdict, eager_grads, compiled_grads)
        verdict = _random_caveat(backend, aot_graphs or dynamo_graphs, verdict)
    return StageReport(
        backend=backend, dynamic=dynamic, shapes=shapes,
        dynamo_graphs=dynamo_graphs, aot_graphs=aot_graphs, inductor_code=code,
        eager_calls=eager_calls, compiled_calls=compiled_calls, graphs_per_call=per_call,
        verdict=verdict, error=error, eager_error=eager_error, compile_seconds=seconds,
        cache={k: cache_after[k] - cache_before[k] for k in cache_after},
        backward_graphs=backward_graphs,
    )


# --- which compiled graph serves each call ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Served:
    """What :func:`serving` saw: each graph Dynamo compiled, and which one ran each call."""

    graphs: list[GraphSnapshot]   # in the order Dynamo compiled them
    served: list[int | None]      # per call: the index of the (first) graph that ran it; None: no graph, eager
    outputs: list                 # what each call returned


def serving(fn: Callable, calls: Sequence[Sequence[Any]], **compile_options) -> Served:
    """Compile ``fn`` from a reset, ``torch.compile(fn, **compile_options)`` with a backend that keeps
    every graph and notes which graph runs each call; call it once per argument tuple in ``calls``.

    A call that no graph served ran eagerly: Dynamo gave up on the frame (``recompile_limit``) or
    it broke out of graphs entirely. The graphs run as Dynamo traced them (no AOTAutograd).
    """
    refuse_if_compiler_unavailable()
    graphs, ran = [], []

    def backend(gm, example_inputs):
        index = len(graphs)
        graphs.append(snapshot(gm, "dynamo"))

        def run(*args):
            ran.append(index)
            return gm.forward(*args)
        return run

    cache.reset_compiler()
    compiled = torch.compile(fn, backend=backend, **compile_options)
    outputs, served = [], []
    for args in calls:
        before = len(ran)
        outputs.append(compiled(*args))
        served.append(ran[before] if len(ran) > before else None)
    return Served(graphs, served, outputs)


# --- which stage of torch.compile is calling a kernel ------------------------------------------

def calling_stage(x) -> str:
    """Who is calling the kernel (or fake kernel) that received ``x``: ``"dynamo"``, ``"aot"`` or ``"inductor"``
    while torch.compile traces with fake tensors (the innermost of their modules on the call stack), else
    ``"run"``: a call with real data, eager or compiled."""
    import sys

    if not internals.is_fake_tensor(x):
        return "run"
    return internals.compile_stage_on_stack(sys._getframe(1))


def is_fake_tensor(x) -> bool:
    """Whether ``x`` is one of the fake tensors torch.compile traces with: a shape, a dtype, a device, no data."""
    return internals.is_fake_tensor(x)


def fake_fallback_namespaces() -> tuple[str, ...]:
    """The op namespaces whose ops torch runs on zero-filled real tensors while tracing when they have no fake
    kernel (torch's own list, read from this torch): an op of another namespace needs its fake kernel."""
    return internals.fake_fallback_namespaces()
