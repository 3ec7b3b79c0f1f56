"""The one place where labkit touches private torch APIs.

Everything here was read in, and tested against, the torch releases in
``CHECKED_ON``. When torch moves one of these, only this file changes, and
``labkit.env.check_torch()`` tells the learner which release was checked.

Not here: labkit's own decisions (which registrations to keep alive is :mod:`labkit.ops`'s; which
namespaces to hash, and re-arming after a reset, :mod:`labkit.cache`'s), and anything a learner reads.
Each helper only reads or writes one piece of torch's private state, named in its docstring.
"""

from __future__ import annotations

import contextlib
import os
import platform
import threading
from typing import Any, Callable
from unittest import mock

import re

import torch

# Releases on which every notebook passed in tools/torch_matrix.py's table (docs/torch-versions.json).
# BEGIN checked-on: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit
CHECKED_ON = ("2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")
# END checked-on

# The private names labkit imports, lazily, in the helpers below; the too-old-torch gate looks them
# up first, so that an older torch gets one sentence on ``import labkit``, never an ImportError.
PRIVATE_NAMES = (
    ("torch._library.utils", "is_impure"),
    ("torch._library.custom_ops", "OPDEF_TO_LIB"),
    ("torch._library.simple_registry", "singleton"),
    ("torch._library.effects", "EffectType"),
)


def missing_private_names() -> list[str]:
    """The entries of ``PRIVATE_NAMES`` this torch lacks, as dotted names."""
    import importlib

    missing = []
    for module, name in PRIVATE_NAMES:
        try:
            getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            missing.append(f"{module}.{name}")
    return missing


# --- recording backends -------------------------------------------------------------------------


def _notify(callback: Callable[[torch.fx.GraphModule], None] | None, gm: torch.fx.GraphModule) -> None:
    if callback is not None:
        callback(gm)


def aot_eager_recording(on_forward: Callable[[torch.fx.GraphModule], None],
                        on_backward: Callable[[torch.fx.GraphModule], None] | None = None) -> Callable:
    """The ``aot_eager`` backend, calling ``on_forward`` with AOTAutograd's forward (or inference)
    graph and ``on_backward`` with its backward graph.

    AOTAutograd compiles the backward graph lazily, when ``.backward()`` first reaches it, so
    ``on_backward`` is called then, not during ``torch.compile``'s first call.
    """
    from torch._dynamo.backends.debugging import aot_eager, boxed_nop

    def fw_compiler(gm, example_inputs):
        _notify(on_forward, gm)
        return boxed_nop(gm, example_inputs)

    def bw_compiler(gm, example_inputs):
        _notify(on_backward, gm)
        return boxed_nop(gm, example_inputs)

    def backend(gm, example_inputs):
        return aot_eager(gm, example_inputs, fw_compiler=fw_compiler, bw_compiler=bw_compiler)

    return backend


def inductor_recording(on_forward: Callable[[torch.fx.GraphModule], None],
                       on_backward: Callable[[torch.fx.GraphModule], None] | None = None) -> Callable:
    """The ``inductor`` backend, calling ``on_forward``/``on_backward`` with each graph Inductor receives.

    ``compile_fx`` hands every graph AOTAutograd produces to its ``inner_compile`` argument,
    with ``is_backward=True`` for the backward one (compiled lazily, at the first ``.backward()``).
    Inductor then rewrites that graph in place (post-grad passes, re-inplacing), so the
    callbacks must copy what they need at once.
    """
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    def recording_inner(gm, example_inputs, **kwargs):
        _notify(on_backward if kwargs.get("is_backward") else on_forward, gm)
        return compile_fx_inner(gm, example_inputs, **kwargs)

    def backend(gm, example_inputs):
        return compile_fx(gm, example_inputs, inner_compile=recording_inner)

    return backend


