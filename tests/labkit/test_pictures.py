"""labkit.pictures: each picture a notebook draws reflects its input. Every label drawn comes from the calls,
graphs, code, keys, tensors or package given, never from a template: each test draws from live data (a real
compile) and from a made-up input, and reads back the figure's texts. In the notebooks' order.
"""

import re

import pytest
import torch
import torch.nn.functional as F

import labkit
from labkit import pictures, stages
from labkit.logs import DeadCodeRun
from labkit.stages import GraphSnapshot, NodeInfo


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _node(name, op="call_function", target="", args="", custom_op=None, wrapper=None, mutating=False):
    return NodeInfo(name=name, op=op, target=target or name, args=args, custom_op=custom_op, wrapper=wrapper,
                    mutating=mutating)


def _edges(fig) -> dict[str, str]:
    """Each box's text → its edge colour (the box is the patch drawn just before its text)."""
    ax = fig.axes[0]
    return {text.get_text(): patch.get_edgecolor() for patch, text in zip(ax.patches, ax.texts[1:])}


def _boxes(texts) -> list[str]:
    return [t for t in texts if re.fullmatch(r"\d+,\d+,\d+,\d+", t)]


# --- 01: calls_by_stage ---------------------------------------------------------------------------------------


def test_calls_by_stage_draws_each_recorded_call_under_the_stage_that_made_it():
    calls = []

    @torch.library.custom_op("picturetest31d::peek", mutates_args=())
    def peek(x: torch.Tensor) -> torch.Tensor:
        calls.append(("kernel", labkit.stages.calling_stage(x), x))
        return x.clone()

    @peek.register_fake
    def _(x):
        calls.append(("fake", labkit.stages.calling_stage(x), x))
        return torch.empty_like(x)

    labkit.compile_and_compare(lambda x: peek(x) + 1, torch.full((3,), 7.0), backend="aot_eager")
    texts = _texts(pictures.calls_by_stage(calls, "picturetest31d::peek"))
    seen = [stage for _, stage, _ in calls]
    assert seen[0] == seen[-1] == "run", seen
    assert "dynamo" in seen and "aot" in seen, seen
    assert texts.count("Dynamo traces") == 1 and texts.count("AOTAutograd traces") == 1, texts
    assert "eager call" in texts and "compiled call" in texts, texts
    assert sum("fake kernel" in t and "[3] float32" in t for t in texts) == seen.count("dynamo") + seen.count("aot")
    assert sum("[7.0, 7.0, 7.0]" in t for t in texts) == 2, texts       # the data of the two real calls
    assert any(f"{len(calls)} calls" in t for t in texts), texts


def test_calls_by_stage_follows_a_made_up_record():
    made_up = [("fake", "inductor", torch.empty(2, 5, dtype=torch.float64)), ("kernel", "run", torch.arange(3.0))]
    texts = _texts(pictures.calls_by_stage(made_up, "x::y"))
    assert "Inductor lowers" in texts and "compiled call" in texts and "eager call" not in texts, texts
    assert any("[2, 5] float64" in t for t in texts) and any("[0.0, 1.0, 2.0]" in t for t in texts), texts
    assert any("x::y: 2 calls" in t for t in texts), texts


# --- 02: functionalized -------------------------------------------------------------------------------------


def test_functionalized_draws_both_graphs_of_a_real_compile():
    bump = labkit.declare(name="pic31b::bump", writes=("x",), mutates_args=("x",), returns="none")
    report = labkit.compile_and_compare(lambda x: (bump(x), x * 2)[1], torch.ones(3), backend="aot_eager")
    texts = _texts(pictures.functionalized(report, "pic31b::bump"))
    for graph in (report.dynamo_graphs[0], report.aot_graphs[0]):
        for node in graph.nodes:
            if node.op == "call_function":
                assert any(node.target.split(".")[0] + "(" in t for t in texts), node
    assert "copy_(arg0_1, getitem_1)" in texts, texts
    assert any(t.startswith("auto_functionalized_v2(") for t in texts), texts
    assert any("1 on the left" in t and "1 on the right" in t for t in texts), texts
    labkit.drop("pic31b::bump")


