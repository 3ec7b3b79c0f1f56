"""labkit.checks: torch's opcheck as data, and one sentence for inputs opcheck would misread; gradcheck as data."""

import pytest
import torch

import labkit
from labkit import checks
from labkit.checks import opcheck
from labkit.ops import StaleOpError


@pytest.fixture
def op():
    return labkit.declare(name="t::checked")


def test_each_test_is_ok_for_a_correct_op(op):
    assert set(opcheck(op, (torch.ones(3),)).values()) == {"ok"}
    assert opcheck(op, (torch.ones(3),), tests="test_schema") == {"test_schema": "ok"}


@pytest.mark.parametrize("bad, said", [
    (dict(kwargs=[1, 2]), "kwargs= takes a dict of the op's keyword inputs (x), not a list."),
    (dict(kwargs="x"), "kwargs= takes a dict of the op's keyword inputs (x), not a str."),
    (dict(kwargs={"nope": 1}), "t::checked has no input named 'nope': its inputs are x."),
    (dict(kwargs={"x": torch.ones(3)}), "t::checked's input 'x' is given twice, by position and as kwargs."),
    (dict(tests=["test_nope"]), "opcheck has no test 'test_nope': choose among test_schema,"),
    (dict(tests=[]), "tests= takes the name of one opcheck test or a list of them"),
    (dict(tests=5), "tests= takes the name of one opcheck test or a list of them"),
    (dict(tests=None), "tests= takes the name of one opcheck test or a list of them"),
])
def test_a_bad_kwargs_or_tests_is_one_sentence_not_a_made_up_failure(op, bad, said):
    with pytest.raises(labkit.LabOpError) as caught:
        opcheck(op, (torch.ones(3),), **bad)
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_too_many_inputs_is_one_sentence(op):
    with pytest.raises(labkit.LabOpError, match=r"^t::checked takes 1 inputs \(x\); 2 were given\.$"):
        opcheck(op, (torch.ones(3), torch.ones(3)))


# --- a stale handle, and gradcheck as data ------------------------------------------------------------------


def test_stale_op_error_is_raised_by_checks_in_process_for_a_labkit_handle():
    """A LabOp handle checks its own liveness before torch is involved, so this is safe in-process."""
    old = labkit.declare("t_adv::stale")
    labkit.drop("t_adv::stale")
    with pytest.raises(StaleOpError):
        labkit.checks.opcheck(old, (torch.ones(1),))


def test_gradcheck_as_data():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert checks.gradcheck(torch.sin, x) == "ok"

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad

    assert checks.gradcheck(Wrong.apply, x).startswith("FAIL: Jacobian mismatch")
    said = checks.gradcheck(Wrong.apply, x)   # a whole sentence, not torch's first line cut at its comma
    assert said.endswith("the gradient the backward computes differs from the one finite differences measure"), said
