"""FX graphs as data: what each stage of torch.compile made, copied out, and the backend that copies it.

torch's later passes rewrite a graph in place (Inductor re-inplaces, DCE erases), so a lesson's graph is
copied out the moment a stage hands it over: :class:`GraphSnapshot` keeps the code, the nodes (each with the
custom op it calls, directly or wrapped in ``auto_functionalized``/``with_effects``) and the input shapes.

Not here: running or comparing anything (:mod:`labkit.stages`, :mod:`labkit.compare`), and private torch:
what a node's target is, is read by :mod:`labkit._torch`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch

from . import _torch as internals


@dataclasses.dataclass(frozen=True)
class NodeInfo:
    """One FX node, copied out of the graph so it survives torch's later passes."""

    name: str
    op: str
    target: str
    args: str
    custom_op: str | None  # qualified name of the lab/custom op this node calls or wraps
    wrapper: str | None  # "auto_functionalized_v2", "with_effects", ... when the call is wrapped
    mutating: bool  # the node writes to one of its inputs (copy_, a mutable op, ...)
    random: bool = False  # the node draws random numbers (rand, dropout, a seeded custom op, ...)


@dataclasses.dataclass(frozen=True)
class GraphSnapshot:
    stage: str
    code: str
    nodes: tuple[NodeInfo, ...]
    input_shapes: tuple[str, ...]

    def calls(self, op_name: str) -> list[NodeInfo]:
        """Nodes that call ``op_name`` (a qualified name), directly or wrapped."""
        return [n for n in self.nodes if n.custom_op == op_name]

    def has(self, op_name: str) -> bool:
        return bool(self.calls(op_name))

    @property
    def draws_random_numbers(self) -> bool:
        return any(n.random for n in self.nodes)


def _shape_of(node) -> str:
    value = node.meta.get("val", node.meta.get("example_value"))
    if isinstance(value, torch.Tensor):
        return "[" + ", ".join(str(s) for s in value.shape) + "]"
    return type(value).__name__ if value is not None else "?"


def snapshot(gm: torch.fx.GraphModule, stage: str) -> GraphSnapshot:
    nodes = []
    for node in gm.graph.nodes:
        wrapped = internals.wrapped_op(node)
        op = wrapped if wrapped is not None else node.target
        nodes.append(NodeInfo(
            name=node.name, op=node.op,
            target=getattr(node.target, "__name__", str(node.target)) if node.op == "call_function"
            else str(node.target),
            args=_short(node.args), custom_op=internals.custom_op_qualname(op),
            wrapper=getattr(node.target, "__name__", None) if wrapped is not None else None,
            mutating=internals.writes_an_input(op), random=internals.draws_random_numbers(op)))
    shapes = tuple(_shape_of(n) for n in gm.graph.nodes if n.op == "placeholder")
    return GraphSnapshot(stage=stage, code=gm.code.strip(), nodes=tuple(nodes), input_shapes=shapes)


def _short(args, limit: int = 80) -> str:
    text = ", ".join(str(a) for a in args)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def recording_backend(backend: str, dynamo_graphs: list, aot_graphs: list, backward_graphs: list) -> Callable:
    """``backend`` (a name in ``labkit.stages.BACKENDS``) as a Dynamo backend that snapshots every graph it gets:
    Dynamo's into ``dynamo_graphs``, AOTAutograd's forward (or inference) graphs into ``aot_graphs`` and, once
    ``.backward()`` reaches them, its backward graphs into ``backward_graphs``."""
    def record_aot(gm):
        aot_graphs.append(snapshot(gm, "aot"))

    def record_backward(gm):
        backward_graphs.append(snapshot(gm, "backward"))

    inner = {
        "eager": lambda gm, inputs: gm.forward,
        "aot_eager": internals.aot_eager_recording(record_aot, record_backward),
        "inductor": internals.inductor_recording(record_aot, record_backward),
    }[backend]

    def recording(gm, example_inputs):
        dynamo_graphs.append(snapshot(gm, "dynamo"))
        return inner(gm, example_inputs)

    return recording
