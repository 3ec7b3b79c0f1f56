"""Declare the lab's custom operators from a small spec, and count their real calls.

A lab op is ``torch.library.custom_op`` with a kernel whose behaviour is spelled out
by an :class:`OpSpec`: what it *really* writes (``writes``) and what it *says* it
writes (``mutates_args``) are separate fields, so a lesson can make them disagree.

Lifecycle, made explicit (torch's own is silent):

* ``declare(spec)`` defines the op. Declaring a name again replaces the op, as
  ``custom_op`` does, but labkit also *retires* the old Python handle: calling it, or
  reaching its ``overload``/``opdef``, raises :class:`StaleOpError` instead of going through
  torch's old handle, which reports the old schema and points at a deleted registration
  (calling it is undefined behaviour, pytorch #98541).
* ``drop(name)`` frees the name; ``scoped(spec)`` declares for one ``with`` block.

Ownership: labkit replaces or drops only ops it created in this process. A name held by your own
``custom_op``, a ``Library.define`` or torch itself is refused with one sentence. *Inspecting* any op
(``audit``, ``compile_and_compare``) stays open.

Not here: which names are valid and which labkit holds (:mod:`labkit.op_names`, the registry; its public
names are re-exported here), private torch, and compiling or comparing anything (:mod:`labkit.stages`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import keyword

import torch

from . import _torch as internals
from .describe import brief
from .op_names import (  # noqa: F401 - the registry's public names, re-exported: lessons reach them as labkit.ops.X
    IDENTIFIER, MAX_NAME_LENGTH, RESERVED_NAMESPACES, LabOpError, custom_op, destroy_custom_op, exists, keep_destroyed,
    library, live_ops, mark_ordered_effect, name_problem, on_change, owns, split_qualname)
from . import op_names

RETURNS = ("fresh", "none", "input", "data-dependent")
EFFECTS = (None, "side_effect", "ordered")


class StaleOpError(RuntimeError):
    """A handle whose op was redeclared or dropped since it was made."""


def _names(value, field: str, allow_unknown: bool = False) -> tuple[str, ...] | str:
    """A tuple of names from a tuple, list or set of names, or from one name written alone."""
    if allow_unknown and value == "unknown":
        return value
    if allow_unknown and isinstance(value, str):   # mutates_args: torch.library.custom_op refuses a bare name too
        raise LabOpError(f"mutates_args takes a tuple of names, ({value!r},) for one, or the string \"unknown\": "
                         f"not the bare string {brief(value, 40)}, which torch.library.custom_op refuses as well.")
    if isinstance(value, str):
        return (value,) if value else ()  # args="x" means one argument called x, not ("x",) spelled out
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=str)
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
        extra = ', or "unknown"' if allow_unknown else ""
        raise LabOpError(f"{field} must be a tuple of names like ('x', 'y'){extra}, not {brief(value)}.")
    return tuple(value)


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """What a lab op declares and what its kernel really does.

    name:         qualified name, ``"namespace::op"``.
    args:         names of its tensor arguments (one name may be written alone: ``args="x"``).
    writes:       arguments the kernel *really* changes in place (``arg.add_(1)``).
    mutates_args: what it *declares* to ``custom_op``: a tuple of names or ``"unknown"``.
    returns:      ``"fresh"`` (a new tensor, ``2 * first arg``), ``"none"``,
                  ``"input"`` (returns its first argument itself), or ``"data-dependent"``
                  (a new tensor of the first argument's positive entries: its size is known
                  only at run time, so the fake kernel asks for ``ctx.new_dynamic_size()``).
    fake:         register a fake kernel (how the compiler learns output shapes).
    effect:       ``None``, ``"side_effect"`` (``torch.fx.node.has_side_effect``) or
                  ``"ordered"`` (the effects system: a ``with_effects`` node).
    tags:         names of ``torch.Tag`` members, e.g. ``("inplace",)``.

    Raises :class:`LabOpError` (one sentence) for anything it cannot declare.
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
        for field in ("args", "writes", "tags"):
            object.__setattr__(self, field, _names(getattr(self, field), field))
        object.__setattr__(self, "mutates_args", _names(self.mutates_args, "mutates_args", allow_unknown=True))
        if not isinstance(self.returns, str) or self.returns not in RETURNS:
            raise LabOpError(f"returns must be one of {RETURNS}, not {brief(self.returns)}.")
        if not (self.effect is None or isinstance(self.effect, str)) or self.effect not in EFFECTS:
            raise LabOpError(f"effect must be one of {EFFECTS}, not {brief(self.effect)}.")
        if not isinstance(self.fake, bool):
            raise LabOpError(f"fake must be True or False, not {brief(self.fake)}.")
        if not self.args or any(not IDENTIFIER.match(a) or keyword.iskeyword(a) for a in self.args):
            raise LabOpError(f"args must be Python identifiers, got {brief(self.args, 80)}.")
        if len(set(self.args)) != len(self.args):
            raise LabOpError(f"args must be distinct names, got {brief(self.args, 80)}.")
        if "torch" in self.args:
            raise LabOpError("An argument called 'torch' would hide the torch module in the op's plain-torch "
                             "source (op.torch_source()): give it another name, e.g. args=('x',).")
        for field in ("writes",) + (() if self.mutates_args == "unknown" else ("mutates_args",)):
            unknown = set(getattr(self, field)) - set(self.args)
            if unknown:
                raise LabOpError(f"{field} names {sorted(unknown)}, which are not among args {self.args}.")
        for tag in self.tags:
            if not isinstance(getattr(torch.Tag, tag, None), torch.Tag):
                raise LabOpError(f"torch {torch.__version__} has no torch.Tag.{tag}; "
                                 "tags takes names such as ('inplace',).")