@contextlib.contextmanager
def collect_inductor_code(sink: list[str]):
    """Collect every Python wrapper module Inductor generates inside the block, on this thread.

    torch's own ``torch._inductor.utils.run_and_get_code(fn, *args)`` does this for one call, patching the
    same ``GraphLowering.save_output_code``. This one differs on purpose: it does not call
    ``torch._dynamo.reset()`` first (that would drop the learner's own compiled functions; labkit compiles a
    fresh copy of the function instead); it keeps only this thread's modules, so a compile running meanwhile
    on another thread (a warm-up, say) does not land in the caller's report, and passes those on; and it keeps
    every module in compile order, repeats included, where torch's keeps a set.
    """
    from torch._inductor.graph import GraphLowering

    original, thread = GraphLowering.save_output_code, threading.get_ident()

    def save_output_code(code: str) -> None:
        if threading.get_ident() == thread:
            sink.append(code)
        elif original is not None:
            original(code)

    with mock.patch.object(GraphLowering, "save_output_code", save_output_code):
        yield


def custom_op_qualname(target) -> str | None:
    """``namespace::name`` of the operator overload ``target`` when it is not one of torch's own."""
    if not isinstance(target, torch._ops.OpOverload):
        return None
    if target.namespace in ("aten", "prims", "prim", "higher_order"):
        return None
    return f"{target.namespace}::{target._schema.name.split('::')[-1]}"


def writes_an_input(target) -> bool:
    """Whether the operator overload ``target`` declares that it writes one of its arguments."""
    return isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable


