"""labkit under a curious learner's fire: each case an outside review found, with what labkit must do now.

Each test failed on the labkit the review ran (a531288): a refusal spanning lines (a tensor's repr), audit's
advice to drop a declared write that left its values as they were, a global left resized, a passed-through
object called DIFFER, op counts zeroed by an experiment.
"""

import pytest
import torch

import labkit
from labkit import experiments, naming, ops

T = torch.arange(16.0).reshape(4, 4)   # its repr spans four lines


@pytest.mark.parametrize("refusal", [
    lambda: labkit.compile_and_compare(lambda x: x, T, dynamic=T),
    lambda: labkit.compile_and_compare(lambda x: x, T, backend=T),
    lambda: labkit.declare(name="t_fire::a", mutates_args=T),
    lambda: labkit.declare(name="t_fire::a", returns=T),
    lambda: labkit.drop(T),
    lambda: labkit.drop_namespace(T),
    lambda: labkit.cache.using(T).__enter__(),
    lambda: labkit.checks.opcheck(torch.ops.aten.sin.default, (T,), tests=T),
    lambda: experiments.dce_experiment(next(iter(experiments.DCE_DECLARATIONS)), False, device=T),
], ids=["dynamic", "backend", "mutates_args", "returns", "drop", "drop_namespace", "cache", "opcheck tests",
        "device"])
def test_a_refusal_naming_a_tensor_is_one_line(refusal):
    with pytest.raises(Exception) as raised:
        refusal()
    message = str(raised.value)
    assert "\n" not in message and "a tensor of shape [4, 4] (float32)" in message, message


@pytest.mark.parametrize("text", [lambda: naming.run(naming.SCHEMES[1], naming.ORDERS[0], T),
                                  lambda: str(labkit.audit(T, T))])
def test_a_report_naming_a_tensor_names_it_in_one_line(text):
    said = text()
    said = said if isinstance(said, str) else said.problem
    first = said.splitlines()[0]
    assert "a tensor of shape [4, 4] (float32)" in first and "tensor([" not in said, said


# --- audit on correct ops whose write leaves the values as they were ---------------------------------

def _prefilled_add_out():
    x, y = torch.randn(3), torch.randn(3)
    return torch.ops.aten.add.out, (x, y), {"out": x + y}


@pytest.mark.parametrize("case", [
    _prefilled_add_out,
    lambda: (torch.ops.aten.zero_.default, (torch.zeros(3),), {}),
    lambda: (torch.ops.aten.relu_.default, (torch.rand(3),), {}),
    lambda: (torch.ops.aten.clamp_.default, (torch.rand(3), 0.0, 1.0), {}),
    lambda: (torch.ops.aten.detach_.default, (torch.randn(3),), {}),
], ids=["add.out pre-filled", "zero_ of zeros", "relu_ of non-negatives", "clamp_ in range", "detach_"])
def test_a_write_of_equal_values_is_not_called_undeclared_advice(case):
    """Advising to drop 'out' from mutates_args here would create the silent bug the lab teaches."""
    op, args, kwargs = case()
    report = labkit.audit(op, *args, **kwargs)
    assert "drop" not in str(report) and "remove" not in str(report), str(report)
    assert not [f for f in report.findings if f.check == "declaration"], str(report)


# --- compile_and_compare gives back what the function reached ------------------------------------

GROWS = torch.zeros(4)


def _resizes_then_raises(x):
    GROWS.resize_(8)
    GROWS.fill_(1.0)
    raise ValueError("boom")


def test_a_global_resized_before_a_raise_is_given_back():
    report = labkit.compile_and_compare(_resizes_then_raises, torch.ones(3))
    assert report.eager_error is not None and "boom" in report.eager_error.message
    assert GROWS.shape == (4,) and torch.equal(GROWS, torch.zeros(4))


class _Box:
    pass


def test_an_object_passed_through_is_the_same_object_both_ways():
    box = _Box()
    report = labkit.compile_and_compare(lambda x, o: (x + 1, o), torch.ones(3), box)
    assert report.verdict is not None and report.verdict.outputs_match, report.verdict


def test_an_experiment_leaves_every_lab_ops_call_count_as_it_was():
    op = labkit.declare(name="t_fire::twice")
    try:
        op(torch.ones(2))
        op(torch.ones(2))
        counts = ops.call_counts()
        labkit.compile_and_compare(lambda x: op(x) + 1, torch.ones(2))
        labkit.audit(op, torch.ones(2))
        assert ops.call_counts() == counts
    finally:
        labkit.drop("t_fire::twice")