# --- the handle ------------------------------------------------------------------------------


class LabOp:
    """A live lab op: call it like a function; ``calls`` counts real kernel runs.

    Once retired (redeclared, dropped, or replaced by someone else's ``custom_op`` of the same
    name), calling it or asking for ``overload``/``opdef`` raises :class:`StaleOpError`.
    """

    def __init__(self, spec: OpSpec, opdef):
        self.spec = spec
        self.calls = 0
        self._retired = False
        self._opdef = opdef
        self._overload = internals.overload_of(opdef)
        self._token = internals.registration_of(opdef)
        self._declared_schema = internals.schema_of(self._overload)  # a string: safe to show after retirement

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def stale(self) -> bool:
        return self._retired or internals.current_registration(self.name) is not self._token

    def _check_live(self) -> None:
        if self.stale:
            raise StaleOpError(
                f"This handle to {self.name} is stale: the op was redeclared or dropped since (in a notebook: "
                "a setup cell run again drops it). Run again the cell that declares it, then this one.")

    @property
    def overload(self):
        """torch's OpOverload for this op (``torch.ops.ns.name.default``), while the handle is live."""
        self._check_live()
        return self._overload

    @property
    def opdef(self):
        """The ``CustomOpDef`` torch returned, while the handle is live."""
        self._check_live()
        return self._opdef

    @property
    def schema(self) -> str:
        """The schema torch inferred, e.g. ``lab::scale(Tensor(a0!) x) -> Tensor``."""
        return self._declared_schema

    @property
    def is_mutable(self) -> bool:
        return "!" in self._declared_schema

    @property
    def bare_call_is_impure(self) -> bool:
        """Whether FX's dead-code elimination keeps a *bare* call node of this op.

        torch asks this per graph node, not per op: after functionalization a mutating op
        is an ``auto_functionalized_v2`` node (removable itself; the ``copy_`` back into the
        input is what stays), and an effectful one a ``with_effects`` node kept by its token.
        The dead-code-elimination lesson shows each case.
        """
        return internals.is_impure(self.overload)

    def __call__(self, *args):
        return self.opdef(*args)

    def torch_source(self, name: str | None = None) -> str:
        """Plain ``torch.library.custom_op`` source that declares the same op (under ``name`` if given).

        What to paste into your own code once the lab is done: no labkit in it.
        """
        return torch_source(self.spec, name)

    def __repr__(self):
        state = "stale" if self.stale else f"calls={self.calls}"
        return f"<LabOp {self.schema} {state}>"


def live_overload(op):
    """The OpOverload behind a LabOp, a CustomOpDef, ``torch.ops.ns.name`` or an overload; None if not an op.

    Raises :class:`StaleOpError` for a handle whose registration torch has destroyed: calling
    such a handle is undefined behaviour (a wrong kernel, or a crash of the whole process).
    """
    if isinstance(op, LabOp):
        return op.overload
    overload = internals.resolve_overload(op)
    if overload is not None and (internals.is_dangling(op) or internals.is_dangling(overload)):
        raise StaleOpError(
            f"This handle to {internals.qualname_of(overload)} is stale: the op was redefined or dropped "
            "after the handle was made. Pass the object the latest definition returned, or torch.ops.<ns>.<name>.")
    return overload


# --- declaring ---------------------------------------------------------------------------------


def _make_kernel(spec: OpSpec, handle: list):
    write_positions = [spec.args.index(a) for a in spec.writes]

    def kernel(*tensors):
        handle[0].calls += 1
        first, result = tensors[0], None
        if spec.returns == "fresh":
            result = first * 2
        elif spec.returns == "data-dependent":  # its size depends on the values: nonzero-like
            result = first[first > 0]
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
        if spec.returns == "data-dependent":
            return tensors[0].new_empty(torch.library.get_ctx().new_dynamic_size())
        return tensors[0] if spec.returns == "input" else None

    return fake


