"""Recording backends: each stage's graphs and Inductor's code handed to labkit as torch.compile makes them;
what a graph node calls, and Dynamo's automatic-dynamic state.

Not here: what labkit keeps of a graph (:mod:`labkit.graphs`), and running or comparing anything
(:mod:`labkit.stages`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable
from unittest import mock

import torch


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
