"""Eager against compiled, value by value: private copies of the inputs, and the verdict on two runs.

* copies: :func:`copy_inputs` (one private copy of a call's arguments, taken as a whole) and
  :func:`snapshot_tensor` (a copy that takes the memory the tensor takes: storage, not elements);
* equality: :func:`same_value`, ``torch.testing.assert_close``'s per-dtype verdict, NaN equal to NaN;
* the verdict: :func:`compare_runs` names each output, input and gradient that differs (:class:`Verdict`).

Not here: running anything (:mod:`labkit.stages`), and the state a function reaches outside its
arguments (:mod:`labkit.state`). No private torch.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from typing import Any, Callable, Sequence

import torch

from .errors import InputError
from .language import Said, said, said_together, say

SCALARS = (int, float, complex, bool, str, bytes, type(None))  # values compared and copied as they are


def labelled(value, label: str, _path: tuple = ()) -> list[tuple[str, Any]]:
    """The leaves of nested lists/tuples/dicts, each with its path: ``x``, ``xs[1]``, ``out['a']``. A container
    that holds itself raises InputError naming where (it has no leaves to compare)."""
    if isinstance(value, (tuple, list, dict)):
        if id(value) in _path:
            raise InputError(f"{label} is the container it is in (a list, tuple or dict that holds itself): labkit "
                             "cannot copy or compare it; pass one without the cycle.")
        _path = (*_path, id(value))
    if isinstance(value, (tuple, list)):
        return [pair for i, item in enumerate(value) for pair in labelled(item, f"{label}[{i}]", _path)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in labelled(item, f"{label}[{key!r}]", _path)]
    return [(label, value)]


def leaves(value) -> list:
    return [leaf for _, leaf in labelled(value, "")]


def _passed_through(value, inputs: list) -> int | None:
    """Which of a run's inputs ``value`` is, by identity (an object fn returned as it got it), or None. Each run
    gets its own copy of an object, so the two runs' outputs are equal exactly when they are the same input;
    what the object holds afterwards is compared with the inputs."""
    if isinstance(value, (torch.Tensor,) + SCALARS):
        return None
    return next((i for i, item in enumerate(inputs) if item is value), None)


_FLOAT32_TOLERANCE = {"rtol": 1.3e-6, "atol": 1e-5}  # torch.testing's float32 row, for Python floats (see same_value)


def storage_bytes(t: torch.Tensor) -> torch.Tensor | None:
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
    raw = storage_bytes(t)
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
    raw_a, raw_b = storage_bytes(a), storage_bytes(b)
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


def same_value(a, b) -> bool | None:
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

    def said(self) -> Said:
        """The verdict in one sentence, in English, that a view says in its language (:mod:`labkit.language`)."""
        if self.agree:
            return said("eager and compiled agree (outputs, inputs and gradients)") if self.gradients \
                else said("eager and compiled agree (outputs and inputs)")
        if not self.problems:
            return said("labkit cannot say whether eager and compiled agree: {caveats}",
                        caveats=said_together(self.caveats, "; ", "; "))
        return said("eager and compiled DIFFER: {problems}", problems=said_together(self.problems + self.caveats,
                                                                                    "; ", "; "))

    def __str__(self):
        return say(self.said())


def check_inputs(call: Sequence, names: Sequence[str]) -> None:
    for name, value in zip(names, call):
        for label, leaf in labelled(value, name):
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
            for label, leaf in labelled(value, name):
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
            and same_value(value, after.get(label)) is not True}


def _argument_values(args: Sequence, names: Sequence[str], with_grads: bool) -> dict[str, Any]:
    """Every leaf of the arguments by its path, and with ``with_grads`` the ``.grad`` of each leaf that requires
    grad."""
    values = {}
    for name, value in zip(names, args):
        for label, leaf in labelled(value, name):
            values[label] = leaf
            if with_grads and isinstance(leaf, torch.Tensor) and has_grad_slot(leaf):
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
        leaves_e, leaves_c = labelled(out_e, "output"), labelled(out_c, "output")
        inputs_e, inputs_c = leaves(list(args_e)), leaves(list(args_c))
        same = [True if _passed_through(a, inputs_e) is not None
                and _passed_through(a, inputs_e) == _passed_through(b, inputs_c) else same_value(a, b)
                for (_, a), (_, b) in zip(leaves_e, leaves_c)]
        if [k for k, _ in leaves_e] != [k for k, _ in leaves_c] or False in same:
            bad_outputs.append(i)
        caveats += [said("labkit cannot compare {label} ({kind}): return tensors, numbers, or lists/tuples/dicts of "
                         "them", label=label + suffix, kind=type(value).__name__)
                    for (label, value), ok in zip(leaves_e, same) if ok is None]
        before, after_e, after_c = (_argument_values(args, plain, with_grads) for args in (orig, args_e, args_c))
        changed_e, changed_c = _differences(before, after_e), _differences(before, after_c)
        mutated_e += [label + suffix for label in before if label in changed_e]
        mutated_c += [label + suffix for label in before if label in changed_c]
        for label in before:
            if (isinstance(before[label], torch.Tensor) or label.endswith(".grad")) \
                    and same_value(after_e.get(label), after_c.get(label)) is not True:
                bad_inputs.setdefault(label, []).append((i, label in changed_e, label in changed_c))
    problems = []
    if bad_outputs:
        problems.append(said("outputs differ {calls}", calls=for_inputs([shapes[i] for i in bad_outputs]))
                        if many else said("outputs differ"))
    problems += input_problems(bad_inputs, shapes if many else None)
    return Verdict(not bad_outputs, not bad_inputs, tuple(mutated_e), tuple(mutated_c), tuple(problems),
                   caveats=tuple(dict.fromkeys(caveats)))


def call_shapes(call: Sequence) -> str:
    """A call's tensor inputs by their shapes, ``"[4]"`` or ``"[4] and [2, 3]"``: how a learner tells calls apart."""
    shapes = [str(list(a.shape)) for a in call if isinstance(a, torch.Tensor)]
    return said_together(shapes, " and ", " and ") if shapes else said("no tensor")