def test_functionalized_labels_come_from_the_data():
    left = GraphSnapshot("dynamo", "", (_node("a", "placeholder"),
                                        _node("w", target="frob.default", args="a", custom_op="ns::frob",
                                              mutating=True)), ())
    right = GraphSnapshot("aot", "", (_node("b", "placeholder"), _node("u", target="zap", args="b"),
                                      _node("copy_", target="copy_.default", args="b, u", mutating=True),
                                      _node("copy_1", target="copy_.default", args="b, u", mutating=True)), ())
    class Report:
        dynamo_graphs, aot_graphs, inductor_code, backward_graphs = [left], [right], [], []
        error = eager_error = None

    texts = _texts(pictures.functionalized(Report(), "ns::frob"))
    assert "w = frob(a)" in texts and "u = zap(b)" in texts and "copy_(b, u)" in texts, texts
    assert "writes a, the input" in texts, texts
    assert any("1 on the left" in t and "2 on the right" in t for t in texts), texts


# --- 02: write_order ----------------------------------------------------------------------------------------


def test_write_order_reads_the_program_order_and_inductors_order():
    @torch.library.custom_op("pic31b::bump_and_sum", mutates_args=())       # the lie: it writes x
    def bump_and_sum(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x.sum().reshape(1)

    bump_and_sum.register_fake(lambda x: x.new_empty(1))

    def read_then_bump(x):
        before = x * 2
        return before + bump_and_sum(x)

    report = labkit.compile_and_compare(read_then_bump, torch.ones(3), backend="inductor")
    texts = _texts(pictures.write_order(report, "pic31b::bump_and_sum"))
    calls = [n for n in report.dynamo_graphs[0].nodes if n.op == "call_function"]
    assert [t for t in texts if any(t.startswith(n.name) or t.startswith(n.target.split(".")[0]) for n in calls)]
    assert "reads x before the write" in texts, texts            # eager: x * 2 first
    assert "reads x after the write" in texts, texts             # compiled: the fused kernel after the op
    assert texts.count("writes x") == 2, texts
    assert any(t.startswith("pic31b.bump_and_sum(") for t in texts), texts
    assert any(t.startswith("✘") for t in texts), "the verdict drawn is the report's: outputs differ"


def test_write_order_says_when_the_op_writes_a_copy():
    @torch.library.custom_op("pic31b::bump_and_sum_declared", mutates_args={"x"})
    def bump_and_sum_declared(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x.sum().reshape(1)

    bump_and_sum_declared.register_fake(lambda x: x.new_empty(1))
    report = labkit.compile_and_compare(lambda x: x * 2 + bump_and_sum_declared(x), torch.ones(3),
                                        backend="inductor")
    texts = _texts(pictures.write_order(report, "pic31b::bump_and_sum_declared"))
    assert "writes a copy of x" in texts and texts.count("writes x") == 1, texts
    assert "reads x after the write" not in texts[texts.index("writes a copy of x"):], texts
    assert "compiled == eager" in texts, texts


def test_a_report_that_carries_an_error_says_it_instead_of_a_picture():
    labkit.drop_namespace("pic31b")
    bump = labkit.declare(name="pic31b::gone", writes=("x",), mutates_args=("x",), returns="none")
    labkit.drop_namespace("pic31b")
    report = labkit.compile_and_compare(lambda x: (bump(x), x * 2)[1], torch.ones(3), backend="aot_eager")
    with pytest.raises(labkit.render.NoStageCode, match="`pic31b::gone` was redeclared or dropped"):
        pictures.functionalized(report, "pic31b::gone")


def test_write_order_labels_come_from_the_data():
    class Report:
        dynamo_graphs = [GraphSnapshot("dynamo", "", (
            _node("l_y_", "placeholder"), _node("first", target="op.default", args="l_y_", custom_op="zz::op"),
            _node("later", target="neg", args="l_y_")), ())]
        inductor_code = ["kern_0 = async_compile.cpp('')\ndef call(args):\n    kern_0(arg0_1)\n"
                         "    buf0 = torch.ops.zz.op.default(arg0_1)\n    return (buf0, )\n"]
        verdict = None
        aot_graphs, backward_graphs, error, eager_error = [], [], None, None

    texts = _texts(pictures.write_order(Report(), "zz::op", writes="y"))
    assert "first = op(l_y_)" in texts and "later = neg(l_y_)" in texts, texts
    assert "reads y after the write" in texts and "reads y before the write" in texts, texts
    assert "kern_0(arg0_1)" in texts and "zz.op(arg0_1)" in texts, texts


# --- 04: cache_keys -----------------------------------------------------------------------------------------


def test_cache_keys_draws_the_tags_and_what_the_fix_ran():
    runs = {policy: labkit.naming.run("one shared name", labkit.naming.ORDERS[0], policy, namespace="pic31bkeys")
            for policy in ("default", "fingerprinted")}
    texts = _texts(pictures.cache_keys(runs))
    default, fingerprinted = runs["default"].steps, runs["fingerprinted"].steps
    assert default[0].tag == default[1].tag == "", "torch's default: no tag"
    assert fingerprinted[0].tag != fingerprinted[1].tag, "the fingerprint changes with the schema"
    assert any(fingerprinted[1].tag[:21] in t for t in texts), texts
    assert any(default[1].schema_now in t for t in texts), texts
    assert texts.count("same tag:\nthe same key") == 1 and texts.count("tag changed:\na new key") == 1, texts
    assert any(t.startswith("cache hit") for t in texts) == default[1].stale, texts


def test_cache_keys_labels_come_from_the_data():
    from labkit.naming import NamingResult, Step

    steps = (Step("zz::q", "pure", "zz::q(Tensor y) -> ()", 0, [7.0], [8.0], 0, "mine-1"),
             Step("zz::q", "mutating", "zz::q(Tensor(a0!) y) -> ()", 1, [8.0], [8.0], 0, "mine-1"))
    texts = _texts(pictures.cache_keys({"made up": NamingResult("one shared name", "o", "p", steps)}))
    assert "made up" in texts
    assert "mutating: zz::q(Tensor(a0!) y) -> ()\ncache_key_tag = 'mine-1'" in texts, texts
    assert "same tag:\nthe same key" in texts, "the tags are equal, whatever the policy's name"
    assert "compiled afresh\nx = [8.0], eager [8.0]" in texts, texts


# --- 05: what_keeps_alive -----------------------------------------------------------------------------------
# Each box is a node of the graph given, with torch's own answer (``is_impure``, its users) for
# why dead-code elimination kept it; the erased names come from the run (labkit.logs.dead_code_run).


def test_a_live_run_draws_each_node_left_and_each_erased_one():
    @torch.library.custom_op("picture31e::bump_", mutates_args=("x",))
    def bump_(x: torch.Tensor) -> None:
        x.add_(1)

    bump_.register_fake(lambda x: None)

    def writes_input(x, y):
        bump_(x)
        return y + 1

    def dead_temporary(x, y):
        bump_(torch.empty_like(x))
        return y + 1

    runs = {name: labkit.logs.dead_code_run(fn, torch.zeros(3), torch.zeros(3))
            for name, fn in (("writes", writes_input), ("temporary", dead_temporary))}
    texts = _texts(pictures.what_keeps_alive(runs))
    assert "writes" in texts and "temporary" in texts, "a row label per program, from the dict's keys"
    for name, run in runs.items():
        for node, impure in run.nodes.items():
            assert any(t.startswith(node + "\n") for t in texts), f"{name}: node {node} is drawn"
            assert (node + "\nimpure" in texts) == impure, f"{name}: {node} is drawn impure exactly when torch says so"
        erased_box = [t for t in texts if t.startswith("erased:\n")]
        for erased in run.erased:
            assert any(erased in t.replace("\n", ", ").split(":, ", 1)[1].split(", ") for t in erased_box), \
                f"{name}: erased node {erased} is drawn in the erased box"
    assert "copy_\nimpure" in texts, "the copy_ into x is drawn impure, as torch says"
    assert runs["temporary"].erased, "the dead temporary's nodes were erased"


def test_a_hand_made_graph_draws_its_own_names_and_reasons():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    kept = graph.call_function(torch.ops.aten._assert_scalar.default, (True, "a message"))
    middle = graph.call_function(torch.ops.aten.neg.default, (x,), name="neg_in_the_middle")
    last = graph.call_function(torch.ops.aten.sin.default, (middle,), name="sin_returned")
    graph.output((last,))
    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    fig = pictures.what_keeps_alive({"hand-made": DeadCodeRun([module], ["ghost_node"])})
    texts = _texts(fig)
    assert f"{kept.name}\nimpure" in texts, "an impure node says impure"
    assert "neg_in_the_middle\nused by sin_returned" in texts, "a used node names its user"
    assert "sin_returned\nreturned" in texts, "a returned node says returned"
    assert "erased:\nghost_node" in texts, "the erased names are the run's own, not the graph's"
    edges = _edges(fig)
    assert edges[f"{kept.name}\nimpure"] != edges["sin_returned\nreturned"], "impure boxes look different"


# --- 06: graph_breaks -----------------------------------------------------------------------------------------


def test_graph_breaks_draws_the_graphs_and_the_break_dynamo_reported():
    @torch.library.custom_op("picturetest31d::nonzero_count", mutates_args=())
    def nonzero_count(x: torch.Tensor) -> torch.Tensor:
        return x[x != 0].clone()

    nonzero_count.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))

    def f(x):
        return nonzero_count(x.sin()).sum() + x.cos().sum()

    broken = torch._dynamo.explain(f)(torch.randn(5))
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        captured = torch._dynamo.explain(f)(torch.randn(5))
    texts = _texts(pictures.graph_breaks({"plain, default": broken, "plain, captured": captured}, "picturetest31d::"))
    boxes = [t for t in texts if t.startswith(("graph", "graph break"))]
    assert sum(t.startswith("graph break") for t in boxes) == broken.graph_break_count == 1, texts
    assert any("picturetest31d.nonzero_count" in t and t.startswith("graph break") for t in boxes), texts
    assert sum(t.startswith("graph ") and not t.startswith("graph break") for t in boxes) == \
        len(broken.graphs) + len(captured.graphs), texts
    assert any("sin" in t for t in boxes) and any("cos" in t for t in boxes), texts     # the graphs' own calls
    assert "plain\ndefault" in texts and "plain\ncaptured" in texts, texts


