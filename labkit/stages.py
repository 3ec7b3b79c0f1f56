"""Run a function eagerly and through ``torch.compile``, and keep what each stage made.

``compile_and_compare(fn, x)`` is the lab's one experiment:

1. run ``fn`` eagerly on copies of the inputs (the reference);
2. run it through ``torch.compile`` on fresh copies, recording the Dynamo graph(s),
   AOTAutograd's forward graph(s) and Inductor's generated code;
3. count the real kernel calls of every lab op in each run, and compare the two
   runs on their outputs *and* on the final values of their inputs.

Whatever torch raises comes back as a :class:`TorchError` with torch's own words,
so a notebook can show the message instead of a traceback.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import time
from typing import Any, Callable, Sequence

import torch

from . import _torch_internals as internals
from . import ops as lab_ops
from . import warmup

BACKENDS = ("eager", "aot_eager", "inductor")
DYNAMIC_MODES = (False, True, None)


# --- what a stage produced ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NodeInfo:
    """One FX node, copied out of the graph so it survives torch's later passes."""

    name: str
    op: str
    target: str
    args: str
    custom_op: str | None  # qualified name of the lab/custom op this node calls or wraps
    wrapper: str | None  # "auto_functionalized_v2", "with_effects", ... when the call is wrapped
    mutating: bool  # the node writes to one of its inputs (copy_, a mutable op, ...)


@dataclasses.dataclass(frozen=True)
class GraphSnapshot:
    stage: str
    code: str
    nodes: tuple[NodeInfo, ...]
    input_shapes: tuple[str, ...]

    def calls(self, op_name: str) -> list[NodeInfo]:
        """Nodes that call ``op_name`` (a qualified name), directly or wrapped."""
        return [n for n in self.nodes if n.custom_op == op_name]

    def has(self, op_name: str) -> bool:
        return bool(self.calls(op_name))


def _qualname(target) -> str | None:
    if isinstance(target, torch._ops.OpOverload):
        namespace = target.namespace
        if namespace in ("aten", "prims", "prim", "higher_order"):
            return None
        return f"{namespace}::{target._schema.name.split('::')[-1]}"
    return None


def _shape_of(node) -> str:
    value = node.meta.get("val", node.meta.get("example_value"))
    if isinstance(value, torch.Tensor):
        return "[" + ", ".join(str(s) for s in value.shape) + "]"
    return type(value).__name__ if value is not None else "?"


def snapshot(gm: torch.fx.GraphModule, stage: str) -> GraphSnapshot:
    nodes = []
    for node in gm.graph.nodes:
        wrapped = internals.wrapped_op(node)
        op = wrapped if wrapped is not None else node.target
        mutating = False
        if isinstance(node.target, torch._ops.OpOverload):
            mutating = node.target._schema.is_mutable
        elif wrapped is not None:
            mutating = wrapped._schema.is_mutable
        nodes.append(NodeInfo(
            name=node.name, op=node.op,
            target=getattr(node.target, "__name__", str(node.target)) if node.op == "call_function"
            else str(node.target),
            args=_short(node.args), custom_op=_qualname(op),
            wrapper=getattr(node.target, "__name__", None) if wrapped is not None else None,
            mutating=mutating))
    shapes = tuple(_shape_of(n) for n in gm.graph.nodes if n.op == "placeholder")
    return GraphSnapshot(stage=stage, code=gm.code.strip(), nodes=tuple(nodes), input_shapes=shapes)


def _short(args, limit: int = 80) -> str:
    text = ", ".join(str(a) for a in args)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- errors as data -----------------------------------------------------------------------------

ERROR_KINDS = (
    ("missing_fake", r"no fake impl registered|no fake kernel|fake impl"),
    ("alias_return", r"must not also be an input|may not alias any inputs"),
    ("inplace_return", r"must return its first argument"),
    ("undeclared_mutation", r"is not defined as mutable but was mutated"),
    ("recompile_limit", r"recompile_limit|cache_size_limit"),
)

_BOILERPLATE = re.compile(
    r"^(Set TORCHDYNAMO_VERBOSE|Set TORCH_LOGS|For more information|from user code|"
    r"You can suppress this exception|Developer debug context|For even more developer context|"
    r"\s*File \"|\s*Explanation:|\s*Hint:|\s*$)")


@dataclasses.dataclass(frozen=True)
class TorchError:
    """An exception torch raised, kept as data. ``message`` is torch's own text, trimmed."""

    stage: str  # "eager" or "compiled"
    kind: str  # one of ERROR_KINDS' names, or "other"
    type_name: str
    message: str
    full: str

    def __str__(self):
        return f"[{self.stage}] {self.type_name}: {self.message}"


