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
from .describe import brief  # noqa: F401 - labkit.stages.brief, as before
from .env import refuse_if_compiler_unavailable

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
    raised_in: str = ""  # compiled: "Dynamo", "AOTAutograd" or "Inductor" (while compiling), or "run time"
    call: int = 0        # which call (0 = the first) raised

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


def _labelled(value, label: str, _path: tuple = ()) -> list[tuple[str, Any]]:
    """The leaves of nested lists/tuples/dicts, each with its path: ``x``, ``xs[1]``, ``out['a']``. A container
    that holds itself raises InputError naming where (it has no leaves to compare)."""
    if isinstance(value, (tuple, list, dict)):
        if id(value) in _path:
            raise InputError(f"{label} is the container it is in (a list, tuple or dict that holds itself): labkit "
                             "cannot copy or compare it; pass one without the cycle.")
        _path = (*_path, id(value))
    if isinstance(value, (tuple, list)):
        return [pair for i, item in enumerate(value) for pair in _labelled(item, f"{label}[{i}]", _path)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _labelled(item, f"{label}[{key!r}]", _path)]
    return [(label, value)]


def _leaves(value) -> list:
    return [leaf for _, leaf in _labelled(value, "")]


def _passed_through(value, inputs: list) -> int | None:
    """Which of a run's inputs ``value`` is, by identity (an object fn returned as it got it), or None. Each run
    gets its own copy of an object, so the two runs' outputs are equal exactly when they are the same input;
    what the object holds afterwards is compared with the inputs."""
    if isinstance(value, (torch.Tensor,) + _SCALARS):
        return None
    return next((i for i, item in enumerate(inputs) if item is value), None)


_FLOAT32_TOLERANCE = {"rtol": 1.3e-6, "atol": 1e-5}  # torch.testing's float32 row, for Python floats (see _same)


def _storage_bytes(t: torch.Tensor) -> torch.Tensor | None:
    """All the memory ``t`` lives in, as one flat byte tensor (None: no plain storage, e.g. sparse or a subclass)."""
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided or t.is_meta:
        return None
    try:
        return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    except (RuntimeError, TypeError, NotImplementedError):
        return None