class _Node:
    def __init__(self, target):
        self.op, self.target = "call_function", target


class _Graph:
    def __init__(self, *targets):
        self.graph = type("G", (), {"nodes": [_Node(t) for t in targets]})()


class _Reason:
    def __init__(self, text):
        self.reason = text


def test_graph_breaks_follows_a_made_up_explanation():
    graphs = [_Graph("aten.mul.default"), _Graph("my.op.default", "aten.add.default")]
    reasons = [_Reason("Operator `other.thing.default` is odd")]
    made_up = type("Explained", (), {"graphs": graphs, "break_reasons": reasons})()
    texts = _texts(pictures.graph_breaks({"made up": made_up}, "my::op"))
    assert "graph 1\nmul" in texts and "graph 2\nmy.op\nadd" in texts, texts
    assert "graph break\nother.thing\nruns eagerly" in texts, texts


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


# --- 10: memory_order ---------------------------------------------------------------------------------------


def test_memory_order_reads_each_tensors_own_strides():
    x = torch.randn(2, 3, 4, 4)
    nhwc = x.contiguous(memory_format=torch.channels_last)
    texts = _texts(pictures.memory_order({"plain": x, "channels last": nhwc}, slots=5))
    assert f"plain: strides {x.stride()}" in texts
    assert f"channels last: strides {nhwc.stride()}" in texts
    boxes = _boxes(texts)
    assert boxes[:5] == ["0,0,0,0", "0,0,0,1", "0,0,0,2", "0,0,0,3", "0,0,1,0"], "NCHW walks w first"
    assert boxes[5:10] == ["0,0,0,0", "0,1,0,0", "0,2,0,0", "0,0,0,1", "0,1,0,1"], "NHWC walks c first"


