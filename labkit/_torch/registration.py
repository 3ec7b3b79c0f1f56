"""Op registration and schemas: which registration holds a name, a live handle from a dangling one, what a
schema declares, effects and impurity; and what the doctor reads of every op the dispatcher holds.

Not here: which registrations labkit keeps alive, and which names it owns (:mod:`labkit.op_names`).
"""

from __future__ import annotations

import re

import torch


# --- op registration ----------------------------------------------------------------------------
#
# How torch keeps track of an op made by ``torch.library.custom_op``: ``OPDEF_TO_LIB`` maps its
# qualified name to the ``Library`` holding its registration. Redefining the name (or dropping it)
# destroys that Library; every Python object made for the old registration (the CustomOpDef, its
# OpOverload, the OpOverloadPacket) then points at freed dispatcher state, and calling it is
# undefined behaviour (pytorch #98541: wrong kernel, bad_alloc, or a segfault). The helpers below
# let labkit tell a live handle from a dangling one *without* calling it.


def custom_op_qualnames() -> list[str]:
    """Qualified names of every live op that ``torch.library.custom_op`` created."""
    from torch._library.custom_ops import OPDEF_TO_LIB

    return sorted(OPDEF_TO_LIB)


def defined_by_custom_op(overload) -> bool:
    """Whether ``overload``'s op was made by ``torch.library.custom_op`` (or ``triton_op``), whose declaration is
    ``mutates_args``; otherwise it was declared by schema text (``Library.define``, ``torch.library.define``, C++)."""
    from torch._library.custom_ops import OPDEF_TO_LIB

    return isinstance(overload, torch._ops.OpOverload) and overload._schema.name in OPDEF_TO_LIB


def destroy_custom_op(qualname: str) -> object | None:
    """Free a name taken by ``custom_op``: what ``custom_op`` itself does before a redefinition.

    Returns the destroyed registration (its Library, the token :func:`registration_of` gives), or None
    when no ``custom_op`` held the name. Its finalizer still runs once it is garbage collected (and
    deletes ``torch.ops.<ns>.<name>`` again): a caller keeps it alive (``labkit.ops.keep_destroyed``).
    """
    from torch._library.custom_ops import OPDEF_TO_LIB

    lib = OPDEF_TO_LIB.pop(qualname, None)
    if lib is not None:
        lib._destroy()
    return lib


def destroy_library(lib) -> None:
    """Remove every registration ``lib`` (a ``torch.library.Library``) made: torch's private ``_destroy``.
    Its finalizer runs later, when ``lib`` is collected: see :func:`destroy_custom_op`."""
    lib._destroy()


def registration_of(opdef) -> object:
    """The token torch keeps for ``opdef``'s registration (its Library); compare it with
    :func:`current_registration`."""
    return opdef._lib


def current_registration(qualname: str) -> object | None:
    """The token of the ``custom_op`` registration that owns ``qualname`` now, or None."""
    from torch._library.custom_ops import OPDEF_TO_LIB

    return OPDEF_TO_LIB.get(qualname)


def overload_of(opdef) -> torch._ops.OpOverload:
    """The default OpOverload of a CustomOpDef (only meaningful while the opdef is live)."""
    return opdef._opoverload


def find_overload(qualname: str, overload: str = "default") -> torch._ops.OpOverload | None:
    """``torch.ops.<ns>.<name>.<overload>`` if such an op exists now, else None. Never raises."""
    namespace, _, name = qualname.partition("::")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload)
    except (AttributeError, RuntimeError, TypeError):
        return None


def resolve_overload(op) -> torch._ops.OpOverload | None:
    """The OpOverload behind a CustomOpDef, an OpOverloadPacket or an OpOverload; None for anything else.

    Does not check that the handle is still live: see :func:`is_dangling`.
    """
    from torch._library.custom_ops import CustomOpDef

    if isinstance(op, CustomOpDef):
        return op._opoverload
    if isinstance(op, torch._ops.OpOverloadPacket):
        return getattr(op, "default", None)
    if isinstance(op, torch._ops.OpOverload):
        return op
    return None


