"""Declare the lab's custom operators from a small spec, and count their real calls.

A lab op is ``torch.library.custom_op`` with a kernel whose behaviour is spelled out
by an :class:`OpSpec`: what it *really* writes (``writes``) and what it *says* it
writes (``mutates_args``) are separate fields, so a lesson can make them disagree.

Lifecycle, made explicit (torch's own is silent):

* ``declare(spec)`` defines the op. Declaring a name again replaces the op, as
  ``custom_op`` does, but labkit also *retires* the old Python handle: calling it
  raises :class:`StaleOpError` instead of going through torch's old handle, which reports the
  old schema and points at a deleted registration (calling it is undefined behaviour).
* ``drop(name)`` frees the name; ``scoped(spec)`` declares for one ``with`` block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import keyword
import re
from typing import Iterable

import torch

from . import _torch_internals as internals

RETURNS = ("fresh", "none", "input")
EFFECTS = (None, "side_effect", "ordered")
RESERVED_NAMESPACES = ("aten", "prim", "prims", "torch", "higher_order", "_", "c10", "quantized")
MAX_NAME_LENGTH = 80
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class LabOpError(ValueError):
    """A spec or a name that labkit refuses, with a sentence a learner can act on."""


class StaleOpError(RuntimeError):
    """A handle whose op was redeclared or dropped since it was made."""


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """What a lab op declares and what its kernel really does.

    name:         qualified name, ``"namespace::op"``.
    args:         names of its tensor arguments.
    writes:       arguments the kernel *really* changes in place (``arg.add_(1)``).
    mutates_args: what it *declares* to ``custom_op``: a tuple of names or ``"unknown"``.
    returns:      ``"fresh"`` (a new tensor, ``2 * first arg``), ``"none"``, or
                  ``"input"`` (returns its first argument itself).
    fake:         register a fake kernel (how the compiler learns output shapes).
    effect:       ``None``, ``"side_effect"`` (``torch.fx.node.has_side_effect``) or
                  ``"ordered"`` (the effects system: a ``with_effects`` node).
    tags:         names of ``torch.Tag`` members, e.g. ``("inplace",)``.
    """

    name: str = "lab::scale"
    args: tuple[str, ...] = ("x",)
    writes: tuple[str, ...] = ()
    mutates_args: tuple[str, ...] | str = ()
    returns: str = "fresh"
    fake: bool = True
    effect: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self):
        problem = name_problem(self.name)
        if problem:
            raise LabOpError(problem)
        if self.returns not in RETURNS:
            raise LabOpError(f"returns must be one of {RETURNS}, not {self.returns!r}.")
        if self.effect not in EFFECTS:
            raise LabOpError(f"effect must be one of {EFFECTS}, not {self.effect!r}.")
        if not self.args or any(not _IDENT.match(a) or keyword.iskeyword(a) for a in self.args):
            raise LabOpError(f"args must be Python identifiers, got {self.args!r}.")
        for field in ("writes",) + (() if self.mutates_args == "unknown" else ("mutates_args",)):
            unknown = set(getattr(self, field)) - set(self.args)
            if unknown:
                raise LabOpError(f"{field} names {sorted(unknown)}, which are not among args {self.args}.")
        for tag in self.tags:
            if not hasattr(torch.Tag, tag):
                raise LabOpError(f"torch {torch.__version__} has no torch.Tag.{tag}.")

    @property
    def declares_truthfully(self) -> bool:
        """Whether ``mutates_args`` matches what the kernel really writes."""
        if self.mutates_args == "unknown":
            return True
        return set(self.mutates_args) == set(self.writes)


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a lab op's qualified name, or None if it can. Never evaluates it."""
    if not isinstance(name, str) or not name.strip():
        return "An op name is needed, written 'namespace::name' (e.g. 'mylab::scale')."
    if len(name) > MAX_NAME_LENGTH:
        return f"That name has {len(name)} characters; keep it under {MAX_NAME_LENGTH}."
    if name.count("::") != 1:
        return f"{name!r} must contain '::' exactly once, as in 'mylab::scale'."
    namespace, op = name.split("::")
    for part, what in ((namespace, "namespace"), (op, "op name")):
        if not part.isascii() or not _IDENT.match(part):
            return (f"The {what} {part!r} must be an ASCII identifier: letters, digits and '_', "
                    "not starting with a digit.")
        if keyword.iskeyword(part):
            return f"The {what} {part!r} is a Python keyword; torch.ops.{namespace}.{op} could not be written."
    if namespace in RESERVED_NAMESPACES or namespace.startswith("_"):
        return f"The namespace {namespace!r} belongs to torch itself; pick your own, e.g. 'mylab'."
    if "." in op:
        return "Overload names are not supported here; leave out the '.'"
    return None