def test_memory_order_follows_made_up_strides_too():
    odd = torch.empty_strided((1, 2, 1, 3), (6, 1, 6, 2))      # c fastest, then w
    texts = _texts(pictures.memory_order({"odd": odd}, slots=4))
    assert "odd: strides (6, 1, 6, 2)" in texts
    assert _boxes(texts) == ["0,0,0,0", "0,1,0,0", "0,0,0,1", "0,1,0,1"]


# --- 11: package_lookup -------------------------------------------------------------------------------------


def test_package_lookup_draws_the_calls_and_the_registry_it_is_given():
    calls = [{"target": "made::up", "inputs": ["a", "b"], "via proxy executor": True},
             {"target": "other::op", "inputs": ["x"], "via proxy executor": False}]
    texts = _texts(pictures.package_lookup("thing.pt2", calls, {"made::up": "made::up(Tensor a, Tensor b) -> Tensor"}))
    assert "thing.pt2: generated C++" in texts
    assert "made::up(a, b)" in texts and "other::op(x)" in texts
    assert "made::up(Tensor a, Tensor b) -> Tensor" in texts, "what is registered, from the dict given"
    assert "nothing: the package cannot load" in texts, "an op not registered says so"
    assert texts.count("proxy executor call") == 1 and texts.count("direct call") == 1


