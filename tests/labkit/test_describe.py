"""labkit.describe: wherever labkit refuses a learner's value or reports on it, the value is named in one line
(a tensor by its shape and dtype, never its repr, which spans lines)."""

import pytest
import torch

import labkit
from labkit import experiments, naming


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
