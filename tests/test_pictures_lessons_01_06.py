"""The pictures of notebooks 01 and 06 reflect their input: every label drawn comes from the calls or graphs given.

Each test draws from live data (a real compile) and from a made-up input, and reads back the figure's texts.
"""

import torch

import labkit
from labkit import pictures


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


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
    stages = [stage for _, stage, _ in calls]
    assert stages[0] == stages[-1] == "run", stages
    assert "dynamo" in stages and "aot" in stages, stages
    assert texts.count("Dynamo traces") == 1 and texts.count("AOTAutograd traces") == 1, texts
    assert "eager call" in texts and "compiled call" in texts, texts
    assert sum("fake kernel" in t and "[3] float32" in t for t in texts) == stages.count("dynamo") + stages.count("aot")
    assert sum("[7.0, 7.0, 7.0]" in t for t in texts) == 2, texts       # the data of the two real calls
    assert any(f"{len(calls)} calls" in t for t in texts), texts


def test_calls_by_stage_follows_a_made_up_record():
    made_up = [("fake", "inductor", torch.empty(2, 5, dtype=torch.float64)), ("kernel", "run", torch.arange(3.0))]
    texts = _texts(pictures.calls_by_stage(made_up, "x::y"))
    assert "Inductor lowers" in texts and "compiled call" in texts and "eager call" not in texts, texts
    assert any("[2, 5] float64" in t for t in texts) and any("[0.0, 1.0, 2.0]" in t for t in texts), texts
    assert any("x::y: 2 calls" in t for t in texts), texts


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
