"""labkit.naming: the naming experiment and its widget, #187319 inside one process, under every cache policy; what
it refuses, in one sentence."""

import re

import pytest

from fresh_python import USERS_OWN_OP, assert_survived, one_sentence, run_python
from labkit import _torch as internals
from labkit import cache, naming
from labkit.experiments import naming_story
from labkit.widgets import NamingLab

PURE_FIRST, MUTATING_FIRST = naming.ORDERS


@pytest.mark.parametrize("policy, stale", [("default", True), ("isolated", True),
                                           ("disabled", False), ("fingerprinted", False)])
def test_one_shared_name_under_each_policy(policy, stale):
    result = naming.run("one shared name", PURE_FIRST, policy, namespace="t_naming")
    first, second = result.steps
    assert first.schema_now == "t_naming::op(Tensor x) -> ()"  # the old handle keeps the old schema
    assert second.schema_now == "t_naming::op(Tensor(a0!) x) -> ()"
    assert second.stale is stale
    assert second.correct is (not stale)  # stale = the artifact built for the pure declaration
    assert second.kernel_calls == (0 if stale else 1)


@pytest.mark.parametrize("policy", cache.POLICIES)
def test_distinct_names_never_go_stale(policy):
    result = naming.run("distinct names", PURE_FIRST, policy, namespace="t_naming")
    assert not result.steps[1].stale and result.steps[1].correct


def test_the_reverse_order_is_stale_but_right_by_luck():
    result = naming.run("one shared name", MUTATING_FIRST, "default", namespace="t_naming")
    assert result.steps[1].stale and result.steps[1].correct
    assert "by luck" not in naming_story(result) and "happens to call the op" in naming_story(result)


@pytest.mark.parametrize("order", [PURE_FIRST, MUTATING_FIRST])
def test_a_stale_story_says_why_in_words_not_a_bug_number(order):
    """A learner reads why the cache served the old artifact, not "(#187319)": the key holds the name only."""
    story = naming_story(naming.run("one shared name", order, "default", namespace="t_naming"))
    assert not re.search(r"#\d", story), story
    assert "key holds the op's name but not its declaration" in story, story


def test_the_experiment_frees_its_names_and_restores_the_policy():
    naming.run("one shared name", PURE_FIRST, "disabled", namespace="t_naming")
    assert cache.policy() == "fingerprinted"
    from labkit import _torch as internals
    assert not [n for n in internals.custom_op_qualnames() if n.startswith("t_naming::")]


@pytest.mark.parametrize("typed, fragment", [
    ("", "An op name is needed"), ("   ", "An op name is needed"), ("my op", "exactly once"),
    ("a::b::c", "exactly once"), ("é::op", "ASCII identifier"), ("x::" + "y" * 300, "characters"),
    ("aten::add", "belongs to torch"), ("class::op", "Python keyword"), ("ns::import", "Python keyword"),
    ("__import__('os').system('true')::x", "ASCII identifier"),
])
def test_bad_typed_names_get_a_sentence_and_nothing_runs(typed, fragment):
    lab = NamingLab(namespace="t_naming", scheme="a name I type", typed_name=typed)
    assert lab.outcome.problem and fragment in lab.outcome.problem
    assert "cannot be used" in lab.view.value and not lab.outcome.steps


def test_a_name_that_already_exists_is_refused():
    import torch

    @torch.library.custom_op("t_naming::taken", mutates_args=())
    def taken(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    try:
        result = naming.run("a name I type", PURE_FIRST, "default", typed="t_naming::taken")
        assert "already exists" in result.problem
    finally:
        from labkit import ops
        ops.destroy_custom_op("t_naming::taken")


def test_a_good_typed_name_runs_the_experiment():
    lab = NamingLab(namespace="t_naming", scheme="a name I type", typed_name="mine::op", policy="fingerprinted")
    assert lab.outcome.steps[1].name == "mine::op" and lab.outcome.steps[1].correct


def test_the_widget_recomputes_only_for_relevant_changes():
    lab = NamingLab(namespace="t_naming")
    state = lab.state
    lab.controls["typed_name"].value = "ignored::while_scheme_is_shared"
    assert lab.state == state  # the text box matters only for "a name I type"
    assert lab.controls["typed_name"].disabled  # and says so by being greyed out
    lab.set(scheme="a name I type", typed_name="")
    assert not lab.controls["typed_name"].disabled and "An op name is needed" in lab.view.value
    lab.set(scheme="one shared name")
    lab.set(policy="fingerprinted")
    assert "fingerprint" in lab.view.value and "miss: compiled" in lab.view.value


# --- what the experiment refuses, in one sentence: the learner's own namespace, bad arguments ---------------


@pytest.mark.parametrize("scheme", ["one shared name", "a name I type"])
def test_the_naming_experiment_refuses_a_namespace_holding_the_learners_op(scheme):
    lines = assert_survived(run_python(USERS_OWN_OP + f"""
    result = labkit.naming.run({scheme!r}, labkit.naming.ORDERS[0], "default", namespace="mylab",
                               typed="mylab::op")
    print(result.problem)
    print(result.steps == (), my_op(torch.zeros(2)).tolist())
    """))
    assert "already exists" in lines[0] and one_sentence(lines[0])
    assert lines[1] == "True [100.0, 100.0]"


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(scheme="no such scheme"), "scheme must be one of"),
    (dict(scheme=None), "scheme must be one of"),
    (dict(order="backwards"), "order must be one of"),
    (dict(order=["x"]), "order must be one of"),
    (dict(policy="sometimes"), "policy must be one of"),
    (dict(policy=None), "policy must be one of"),
    (dict(namespace="aten"), "belongs to torch"),
    (dict(namespace="prims"), "belongs to torch"),
    (dict(namespace="bad ns"), "ASCII identifier"),
    (dict(namespace=None), "must be text"),
    (dict(namespace="_c10d_functional"), "belongs to torch"),
])
def test_the_naming_experiment_validates_every_argument(kwargs, fragment):
    args = dict(scheme="one shared name", order=naming.ORDERS[0], policy="default", namespace="t_naming") | kwargs
    before = internals.custom_op_qualnames()
    result = naming.run(**args)
    assert fragment in result.problem and one_sentence(result.problem) and not result.steps
    assert internals.custom_op_qualnames() == before and cache.policy() == "fingerprinted"
