"""Notebook 07's picture reflects its input: one box per call, saying which graph served it (new or again) or that
none did (eager), taken from a live :func:`labkit.stages.serving` run or from a ``Served`` written by hand."""

import pytest
import torch

from labkit import pictures, stages


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


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