def packet_overloads(op) -> tuple[str, list[str]] | None:
    """``("ns::name", [overload names])`` for an OpOverloadPacket (``torch.ops.ns.name``); None for anything else."""
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name, list(op.overloads())
    return None


def is_dangling(op) -> bool:
    """Whether ``op`` (CustomOpDef, OpOverloadPacket or OpOverload) belongs to a registration torch destroyed.

    A CustomOpDef is live while ``OPDEF_TO_LIB`` still holds its Library. An overload or a packet is
    live while ``torch.ops`` hands out that very object (torch recreates them after a redefinition).
    """
    from torch._library.custom_ops import CustomOpDef

    if isinstance(op, CustomOpDef):
        return current_registration(op._qualname) is not op._lib
    if isinstance(op, torch._ops.OpOverloadPacket):
        namespace, name = op._qualified_op_name.split("::")
        return _lookup_packet(namespace, name) is not op
    if isinstance(op, torch._ops.OpOverload):
        namespace, name = op._schema.name.split("::")
        packet = _lookup_packet(namespace, name)
        handed_out = packet is not None and getattr(packet, op._overloadname, None) is op
        return not (handed_out or _is_live_custom_op_overload(op))
    return False


def _is_live_custom_op_overload(overload) -> bool:
    """Whether ``overload`` is the one a live ``custom_op`` registration made (after torch's finalizer of an
    older registration ran, ``torch.ops`` hands out a new, equivalent object: ``labkit.ops.keep_destroyed``)."""
    from torch._library.custom_ops import OPDEF_TO_LIB, OPDEFS

    opdef = OPDEFS.get(overload._schema.name)
    return (opdef is not None and opdef._opoverload is overload
            and OPDEF_TO_LIB.get(overload._schema.name) is opdef._lib)


def _lookup_packet(namespace: str, name: str):
    try:
        return getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return None


def qualname_of(overload) -> str:
    """``"ns::name"`` of an OpOverload (without the overload name)."""
    return overload._schema.name


def schema_of(overload) -> str:
    """The schema torch holds for the overload, e.g. ``lab::scale(Tensor(a0!) x) -> Tensor``."""
    return str(overload._schema)


def argument_names(overload) -> list[str]:
    return [a.name for a in overload._schema.arguments]


def written_args(overload) -> set[str]:
    """Arguments the schema marks as written (``Tensor(a!)``)."""
    return {a.name for a in overload._schema.arguments if a.alias_info is not None and a.alias_info.is_write}


def _alias_sets(text: str) -> set[str]:
    """The alias sets a printed argument or return names: ``Tensor(a!)``, ``Tensor(a -> *)`` and ``Tensor(a)[]``
    name a."""
    return set(re.findall(r"\((\w+)(?:!|\s*->[^)]*)?\)", text))


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (a default such as ``int[2] stride=[1, 1]`` holds some)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([" and 1 or char in ")]" and -1 or 0
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [p for p in parts + [current.strip()] if p]


def _schema_parts(overload) -> tuple[list[str], list[str]]:
    """The schema's printed arguments and returns, one string each."""
    text = str(overload._schema)
    head, _, returns = text.rpartition(" -> ")
    arguments = head[head.index("(") + 1:head.rindex(")")]
    returns = returns[1:-1] if returns.startswith("(") and returns.endswith(")") else returns
    return [a for a in _top_level(arguments) if a != "*"], _top_level(returns)   # "*": keyword-only from here


def declared_output_aliases(overload) -> list[set[str]]:
    """For each return of the schema, in order, the arguments it is declared to alias (their alias sets meet):
    ``Tensor(a) x -> Tensor(a)`` (a view), ``-> Tensor(a)[]`` (views in a list), ``Tensor(a!) out -> Tensor(a!)``."""
    arguments, returns = _schema_parts(overload)
    names = [a.name for a in overload._schema.arguments]
    sets = {name: _alias_sets(text) for name, text in zip(names, arguments)}
    return [{name for name, argument_sets in sets.items() if argument_sets & _alias_sets(text)} for text in returns]


