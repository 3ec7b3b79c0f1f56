"""Wrong types and nested tensors given to labkit's presentation and self-check helpers: one sentence each
(a TypeError naming what is expected), never a raw AttributeError or torch's "ambiguous" RuntimeError."""

import warnings

import numpy as np
import pytest
import torch

import labkit
from labkit import exercises, render


def _nested():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that nested tensors are a prototype
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


@pytest.fixture(scope="module")
def report():
    return labkit.compile_and_compare(lambda t: t + 1, torch.ones(2))


NOT_REPORTS = [None, 5, "report", [1], torch.ones(2), _nested(),
               torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)]


@pytest.mark.parametrize("present", [labkit.show, labkit.summary, labkit.text, render.to_html, labkit.draw_fate,
                                     render.draw_stages])
@pytest.mark.parametrize("bad", NOT_REPORTS, ids=lambda b: type(b).__name__)
def test_what_is_not_a_report_gets_one_sentence(present, bad):
    args = (bad, "t::op") if present is labkit.draw_fate else (bad,)
    with pytest.raises(TypeError, match=r"takes the report that labkit\.compile_and_compare") as caught:
        present(*args)
    message = str(caught.value)
    assert "\n" not in message and message.count(". ") == 0
    if isinstance(bad, torch.Tensor) and bad.is_nested:
        assert "nested tensor" in message


@pytest.mark.parametrize("ops", [5, 2.5, object(), {"t::op": 1}])
def test_ops_of_the_wrong_type_get_one_sentence(report, ops):
    for present in (labkit.show, labkit.summary, labkit.text, render.to_html):
        with pytest.raises(TypeError, match="ops must be an op name or a list of names"):
            present(report, ops)


def test_a_real_report_still_shows(report):
    assert "graphs compiled per call" in labkit.summary(report) and "labkit-report" in render.to_html(report)
    assert repr(labkit.show(report, ("t::unused",))).startswith("backend=")


@pytest.mark.parametrize("passed", [torch.ones(3) == 1, _nested(), np.array([True, False]), None, "yes", 1, 0.0,
                                    torch.ones(1)])
def test_check_refuses_what_is_not_true_or_false(passed, capsys):
    with pytest.raises(TypeError, match=r"must be True or False.*torch\.equal\(a, b\)"):
        exercises.check(passed, "right", "hint")
    assert capsys.readouterr().out == ""  # neither ✔ nor ✘ for an answer it could not read


@pytest.mark.parametrize("passed, expected", [(True, True), (False, False), (np.bool_(True), True),
                                              (torch.tensor(True), True), (torch.tensor([False]), False),
                                              (np.array([True]), True)])
def test_check_reads_booleans_and_one_element_booleans(passed, expected, capsys):
    assert exercises.check(passed, "right", "hint") is expected
    assert capsys.readouterr().out == ("✔ right\n" if expected else "✘ Not yet. hint\n")


def test_check_needs_sentences_for_success_and_hint():
    with pytest.raises(TypeError, match="two sentences"):
        exercises.check(True, None, 3)