def draws_random_numbers(target) -> bool:
    """Whether the operator overload ``target`` is tagged ``nondeterministic_seeded`` (rand, dropout, ...)."""
    return isinstance(target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in target.tags


def inductor_falls_back_to_eager_random() -> bool:
    """``torch._inductor.config.fallback_random``: True makes Inductor draw random numbers as eager does."""
    import torch._inductor.config

    return bool(torch._inductor.config.fallback_random)


@contextlib.contextmanager
def own_automatic_dynamic_state():
    """Give the block a fresh automatic-dynamic-shapes memory, and put the caller's back after it.

    Dynamo remembers which sizes changed per (file, line, function name), not per code
    object, so a fresh copy of a function would inherit what earlier compiles of the
    original saw (and teach them what it sees). ``torch.compiler.reset()`` also clears it,
    but with every compiled function of the process.
    """
    import collections

    from torch._dynamo import pgo

    saved = pgo._CODE_STATE
    pgo._CODE_STATE = collections.defaultdict(pgo.CodeState)
    try:
        yield
    finally:
        pgo._CODE_STATE = saved


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


def torch_log_state() -> object:
    """A copy of torch's record of which logs and artifacts ``set_logs``/``TORCH_LOGS`` turned on (give it back with
    the next). A copy: ``set_logs`` changes that record in place, so keeping the live object keeps nothing."""
    import copy

    from torch._logging import _internal

    return copy.deepcopy(_internal._get_log_state())


def set_torch_log_state(state: object) -> None:
    from torch._logging import _internal

    _internal._set_log_state(state)


# --- configuration ------------------------------------------------------------------------------


def cpp_compiler() -> str:
    """The C++ compiler Inductor uses on the CPU (its path), or '' when none is found."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return str(get_cpp_compiler())
    except Exception:  # noqa: BLE001 - any failure means "no compiler we can name"
        return ""


@contextlib.contextmanager
def fresh_cache_dir():
    """A new, empty Inductor/AOTAutograd cache directory for the block, deleted afterwards.

    ``TORCHINDUCTOR_CACHE_DIR`` alone is not enough: torch memoises paths derived from it
    (``CacheBase.get_local_cache_path`` and others registered with ``clear_on_fresh_cache``).
    torch's own ``fresh_cache`` clears those memos on entry and exit and restores the variable.
    """
    from torch._inductor.utils import fresh_cache

    with fresh_cache():
        yield os.environ["TORCHINDUCTOR_CACHE_DIR"]


def vec_isa_settled_env() -> dict[str, str]:
    """``{"TORCHINDUCTOR_VEC_ISA_OK": "1"}`` when this process's Inductor has already checked, by building and
    loading a test file, every vector instruction set the CPU claims, and each passed; else ``{}``.

    Why: a new Python over an empty cache directory repeats that check (5-15 s on 2 cores) before its first C++
    compile. Told ``VEC_ISA_OK=1`` it skips each set's base build and keeps every set the CPU claims: exactly the
    list this process's check kept, so the child picks the same one (the AVX-512 sets still build their own small
    checks for VNNI, bf16 and AMX). Any other case (not checked yet, a set that failed, ``vec_isa_ok`` set in
    Python, not x86) returns ``{}`` and the child checks for itself. ``VEC_ISA_OK`` is part of the FX-graph cache
    key: pass it only to a child whose cache the caller does not compare across runs.
    """
    if os.environ.get("TORCHINDUCTOR_VEC_ISA_OK") is not None or platform.machine() not in ("x86_64", "AMD64"):
        return {}                                     # the child inherits the caller's own setting, or checks
    try:
        import torch._inductor.config as inductor_config
        from torch._inductor import cpu_vec_isa

        if inductor_config.cpp.vec_isa_ok is not None:
            return {}                                 # set in Python: no check ran to pass on
        if cpu_vec_isa.valid_vec_isa_list.cache_info().currsize == 0:
            return {}                                 # not checked yet in this process
        flags = cpu_vec_isa.x86_isa_checker()
        claimed = [isa for isa in cpu_vec_isa.supported_vec_isa_list if all(f in flags for f in str(isa).split())]
        settled = claimed == cpu_vec_isa.valid_vec_isa_list()
    except (ImportError, AttributeError):             # another torch's layout: let the child check
        return {}
    return {"TORCHINDUCTOR_VEC_ISA_OK": "1"} if settled else {}


def config_patches(**changes: dict[str, Any]):
    """Patch torch's config modules for one block, in torch's own spelling, one ``config.patch({...})`` each:
    ``config_patches(inductor={"fx_graph_cache": False}, functorch={"enable_autograd_cache": False})``.

    The modules by name: ``compiler`` (``torch.compiler.config``), ``inductor``, ``functorch`` and ``dynamo``.
    The patches apply from this call (use it as ``with config_patches(...):``) and are undone when the block ends.
    """
    import torch._functorch.config
    import torch._inductor.config

    modules = {
        "compiler": torch.compiler.config,
        "inductor": torch._inductor.config,
        "functorch": torch._functorch.config,
        "dynamo": torch._dynamo.config,
    }
    stack = contextlib.ExitStack()
    for module, patch in changes.items():
        stack.enter_context(modules[module].patch(patch))
    return stack


def import_compiler() -> None:
    """Import Dynamo and Inductor now (seconds in a fresh process), not at the first compile."""
    import torch._dynamo  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401


def cache_counters() -> dict[str, int]:
    """Hits and misses of the FX-graph and AOTAutograd caches so far in this process."""
    from torch._dynamo.utils import counters

    return {
        "fxgraph_hit": counters["inductor"]["fxgraph_cache_hit"],
        "fxgraph_miss": counters["inductor"]["fxgraph_cache_miss"],
        "aot_hit": counters["aot_autograd"]["autograd_cache_hit"],
        "aot_miss": counters["aot_autograd"]["autograd_cache_miss"],
    }


def graph_caches_off():
    """Bypass the FX-graph and AOTAutograd caches for one block: every graph is traced for real."""
    return config_patches(inductor={"fx_graph_cache": False}, functorch={"enable_autograd_cache": False})


def python_defined_op_names() -> list[str]:
    """``"ns::name"`` / ``"ns::name.overload"`` of every op defined from Python, torch's own namespaces included.

    That is ``torch.library.custom_op``, ``Library(ns, "DEF" | "FRAGMENT").define`` and
    ``torch.library.define`` alike (all record the name in ``torch.library._defs``). Not C++ ops
    (``TORCH_LIBRARY`` in an extension). May list names whose registration was destroyed since:
    :func:`find_overload` returns None for those. A set union: cheap enough for every cache key.
    """
    from torch._library.custom_ops import OPDEF_TO_LIB

    return sorted(set(torch.library._defs) | set(OPDEF_TO_LIB))


def key_every_compile_on(provider: Callable[[], str | None] | None) -> bool:
    """Make ``provider()`` part of the FX-graph and AOTAutograd cache keys of every later compile (None: stop).

    It rides on a post-grad pass that does nothing: torch asks a pass for its ``uuid()`` each time it
    computes either key, and ``torch.compiler.reset()`` leaves Inductor's config alone (it does clear
    Dynamo's compile callbacks). Takes ``torch._inductor.config.post_grad_custom_post_pass`` only while it
    is empty and frees it only while it still holds this pass. Returns whether the pass is installed.
    """
    import torch._inductor.config as inductor_config
    from torch._inductor.custom_graph_pass import CustomGraphPass

    current = inductor_config.post_grad_custom_post_pass
    mine = getattr(current, "_labkit_key_part", False)
    if provider is None:
        if mine:
            inductor_config.post_grad_custom_post_pass = None
        return False
    if current is not None and not mine:
        return False  # the caller's own pass: never replaced

    class KeyPart(CustomGraphPass):
        _labkit_key_part = True

        def __call__(self, graph) -> None:
            return None

        def uuid(self) -> str | None:  # None: torch bypasses the caches
            part = provider()
            return None if part is None else "labkit-ops-" + part

    inductor_config.post_grad_custom_post_pass = KeyPart()
    return True


HIGHER_ORDER_WRAPPERS = ("auto_functionalized", "auto_functionalized_v2", "with_effects")


def wrapped_op(node) -> object | None:
    """For an ``auto_functionalized(_v2)`` or ``with_effects`` node, the custom op it wraps."""
    name = getattr(node.target, "__name__", "")
    if node.op != "call_function" or name not in HIGHER_ORDER_WRAPPERS:
        return None
    candidates = node.args[:2]
    for arg in candidates:
        if isinstance(arg, torch._ops.OpOverload):
            return arg
    return None


def on_dynamo_compile_start(callback: Callable[[], None], active: bool = True) -> None:
    """Run ``callback()`` as every Dynamo compile starts (before any cache key is computed).

    ``active=False`` removes it. ``torch.compiler.reset()`` forgets these callbacks, so callers
    re-arm after a reset (see ``labkit.cache.reset_compiler``).
    """
    from torch._dynamo.callback import callback_handler

    mine = [cb for cb in callback_handler.start_callbacks if getattr(cb, "_labkit_wraps", None) is callback]
    if not active:
        for cb in mine:
            callback_handler.remove_start_callback(cb)
    elif not mine:
        # Dynamo must not trace the callback: a backward compiled lazily inside a compiled frame
        # runs it under Dynamo's frame hook, which would recompile it while holding the callback
        # lock (a non-reentrant threading.Lock: the process hangs).
        @torch.compiler.disable
        def start(_args=None):
            callback()

        start._labkit_wraps = callback
        callback_handler.register_start_callback(start)


def aliasing_check_raises(raises: bool):
    """Whether AOTAutograd's runtime aliasing check for custom ops raises (True) or warns (False).

    torch's default is ``bool(os.getenv("CI"))`` at import; lessons set it explicitly.
    """
    return config_patches(functorch={"error_on_custom_op_aliasing": raises})


def dynamo_disabled() -> bool:
    """True when Dynamo is switched off (``TORCHDYNAMO_DISABLE=1`` or ``torch._dynamo.config.disable``):
    ``torch.compile`` then returns the function unchanged and every "compiled" run is eager."""
    import torch._dynamo

    return bool(torch._dynamo.config.disable)


def torch_counters(group: str):
    """A copy of torch's own event counters for one group (``inductor``, ``aot_autograd``, ...): a Counter."""
    import collections

    from torch._dynamo.utils import counters

    return collections.Counter(counters[group])