# --- 07: which graph served each call


def _faces(fig) -> dict[str, tuple]:
    """Each box's text → its face colour (the box is the patch drawn just before its text; row labels come first)."""
    ax = fig.axes[0]
    boxes = [t for t in ax.texts if "\n" in t.get_text()]
    return {text.get_text(): patch.get_facecolor() for patch, text in zip(ax.patches, boxes)}


def test_a_live_run_draws_the_graph_that_served_each_call():
    calls = [(torch.ones(2), n) for n in (2, 3, 4, 2)]
    with torch._dynamo.config.patch(recompile_limit=2):
        run = stages.serving(lambda x, n: x * n, calls, dynamic=False)
    assert run.served == [0, 1, None, 0], "the run itself: two graphs, then eager, then graph 0 again"
    texts = _texts(pictures.which_graph({"int n": run}, [f"n = {n}" for _, n in calls]))
    assert "int n" in texts, "the row is labelled with the dict's key"
    assert ["n = 2\ngraph 0 (new)", "n = 3\ngraph 1 (new)", "n = 4\neager", "n = 2\ngraph 0 again"] == \
        [t for t in texts if t.startswith("n = ")], "one box per call, in order, from run.served"
    assert "2 graphs" in texts, "the row ends with the number of graphs the run compiled"


def test_a_hand_made_run_draws_its_own_calls_and_colours_new_reused_and_eager_apart():
    made = stages.Served(graphs=["g0"], served=[0, 0, None], outputs=[None] * 3)
    fig = pictures.which_graph({"by hand": made, "twice": stages.Served(["a", "b"], [1, 0, 1], [None] * 3)},
                               ["first", "second", "third"])
    texts = _texts(fig)
    assert {"first\ngraph 0 (new)", "second\ngraph 0 again", "third\neager", "1 graph", "2 graphs",
            "first\ngraph 1 (new)", "third\ngraph 1 again"} <= set(texts), texts
    faces = _faces(fig)
    assert len({faces["first\ngraph 0 (new)"], faces["second\ngraph 0 again"], faces["third\neager"]}) == 3, \
        "a new graph, a graph served again and an eager call each have their own colour"


def test_a_call_list_of_the_wrong_length_is_refused_in_one_sentence():
    made = stages.Served(graphs=["g0"], served=[0, 0], outputs=[None] * 2)
    with pytest.raises(ValueError, match="made 2 calls, and calls names 3"):
        pictures.which_graph({"short": made}, ["a", "b", "c"])
