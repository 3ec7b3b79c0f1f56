"""Configuration and caches: the C++ compiler, cache folders and counters, config patches, the cache key
hook, Dynamo's compile-start callbacks and counters.

Not here: labkit's cache policy (:mod:`labkit.cache`), and which settings a lesson changes.
"""

from __future__ import annotations

import contextlib
import os
import platform
from typing import Any, Callable

import torch


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


# The logger of torch's private torch._library.triton (triton_op's module): its WARNING where Triton is missing.
TRITON_OP_LOGGER = "torch._library.triton"


def torch_log_state() -> object:
    """A copy of torch's record of which logs and artifacts ``set_logs``/``TORCH_LOGS`` turned on (give it back with
    the next). A copy: ``set_logs`` changes that record in place, so keeping the live object keeps nothing."""
    import copy

    from torch._logging import _internal

    return copy.deepcopy(_internal._get_log_state())


def set_torch_log_state(state: object) -> None:
    """Give torch back a record from :func:`torch_log_state` and configure every logger of torch's registry by it,
    as ``set_logs`` would: those created since the record was taken too (an artifact logger such as
    ``__recompiles`` is created at its module's first import, often inside a first compile)."""
    from torch._logging import _internal

    _internal._set_log_state(state)
    _internal._init_logs()
