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
   the tensors the function reaches outside its arguments (closure, globals, module buffers).

Whatever torch raises comes back as a :class:`TorchError` with torch's own words,
so a notebook can show the message instead of a traceback.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import re
import time
import types
from typing import Any, Callable, Sequence

import torch

from . import _torch_internals as internals
from . import ops as lab_ops

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
    random: bool = False  # the node draws random numbers (rand, dropout, a seeded custom op, ...)


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

    @property
    def draws_random_numbers(self) -> bool:
        return any(n.random for n in self.nodes)


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
        nodes.append(NodeInfo(
            name=node.name, op=node.op,
            target=getattr(node.target, "__name__", str(node.target)) if node.op == "call_function"
            else str(node.target),
            args=_short(node.args), custom_op=internals.custom_op_qualname(op),
            wrapper=getattr(node.target, "__name__", None) if wrapped is not None else None,
            mutating=internals.writes_an_input(op), random=internals.draws_random_numbers(op)))
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


def _labelled(value, label: str) -> list[tuple[str, Any]]:
    """The leaves of nested lists/tuples/dicts, each with its path: ``x``, ``xs[1]``, ``out['a']``."""
    if isinstance(value, (tuple, list)):
        return [pair for i, item in enumerate(value) for pair in _labelled(item, f"{label}[{i}]")]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _labelled(item, f"{label}[{key!r}]")]
    return [(label, value)]


def _leaves(value) -> list:
    return [leaf for _, leaf in _labelled(value, "")]


def _same(a, b) -> bool | None:
    """Equal (True), different (False), or None: labkit cannot tell (meta tensors, odd objects)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.layout != b.layout:
            return False
        if a.is_meta or b.is_meta:
            return None
        a, b = (t.detach().cpu() for t in (a, b))
        if a.layout != torch.strided:
            a, b = a.to_dense(), b.to_dense()
        if a.is_floating_point() or a.is_complex():
            return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
        return bool(torch.equal(a, b))
    if type(a) is not type(b):
        return False
    if type(a).__module__ == "numpy":
        import numpy

        return bool(numpy.array_equal(a, b)) if isinstance(a, numpy.ndarray) else bool(a == b)
    try:
        equal = a == b
        return equal if isinstance(equal, bool) else None
    except Exception:  # noqa: BLE001 - an object whose == fails cannot be compared; say so
        return None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Eager vs compiled: outputs, the final values of the inputs, and the state the function reaches.

    ``caveats`` are what labkit could not check or replay faithfully; with any, ``agree``
    is False: labkit never vouches for a run it did not check.
    """

    outputs_match: bool
    inputs_match: bool
    mutated_eager: tuple[str, ...]  # inputs whose values eager changed
    mutated_compiled: tuple[str, ...]
    problems: tuple[str, ...]
    state_match: bool = True  # tensors the function reaches outside its arguments (closure, globals, module)
    caveats: tuple[str, ...] = ()
    grads_match: bool = True
    gradients: tuple[str, ...] = ()  # the inputs/parameters whose gradients were compared (backward=True)

    @property
    def agree(self) -> bool:
        return (self.outputs_match and self.inputs_match and self.state_match and self.grads_match
                and not self.caveats)

    def __str__(self):
        if self.agree:
            return "eager and compiled agree (outputs, inputs and gradients)" if self.gradients \
                else "eager and compiled agree (outputs and inputs)"
        if not self.problems:
            return "labkit cannot say whether eager and compiled agree: " + "; ".join(self.caveats)
        return "eager and compiled DIFFER: " + "; ".join(self.problems + self.caveats)


class InputError(ValueError):
    """An input labkit cannot copy or compare; the message says what to pass instead."""


def _check_inputs(call: Sequence, names: Sequence[str]) -> None:
    for name, value in zip(names, call):
        for label, leaf in _labelled(value, name):
            if isinstance(leaf, torch.Tensor) and leaf.is_meta:
                raise InputError(f"{label} is a meta tensor, which has no values to compare: pass a real tensor "
                                 f"(e.g. torch.zeros({list(leaf.shape)}, dtype={leaf.dtype})).")