def return_types(overload) -> list[str]:
    """Each return as the schema prints it (``Tensor``, ``SymInt``, ``Tensor(a!)``, ``Tensor(a)[]``)."""
    return _schema_parts(overload)[1]


def same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors share one storage object (torch's own alias checks compare these), not merely memory."""
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


def is_mutable(overload) -> bool:
    return bool(overload._schema.is_mutable)


def mark_side_effect(overload) -> None:
    torch.fx.node.has_side_effect(overload)


def unmark_side_effect(overload) -> None:
    from torch.fx.node import _side_effectful_functions

    _side_effectful_functions.discard(overload)


def register_ordered_effect(opdef) -> None:
    """Tell the compiler the op has an ordered external effect (wrapped in ``with_effects``)."""
    from torch._library.effects import EffectType

    if hasattr(opdef, "register_effect"):  # CustomOpDef.register_effect: torch 2.13
        opdef.register_effect(EffectType.ORDERED)
    else:
        torch.library._register_effectful_op(opdef._opoverload, EffectType.ORDERED)


def is_impure(overload) -> bool:
    """torch's own answer to "may dead-code elimination remove a call to this op?" (negated)."""
    from torch._library.utils import is_impure as _is_impure

    return bool(_is_impure(overload))


def has_fake_impl(qualname: str) -> bool:
    """Whether ``register_fake`` gave ``qualname`` a fake kernel (looked up without adding an entry for it)."""
    from torch._library.simple_registry import singleton

    entry = singleton.get(qualname) if hasattr(singleton, "get") else singleton.find(qualname)
    return entry is not None and entry.fake_impl.kernel is not None


# --- what the doctor reads: every op torch knows, and a schema's arguments ------------------------------


def all_op_names() -> set[str]:
    """``"ns::name"`` (the default overload) and ``"ns::name.overload"`` of every op the dispatcher holds now:
    Python-defined and C++ (``TORCH_LIBRARY``) alike (``torch._C._dispatch_get_all_op_names``)."""
    return set(torch._C._dispatch_get_all_op_names())


def overload_names(qualname: str) -> list[str]:
    """The overload names of ``torch.ops.<ns>.<name>`` (``["default", "out"]``); [] when there is no such op."""
    namespace, _, name = qualname.partition("::")
    packet = _lookup_packet(namespace, name)
    try:
        return list(packet.overloads()) if packet is not None else []
    except (AttributeError, RuntimeError):
        return []


def schema_arguments(overload) -> list[tuple[str, str, bool, bool]]:
    """Each argument of the overload's schema: ``(name, type as the schema spells it, has a default, keyword-only)``,
    e.g. ``("x", "Tensor", False, False)``, ``("alpha", "float", True, True)``."""
    return [(a.name, str(a.type), a.has_default_value(), a.kwarg_only) for a in overload._schema.arguments]


def library_op_names(value) -> set[str] | None:
    """The ops a ``torch.library.Library`` defined (``"ns::name"``, ``"ns::name.overload"``; its private
    ``_op_defs``); None when ``value`` is no Library. How a module imported before the doctor looked is read."""
    if not isinstance(value, torch.library.Library):
        return None
    return set(getattr(value, "_op_defs", ()) or ())


def op_key(value) -> str | None:
    """The name a CustomOpDef, ``torch.ops.ns.name`` (a packet) or an overload stands for: ``"ns::name"`` for the
    first two, ``"ns::name.overload"`` for an overload; None for anything else. Reads no dispatcher state."""
    from torch._library.custom_ops import CustomOpDef

    if isinstance(value, CustomOpDef):
        return value._qualname
    if isinstance(value, torch._ops.OpOverloadPacket):
        return value._qualified_op_name
    if isinstance(value, torch._ops.OpOverload):
        return f"{value._schema.name}.{value._overloadname}"
    return None
