"""The pictures of notebooks 02 and 04 reflect their input: every label drawn comes from the graphs, code or
keys given (a real compile, then a made-up input that no template could have drawn)."""

import pytest
import torch

import labkit
from labkit import pictures
from labkit.stages import GraphSnapshot, NodeInfo


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _node(name, op="call_function", target="", args="", custom_op=None, wrapper=None, mutating=False):
    return NodeInfo(name=name, op=op, target=target or name, args=args, custom_op=custom_op, wrapper=wrapper,
                    mutating=mutating)


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
