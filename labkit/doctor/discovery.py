"""Finding the ops to examine: import the project's module(s) (:func:`import_module`, a dotted name or a ``.py``
path), then every overload they registered on import, hold in their globals or name in their ``SAMPLES``, and every
op of a namespace asked for (C++ ops): :func:`discover`. Also how an op object or a SAMPLES key is named
(:func:`op_name`, :func:`full_name`: ``"ns::name.overload"``), and :class:`UsageError`, the one sentence for what
cannot be examined at all.

Not here: the ops' inputs (:mod:`labkit.doctor.samples`), examining them (:mod:`labkit.doctor.examining`), and
private torch (the dispatcher is read through :mod:`labkit._torch`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import os
import pathlib
import sys
import traceback
from typing import Any, Iterable

from .. import _torch as internals
from .. import ops
from ..cache import TORCH_OP_NAMESPACES
from ..describe import brief
from .stopping import by_the_user


class UsageError(Exception):
    """What was asked cannot be examined at all (a module that does not import, no op in it): one sentence."""


@dataclasses.dataclass
class Target:
    """An overload to examine: where it was found and the module(s) whose ``SAMPLES`` may hold its inputs."""

    name: str       # "ns::name.overload"
    overload: Any
    found_in: str
    notes: list[str] = dataclasses.field(default_factory=list)   # said with its result (a second definition)


def import_module(name: str):
    """Import a module by dotted name or a ``.py`` path; :class:`UsageError` (one sentence) when it cannot be."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"name a module to examine, such as mypkg.ops, not {brief(name)}.")
    path = pathlib.Path(name)
    try:
        if name.endswith(".py") or "/" in name:
            if not path.is_file():
                raise UsageError(f"{name}: no such file.")
            known = _known(path)
            if known is not None:
                return known    # imported before: running it again would register its ops twice
            spec = importlib.util.spec_from_file_location(_path_module_name(path), path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(name)
    except UsageError:
        raise
    except ModuleNotFoundError as error:
        missing = error.name or str(error)
        if name == missing or name.startswith(f"{missing}."):
            raise UsageError(f"there is no module {name!r} on this Python's path ({sys.executable}): check the name, "
                             "run from the project's folder, or pip install -e the project.") from None
        raise UsageError(f"importing {name} failed: it imports {missing!r}, which is not installed here.") from None
    except SyntaxError as error:
        raise UsageError(f"importing {name} failed: a syntax error in {error.filename}, line {error.lineno}: "
                         f"{error.msg}.") from None
    except BaseException as error:  # noqa: BLE001 - the project's import code: any failure is one sentence
        if by_the_user(error):
            raise
        where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        at = f" ({where.filename}, line {where.lineno})" if where else ""
        kind = type(error).__name__ + (" (raised by the code, not by a Ctrl-C)" if isinstance(error, KeyboardInterrupt)
                                       else "")
        raise UsageError(f"importing {name} raised {kind}{at}: {_message_of(error)}") from None


def _message_of(error: BaseException) -> str:
    """The error's message on one line, or a sentence saying it has none to give (its ``__str__`` may raise)."""
    try:
        return " ".join(str(error).split())[:300]
    except BaseException as unreadable:  # noqa: BLE001 - the project's exception class: its __str__ can do anything
        return f"(its message could not be read: its __str__ raised {type(unreadable).__name__})"


def _path_module_name(path: pathlib.Path) -> str:
    """The private name a ``.py`` path is imported under: never its bare stem, or a project's types.py or utils.py
    would take the place of the standard library's module for everything imported after it."""
    digest = hashlib.sha1(os.fsencode(path.resolve())).hexdigest()[:10]   # any bytes a file name may hold
    return f"labkit_doctor_{path.stem if path.stem.isidentifier() else 'module'}_{digest}"


def _known(path: pathlib.Path):
    """The module already imported from ``path`` (under the doctor's private name, or under its stem by the
    project's own import), else None: running the file again would register its ops twice."""
    for known in (sys.modules.get(_path_module_name(path)), sys.modules.get(path.stem)):
        if known is not None and pathlib.Path(getattr(known, "__file__", "") or "").resolve() == path.resolve():
            return known
    return None


def _not_torchs(names: Iterable[str]) -> set[str]:
    return {n for n in names if n.partition("::")[0] not in TORCH_OP_NAMESPACES}


def full_name(name: str) -> str:
    """``"ns::name"`` -> ``"ns::name.default"``; ``"ns::name.out"`` as is."""
    return name if "." in name.partition("::")[2] else f"{name}.default"


def shown(name: str) -> str:
    """A module's name or path as a report can hold it: a file name's bytes that are no UTF-8 (Python keeps them as
    surrogates) written as ``\\xff``, so that printing it or writing it to JSON or XML cannot fail."""
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


def targets_named(names: Iterable[str], found_in: str) -> list[Target]:
    found_in = shown(found_in)
    found = []
    for name in sorted({full_name(n) for n in names}):
        qualname, _, overload_name = name.partition(".")
        overload = internals.find_overload(qualname, overload_name)
        if overload is not None:
            found.append(Target(name, overload, found_in))
    return found


def _ops_held_by(module) -> set[str]:
    """The ops a module's globals hold (a CustomOpDef, ``torch.ops.ns.name``, an overload, a labkit op, a
    ``torch.library.Library``), each overload by name: how a module imported before the doctor looked (so that its
    registrations were already in the snapshot) is read."""
    names = set()
    for value in list(vars(module).values()):
        defined = internals.library_op_names(value)
        if defined is not None:
            names |= {full_name(n) for n in defined}
            continue
        key = internals.op_key(value)
        if key is None and isinstance(value, ops.LabOp):
            key = f"{value.name}.default"
        if key is None:
            continue
        qualname, _, overload_name = key.partition(".")
        names |= ({f"{qualname}.{overload_name}"} if overload_name else
                  {f"{qualname}.{o}" for o in internals.overload_names(qualname)})
    return _not_torchs(names)


def op_snapshot() -> set[str]:
    """Every op the dispatcher holds now: take it before importing anything of the project's (its SAMPLES modules
    too, which may import its ops), so that :func:`discover` finds what those imports registered. torch's compiler
    modules are imported first: they register ops of torch's own when first imported (``mempool::begin``,
    ``inductor::quack_symmetric_mm`` on 2.15.0), which a project's import would otherwise seem to have added."""
    internals.import_compiler()
    return internals.all_op_names()


def _was_imported(name: str) -> bool:
    is_path = name.endswith(".py") or "/" in name
    return _known(pathlib.Path(name)) is not None if is_path else name in sys.modules


def discover(modules: Iterable[str] = (), namespaces: Iterable[str] = (), before: set[str] | None = None,
             sample_keys: Iterable = ()) -> tuple[list[Target], list]:
    """Import each module and find the overloads registered since ``before`` (:func:`op_snapshot`, taken by the
    caller before it imported anything of the project's; else now), those the modules hold in their globals and
    those their SAMPLES (and ``sample_keys``, the caller's) name; add every op of each namespace. Returns the
    targets (sorted, each once) and the imported modules. :class:`UsageError` for a module that does not import,
    one where no op is found, or when nothing at all is found."""
    before = op_snapshot() if before is None else before
    modules, namespaces = list(dict.fromkeys(modules)), list(dict.fromkeys(namespaces))   # each once
    targets: dict[str, Target] = {}
    imported, asked_as = [], []   # the modules, and the name each was asked by
    found: dict[str, str] = {}    # each overload's name -> the module that first registered or held it
    defined: dict[str, tuple[object, str]] = {}   # qualname -> (its registration, the module that made it)
    again: dict[str, list[str]] = {}              # qualname -> the later modules that defined it again
    # a .py path is found from where the run started, whatever directory an earlier module's import moved to
    located = {name: str(pathlib.Path(name).absolute()) if (name.endswith(".py") or "/" in name)
               and pathlib.Path(name).is_file() else name for name in modules}
    for name in modules:
        earlier = _was_imported(located[name])
        module = import_module(located[name])
        if any(module is seen for seen in imported):
            continue     # the same module by another name (mypkg/ops.py and mypkg.ops): read once
        imported.append(module)
        asked_as.append(name)
        registered = _not_torchs(internals.all_op_names() - before)
        held = _ops_held_by(module)
        for overload_name in sorted(registered | held):
            found.setdefault(full_name(overload_name), name)
        _note_redefinitions(found, defined, again, name)
        if not registered and not held and not getattr(module, "SAMPLES", None) and not sample_keys:
            raise UsageError(_none_found(name, earlier))
    # resolved after every import: a module that defines an op again (a fast kernel over a fallback) replaces the
    # registration an earlier one made, whose handle is then stale
    for where in dict.fromkeys(found.values()):
        for target in targets_named([n for n, w in found.items() if w == where], where):
            qualname = target.name.partition(".")[0]
            if qualname in again:
                target.notes = [f"defined again by {shown(', '.join(again[qualname]))} after "
                                f"{shown(defined[qualname][1])}: the doctor examined the definition in force, the last"]
            targets.setdefault(target.name, target)
    for namespace in namespaces:
        if not isinstance(namespace, str) or not namespace.isidentifier():
            raise UsageError(f"a namespace is a name such as mylib (the part before :: in mylib::op), "
                             f"not {brief(namespace)}.")
        if namespace in TORCH_OP_NAMESPACES:   # aten alone holds thousands of overloads: hours, and not yours
            raise UsageError(f"{namespace} is one of torch's own namespaces: the doctor examines a project's ops; "
                             "name your namespace, or your module.")
        names = {n for n in internals.all_op_names() if n.partition("::")[0] == namespace}
        if not names:
            raise UsageError(f"no operator is registered in namespace {namespace!r} (after importing "
                             f"{', '.join(modules) or 'nothing'}): import the module that loads them first.")
        for target in targets_named(names, f"namespace {namespace}"):
            targets.setdefault(target.name, target)
    named = [(key, asked) for asked, m in zip(asked_as, imported) for key in _sample_keys(getattr(m, "SAMPLES", None))]
    named += [(key, "SAMPLES given") for key in _sample_keys(dict.fromkeys(sample_keys))]
    for key, where in named:   # an op named only in SAMPLES (registered before the doctor looked)
        for target in targets_named(_expand(key), where):
            targets.setdefault(target.name, target)
    if not targets:
        asked = ", ".join([*modules, *(f"namespace {n}" for n in namespaces)]) or "nothing"
        raise UsageError(f"no custom operator found in {asked}.")
    return sorted(targets.values(), key=lambda t: t.name), imported


def _note_redefinitions(found: dict[str, str], defined: dict, again: dict, module: str) -> None:
    """After ``module``'s import: each op found so far whose registration changed since it was recorded was
    defined again by ``module`` (``custom_op`` on a name in use replaces it)."""
    for qualname in {n.partition(".")[0] for n in found}:
        now = internals.current_registration(qualname)
        if now is None:
            continue
        if qualname in defined and defined[qualname][0] is not now:
            again.setdefault(qualname, []).append(module)
            defined[qualname] = (now, defined[qualname][1])
        defined.setdefault(qualname, (now, module))


def _none_found(name: str, earlier: bool) -> str:
    """Why no op was found in a module, truthfully: its import registered none, or it was imported before the
    doctor looked (what it registered then cannot be told apart) and its globals hold none."""
    kinds = "custom_op, triton_op, torch.library.define, Library.define"
    if earlier:
        return (f"{name} was imported before the doctor looked, and its globals hold no custom operator (a "
                "CustomOpDef, torch.ops.ns.name, a Library) nor a SAMPLES naming one: name its ops in SAMPLES, "
                "or pass --namespace NS.")
    return (f"{name} registered no custom operator when imported ({kinds}) and holds none: name the module that "
            "defines them, or pass --namespace NS for ops defined in C++.")


def _expand(key: str) -> set[str]:
    """A SAMPLES key's overloads: ``"ns::name.out"`` itself; ``"ns::name"`` its default overload."""
    return {full_name(key)}


def _sample_keys(samples) -> list[str]:
    """The op names a SAMPLES dict keys on (anything else: []); its other keys are :func:`samples.unmatched`'s."""
    return [k for k in (op_name(key) for key in samples) if k is not None] if isinstance(samples, dict) else []


def op_name(key) -> str | None:
    """A SAMPLES key as ``"ns::name"`` / ``"ns::name.overload"``: a qualified name, a CustomOpDef, a packet, an
    overload or a labkit op; None for anything else."""
    if isinstance(key, str):
        return key if "::" in key else None
    if isinstance(key, ops.LabOp):
        return key.name
    return internals.op_key(key)

