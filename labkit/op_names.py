"""Op names: which a lab op may take, and which ones labkit holds in this process.

A name is checked before anything is defined (:func:`name_problem`, one sentence a learner can act on). Then
the registry: the ops labkit created (:func:`owns`; a name held by your own ``custom_op``, a ``Library.define``
or torch itself is never replaced or dropped), the live handles (:func:`live_ops`, and who hears of a change), and
the registrations labkit destroyed, kept alive for good (:func:`keep_destroyed`: why). :func:`custom_op` is the one
place labkit creates an op, so the registry is always complete.

Not here: what an op declares and its handle (:mod:`labkit.ops`, which re-exports the names a learner uses; it
alone calls :func:`hold` and :func:`forget`, which retire a handle), and private torch (the adapter reads and
destroys registrations; this module decides which to keep alive).
"""

from __future__ import annotations

import keyword
import re

import torch

from . import _torch as internals
from .describe import brief

RESERVED_NAMESPACES = ("aten", "prim", "prims", "torch", "higher_order", "_", "c10", "quantized")
MAX_NAME_LENGTH = 80
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
QUALNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*\Z")


class LabOpError(ValueError):
    """A spec or a name that labkit refuses, with a sentence a learner can act on."""


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
        if not part.isascii() or not IDENTIFIER.match(part):
            return (f"The {what} {part!r} must be an ASCII identifier: letters, digits and '_', "
                    "not starting with a digit.")
        if keyword.iskeyword(part):
            return f"The {what} {part!r} is a Python keyword; torch.ops.{namespace}.{op} could not be written."
    if namespace in RESERVED_NAMESPACES or namespace.startswith("_"):
        return f"The namespace {namespace!r} belongs to torch itself; pick your own, e.g. 'mylab'."
    if "." in op:
        return "Overload names are not supported here; leave out the '.'"
    return None


def split_qualname(op_name) -> tuple[str, str]:
    """``"ns::name"`` -> ``("ns", "name")``, or one sentence saying what an op name looks like."""
    parts = op_name.split("::") if isinstance(op_name, str) else []
    if len(parts) != 2 or not all(p.isidentifier() for p in parts):
        raise ValueError(f"an op name looks like 'namespace::name' (e.g. 'mylab::bump'), not {brief(op_name)}.")
    return parts[0], parts[1]


# --- registrations labkit destroyed: kept alive for good -----------------------------------------
#
# A ``torch.library.Library`` carries a weakref finalizer that, when the object is garbage collected,
# deletes ``torch.ops.<ns>.<name>`` for every name it defined: again after ``_destroy()`` already did,
# and even when a newer registration owns the name by then. So, some time after a redefinition (when
# the cyclic collector frees the old handle), ``torch.ops.ns.name.default`` silently becomes a new
# object, and an identity check on the live op (``node.target is torch.ops.ns.name.default``, or
# ``labkit._torch.is_dangling``) fails at random. labkit keeps each registration it destroyed or replaced alive
# for the rest of the session: a few hundred bytes each, and the finalizer then never runs early.
_DESTROYED_REGISTRATIONS: list = []


def keep_destroyed(registration) -> None:
    """Hold a destroyed or replaced registration (a token from ``registration_of``) for good."""
    if registration is not None and not any(kept is registration for kept in _DESTROYED_REGISTRATIONS):
        _DESTROYED_REGISTRATIONS.append(registration)


def destroy_custom_op(qualname: str) -> bool:
    """Free a name any ``custom_op`` holds, labkit's or not, keeping its registration alive (see above).
    True when one held it. :func:`drop` is the learner's way; this one asks no questions (tests clean up with it)."""
    registration = internals.destroy_custom_op(qualname)
    keep_destroyed(registration)
    return registration is not None


def _destroy_library(lib) -> None:
    internals.destroy_library(lib)
    keep_destroyed(lib)


# --- ownership: the ops labkit created in this process ------------------------------------------

_OWNED: dict[str, object] = {}  # qualified name -> torch's token for the registration labkit made
_USED_NAMESPACES: set[str] = set()


def owns(qualname: str) -> bool:
    """Whether ``qualname`` is, right now, an op labkit created (not replaced since by anyone else)."""
    token = _OWNED.get(qualname)
    if token is not None and internals.current_registration(qualname) is not token:
        del _OWNED[qualname]  # someone replaced or destroyed it: no longer labkit's
        keep_destroyed(token)
        token = None
    return token is not None


def exists(qualname: str) -> bool:
    """Whether any op (custom_op, Library.define, torch's) holds ``qualname`` now."""
    return internals.current_registration(qualname) is not None or internals.find_overload(qualname) is not None


