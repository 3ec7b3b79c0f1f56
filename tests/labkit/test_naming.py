"""The naming experiment and its widget: #187319 inside one process, under every cache policy."""

import pytest

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


def test_the_experiment_frees_its_names_and_restores_the_policy():
    naming.run("one shared name", PURE_FIRST, "disabled", namespace="t_naming")
    assert cache.policy() == "fingerprinted"
    from labkit import _torch_internals as internals
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
        from labkit import _torch_internals as internals
        internals.destroy_custom_op("t_naming::taken")


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