def as_torch_error(error: BaseException, stage: str) -> TorchError:
    chain, seen = [error], {id(error)}
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and id(nxt) not in seen:
        chain.append(nxt)
        seen.add(id(nxt))
    root = chain[-1] if str(chain[-1]) else error  # the innermost error says what went wrong
    full = "\n\ncaused by ".join(f"{type(e).__name__}: {e}" for e in chain)
    text = re.split(r"\n\s*(?:from user code:|Set TORCHDYNAMO_VERBOSE)", str(root))[0]
    kind = next((k for k, pattern in ERROR_KINDS if re.search(pattern, full, re.I)), "other")
    lines = [line for line in text.splitlines() if not _BOILERPLATE.match(line)]
    message = " ".join(line.strip() for line in lines[:6])
    message = re.sub(r" \(with implementation in <module '[^']*' from '[^']*'>\)", "", message)
    message = re.sub(r"0x[0-9a-f]{6,}", "0x…", message)
    if len(message) > 600:
        message = message[:599] + "…"
    return TorchError(stage, kind, type(root).__name__, message, full)


# --- comparing eager with compiled ---------------------------------------------------------------


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key])]
    return [value]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(torch.allclose(a.detach().cpu(), b.detach().cpu(), rtol=1e-5, atol=1e-6, equal_nan=True))
    return type(a) is type(b) and a == b


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Eager vs compiled: outputs, and the final values of the inputs the function mutates."""

    outputs_match: bool
    inputs_match: bool
    mutated_eager: tuple[str, ...]  # inputs whose values eager changed
    mutated_compiled: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def agree(self) -> bool:
        return self.outputs_match and self.inputs_match

    def __str__(self):
        if self.agree:
            return "eager and compiled agree (outputs and inputs)"
        return "eager and compiled DIFFER: " + "; ".join(self.problems)


def _clone(value):
    if not isinstance(value, torch.Tensor):
        return value
    copy = value.clone()
    internals.copy_dynamo_marks(value, copy)  # keep mark_dynamic on the copy
    return copy


def clone_args(args: Sequence) -> tuple:
    """Fresh copies of the tensors among ``args`` (mark_dynamic kept); other values as they are."""
    return tuple(_clone(a) for a in args)


def _changed(before: Sequence, after: Sequence, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(name for name, b, a in zip(names, before, after)
                 if isinstance(b, torch.Tensor) and not _same(b, a))


def input_names(fn: Callable, count: int) -> list[str]:
    """The parameter names of ``fn`` for ``count`` positional inputs (``arg0``... if unknown)."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


def compare_runs(originals: Sequence[Sequence], eager: list, compiled: list,
                 names: Sequence[str] | None = None) -> Verdict:
    """``eager``/``compiled``: one ``(output, args_after)`` pair per call.

    Inputs are named by ``names`` (the function's parameters); with several calls, ``x@1``
    is ``x`` in call 1.
    """
    many = len(originals) > 1
    bad_outputs, bad_inputs, mutated_e, mutated_c = [], {}, [], []
    for i, (orig, (out_e, args_e), (out_c, args_c)) in enumerate(zip(originals, eager, compiled)):
        plain = list(names or input_names(None, len(orig)))
        labels = [f"{n}@{i}" if many else n for n in plain]
        leaves_e, leaves_c = _leaves(out_e), _leaves(out_c)
        if len(leaves_e) != len(leaves_c) or not all(map(_same, leaves_e, leaves_c)):
            bad_outputs.append(i)
        mutated_e += _changed(orig, args_e, labels)
        mutated_c += _changed(orig, args_c, labels)
        for name, label, before, a, b in zip(plain, labels, orig, args_e, args_c):
            if isinstance(a, torch.Tensor) and not _same(a, b):
                bad_inputs.setdefault(name, []).append((i, label in mutated_e, label in mutated_c))
    problems = []
    if bad_outputs:
        problems.append("outputs differ" + (f" (calls {', '.join(map(str, bad_outputs))})" if many else ""))
    for name, cases in bad_inputs.items():
        calls = f" (calls {', '.join(str(i) for i, _, _ in cases)})" if many else ""
        _, changed_e, changed_c = cases[0]
        problems.append(f"{name} differs afterwards{calls}: eager {'changed' if changed_e else 'left'} it, "
                        f"compiled {'changed' if changed_c else 'left'} it"
                        + (" differently" if changed_e and changed_c else ""))
    return Verdict(not bad_outputs, not bad_inputs, tuple(mutated_e), tuple(mutated_c), tuple(problems))


# --- the experiment -----------------------------------------------------------------------------


