"""The one place where labkit touches private torch APIs.

Everything here was read in, and tested against, the torch releases in
``CHECKED_ON``. When torch moves one of these, only this file changes, and
``labkit.env.check_torch()`` tells the learner which release was checked.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable
from unittest import mock

import torch

# Releases on which every notebook passed in tools/torch_matrix.py's table (docs/torch-versions.md);
# tests/test_env.py checks that this tuple is that table's.
CHECKED_ON = ("2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")

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


def aot_eager_recording(on_forward: Callable[[torch.fx.GraphModule], None]) -> Callable:
    """The ``aot_eager`` backend, calling ``on_forward`` with AOTAutograd's forward graph."""
    from torch._dynamo.backends.debugging import aot_eager, boxed_nop

    def fw_compiler(gm, example_inputs):
        on_forward(gm)
        return boxed_nop(gm, example_inputs)

    def backend(gm, example_inputs):
        return aot_eager(gm, example_inputs, fw_compiler=fw_compiler)

    return backend


def inductor_recording(on_forward: Callable[[torch.fx.GraphModule], None]) -> Callable:
    """The ``inductor`` backend, calling ``on_forward`` with the graph Inductor receives.

    Inductor rewrites that graph in place (post-grad passes, re-inplacing), so the
    callback must copy what it needs at once.
    """
    import torch._inductor.compile_fx as compile_fx_mod

    def backend(gm, example_inputs):
        original = compile_fx_mod._compile_fx_inner

        def recording_inner(graph, *args, **kwargs):
            on_forward(graph)
            return original(graph, *args, **kwargs)

        with mock.patch.object(compile_fx_mod, "_compile_fx_inner", recording_inner):
            return compile_fx_mod.compile_fx(gm, example_inputs)

    return backend


@contextlib.contextmanager
def collect_inductor_code(sink: list[str]):
    """Collect every Python wrapper module Inductor generates inside the block."""
    from torch._inductor.graph import GraphLowering

    def save_output_code(code: str) -> None:
        sink.append(code)

    with mock.patch.object(GraphLowering, "save_output_code", save_output_code):
        yield


# --- op registration ----------------------------------------------------------------------------


def custom_op_qualnames() -> list[str]:
    """Qualified names of every live op that ``torch.library.custom_op`` created."""
    from torch._library.custom_ops import OPDEF_TO_LIB

    return sorted(OPDEF_TO_LIB)


def destroy_custom_op(qualname: str) -> bool:
    """Free a name taken by ``custom_op``: what ``custom_op`` itself does before a redefinition."""
    from torch._library.custom_ops import OPDEF_TO_LIB

    lib = OPDEF_TO_LIB.pop(qualname, None)
    if lib is None:
        return False
    lib._destroy()
    return True


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
    from torch._library.simple_registry import singleton

    return singleton.find(qualname).fake_impl.kernel is not None


# --- configuration ------------------------------------------------------------------------------


def cpp_compiler() -> str:
    """The C++ compiler Inductor uses on the CPU (its path), or '' when none is found."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return str(get_cpp_compiler())
    except Exception:  # noqa: BLE001 - any failure means "no compiler we can name"
        return ""


_after_reset: list[Callable[[], None]] = []


def reset_compiler() -> None:
    """Forget every compiled frame, so a capture starts from a clean Dynamo state."""
    torch.compiler.reset()
    for callback in _after_reset:
        callback()


def config_patches(**patches: Any):
    """Patch torch.compiler/inductor/functorch config entries by dotted name for one block."""
    import torch._functorch.config
    import torch._inductor.config

    stack = contextlib.ExitStack()
    modules = {
        "compiler": torch.compiler.config,
        "inductor": torch._inductor.config,
        "functorch": torch._functorch.config,
        "dynamo": torch._dynamo.config,
    }
    for dotted, value in patches.items():
        where, name = dotted.split("__", 1)
        stack.enter_context(modules[where].patch(name, value))
    return stack


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
    return config_patches(inductor__fx_graph_cache=False, functorch__enable_autograd_cache=False)


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


def on_dynamo_compile_start(callback: Callable[[], None]) -> None:
    """Run ``callback()`` as every Dynamo compile starts (before any cache key is computed).

    ``torch.compiler.reset()`` forgets these callbacks, so callers re-arm after a reset.
    """
    from torch._dynamo.callback import callback_handler

    if not any(getattr(cb, "_labkit_wraps", None) is callback for cb in callback_handler.start_callbacks):
        def start(_args=None):
            callback()

        start._labkit_wraps = callback
        callback_handler.register_start_callback(start)


def aliasing_check_raises(raises: bool):
    """Whether AOTAutograd's runtime aliasing check for custom ops raises (True) or warns (False).

    torch's default is ``bool(os.getenv("CI"))`` at import; lessons set it explicitly.
    """
    return config_patches(functorch__error_on_custom_op_aliasing=raises)


def copy_dynamo_marks(source: torch.Tensor, target: torch.Tensor) -> None:
    """Carry ``torch._dynamo.mark_dynamic``/``mark_static`` annotations over to a copy.

    They live as ``_dynamo_*`` attributes on the tensor object, which ``clone()`` drops.
    """
    import copy

    for name, value in vars(source).items():
        if name.startswith("_dynamo_"):
            setattr(target, name, copy.copy(value))