def clear_torch_counters() -> None:
    """Zero torch's own event counters (``torch._dynamo.utils.counters``), every group."""
    from torch._dynamo.utils import counters

    counters.clear()


# --- AOTInductor: torch's documented entry points live in torch._inductor ------------------------


def aoti_compile_and_package(exported, package_path: str) -> str:
    """``torch._inductor.aoti_compile_and_package``: compile an ExportedProgram ahead of time into a .pt2."""
    return torch._inductor.aoti_compile_and_package(exported, package_path=package_path)


def aoti_load_package(package_path: str):
    """``torch._inductor.aoti_load_package``: load a .pt2 package; its custom ops are looked up by name now."""
    return torch._inductor.aoti_load_package(package_path)


def fresh_python_script(package: str, exported: str) -> str:
    """The script :func:`labkit.packages.in_a_fresh_python` runs: numbered lines, one per step."""
    return f"""
import warnings
import torch
warnings.filterwarnings("ignore")
def attempt(label, step):
    try:
        step()
    except Exception as error:
        print(label, "ERROR:", str(error).splitlines()[0], flush=True)
attempt("1 export.load, op not registered:", lambda: torch.export.load({exported!r}))
attempt("2 aoti_load_package, op not registered:", lambda: torch._inductor.aoti_load_package({package!r}))
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)
silu.register_fake(lambda x: torch.empty_like(x))
x = torch.randn(2, 8)
print("3 op defined, export.load runs:", torch.allclose(torch.export.load({exported!r}).module()(x), silu(x) + 1))
runner = torch._inductor.aoti_load_package({package!r})
print("4 op defined, the package runs:", torch.allclose(runner(x), silu(x) + 1), flush=True)
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    return x * torch.sigmoid(x) * alpha
fresh = torch._inductor.aoti_load_package({package!r})
print("5 signature changed, a package loaded now runs:", torch.allclose(fresh(x), silu(x) + 1), flush=True)
runner(x)
print("6 the package loaded before the change ran", flush=True)
"""