def copy_inputs(call: Sequence, names: Sequence[str] | None = None) -> tuple:
    """One private copy of a call's arguments, taken as a whole (lists, dicts, tuples inside).

    Tensors that share storage share it in the copy too (``f(x, x)`` stays ``f(x, x)``),
    leaves keep ``requires_grad``, and ``mark_dynamic`` marks survive: ``copy.deepcopy``
    with one memo does all three.
    """
    names = list(names) if names is not None else input_names(None, len(call))
    try:
        return copy.deepcopy(tuple(call), {})
    except Exception as error:  # noqa: BLE001 - turned into one sentence naming the argument
        for name, value in zip(names, call):
            for label, leaf in _labelled(value, name):
                if isinstance(leaf, torch.Tensor) and not leaf.is_leaf:
                    raise InputError(f"{label} was computed from tensors that require grad, and only graph leaves "
                                     f"can be copied for each run: pass {name}.detach() (add "
                                     f".requires_grad_() to keep gradients).") from None
                try:
                    copy.deepcopy(leaf)
                except Exception:  # noqa: BLE001
                    raise InputError(f"labkit copies every input before each run, and {label} "
                                     f"({type(leaf).__name__}) cannot be copied: pass tensors, numbers, or "
                                     f"lists/tuples/dicts of them.") from None
        raise InputError(f"labkit could not copy the inputs ({type(error).__name__}: {error}); pass tensors, "
                         f"numbers, or lists/tuples/dicts of them.") from None