def _over_bytes(raw: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A tensor with ``like``'s dtype, sizes and strides over the bytes ``raw``."""
    return torch.empty(0, dtype=like.dtype, device=like.device).set_(
        raw.untyped_storage(), like.storage_offset(), like.size(), like.stride())


def snapshot_tensor(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t``'s values that takes the memory ``t`` takes, not one element per index.

    The storage is copied and viewed with ``t``'s strides, so ``torch.zeros(1).expand(2**28)``
    copies 4 bytes; ``clone()`` would materialise all 2**28 elements (1 GiB). Where the storage is
    bigger than the elements (a small view of a big base), the elements are cloned instead.
    """
    raw = _storage_bytes(t)
    if raw is not None and raw.numel() <= t.numel() * t.element_size():
        try:
            return _over_bytes(raw.clone(), t)
        except (RuntimeError, TypeError):
            pass
    return t.detach().clone()


def _same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same layout over bit-identical storage: equal, checked without reading ``a`` element by element.

    Only where the storage is no bigger than the elements (an expanded tensor, a whole tensor):
    for a small view of a big base, comparing the elements is cheaper.
    """
    if (a.stride(), a.storage_offset(), a.device) != (b.stride(), b.storage_offset(), b.device):
        return False
    raw_a, raw_b = _storage_bytes(a), _storage_bytes(b)
    return (raw_a is not None and raw_b is not None and raw_a.numel() == raw_b.numel()
            and raw_a.numel() <= a.numel() * a.element_size() and bool(torch.equal(raw_a, raw_b)))


def _close(a, b, **tolerance) -> bool | None:
    """``torch.testing.assert_close``'s verdict: its per-dtype tolerances (bf16/fp16 get theirs, not fp32's),
    NaN equal to NaN, integers and bools exact. A dtype it does not support is compared bit for bit."""
    try:
        torch.testing.assert_close(a, b, equal_nan=True, check_device=False, **tolerance)
        return True
    except AssertionError:
        return False
    except (TypeError, ValueError, RuntimeError, NotImplementedError):  # e.g. a quantized or float8 tensor
        try:
            return bool(torch.equal(a, b)) if isinstance(a, torch.Tensor) else None
        except (TypeError, RuntimeError, NotImplementedError):
            return None


def _same(a, b) -> bool | None:
    """Equal (True), different (False), or None: labkit cannot tell (meta tensors, odd objects).

    Tensors are compared as ``torch.testing.assert_close`` compares them (per-dtype tolerances,
    NaN equal to NaN); a Python float gets float32's tolerances, since it usually comes from a
    float32 tensor (``.item()``).
    """
    if a is b:
        return True
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.layout != b.layout:
            return False
        if a.is_meta or b.is_meta:
            return None
        a, b = a.detach(), b.detach()
        if a.layout == torch.strided and _same_bytes(a, b):
            return True
        a, b = a.cpu(), b.cpu()
        if a.layout != torch.strided:
            a, b = a.to_dense(), b.to_dense()
        return _close(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (float, complex)):
        return _close(a, b, **_FLOAT32_TOLERANCE)
    if type(a).__module__ == "numpy":
        import numpy

        if isinstance(a, numpy.ndarray) and a.dtype.kind in "biufc" and a.shape == b.shape and a.dtype == b.dtype:
            return _close(a, b)
        return bool(numpy.array_equal(a, b)) if isinstance(a, numpy.ndarray) else bool(a == b or a != a and b != b)
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
            if isinstance(leaf, torch.Tensor) and leaf.is_nested:
                raise InputError(f"{label} is a nested tensor, which labkit cannot copy and compare: pass a padded "
                                 f"one, torch.nested.to_padded_tensor({label}, 0.0), or its pieces as a list.")


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
            if (isinstance(value, torch.Tensor) or isinstance(after.get(label), torch.Tensor))
            and _same(value, after.get(label)) is not True}


def _argument_values(args: Sequence, names: Sequence[str], with_grads: bool) -> dict[str, Any]:
    """Every leaf of the arguments by its path, and with ``with_grads`` the ``.grad`` of each leaf that requires
    grad."""
    values = {}
    for name, value in zip(names, args):
        for label, leaf in _labelled(value, name):
            values[label] = leaf
            if with_grads and isinstance(leaf, torch.Tensor) and _has_grad_slot(leaf):
                values[f"{label}.grad"] = leaf.grad
    return values


def compare_runs(originals: Sequence[Sequence], eager: list, compiled: list,
                 names: Sequence[str] | None = None, with_grads: bool = True) -> Verdict:
    """``eager``/``compiled``: one ``(output, args_after)`` pair per call.

    Inputs are named by ``names`` (the function's parameters), their parts by their path
    (``xs[0]``); with several calls, ``x@1`` is ``x`` in call 1. With ``with_grads``, the
    ``.grad`` of an input leaf counts as part of it (``x.grad``): a function that calls
    ``.backward()`` itself leaves its gradients there.
    """
    many = len(originals) > 1
    shapes = [call_shapes(call) for call in originals]
    bad_outputs, bad_inputs, mutated_e, mutated_c, caveats = [], {}, [], [], []
    for i, (orig, (out_e, args_e), (out_c, args_c)) in enumerate(zip(originals, eager, compiled)):
        plain = list(names or input_names(None, len(orig)))
        suffix = f"@{i}" if many else ""
        leaves_e, leaves_c = _labelled(out_e, "output"), _labelled(out_c, "output")
        inputs_e, inputs_c = _leaves(list(args_e)), _leaves(list(args_c))
        same = [True if _passed_through(a, inputs_e) is not None
                and _passed_through(a, inputs_e) == _passed_through(b, inputs_c) else _same(a, b)
                for (_, a), (_, b) in zip(leaves_e, leaves_c)]
        if [k for k, _ in leaves_e] != [k for k, _ in leaves_c] or False in same:
            bad_outputs.append(i)
        caveats += [f"labkit cannot compare {label}{suffix} ({type(value).__name__}): return tensors, numbers, "
                    f"or lists/tuples/dicts of them" for (label, value), ok in zip(leaves_e, same) if ok is None]
        before, after_e, after_c = (_argument_values(args, plain, with_grads) for args in (orig, args_e, args_c))
        changed_e, changed_c = _differences(before, after_e), _differences(before, after_c)
        mutated_e += [label + suffix for label in before if label in changed_e]
        mutated_c += [label + suffix for label in before if label in changed_c]
        for label in before:
            if (isinstance(before[label], torch.Tensor) or label.endswith(".grad")) \
                    and _same(after_e.get(label), after_c.get(label)) is not True:
                bad_inputs.setdefault(label, []).append((i, label in changed_e, label in changed_c))
    problems = []
    if bad_outputs:
        problems.append("outputs differ" + (f" {for_inputs([shapes[i] for i in bad_outputs])}" if many else ""))
    problems += _input_problems(bad_inputs, shapes if many else None)
    return Verdict(not bad_outputs, not bad_inputs, tuple(mutated_e), tuple(mutated_c), tuple(problems),
                   caveats=tuple(dict.fromkeys(caveats)))


def call_shapes(call: Sequence) -> str:
    """A call's tensor inputs by their shapes, ``"[4]"`` or ``"[4] and [2, 3]"``: how a learner tells calls apart."""
    shapes = [str(list(a.shape)) for a in call if isinstance(a, torch.Tensor)]
    return " and ".join(shapes) if shapes else "no tensor"


def for_inputs(shapes: Sequence[str]) -> str:
    """``"for the inputs of shape [4] and [6]"``: the calls a finding holds for, named by their inputs' shapes."""
    unique = list(dict.fromkeys(shapes))
    listed = unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " and " + unique[-1]
    return f"for the input{'s' if len(shapes) > 1 else ''} of shape {listed}"


def _input_problems(bad: dict[str, list], shapes: Sequence[str] | None, what: str = "") -> list[str]:
    """One sentence per input (or state tensor) whose final value differs between the runs; with ``shapes``
    (several calls), the calls it differs in, named by their inputs' shapes."""
    problems = []
    for name, cases in bad.items():
        calls = f" {for_inputs([shapes[i] for i, _, _ in cases])}" if shapes else ""
        _, changed_e, changed_c = cases[0]
        problems.append(f"{what}{name} differs afterwards{calls}: eager {'changed' if changed_e else 'left'} it, "
                        f"compiled {'changed' if changed_c else 'left'} it"
                        + (" differently" if changed_e and changed_c else ""))
    return problems


# --- what the function reaches besides its arguments ---------------------------------------------

_MISSING = type("Missing", (), {"__repr__": lambda self: "<not set>"})()  # a name or attribute that did not exist
_SCALARS = (int, float, complex, bool, str, bytes, type(None))


def _read(holder, key):
    """What a slot holds: a closure cell (``key`` None) or an entry of a dict (globals, ``__dict__``, ``_buffers``)."""
    if key is None:
        try:
            return holder.cell_contents
        except ValueError:  # an empty cell
            return _MISSING
    return holder.get(key, _MISSING)


def _write(holder, key, value) -> None:
    if key is None:
        if value is _MISSING:
            del holder.cell_contents
        else:
            holder.cell_contents = value
    elif value is _MISSING:
        holder.pop(key, None)
    else:
        holder[key] = value


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _own_dict(target) -> dict | None:
    """``target.__dict__``, or None where reading it fails (a hostile ``__getattr__``): labkit does not look there."""
    try:
        return vars(target)
    except Exception:  # noqa: BLE001
        return None


def _stateful_torch_types() -> tuple[type, ...]:
    """torch objects whose plain attributes are training state a function advances (``scheduler.step()``)."""
    found = [getattr(torch.optim.lr_scheduler, "LRScheduler", None), getattr(torch.amp, "GradScaler", None)]
    return tuple(t for t in found if isinstance(t, type))


def _is_foreign(target) -> bool:
    """torch's and labkit's own objects: their attributes are not the learner's state (schedulers and scalers are)."""
    if isinstance(target, _stateful_torch_types()):
        return False
    return type(target).__module__.split(".")[0] in ("torch", "labkit", "builtins")


def _fresh(label: str, taken) -> str:
    """``label``, or ``label#2``, ``label#3``... where ``label`` already names something else."""
    n = 2
    fresh = label
    while fresh in taken:
        fresh, n = f"{label}#{n}", n + 1
    return fresh


class _Reach:
    """What a function can reach without being passed it: closure cells, globals, modules, objects' attributes.

    ``slots``: the names the function can rebind (a global, a closure cell, an attribute, a
    module's parameter or buffer); ``tensors``: the tensors it can change in place; plus the
    ``torch.Generator`` and optimizer objects it can advance.
    """

    def __init__(self, fn: Callable):
        self.tensors: dict[str, torch.Tensor] = {}
        self.slots: dict[str, tuple] = {}
        self.generators: dict[str, torch.Generator] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.objects: list = []  # objects whose __dict__ labkit watches for added attributes
        self._seen: set[int] = set()
        self._visit(fn, getattr(fn, "__name__", "fn"), 0)

    def _slot(self, label: str, holder, key, depth: int, where: str | None = None) -> None:
        known = self.slots.get(label)
        if known is not None and (known[0] is holder and known[1] == key):
            return  # the same name, reached twice
        if known is not None:  # another name with the same label (a global w and a closure's w)
            label = _fresh(f"{where}.{label}" if where else label, self.slots)
        self.slots[label] = (holder, key)
        value = _read(holder, key)
        try:
            if value is not _MISSING:
                self._visit(value, label, depth + 1)
        except Exception:  # noqa: BLE001 - an object that fails to be looked at (hostile __getattribute__) is skipped
            pass

    def _visit(self, target, label: str, depth: int) -> None:
        if isinstance(target, torch.Tensor):
            if not target.is_meta and all(target is not t for t in self.tensors.values()):
                self.tensors[_fresh(label, self.tensors)] = target
            return
        if id(target) in self._seen or depth > 3 or isinstance(target, (*_SCALARS, type, types.ModuleType)):
            return
        self._seen.add(id(target))
        if isinstance(target, torch.Generator):
            self.generators[label] = target
        elif isinstance(target, torch.optim.Optimizer):
            self.optimizers[label] = target
            for i, param in enumerate(p for group in target.param_groups for p in group["params"]):
                self._visit(param, f"{label}.params[{i}]", depth + 1)
        elif isinstance(target, torch.nn.Module):
            self._module(target, label, depth)
        elif isinstance(target, (list, tuple, dict)):
            for leaf_label, leaf in _labelled(target, label):
                self._visit(leaf, leaf_label, depth + 1)
        elif isinstance(target, functools.partial):
            self._visit(target.func, label, depth + 1)
            self._visit([*target.args, *target.keywords.values()], f"{label}.args", depth + 1)
        elif isinstance(target, types.MethodType):
            self._visit(target.__self__, label.rsplit(".", 1)[0], depth + 1)
            self._visit(target.__func__, label, depth + 1)
        elif isinstance(target, types.FunctionType):
            self._function(target, depth)
        elif not _is_foreign(target) and isinstance(_own_dict(target), dict):
            self._object(target, label, depth)

    def _function(self, fn: types.FunctionType, depth: int) -> None:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            self._slot(name, cell, None, depth, where=fn.__name__)
        stored = _stored_global_names(fn.__code__)
        for name in sorted(_global_names(fn.__code__)):
            if name in fn.__globals__ or name in stored:
                self._slot(name, fn.__globals__, name, depth)

    def _methods(self, target, label: str, depth: int) -> None:
        """The functions the object's own class defines (``forward``, ``__call__``, helpers they call)."""
        for klass in type(target).__mro__:
            if klass.__module__.split(".")[0] in ("torch", "builtins"):
                continue
            for value in vars(klass).values():
                if isinstance(value, (types.FunctionType, staticmethod, classmethod)):
                    self._visit(getattr(value, "__func__", value), label, depth + 1)

    def _object(self, target, label: str, depth: int) -> None:
        self.objects.append(target)
        for key in list(vars(target)):
            self._slot(f"{label}.{key}", vars(target), key, depth)
        self._methods(target, label, depth)

    def _module(self, module: torch.nn.Module, label: str, depth: int) -> None:
        for name, sub in module.named_modules(prefix=label):
            self._seen.add(id(sub))
            self.objects.append(sub)
            for holder in (sub._parameters, sub._buffers):
                for key in list(holder):
                    self._slot(f"{name}.{key}", holder, key, depth)
            for key, value in list(vars(sub).items()):
                if not (key.startswith("_") and isinstance(value, dict)):  # torch's own registries
                    self._slot(f"{name}.{key}", vars(sub), key, depth)
            self._methods(sub, name, depth)


def _stored_global_names(code: types.CodeType) -> set[str]:
    """The globals ``code`` (or a function defined in it) rebinds: ``global counter; counter += 1``."""
    import dis

    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _stored_global_names(const)
    return names


def _optimizer_entries(optimizer: torch.optim.Optimizer, label: str) -> dict[str, Any]:
    """An optimizer's state (momentum buffers, step counts...) and its groups' settings, labelled."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    index = {id(p): i for i, p in enumerate(params)}
    entries = {f"{label}.state[{index.get(id(p), '?')}][{key!r}]": value
               for p, state in optimizer.state.items() for key, value in state.items()}
    entries.update({f"{label}.param_groups[{j}][{key!r}]": value for j, group in enumerate(optimizer.param_groups)
                    for key, value in group.items() if key != "params" and isinstance(value, _SCALARS)})
    return entries


class FunctionState:
    """What a function reaches outside its arguments, saved so that each run starts from it.

    Each run starts from the caller's values and gets its own gradients and optimizer state;
    :meth:`now` says what a run changed; :meth:`restore` puts back every value, name,
    gradient, generator and random state, so the caller's objects end as they began.
    Tensors are saved storage and all (``snapshot_tensor``): an expanded tensor stays small.
    """

    def __init__(self, fn: Callable):
        reach = _Reach(fn)
        self.tensors = reach.tensors
        self.slots = {label: (holder, key, _read(holder, key)) for label, (holder, key) in reach.slots.items()}
        self.generators = {label: (g, g.get_state()) for label, g in reach.generators.items()}
        self.optimizers = {label: (o, o.state, o.param_groups) for label, o in reach.optimizers.items()}
        self.attributes = [(obj, set(vars(obj))) for obj in reach.objects]
        self.attributes += [(t, set(vars(t))) for t in self.tensors.values()]  # Dynamo marks tensors it compiles
        self.saved = {label: snapshot_tensor(t) for label, t in self.tensors.items()}
        self.saved_grads = {label: t.grad for label, t in self.tensors.items() if _has_grad_slot(t)}
        self.before = {label: original for label, (_, _, original) in self.slots.items()}
        self.before.update({label: t for label, t in self.tensors.items()})
        self.before.update({f"{label}.grad": grad for label, grad in self.saved_grads.items()})
        self.before.update({label: state for label, (_, state) in self.generators.items()})
        for label, (optimizer, _, _) in self.optimizers.items():
            self.before.update(_optimizer_entries(optimizer, label))
        self.cpu_rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    def start_run(self) -> None:
        """Give a run its own gradients (copies of the caller's) and optimizer state (a copy), from saved values."""
        for label, grad in self.saved_grads.items():
            self.tensors[label].grad = None if grad is None else grad.detach().clone()
        for optimizer, state, groups in self.optimizers.values():
            params = {id(p): p for group in groups for p in group["params"]}
            optimizer.state, optimizer.param_groups = copy.deepcopy((state, groups), params)

    def now(self) -> dict[str, Any]:
        """What differs from the start: each changed tensor, name, gradient, generator or optimizer entry (copies)."""
        changed = {label: snapshot_tensor(t) for label, t in self.tensors.items()
                   if _same(t, self.saved[label]) is not True}
        for label, (holder, key, original) in self.slots.items():
            value = _read(holder, key)
            if value is not original:
                changed[label] = snapshot_tensor(value) if isinstance(value, torch.Tensor) else value
        for label in self.saved_grads:
            grad, original = self.tensors[label].grad, self.saved_grads[label]
            if _same(grad, original) is not True:
                changed[f"{label}.grad"] = None if grad is None else snapshot_tensor(grad)
        for label, (generator, state) in self.generators.items():
            if not torch.equal(generator.get_state(), state):
                changed[label] = generator.get_state()
        for label, (optimizer, _, _) in self.optimizers.items():
            entries = _optimizer_entries(optimizer, label)
            old = {k: v for k, v in self.before.items() if k.startswith((f"{label}.state[", f"{label}.param_groups["))}
            for name in {**old, **entries}:
                value = entries.get(name, _MISSING)
                if _same(value, old.get(name, _MISSING)) is not True:
                    changed[name] = snapshot_tensor(value) if isinstance(value, torch.Tensor) else value
        return changed

    def restore(self) -> None:
        """Put every saved value, name, gradient, optimizer state and generator back as it was."""
        with torch.no_grad():
            for label, tensor in self.tensors.items():
                if _same(tensor, self.saved[label]) is not True:
                    if tensor.shape != self.saved[label].shape:   # fn resized it (resize_): give it its shape back
                        tensor.resize_(self.saved[label].shape)
                    raw, saved = _storage_bytes(tensor), _storage_bytes(self.saved[label])
                    if raw is not None and saved is not None and raw.numel() == saved.numel():
                        raw.copy_(saved)  # bytes and all: an expanded tensor cannot be written element-wise
                    else:
                        tensor.copy_(self.saved[label])
        for holder, key, original in self.slots.values():
            if _read(holder, key) is not original:
                _write(holder, key, original)
        for obj, keys in self.attributes:
            for key in set(vars(obj)) - keys:
                delattr(obj, key) if isinstance(obj, torch.Tensor) else vars(obj).pop(key, None)
        for label, grad in self.saved_grads.items():
            self.tensors[label].grad = grad  # the caller's own .grad object, which no run wrote to
        for optimizer, state, groups in self.optimizers.values():
            optimizer.state, optimizer.param_groups = state, groups
        for generator, state in self.generators.values():
            generator.set_state(state)
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

    def problems(self, eager_end: dict, compiled_end: dict) -> tuple[list[str], list[str]]:
        """``(problems, caveats)``: what the two runs left differently, and what labkit could not compare."""
        bad, caveats = {}, []
        for label in dict.fromkeys([*eager_end, *compiled_end]):
            e = eager_end.get(label, self.before.get(label, _MISSING))
            c = compiled_end.get(label, self.before.get(label, _MISSING))
            same = _same(e, c)
            if same is None:
                caveats.append(f"labkit cannot compare what {label} holds afterwards ({type(e).__name__})")
            elif not same:
                bad[label] = [(0, label in eager_end, label in compiled_end)]
        return _input_problems(bad, None, what=""), caveats


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
        raise ValueError(f"an op name looks like 'namespace::name' (e.g. 'mylab::bump'), not {brief(op_name)}.")
    return parts[0], parts[1]


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
        _check_inputs(c, input_names(fn, len(c)))
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
        recording = _recording_backend(backend, dynamo_graphs, aot_graphs, backward_graphs)
        compiled = torch.compile(_fresh_copy(fn), backend=recording, dynamic=dynamic, fullgraph=fullgraph)
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


# --- notebook 08: where torch raises, and which graph serves each call ---------------------------


def raised(call: Callable[[], Any], stage: str = "eager", quiet: bool = False) -> TorchError | None:
    """Run ``call()``: None when it returns, else the exception it raised, as a :class:`TorchError`.

    A cell that shows torch's refusal reads ``error = raised(lambda: ...)`` instead of a try/except.
    ``quiet=True`` drops the warnings torch issues meanwhile (autograd's anomaly mode repeats the
    error as "Error detected in ...Backward"). ``error.full`` starts with the outermost type
    (``BackendCompilerFailed`` for an error inside a backend), ``error.type_name`` is the innermost.
    """
    import warnings

    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        try:
            call()
        except Exception as error:  # noqa: BLE001 - torch's error is the data a lesson wants
            return as_torch_error(error, stage)
    return None


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

    internals.reset_compiler()
    compiled = torch.compile(fn, backend=backend, **compile_options)
    outputs, served = [], []
    for args in calls:
        before = len(ran)
        outputs.append(compiled(*args))
        served.append(ran[before] if len(ran) > before else None)
    return Served(graphs, served, outputs)


# --- 01: which stage of torch.compile is calling a kernel ---------------------------------------------------

def calling_stage(x) -> str:
    """Who is calling the kernel (or fake kernel) that received ``x``: ``"dynamo"``, ``"aot"`` or ``"inductor"``
    while torch.compile traces with fake tensors (the innermost of their modules on the call stack), else
    ``"run"``: a call with real data, eager or compiled."""
    import sys

    if not internals.is_fake_tensor(x):
        return "run"
    return internals.compile_stage_on_stack(sys._getframe(1))