# --- who calls an op while torch.compile traces it ------------------------------------------------------


def is_fake_tensor(value) -> bool:
    """Whether ``value`` is one of the fake tensors torch.compile traces with (a shape, no data)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(value, FakeTensor)


_STAGE_MODULES = (("torch._inductor", "inductor"), ("torch._functorch", "aot"), ("torch._dynamo", "dynamo"))


def compile_stage_on_stack(frame) -> str:
    """The innermost stage of torch.compile (``"dynamo"``, ``"aot"``, ``"inductor"``) whose module is on the call
    stack from ``frame`` outwards, read from the frames' module names; ``"tracing"`` when none is."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "torch._dynamo.eval_frame":         # its wrappers sit on every stage's stack
            for prefix, stage in _STAGE_MODULES:
                if module.startswith(prefix):
                    return stage
        frame = frame.f_back
    return "tracing"


def fake_fallback_namespaces() -> tuple[str, ...]:
    """The namespaces whose ops fake tensors may run for real, on zero-filled inputs, when the op has no fake
    kernel (``FakeTensorMode``'s allow-list; ``()`` where this torch has none)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return tuple(sorted(getattr(FakeTensorMode, "_can_run_unsafe_fallback_allowed_namespaces", ())))


# --- the graphs dead-code elimination sees ------------------------------------------------------


def aot_forward_as_inductor_gets_it(on_forward: Callable[[torch.fx.GraphModule], None]) -> Callable:
    """An AOTAutograd backend that hands ``on_forward`` each forward graph and then runs it as is.

    Like Inductor, it asks AOTAutograd for ``keep_inference_input_mutations=True``: a write back into a
    mutated input stays in the graph as a ``copy_`` node (instead of being done outside the graph).
    """
    from torch._dynamo.backends.common import aot_autograd

    def keep(gm, example_inputs):
        on_forward(gm)
        return gm

    return aot_autograd(fw_compiler=keep, keep_inference_input_mutations=True)


def inductor_keeps_input_mutations() -> bool:
    """Whether Inductor's compile asks AOTAutograd for ``keep_inference_input_mutations=True`` (read in its code)."""
    import inspect

    import torch._inductor.compile_fx

    return "keep_inference_input_mutations=True" in inspect.getsource(torch._inductor.compile_fx)


def current_overload_of(opdef) -> torch._ops.OpOverload | None:
    """The default overload ``torch.ops`` hands out for a ``CustomOpDef`` now (after a re-declaration, a new one)."""
    return find_overload(opdef._qualname)


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
