"""labkit.exercises: answers in other words are understood, wrong ones told what is allowed, and a fake kernel
is checked beyond its first dtype and device."""

import pytest
import torch

from labkit import exercises


@pytest.mark.parametrize("answer, meant", [("replaces", "replaces"), ("Replace", "replaces"),
                                           (" replaced. ", "replaces"), ("RAISE", "raises"), ("raised", "raises")])
def test_a_right_idea_in_another_spelling_is_understood(answer, meant):
    assert exercises.choice(answer, ["replaces", "raises"]) == meant


@pytest.mark.parametrize("answer", ["replace it", "yes", 3, None, ...])
def test_anything_else_gets_the_allowed_words(answer, capsys):
    assert exercises.choice(answer, ["replaces", "raises"], name="custom_op") is None
    said = capsys.readouterr().out
    assert said.startswith("✘ custom_op is ") and said.rstrip().endswith("answer one of 'replaces', 'raises'.")


def test_other_spellings_can_be_named():
    spellings = {"silently wrong": ["wrong", "incorrect"], "correct": ["right"]}
    assert exercises.choice("wrong", spellings) == "silently wrong"
    assert exercises.choice("Right", {"silently wrong": ["wrong"], "correct": ["right"]}) == "correct"


def test_an_unanswered_cell_says_which_cell_to_edit(capsys):
    assert not exercises.answered(...)
    assert not exercises.answered({"a": 1, "b": ...})
    assert "edit the answer cell above" in capsys.readouterr().out
    assert exercises.answered(0) and exercises.answered({"a": 1})


def kernel(x):
    return x[:, : x.shape[1] // 2].clone()


@pytest.mark.parametrize("fake, found", [
    (lambda x: x.new_empty(x.shape[0], x.shape[1] // 2), []),
    (lambda x: torch.empty(x.shape[0], x.shape[1] // 2), ["float64 inputs", "meta device"]),   # torch's defaults
    (lambda x: torch.empty(x.shape[0], x.shape[1] // 2, dtype=x.dtype), ["meta device"]),
    (lambda x: torch.empty_like(x), ["shape"]),
    (lambda x: x.new_empty(x.shape[1] // 2, x.shape[0]).t(), ["strides"]),
    (lambda x: 1 / 0, ["raised ZeroDivisionError"]),
])
def test_a_fake_is_checked_on_a_second_dtype_and_for_its_device(fake, found):
    problems = exercises.fake_problems(fake, kernel, torch.ones(4, 6))
    assert bool(problems) == bool(found), problems
    for part in found:
        assert any(part in problem for problem in problems), (part, problems)