def for_inputs(shapes: Sequence[str]) -> Said:
    """``"for the inputs of shape [4] and [6]"``: the calls a finding holds for, named by their inputs' shapes."""
    listed = said_together(dict.fromkeys(shapes))
    return said("for the inputs of shape {listed}" if len(shapes) > 1 else "for the input of shape {listed}",
                listed=listed)


def input_problems(bad: dict[str, list], shapes: Sequence[str] | None, what: str = "") -> list[str]:
    """One sentence per input (or state tensor) whose final value differs between the runs; with ``shapes``
    (several calls), the calls it differs in, named by their inputs' shapes."""
    problems = []
    for name, cases in bad.items():
        _, changed_e, changed_c = cases[0]
        how = said("eager {eager} it, compiled {compiled} it differently" if changed_e and changed_c
                   else "eager {eager} it, compiled {compiled} it",
                   eager=said("changed" if changed_e else "left"), compiled=said("changed" if changed_c else "left"))
        if shapes:
            problems.append(said("{what}{name} differs afterwards {calls}: {how}", what=what, name=name, how=how,
                                 calls=for_inputs([shapes[i] for i, _, _ in cases])))
        else:
            problems.append(said("{what}{name} differs afterwards: {how}", what=what, name=name, how=how))
    return problems


def has_grad_slot(tensor: torch.Tensor) -> bool:
    """A leaf that requires grad: ``.backward()`` accumulates into its ``.grad``."""
    return tensor.requires_grad and tensor.is_leaf


# --- gradients ----------------------------------------------------------------------------------


def backward_loss(output, backward) -> torch.Tensor | None:
    """What ``.backward()`` is called on: ``backward(output)``, or the sum of every output that requires grad."""
    if callable(backward):
        loss = backward(output)
        if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
            raise InputError(f"backward=loss_fn must return a one-element tensor to call .backward() on "
                             f"(e.g. lambda out: out.sum()), not {type(loss).__name__}"
                             f"{list(loss.shape) if isinstance(loss, torch.Tensor) else ''}.")
        return loss
    parts = [leaf.sum() for leaf in leaves(output) if isinstance(leaf, torch.Tensor) and leaf.requires_grad]
    return sum(parts[1:], parts[0]) if parts else None


def input_grads(copies: Sequence, names: Sequence[str]) -> dict[str, torch.Tensor | None]:
    return {label: leaf.grad for name, value in zip(names, copies) for label, leaf in labelled(value, name)
            if isinstance(leaf, torch.Tensor) and has_grad_slot(leaf)}


def clear_input_grads(copies: Sequence) -> None:
    """A copy of an input keeps the caller's ``.grad``; each run starts from none, as the comparison needs."""
    for leaf in leaves(copies):
        if isinstance(leaf, torch.Tensor) and has_grad_slot(leaf):
            leaf.grad = None


def _gradient_problems(eager: list[dict], compiled: list[dict]) -> list[str]:
    many = len(eager) > 1
    problems = []
    for i, (grads_e, grads_c) in enumerate(zip(eager, compiled)):
        for label in grads_e:
            if same_value(grads_e[label], grads_c.get(label)) is not True:
                problems.append(said("the gradient of {label} differs", label=f"{label}@{i}" if many else label))
    return problems


def with_gradients(verdict: Verdict, eager: list, compiled: list) -> Verdict:
    """Add the gradient comparison to the verdict (or say why there was nothing to compare)."""
    if any(grads is None for grads in eager + compiled):
        note = said("backward=True, but no output requires grad: pass inputs made with requires_grad=True "
                    "(or a module with trainable parameters)")
        return dataclasses.replace(verdict, caveats=verdict.caveats + (note,))
    problems = _gradient_problems(eager, compiled)
    labels = tuple(dict.fromkeys(label for grads in eager for label in grads))
    return dataclasses.replace(verdict, grads_match=not problems, gradients=labels,
                               problems=verdict.problems + tuple(problems))