def input_names(fn: Callable | None, count: int) -> list[str]:
    """The parameter names of ``fn`` for ``count`` positional inputs (``arg0``... if unknown)."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


def _differences(before: dict, after: dict) -> set[str]:
    return {label for label, value in before.items()
            if isinstance(value, torch.Tensor) and _same(value, after.get(label)) is not True}


def compare_runs(originals: Sequence[Sequence], eager: list, compiled: list,
                 names: Sequence[str] | None = None) -> Verdict:
    """``eager``/``compiled``: one ``(output, args_after)`` pair per call.

    Inputs are named by ``names`` (the function's parameters), their parts by their path
    (``xs[0]``); with several calls, ``x@1`` is ``x`` in call 1.
    """
    many = len(originals) > 1
    bad_outputs, bad_inputs, mutated_e, mutated_c, caveats = [], {}, [], [], []
    for i, (orig, (out_e, args_e), (out_c, args_c)) in enumerate(zip(originals, eager, compiled)):
        plain = list(names or input_names(None, len(orig)))
        suffix = f"@{i}" if many else ""
        leaves_e, leaves_c = _labelled(out_e, "output"), _labelled(out_c, "output")
        same = [_same(a, b) for (_, a), (_, b) in zip(leaves_e, leaves_c)]
        if [k for k, _ in leaves_e] != [k for k, _ in leaves_c] or False in same:
            bad_outputs.append(i)
        caveats += [f"labkit cannot compare {label}{suffix} ({type(value).__name__}): return tensors, numbers, "
                    f"or lists/tuples/dicts of them" for (label, value), ok in zip(leaves_e, same) if ok is None]
        before, after_e, after_c = ({label: leaf for name, value in zip(plain, args) for label, leaf in
                                     _labelled(value, name)} for args in (orig, args_e, args_c))
        changed_e, changed_c = _differences(before, after_e), _differences(before, after_c)
        mutated_e += [label + suffix for label in before if label in changed_e]
        mutated_c += [label + suffix for label in before if label in changed_c]
        for label in before:
            if isinstance(before[label], torch.Tensor) and _same(after_e.get(label), after_c.get(label)) is not True:
                bad_inputs.setdefault(label, []).append((i, label in changed_e, label in changed_c))
    problems = []
    if bad_outputs:
        problems.append("outputs differ" + (f" (calls {', '.join(map(str, bad_outputs))})" if many else ""))
    problems += _input_problems(bad_inputs, many)
    return Verdict(not bad_outputs, not bad_inputs, tuple(mutated_e), tuple(mutated_c), tuple(problems),
                   caveats=tuple(dict.fromkeys(caveats)))


def _input_problems(bad: dict[str, list], many: bool, what: str = "") -> list[str]:
    """One sentence per input (or state tensor) whose final value differs between the runs."""
    problems = []
    for name, cases in bad.items():
        calls = f" (calls {', '.join(str(i) for i, _, _ in cases)})" if many else ""
        _, changed_e, changed_c = cases[0]
        problems.append(f"{what}{name} differs afterwards{calls}: eager {'changed' if changed_e else 'left'} it, "
                        f"compiled {'changed' if changed_c else 'left'} it"
                        + (" differently" if changed_e and changed_c else ""))
    return problems


# --- what the function reaches besides its arguments ---------------------------------------------


def _module_tensors(module: torch.nn.Module, prefix: str) -> list[tuple[str, torch.Tensor]]:
    return [(f"{prefix}.{name}" if prefix else name, t)
            for name, t in [*module.named_parameters(), *module.named_buffers()]]


def _reachable_tensors(target, label: str, seen: set[int], depth: int = 0) -> list[tuple[str, torch.Tensor]]:
    """Tensors ``target`` can reach without being passed them: closure cells, globals, modules."""
    if id(target) in seen or depth > 3:
        return []
    seen.add(id(target))
    if isinstance(target, torch.Tensor):
        return [(label, target)]
    if isinstance(target, torch.nn.Module):
        return _module_tensors(target, label) + _reachable_tensors(type(target).forward, label, seen, depth + 1)
    if isinstance(target, (list, tuple, dict)):
        return [(lbl, leaf) for lbl, leaf in _labelled(target, label) if isinstance(leaf, torch.Tensor)]
    if isinstance(target, functools.partial):
        found = _reachable_tensors(target.func, label, seen, depth + 1)
        return found + [(lbl, leaf) for lbl, leaf in _labelled([*target.args, *target.keywords.values()],
                                                                f"{label}.args") if isinstance(leaf, torch.Tensor)]
    if isinstance(target, types.MethodType):
        return (_reachable_tensors(target.__self__, label.rsplit(".", 1)[0], seen, depth + 1)
                + _reachable_tensors(target.__func__, label, seen, depth + 1))
    if isinstance(target, types.FunctionType):
        found = []
        for name, cell in zip(target.__code__.co_freevars, target.__closure__ or ()):
            try:
                found += _reachable_tensors(cell.cell_contents, name, seen, depth + 1)
            except ValueError:  # an empty cell
                pass
        for name in _global_names(target.__code__):
            if name in target.__globals__:
                found += _reachable_tensors(target.__globals__[name], name, seen, depth + 1)
        return found
    return []


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


class FunctionState:
    """The tensors a function reaches outside its arguments, saved so each run starts from them.

    labkit never leaves the caller's objects changed: after the experiment they hold what
    they held before it, as the arguments do (a module's buffers, a global counter...).
    """

    def __init__(self, fn: Callable):
        found, seen_tensors = {}, set()
        for label, tensor in _reachable_tensors(fn, getattr(fn, "__name__", "fn"), set()):
            if id(tensor) not in seen_tensors and not tensor.is_meta:
                seen_tensors.add(id(tensor))
                found[label] = tensor
        self.tensors = found
        self.saved = {label: t.detach().clone() for label, t in found.items()}
        self.saved_grads = {label: t.grad for label, t in found.items() if _has_grad_slot(t)}
        self.cpu_rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    def now(self) -> dict[str, torch.Tensor]:
        """What the tensors hold now (copies; only the ones that changed)."""
        return {label: t.detach().clone() for label, t in self.tensors.items()
                if _same(t, self.saved[label]) is not True}

    def restore(self) -> None:
        """Put every saved tensor and the random number generators back as they were."""
        with torch.no_grad():
            for label, tensor in self.tensors.items():
                if _same(tensor, self.saved[label]) is not True:
                    tensor.copy_(self.saved[label])
        for label, grad in self.saved_grads.items():
            self.tensors[label].grad = grad  # the caller's own .grad object, as it was
        torch.set_rng_state(self.cpu_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)

    def take_grads(self) -> dict[str, torch.Tensor | None]:
        """The gradients a backward pass left on the parameters, which start clean for the next one."""
        grads = {}
        for label in self.saved_grads:
            tensor = self.tensors[label]
            grads[label] = None if tensor.grad is None else tensor.grad.detach().clone()
            tensor.grad = None
        return grads

    def problems(self, eager_end: dict, compiled_end: dict) -> list[str]:
        bad = {}
        for label in self.tensors:
            e = eager_end.get(label, self.saved[label])
            c = compiled_end.get(label, self.saved[label])
            if _same(e, c) is not True:
                bad[label] = [(0, label in eager_end, label in compiled_end)]
        return _input_problems(bad, many=False, what="")


def _has_grad_slot(tensor: torch.Tensor) -> bool:
    """A leaf that requires grad: ``.backward()`` accumulates into its ``.grad``."""
    return tensor.requires_grad and tensor.is_leaf


# --- gradients ----------------------------------------------------------------------------------


def _loss(output, backward) -> torch.Tensor | None:
    """What ``.backward()`` is called on: ``backward(output)``, or the sum of every output that requires grad."""
    if callable(backward):
        loss = backward(output)
        if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
            raise InputError(f"backward=loss_fn must return a one-element tensor to call .backward() on "
                             f"(e.g. lambda out: out.sum()), not {type(loss).__name__}"
                             f"{list(loss.shape) if isinstance(loss, torch.Tensor) else ''}.")
        return loss
    parts = [leaf.sum() for leaf in _leaves(output) if isinstance(leaf, torch.Tensor) and leaf.requires_grad]
    return sum(parts[1:], parts[0]) if parts else None


def _input_grads(copies: Sequence, names: Sequence[str]) -> dict[str, torch.Tensor | None]:
    return {label: leaf.grad for name, value in zip(names, copies) for label, leaf in _labelled(value, name)
            if isinstance(leaf, torch.Tensor) and _has_grad_slot(leaf)}


def _clear_input_grads(copies: Sequence) -> None:
    """A copy of an input keeps the caller's ``.grad``; each run starts from none, as the comparison needs."""
    for leaf in _leaves(copies):
        if isinstance(leaf, torch.Tensor) and _has_grad_slot(leaf):
            leaf.grad = None


def _gradient_problems(eager: list[dict], compiled: list[dict]) -> list[str]:
    many = len(eager) > 1
    problems = []
    for i, (grads_e, grads_c) in enumerate(zip(eager, compiled)):
        for label in grads_e:
            if _same(grads_e[label], grads_c.get(label)) is not True:
                problems.append(f"the gradient of {label}{f'@{i}' if many else ''} differs")
    return problems


def _fresh_copy(fn: Callable) -> Callable:
    """A function that does what ``fn`` does, but is new to Dynamo, so it compiles from scratch.

    Dynamo keeps its compiled code per code object; a copy of ``fn``'s code object has none
    yet, so no ``torch.compiler.reset()`` (which would also drop the caller's own compiled
    functions and compile callbacks) is needed. Anything that is not a plain function
    (a module, a method, a ``functools.partial``) is called through a fresh wrapper.
    """
    if not isinstance(fn, types.FunctionType):
        target = fn

        def labkit_call(*args):
            return target(*args)

        fn = labkit_call
    fresh = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    fresh.__kwdefaults__, fresh.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    fresh.__dict__.update(fn.__dict__)
    return fresh


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
        """Whether ``op_name`` is present at each stage (None: the stage did not run)."""
        namespace, name = split_qualname(op_name)
        code = "\n".join(self.inductor_code)
        return {
            "dynamo": any(g.has(op_name) for g in self.dynamo_graphs) if self.dynamo_graphs else None,
            "aot": any(g.has(op_name) for g in self.aot_graphs) if self.aot_graphs else None,
            "inductor": (f"torch.ops.{namespace}.{name}." in code) if self.inductor_code else None,
            "ran": self.compiled_calls.get(op_name, 0) > 0 if self.error is None else None,
        }


def _recording_backend(backend: str, dynamo_graphs: list, aot_graphs: list, backward_graphs: list) -> Callable:
    def record_aot(gm):
        aot_graphs.append(snapshot(gm, "aot"))

    def record_backward(gm):
        backward_graphs.append(snapshot(gm, "backward"))

    inner = {
        "eager": lambda gm, inputs: gm.forward,
        "aot_eager": internals.aot_eager_recording(record_aot, record_backward),
        "inductor": internals.inductor_recording(record_aot, record_backward),
    }[backend]

    def recording(gm, example_inputs):
        dynamo_graphs.append(snapshot(gm, "dynamo"))
        return inner(gm, example_inputs)

    return recording


def split_qualname(op_name) -> tuple[str, str]:
    """``"ns::name"`` -> ``("ns", "name")``, or one sentence saying what an op name looks like."""
    parts = op_name.split("::") if isinstance(op_name, str) else []
    if len(parts) != 2 or not all(p.isidentifier() for p in parts):
        raise ValueError(f"an op name looks like 'namespace::name' (e.g. 'mylab::bump'), not {op_name!r}.")
    return parts[0], parts[1]


def _check_arguments(fn, args, calls, backend, dynamic, fullgraph, backward) -> list[tuple]:
    """The calls to make, or ValueError with one sentence naming the fix."""
    if not callable(fn):
        raise ValueError(f"fn must be a function (or module) to run, not {type(fn).__name__}.")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}.")
    if not any(dynamic is mode for mode in DYNAMIC_MODES):
        raise ValueError(f"dynamic must be one of {DYNAMIC_MODES}, not {dynamic!r}.")
    if not isinstance(fullgraph, bool):
        raise ValueError(f"fullgraph must be True or False, not {fullgraph!r}.")
    if not (isinstance(backward, bool) or callable(backward)):
        raise ValueError(f"backward must be True, False, or a function from fn's output to a scalar loss, "
                         f"not {backward!r}.")
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
                _clear_input_grads(copies)
                if state is not None:
                    state.take_grads()
            output = fn(*copies)
            runs.append((output, copies))
            if backward:
                loss = _loss(output, backward)
                if loss is not None:
                    loss.backward()
                grads.append(None if loss is None else
                             {**_input_grads(copies, names), **(state.take_grads() if state else {})})
        except Exception as error:  # noqa: BLE001 - torch's errors become data
            return runs, as_torch_error(error, stage), grads
    return runs, None, grads


def _with_gradients(verdict: Verdict, eager: list, compiled: list) -> Verdict:
    """Add the gradient comparison to the verdict (or say why there was nothing to compare)."""
    if any(grads is None for grads in eager + compiled):
        note = ("backward=True, but no output requires grad: pass inputs made with requires_grad=True "
                "(or a module with trainable parameters)")
        return dataclasses.replace(verdict, caveats=verdict.caveats + (note,))
    problems = _gradient_problems(eager, compiled)
    labels = tuple(dict.fromkeys(label for grads in eager for label in grads))
    return dataclasses.replace(verdict, grads_match=not problems, gradients=labels,
                               problems=verdict.problems + tuple(problems))


def _random_caveat(backend: str, graphs: list[GraphSnapshot], verdict: Verdict) -> Verdict:
    """Inductor draws random numbers its own way: say so instead of an unexplained DIFFER."""
    if verdict.agree or backend != "inductor" or internals.inductor_falls_back_to_eager_random() \
            or not any(g.draws_random_numbers for g in graphs):
        return verdict
    note = ("the program draws random numbers, and Inductor generates them with its own algorithm, so they "
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
      a whole (nested lists/dicts, shared storage, ``requires_grad`` and ``mark_dynamic``
      kept). Tensors ``fn`` reaches otherwise (closure, globals, an ``nn.Module``'s
      parameters and buffers) and the random number generators are saved first: both runs
      start from them, the verdict compares where each run left them, and afterwards they
      hold what they held before. Gradients too: the caller's ``.grad`` tensors are never
      written; each run starts from no gradient and gets its own.
    * Counts start from zero without ``torch.compiler.reset()``: a fresh copy of ``fn`` is
      compiled, so the caller's own compiled functions and compile callbacks are untouched.
      Dynamo's memory of changing sizes (automatic dynamic shapes) is given a clean slate
      during the compiled run and put back after it. Functions ``fn`` calls across a graph
      break keep the compiled code Dynamo already has for them.
    * Every graph is traced for real: the FX-graph and AOTAutograd caches are bypassed.
    * Whatever torch raises comes back as a :class:`TorchError`; a bad argument to this
      function raises ValueError with one sentence naming the fix.
    """
    call_args = _check_arguments(fn, args, calls, backend, dynamic, fullgraph, backward)
    names = input_names(fn, len(call_args[0]))
    for c in call_args:
        _check_inputs(c, input_names(fn, len(c)))
    shapes = [", ".join(str(list(a.shape)) for a in c if isinstance(a, torch.Tensor)) for c in call_args]
    state = FunctionState(fn)
    try:
        lab_ops.reset_calls()
        eager_runs, eager_error, eager_grads = _run_all(fn, call_args, names, "eager", backward, state)
        eager_calls, eager_state = lab_ops.call_counts(), state.now()
        state.restore()

        dynamo_graphs, aot_graphs, backward_graphs, code, per_call = [], [], [], [], []
        lab_ops.reset_calls()
        cache_before = internals.cache_counters()
        recording = _recording_backend(backend, dynamo_graphs, aot_graphs, backward_graphs)
        compiled = torch.compile(_fresh_copy(fn), backend=recording, dynamic=dynamic, fullgraph=fullgraph)
        start = time.perf_counter()
        compiled_runs, compiled_grads, error = [], [], None
        with internals.graph_caches_off(), internals.collect_inductor_code(code), \
                internals.own_automatic_dynamic_state():
            for c in call_args:
                before = len(dynamo_graphs)
                runs, error, grads = _run_all(compiled, [c], names, "compiled", backward, state)
                compiled_runs += runs
                compiled_grads += grads
                per_call.append(len(dynamo_graphs) - before)
                if error is not None:
                    break
        seconds = time.perf_counter() - start
        compiled_calls, compiled_state = lab_ops.call_counts(), state.now()
        cache_after = internals.cache_counters()
    finally:
        state.restore()

    # Report the ops this experiment involved (called, or traced), not every op alive in the process.
    involved = {name for name, n in {**eager_calls, **compiled_calls}.items() if n} | {
        node.custom_op for graph in dynamo_graphs for node in graph.nodes if node.custom_op in compiled_calls}
    eager_calls = {name: eager_calls.get(name, 0) for name in sorted(involved)}
    compiled_calls = {name: compiled_calls.get(name, 0) for name in sorted(involved)}

    verdict = None
    if error is None and eager_error is None:
        verdict = compare_runs(call_args, eager_runs, compiled_runs, names)
        state_problems = state.problems(eager_state, compiled_state)
        if state_problems:
            verdict = dataclasses.replace(verdict, state_match=False, problems=verdict.problems + tuple(state_problems))
        if backward:
            verdict = _with_gradients(verdict, eager_grads, compiled_grads)
        verdict = _random_caveat(backend, aot_graphs or dynamo_graphs, verdict)
    return StageReport(
        backend=backend, dynamic=dynamic, shapes=shapes,
        dynamo_graphs=dynamo_graphs, aot_graphs=aot_graphs, inductor_code=code,
        eager_calls=eager_calls, compiled_calls=compiled_calls, graphs_per_call=per_call,
        verdict=verdict, error=error, eager_error=eager_error, compile_seconds=seconds,
        cache={k: cache_after[k] - cache_before[k] for k in cache_after},
        backward_graphs=backward_graphs,
    )