def not_ours(qualname: str, fix: str = "pick another name") -> str:
    return (f"{qualname} already exists and labkit did not create it (your own custom_op, a Library.define, "
            f"or torch's); labkit never replaces or drops an op it did not make, so {fix}.")


def custom_op(qualname: str, kernel, mutates_args, tags=None):
    """``torch.library.custom_op(qualname, kernel, ...)`` on a name that is free or labkit's own.

    The one place labkit creates ops (``declare`` and the naming experiment both come here),
    so the ownership registry is always complete. Raises :class:`LabOpError` for a name held
    by anything labkit did not create, and when torch refuses the definition; a failed
    redefinition leaves the previous op exactly as it was (still live and tracked), or,
    where torch had already destroyed it, retired.
    """
    problem = name_problem(qualname)
    if problem:
        raise LabOpError(problem)
    if exists(qualname) and not owns(qualname):
        raise LabOpError(not_ours(qualname))
    before = internals.current_registration(qualname)
    try:
        opdef = torch.library.custom_op(qualname, kernel, mutates_args=mutates_args, tags=tags)
    except Exception as error:  # noqa: BLE001 - torch's refusal becomes one sentence
        now = internals.current_registration(qualname)
        if now is not before:  # torch destroyed the old op before failing: do not leave a half-made one
            destroy_custom_op(qualname)
            forget(qualname)
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise LabOpError(f"torch refused to define {qualname}: {first_line}") from None
    forget(qualname)  # any handle to the previous definition now dangles
    _OWNED[qualname] = internals.registration_of(opdef)
    _USED_NAMESPACES.add(qualname.split("::")[0])
    return opdef


def mark_ordered_effect(opdef) -> None:
    """Tell the compiler that ``opdef`` (what ``custom_op`` returned) has an ordered external effect (logging,
    I/O): its calls keep their order, and lowered graphs wrap it in ``with_effects`` (torch's API is private)."""
    internals.register_ordered_effect(opdef)


_LIBRARIES: dict[str, object] = {}


def library(namespace: str):
    """A fresh ``torch.library.Library(namespace, "FRAGMENT")``, for a notebook cell that may run again.

    The library an earlier call made for ``namespace`` is destroyed first, with every op it defined, so
    that the cell's ``define`` calls work a second time. In your own project, create the ``Library`` once,
    at module level, and keep it: its registrations live as long as the object.
    """
    return fresh_library(namespace, namespace)


def fresh_library(key: str, namespace: str):
    """A new ``torch.library.Library(namespace, "FRAGMENT")`` held under ``key``, the one held there before
    destroyed first (with its ops, its registration kept alive)."""
    old = _LIBRARIES.pop(key, None)
    if old is not None:
        _destroy_library(old)
    lib = torch.library.Library(namespace, "FRAGMENT")
    _LIBRARIES[key] = lib
    return lib


def forget(qualname: str) -> None:
    """Retire the handle labkit holds for ``qualname`` and forget that it owned it."""
    keep_destroyed(_OWNED.pop(qualname, None))  # see keep_destroyed: why
    old = _LIVE.pop(qualname, None)
    if old is not None:
        old._retired = True
        internals.unmark_side_effect(old._overload)  # a set removal: the old overload is not called
    _changed()


_LIVE: dict = {}   # qualified name -> its live labkit.ops.LabOp
_listeners: list = []


def on_change(callback, active: bool = True) -> None:
    """Run ``callback()`` whenever the set of lab ops changes; ``active=False`` stops it. Idempotent."""
    if callback in _listeners:
        _listeners.remove(callback)
    if active:
        _listeners.append(callback)


def _changed() -> None:
    for callback in list(_listeners):
        callback()


def live_ops() -> dict:
    """The live handles labkit holds, by qualified name (a retired or replaced one is left out)."""
    return {name: op for name, op in _LIVE.items() if not op.stale}


def hold(op) -> None:
    """Record ``op`` (a :class:`labkit.ops.LabOp` just declared) as its name's live handle, and say so."""
    _LIVE[op.name] = op
    _changed()


def held(qualname: str):
    """The handle labkit holds for ``qualname`` (live or not yet retired), or None."""
    return _LIVE.get(qualname)


def handles():
    """Every handle labkit holds, live or not."""
    return list(_LIVE.values())


def owned_in(namespace: str) -> list[str]:
    """The names labkit owns now in ``namespace``, sorted."""
    return sorted(n for n in list(_OWNED) if n.split("::")[0] == namespace and owns(n))


def namespace_used(namespace: str) -> bool:
    """Whether labkit ever created an op in ``namespace`` in this process."""
    return namespace in _USED_NAMESPACES
