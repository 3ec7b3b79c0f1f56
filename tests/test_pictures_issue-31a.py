"""The pictures of notebooks 08 and 09 reflect their input: every label drawn comes from the graph or code given.

Each test draws from live data (a real compile) and from a made-up input, and reads back the figure's texts.
"""

import torch
import torch.nn.functional as F

import labkit
from labkit import pictures
from labkit.stages import GraphSnapshot, NodeInfo


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _node(name, op="call_function", target="", custom_op=None):
    return NodeInfo(name=name, op=op, target=target or name, args="", custom_op=custom_op, wrapper=None,
                    mutating=False)


# --- 08: forward_backward -----------------------------------------------------------------------------------


def _training_step():
    @torch.library.custom_op("picturetest::sq", mutates_args=())
    def sq(x: torch.Tensor) -> torch.Tensor:
        return x * x

    sq.register_fake(lambda x: torch.empty_like(x))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    sq.register_autograd(lambda ctx, grad: grad * 2 * ctx.saved_tensors[0], setup_context=setup_context)
    linear = torch.nn.Linear(3, 2)
    return labkit.compile_and_compare(lambda x: linear(sq(x)), torch.randn(4, 3, requires_grad=True),
                                      backward=lambda out: F.mse_loss(out, torch.zeros(4, 2)))


def test_forward_backward_draws_the_graphs_it_is_given():
    step = _training_step()
    forward, backward = step.aot_graphs[0], step.backward_graphs[0]
    texts = _texts(pictures.forward_backward(forward, backward, "picturetest::sq"))
    calls = [n for n in forward.nodes if n.op == "call_function"]
    for node in calls:
        assert f"{node.name} = {node.custom_op or 'aten.' + node.target.split('.')[0]}" in texts, node
    saved = [n.name for n in backward.nodes if n.op == "placeholder"]
    for name in saved:
        assert any(t.startswith(name) for t in texts), name
    listing = next(t for t in texts if t.endswith("calls:") or "calls:\n" in t)
    backward_calls = [n for n in backward.nodes if n.op == "call_function"]
    assert listing.startswith(f"{len(backward_calls)} calls:"), listing
    assert "picturetest::sq: called 1× in the forward graph, 0× in the backward graph" in texts


def test_forward_backward_labels_come_from_the_data_not_from_a_template():
    forward = GraphSnapshot("aot", "", (
        _node("p", "placeholder"), _node("made_up", target="frobnicate.default"),
        _node("mine", target="mine.default", custom_op="ns::mine"), _node("output", "output")), ())
    backward = GraphSnapshot("aot", "", (
        _node("mine", "placeholder"), _node("p", "placeholder"), _node("tangents_1", "placeholder"),
        _node("a", target="mul.Tensor"), _node("b", target="mul.Tensor"), _node("c", target="mine.default",
                                                                               custom_op="ns::mine"),
        _node("output", "output")), ())
    texts = _texts(pictures.forward_backward(forward, backward, "ns::mine"))
    assert "made_up = aten.frobnicate" in texts and "mine = ns::mine" in texts
    assert "mine" in texts and "p (an input)" in texts and "tangents_1 (incoming grad)" in texts
    assert "3 calls:\naten.mul ×2\nns::mine ×1" in texts
    assert "ns::mine: called 1× in the forward graph, 1× in the backward graph" in texts
