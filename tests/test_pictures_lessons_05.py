"""Notebook 05's picture reflects its input: each box is a node of the graph given, with torch's own answer
(``is_impure``, its users) for why dead-code elimination kept it, and the erased names come from the run.

Drawn from live compiles (labkit.logs.dead_code_run) and from a graph written by hand, then read back.
"""

import torch

import labkit
from labkit import pictures
from labkit.logs import DeadCodeRun


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _edges(fig) -> dict[str, str]:
    """Each box's text → its edge colour (the box is the patch drawn just before its text)."""
    ax = fig.axes[0]
    return {text.get_text(): patch.get_edgecolor() for patch, text in zip(ax.patches, ax.texts[1:])}


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
