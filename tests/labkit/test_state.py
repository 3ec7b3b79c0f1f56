"""labkit.state: what a function reaches (globals, closure cells, objects' tensors), saved without materialising
an expanded tensor, and an object that cannot be looked at skipped, not a crash.

FunctionState reads the globals of the function it is given: the globals these tests' lambdas read (``huge``,
``hostile``, ``weight``) are this module's."""

import torch

from labkit import compile_and_compare
from labkit.state import FunctionState

huge = torch.zeros(1).expand(2 ** 40)  # 4 TiB if materialised: any element-wise copy fails


def test_an_expanded_global_is_saved_as_its_storage_not_its_elements():
    report = compile_and_compare(lambda x: x + huge[:2], torch.ones(2))
    assert report.ok and report.verdict.agree, str(report.verdict)
    saved = FunctionState(lambda x: x + huge[:2]).saved["huge"]
    assert saved.untyped_storage().nbytes() == 4 and saved.stride() == (0,)


class Hostile:
    def __getattribute__(self, name):
        raise RuntimeError("do not look at me")


hostile, weight = Hostile(), torch.ones(1)


def test_an_object_that_cannot_be_looked_at_is_skipped_not_a_crash():
    state = FunctionState(lambda x: x + weight if hostile else x)
    assert list(state.tensors) == ["weight"] and "hostile" in state.slots