def _needs_fake(spec: OpSpec) -> bool:
    return spec.fake and not {"inplace", "out"} & set(spec.tags)  # those tags bring their own fake


def _as_spec(spec, fields: dict) -> OpSpec:
    try:
        if isinstance(spec, OpSpec):
            return dataclasses.replace(spec, **fields)
        if spec is None:
            return OpSpec(**fields)
        if isinstance(spec, str):
            if "name" in fields:
                raise LabOpError("Give the name once: declare('mylab::op', ...) or declare(name='mylab::op', ...).")
            return OpSpec(name=spec, **fields)
    except TypeError as error:  # an unknown keyword
        known = ", ".join(f.name for f in dataclasses.fields(OpSpec))
        raise LabOpError(f"declare() takes the fields {known}; {str(error).split(':')[-1].strip()}.") from None
    raise LabOpError(f"declare() takes an OpSpec or a name like 'mylab::op', not {type(spec).__name__}.")


def declare(spec: OpSpec | str | None = None, /, **fields) -> LabOp:
    """Define (or redefine) the op ``spec`` describes and return its live handle.

    ``declare("lab::scale", mutates_args=("x",), writes=("x",))``, ``declare(name="lab::scale", ...)``
    and ``declare(OpSpec(...))`` are the same. Re-running a notebook cell that declares an op is
    safe: the previous handle is retired. Raises :class:`LabOpError` for a bad spec, or for a name
    that an op labkit did not create already holds.
    """
    spec = _as_spec(spec, fields)
    handle: list[LabOp] = []
    tags = tuple(getattr(torch.Tag, t) for t in spec.tags) or None
    opdef = custom_op(spec.name, _make_kernel(spec, handle), spec.mutates_args, tags)
    op = LabOp(spec, opdef)
    handle.append(op)
    try:
        if _needs_fake(spec):
            opdef.register_fake(_make_fake(spec))
        if spec.effect == "side_effect":
            internals.mark_side_effect(op.overload)
        elif spec.effect == "ordered":
            internals.register_ordered_effect(opdef)
    except Exception as error:  # noqa: BLE001 - never leave a half-declared op behind
        drop(spec.name)
        raise LabOpError(f"torch refused part of {spec.name}'s declaration: {str(error)[:200]}") from None
    op_names.hold(op)
    return op


def drop(name: str) -> bool:
    """Free ``name``, an op labkit declared: it disappears from ``torch.ops`` and its handles go stale.

    Returns False when no op has that name. Raises :class:`LabOpError` for an op labkit did not
    create (yours, or torch's): labkit never removes those.
    """
    if not isinstance(name, str) or not op_names.QUALNAME.match(name):
        raise LabOpError(f"drop() takes a qualified name like 'mylab::op', not {brief(name)}.")
    if owns(name):
        destroy_custom_op(name)
        op_names.forget(name)  # after the destroy, so the cache fingerprint no longer sees it
        return True
    if exists(name):
        raise LabOpError(op_names.not_ours(name, fix="it stays as it is"))
    op_names.forget(name)
    return False


def drop_namespace(namespace: str) -> list[str]:
    """Drop every op labkit declared in ``namespace`` (so one notebook's ops never leak into another's).

    Ops in that namespace that labkit did not create are left alone. Raises :class:`LabOpError`
    for torch's namespaces, and for a namespace that holds ops but none of labkit's.
    """
    problem = name_problem(f"{namespace}::op") if isinstance(namespace, str) else "not a string"
    if problem:
        raise LabOpError(f"drop_namespace() takes the namespace of ops labkit declared, e.g. 'mylab', "
                         f"not {brief(namespace)}; labkit never drops torch's ops.")
    ours = op_names.owned_in(namespace)
    others = [n for n in internals.custom_op_qualnames() if n.split("::")[0] == namespace and n not in ours]
    if others and not ours and not op_names.namespace_used(namespace):
        raise LabOpError(f"labkit created no op in the namespace {namespace!r} (the {len(others)} there were made "
                         "elsewhere: by you or by torch), so it drops nothing there.")
    for name in ours:
        drop(name)
    return ours


@contextlib.contextmanager
def scoped(spec: OpSpec | str | None = None, /, **fields):
    """Declare an op for the duration of a ``with`` block, then drop it."""
    op = declare(spec, **fields)
    try:
        yield op
    finally:
        if op_names.held(op.name) is op and not op.stale:
            drop(op.name)


def reset_calls() -> None:
    for op in op_names.handles():
        op.calls = 0


def call_counts() -> dict[str, int]:
    return {name: op.calls for name, op in sorted(live_ops().items())}