@dataclasses.dataclass
class StageReport:
    """Everything one eager-vs-compiled experiment saw."""

    backend: str
    dynamic: bool | None
    shapes: list[str]
    dynamo_graphs: list[GraphSnapshot]
    aot_graphs: list[GraphSnapshot]
    inductor_code: list[str]
    eager_calls: dict[str, int]
    compiled_calls: dict[str, int]
    graphs_per_call: list[int]  # how many graphs Dynamo compiled during each call
    verdict: Verdict | None
    error: TorchError | None
    eager_error: TorchError | None
    compile_seconds: float
    cache: dict[str, int]

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
        """Whether ``op_name`` is present at each stage (None: the stage did not run)."""
        namespace, name = op_name.split("::")
        code = "\n".join(self.inductor_code)
        return {
            "dynamo": any(g.has(op_name) for g in self.dynamo_graphs) if self.dynamo_graphs else None,
            "aot": any(g.has(op_name) for g in self.aot_graphs) if self.aot_graphs else None,
            "inductor": (f"torch.ops.{namespace}.{name}." in code) if self.inductor_code else None,
            "ran": self.compiled_calls.get(op_name, 0) > 0 if self.error is None else None,
        }


def _recording_backend(backend: str, dynamo_graphs: list, aot_graphs: list) -> Callable:
    def record_aot(gm):
        aot_graphs.append(snapshot(gm, "aot"))

    inner = {
        "eager": lambda gm, inputs: gm.forward,
        "aot_eager": internals.aot_eager_recording(record_aot),
        "inductor": internals.inductor_recording(record_aot),
    }[backend]

    def recording(gm, example_inputs):
        dynamo_graphs.append(snapshot(gm, "dynamo"))
        return inner(gm, example_inputs)

    return recording


def compile_and_compare(
    fn: Callable,
    *args: Any,
    calls: Sequence[Sequence[Any]] | None = None,
    backend: str = "aot_eager",
    dynamic: bool | None = False,
    fullgraph: bool = False,
    use_caches: bool = False,
) -> StageReport:
    """Run ``fn`` eagerly and compiled, on copies of the same inputs, and report.

    Pass the inputs of one call as ``*args``, or several calls as ``calls=[(x1,), (x2,)]``
    (to watch recompilation under ``dynamic``). The compiler is reset first, so counts
    start from zero. ``use_caches=False`` (default) traces every graph for real; ``True``
    lets the persistent caches answer, as a plain ``torch.compile`` would.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}.")
    if dynamic not in DYNAMIC_MODES:
        raise ValueError(f"dynamic must be one of {DYNAMIC_MODES}, not {dynamic!r}.")
    call_args = [tuple(c) for c in calls] if calls is not None else [args]
    shapes = [", ".join(str(list(a.shape)) for a in c if isinstance(a, torch.Tensor)) for c in call_args]

    eager_runs, eager_error = [], None
    lab_ops.reset_calls()
    for c in call_args:
        copies = clone_args(c)
        try:
            eager_runs.append((fn(*copies), copies))
        except Exception as error:  # noqa: BLE001 - torch's errors become data
            eager_error = as_torch_error(error, "eager")
            break
    eager_calls = lab_ops.call_counts()

    dynamo_graphs, aot_graphs, code = [], [], []
    compiled_runs, per_call, error = [], [], None
    warmup.wait()  # its compile would otherwise land in this report's Inductor code
    internals.reset_compiler()
    lab_ops.reset_calls()
    cache_before = internals.cache_counters()
    compiled = torch.compile(fn, backend=_recording_backend(backend, dynamo_graphs, aot_graphs),
                             dynamic=dynamic, fullgraph=fullgraph)
    start = time.perf_counter()
    caches = internals.config_patches() if use_caches else internals.graph_caches_off()
    with caches, internals.collect_inductor_code(code):
        for c in call_args:
            before = len(dynamo_graphs)
            copies = clone_args(c)
            try:
                compiled_runs.append((compiled(*copies), copies))
            except Exception as err:  # noqa: BLE001
                error = as_torch_error(err, "compiled")
                per_call.append(len(dynamo_graphs) - before)
                break
            per_call.append(len(dynamo_graphs) - before)
    seconds = time.perf_counter() - start
    compiled_calls = lab_ops.call_counts()
    cache_after = internals.cache_counters()

    # Report the ops this experiment involved (called, or traced), not every op alive in the process.
    involved = {name for name, n in {**eager_calls, **compiled_calls}.items() if n} | {
        node.custom_op for graph in dynamo_graphs for node in graph.nodes if node.custom_op in compiled_calls}
    eager_calls = {name: eager_calls.get(name, 0) for name in sorted(involved)}
    compiled_calls = {name: compiled_calls.get(name, 0) for name in sorted(involved)}

    verdict = None
    if error is None and eager_error is None:
        verdict = compare_runs(call_args, eager_runs, compiled_runs, input_names(fn, len(call_args[0])))
    return StageReport(
        backend=backend, dynamic=dynamic, shapes=shapes,
        dynamo_graphs=dynamo_graphs, aot_graphs=aot_graphs, inductor_code=code,
        eager_calls=eager_calls, compiled_calls=compiled_calls, graphs_per_call=per_call,
        verdict=verdict, error=error, eager_error=eager_error, compile_seconds=seconds,
        cache={k: cache_after[k] - cache_before[k] for k in cache_after},
    )
