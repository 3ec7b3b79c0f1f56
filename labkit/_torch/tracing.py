"""While torch.compile traces: who calls an op (a fake tensor, which stage is on the stack), and the graphs
dead-code elimination sees.

Not here: which stage a lesson names (:func:`labkit.stages.calling_stage`), and the dead-code lesson's runs
(:mod:`labkit.logs`).
"""

from __future__ import annotations

from typing import Callable

import torch

from .registration import find_overload


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
