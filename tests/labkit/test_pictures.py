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


# --- 09: inductor_steps ---------------------------------------------------------------------------------------

MADE_UP = '''
kern_fused_frob_0 = async_compile.cpp_pybinding(['float*'], r\'\'\'...\'\'\')
trit_fused_zap_1 = async_compile.triton('trit_fused_zap_1', \'\'\'...\'\'\')

class Runner:
    def call(self, args):
        arg0_1, = args
        assert_size_stride(arg0_1, (4, ), (1, ), 'input')
        buf7 = empty_strided_cpu((4, ), (1, ), torch.float32)
        # Topologically Sorted Source Nodes: [...]
        kern_fused_frob_0(arg0_1, buf7)
        buf8 = torch.ops.madeup.thing.default(buf7, out=buf7)
        del arg0_1
        trit_fused_zap_1.run(buf8, 4, stream=stream0)
        return (buf8, )

def get_args():
    not_a_step(1)
'''


def test_call_steps_reads_the_call_function_in_order():
    assert labkit.logs.call_steps(MADE_UP) == [
        ("alloc", "allocate buf7"), ("kernel", "kern_fused_frob_0(arg0_1, buf7)"),
        ("op", "madeup.thing(buf7, out=buf7)"), ("kernel", "trit_fused_zap_1(buf8, 4, stream=stream0)")]


def test_inductor_steps_draws_one_row_per_code_with_the_steps_found_there():
    texts = _texts(pictures.inductor_steps({"row one": MADE_UP, "row two": ""}))
    assert "row one" in texts and "row two" in texts
    for expected in ("allocate buf7", "kern_fused_frob_0\n(arg0_1, buf7)", "madeup.thing\n(buf7, out=buf7)",
                     "trit_fused_zap_1\n(buf8, 4, stream=stream0)"):
        assert expected in texts, (expected, texts)
    assert not any("not_a_step" in t for t in texts)


def test_inductor_steps_from_a_real_compile_shows_the_op_and_inductors_kernel():
    @torch.library.custom_op("picturetest::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    twice.register_fake(lambda x: torch.empty_like(x))
    code = labkit.logs.inductor_code(lambda x: twice(x) + 1, torch.ones(4))
    steps = labkit.logs.call_steps(code)
    assert [kind for kind, _ in steps] == ["op", "kernel"], steps
    texts = _texts(pictures.inductor_steps({"twice(x) + 1": code}))
    assert any(t.startswith("picturetest.twice\n(") for t in texts), texts
    assert any("_fused_add_" in t for t in texts), texts
