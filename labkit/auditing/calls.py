"""One call's sample inputs (:class:`Call`) and the programs the checks build around a call: the op's result discarded,
inputs copied or varied.

Not here: judging what a call did (the checks do).
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
from typing import Callable

import torch

from .. import _torch as internals
from ..describe import brief
from ..compare import copy_inputs


@dataclasses.dataclass(frozen=True)
class Call:
    """One call's sample inputs, positional and keyword (``out=``, keyword-only ``*, alpha``)."""

    args: tuple
    kwargs: dict

    def named(self, overload) -> list[tuple[str, object]]:
        """Each input with the schema's name for it."""
        return list(zip(internals.argument_names(overload), self.args)) + list(self.kwargs.items())

    def copy(self, overload) -> Call:
        names, values = zip(*self.named(overload)) if self.args or self.kwargs else ((), ())
        copies = copy_inputs(values, names)
        return Call(copies[:len(self.args)], dict(zip(self.kwargs, copies[len(self.args):])))

    def run(self, overload):
        return overload(*self.args, **self.kwargs)


def _tensors_in(value) -> list[torch.Tensor]:
    """The tensors in an input: itself, or the elements of a ``Tensor[]`` list (nested lists too)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors_in(item)]
    return []


def _changed(before, now) -> bool:
    """Whether a call changed this input in place: its shape, dtype or values (NaN equals NaN); lists element-wise."""
    if isinstance(before, (list, tuple)):
        return any(_changed(b, n) for b, n in zip(before, now))
    if not isinstance(before, torch.Tensor) or before.is_meta:
        return False
    if before.shape != now.shape or before.dtype != now.dtype or before.layout != now.layout:
        return True
    if before.layout != torch.strided:
        before, now = before.to_dense(), now.to_dense()
    if before.is_floating_point() or before.is_complex():
        return not torch.allclose(before, now, rtol=0, atol=0, equal_nan=True)
    return not torch.equal(before, now)


def _varied(tensor: torch.Tensor) -> torch.Tensor:
    """Values of both signs, all distinct where the dtype allows (unsigned types: 0, 1, 2, ...)."""
    count = tensor.numel()
    values = torch.arange(count, device=tensor.device) - (0 if not tensor.dtype.is_signed else count // 2)
    return (values.to(torch.float32) + 0.5 if tensor.is_floating_point() else values).reshape(tensor.shape).to(
        tensor.dtype)


def _replaced(call: Call, index: int, value) -> tuple[tuple, dict]:
    """``call``'s (args, kwargs) with its input at ``index`` (positional first, then keyword) replaced."""
    args, kwargs = list(call.args), dict(call.kwargs)
    if index < len(args):
        args[index] = value
    else:
        kwargs[list(kwargs)[index - len(args)]] = value
    return tuple(args), kwargs


def _holds_nan(value) -> bool:
    return any((t.is_floating_point() or t.is_complex()) and not t.is_meta and bool(t.isnan().any())
               for t in _tensors_in(value))


def discarding_call(overload, names, positional: int, keywords: list[str]) -> Callable:
    """``f(*inputs)``: call the op on ``inputs`` (the first ``positional`` by position, the rest as ``keywords``),
    discard its result and return clones of every tensor input, ``Tensor[]`` included: the program where a wrong
    declaration bites. Its signature names the op's arguments, so verdicts do too."""

    def discards_result(*inputs):
        overload(*inputs[:positional], **dict(zip(keywords, inputs[positional:])))
        return tuple(t.clone() for t in _tensors_in(inputs))   # every dtype clones (t + 0 fails for uint16)

    discards_result.__signature__ = _signature(names)
    return discards_result


def _signature(names) -> inspect.Signature:
    """A signature with the op's argument names, so that verdicts name them; a name Python cannot take as a
    parameter (``from``, a keyword) gets a trailing ``_``."""
    return inspect.Signature([inspect.Parameter(name if name.isidentifier() and not keyword.iskeyword(name)
                                                else f"{name}_", inspect.Parameter.POSITIONAL_OR_KEYWORD)
                              for name in names])


def _with_distinct(values: tuple, index: int) -> tuple:
    """``values`` with the tensor at ``index`` holding distinct values (0, 1, 2, ... in its dtype): a kernel that
    reads what it writes shows it on such data, not on zeros."""
    tensor = values[index]
    if tensor.dtype == torch.bool or tensor.is_complex() or tensor.numel() == 0:
        return values
    distinct = torch.arange(tensor.numel(), device=tensor.device).reshape(tensor.shape).to(tensor.dtype)
    return (*values[:index], distinct, *values[index + 1:])


def _named_values(overload, call: Call) -> tuple[list[str], tuple]:
    """A call's argument names (the schema's for its args, then its keywords) and its values, in that order."""
    pairs = call.named(overload)
    return [name for name, _ in pairs], tuple(value for _, value in pairs)


def _discarding(overload, call: Call) -> Callable:
    """audit's program for this call: the op's result discarded, clones of its tensor inputs returned."""
    names, _ = _named_values(overload, call)
    return discarding_call(overload, names, len(call.args), list(call.kwargs))


def _short_repr(value) -> str:
    return brief(value, 80)