class LabOp:
    """A live lab op: call it like a function; ``calls`` counts real kernel runs."""

    def __init__(self, spec: OpSpec, opdef):
        self.spec = spec
        self.opdef = opdef
        self.calls = 0
        self.stale = False
        self.overload = opdef._opoverload

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def schema(self) -> str:
        """The schema torch inferred, e.g. ``lab::scale(Tensor(a0!) x) -> Tensor``."""
        return str(self.overload._schema)

    @property
    def is_mutable(self) -> bool:
        return bool(self.overload._schema.is_mutable)

    @property
    def dce_safe(self) -> bool:
        """True when torch considers calls to this op removable if their result is unused."""
        return not internals.is_impure(self.overload)

    def __call__(self, *args):
        if self.stale:
            raise StaleOpError(
                f"This handle to {self.name} is stale: the op was redeclared or dropped. "
                "Use the handle the latest declare() returned.")
        return self.opdef(*args)

    def __repr__(self):
        state = "stale" if self.stale else f"calls={self.calls}"
        return f"<LabOp {self.schema} {state}>"


_LIVE: dict[str, LabOp] = {}
_listeners: list = []


def on_change(callback) -> None:
    """Run ``callback()`` whenever the set of live lab ops changes (used by the cache fingerprint)."""
    _listeners.append(callback)


def _changed() -> None:
    for callback in _listeners:
        callback()


def live_ops() -> dict[str, LabOp]:
    return dict(_LIVE)


def _make_kernel(spec: OpSpec, handle: list):
    write_positions = [spec.args.index(a) for a in spec.writes]

    def kernel(*tensors):
        handle[0].calls += 1
        result = tensors[0] * 2 if spec.returns == "fresh" else None
        for i in write_positions:
            tensors[i].add_(1)
        return tensors[0] if spec.returns == "input" else result

    returns = None if spec.returns == "none" else torch.Tensor
    params = [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=torch.Tensor)
              for a in spec.args]
    kernel.__signature__ = inspect.Signature(params, return_annotation=returns)
    kernel.__annotations__ = {a: torch.Tensor for a in spec.args} | {"return": returns}
    kernel.__name__ = spec.name.split("::")[1]
    return kernel


def _make_fake(spec: OpSpec):
    def fake(*tensors):
        if spec.returns == "fresh":
            return torch.empty_like(tensors[0])
        return tensors[0] if spec.returns == "input" else None

    return fake


def _retire(name: str) -> None:
    old = _LIVE.pop(name, None)
    if old is not None:
        old.stale = True
        internals.unmark_side_effect(old.overload)


def declare(spec: OpSpec | None = None, **fields) -> LabOp:
    """Define (or redefine) the op ``spec`` describes and return its live handle.

    ``declare(name="lab::scale", mutates_args=("x",), writes=("x",))`` is the same as
    ``declare(OpSpec(...))``. Re-running a notebook cell that declares an op is safe.
    """
    spec = dataclasses.replace(spec, **fields) if spec is not None else OpSpec(**fields)
    _retire(spec.name)
    handle: list[LabOp] = []
    tags = tuple(getattr(torch.Tag, t) for t in spec.tags) or None
    try:
        opdef = torch.library.custom_op(spec.name, _make_kernel(spec, handle),
                                        mutates_args=spec.mutates_args, tags=tags)
    except RuntimeError as error:
        if "multiple times" in str(error):
            raise LabOpError(
                f"{spec.name} was defined by another route (torch.library.Library.define), which "
                "custom_op cannot replace. Pick another name, or drop that library first.") from None
        raise
    if spec.fake and not {"inplace", "out"} & set(spec.tags):  # those tags bring their own fake
        opdef.register_fake(_make_fake(spec))
    op = LabOp(spec, opdef)
    handle.append(op)
    if spec.effect == "side_effect":
        internals.mark_side_effect(op.overload)
    elif spec.effect == "ordered":
        internals.register_ordered_effect(opdef)
    _LIVE[spec.name] = op
    _changed()
    return op


def drop(name: str) -> bool:
    """Free ``name``: the op disappears from ``torch.ops`` and old handles become stale."""
    was_live = name in _LIVE
    _retire(name)
    freed = internals.destroy_custom_op(name)
    _changed()
    return was_live or freed


def drop_namespace(namespace: str) -> list[str]:
    """Drop every custom op in ``namespace`` (so one notebook's ops never leak into another's)."""
    names = [n for n in internals.custom_op_qualnames() if n.split("::")[0] == namespace]
    for name in names:
        drop(name)
    return names


@contextlib.contextmanager
def scoped(spec: OpSpec | None = None, **fields):
    """Declare an op for the duration of a ``with`` block, then drop it."""
    op = declare(spec, **fields)
    try:
        yield op
    finally:
        if _LIVE.get(op.name) is op:
            drop(op.name)


def reset_calls(ops: Iterable[LabOp] | None = None) -> None:
    for op in ops if ops is not None else _LIVE.values():
        op.calls = 0


def call_counts() -> dict[str, int]:
    return {name: op.calls for name, op in sorted(_LIVE.items())}