def set_calls(counts: dict[str, int]) -> None:
    """Put each live op's ``calls`` back to ``counts`` (an experiment counts its own runs, then leaves the
    learner's counters as they were); an op not in ``counts`` (declared since) starts at 0."""
    for name, op in live_ops().items():
        op.calls = counts.get(name, 0)


# --- the same op in plain torch ------------------------------------------------------------------


def torch_source(spec: OpSpec, name: str | None = None) -> str:
    """Python source declaring ``spec``'s op with ``torch.library.custom_op`` alone (no labkit)."""
    qualname = name or spec.name
    problem = name_problem(qualname)
    if problem:
        raise LabOpError(problem)
    fn = qualname.split("::")[1]
    if fn == "torch":
        raise LabOpError(f"An op called {fn!r} would hide the torch module in its plain-torch source: "
                         f"pass another name, e.g. torch_source(name='{qualname.split('::')[0]}::my_op').")
    options = [f"mutates_args={spec.mutates_args!r}"]
    if spec.tags:
        options.append("tags=(" + "".join(f"torch.Tag.{t}, " for t in spec.tags).rstrip() + ")")
    returns = "None" if spec.returns == "none" else "torch.Tensor"
    params = ", ".join(f"{a}: torch.Tensor" for a in spec.args)
    body = [f"    {a}.add_(1)" for a in spec.writes]
    first = spec.args[0]
    body.append({"fresh": f"    return {first} * 2", "none": "    return None", "input": f"    return {first}",
                 "data-dependent": f"    return {first}[{first} > 0]"}[spec.returns])
    lines = ["import torch", "", "",
             f"@torch.library.custom_op({qualname!r}, {', '.join(options)})",
             f"def {fn}({params}) -> {returns}:", *body]
    if _needs_fake(spec):
        fake_return = {"fresh": f"torch.empty_like({first})", "none": "None", "input": first,
                       "data-dependent": f"{first}.new_empty(torch.library.get_ctx().new_dynamic_size())"}[spec.returns]
        fake_name = "_fake" if fn == "_" else "_"  # torch's docs spell it "_"; an op called "_" must stay the op
        lines += ["", "", f"@{fn}.register_fake", f"def {fake_name}({', '.join(spec.args)}):",
                  f"    return {fake_return}"]
    if spec.effect == "side_effect":
        lines += ["", "", f"torch.fx.node.has_side_effect(torch.ops.{qualname.replace('::', '.')}.default)"]
    elif spec.effect == "ordered":
        lines += ["", "", f"{fn}.register_effect(torch.library.EffectType.ORDERED)"]
    return "\n".join(lines) + "\n"


# --- an op defined the low-level way, with torch.library.Library and no fake kernel ---------------------



def library_op(qualname: str, kernel, schema: str = "(Tensor x) -> Tensor"):
    """Define ``qualname`` with ``torch.library.Library`` (``define``, then ``impl`` of ``kernel`` for CPU) and
    no fake kernel, as older code and C++ extensions do; return ``torch.ops.<namespace>.<name>``.

    Running it again replaces the previous definition (``Library.define`` alone would refuse a second one).
    Any namespace is allowed, torch's fake-tensor fallback namespaces too (``vision``, ...): that is the point
    of the lesson on them.
    """
    namespace, _, name = qualname.partition("::")
    if not namespace or not name.isidentifier():
        raise LabOpError(f"library_op() takes a qualified name like 'mylib::op', not {brief(qualname)}.")
    lib = op_names.fresh_library(qualname, namespace)
    lib.define(name + schema)
    lib.impl(name, kernel, "CPU")
    return getattr(getattr(torch.ops, namespace), name)


# --- side effects for an op written with @torch.library.custom_op -------------------------------


def register_ordered_effect(opdef) -> None:
    """Declare that ``opdef`` (a ``@torch.library.custom_op``) has an ordered external effect: the compiler wraps
    each call in a ``with_effects`` node that threads a token, so dead-code elimination keeps it.

    torch has no public spelling for it, and the private one changed between releases: the adapter
    (``labkit._torch.register_ordered_effect``) holds both.
    """
    internals.register_ordered_effect(opdef)


def mark_side_effect(opdef) -> None:
    """Mark ``opdef``'s default overload with ``torch.fx.node.has_side_effect`` (experimental): its graph node is
    then impure, and dead-code elimination keeps it.

    ``has_side_effect`` marks one overload *object*. When a re-run replaces the op, ``torch.ops`` drops its cached
    overload once the old op is garbage-collected and hands out a new, unmarked one: so collect first, then mark
    the overload ``torch.ops`` gives now.
    """
    import gc

    gc.collect()
    internals.mark_side_effect(internals.current_overload_of(opdef))
