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


def test_check_numbers_reads_each_answer_as_a_whole_number_and_names_the_wrong_keys(capsys):
    truth = {"float": 4, "0-d tensor": 0}
    assert exercises.check_numbers({"float": 4, "0-d tensor": 0}, truth, "right.", "hint")
    assert exercises.check_numbers({"float": "four", "0-d tensor": "0"}, truth, "right.", "hint")
    capsys.readouterr()
    assert not exercises.check_numbers({"float": 0, "0-d tensor": 0}, truth, "right.", "re-read §6")
    assert "look again at 'float': re-read §6" in capsys.readouterr().out
    assert not exercises.check_numbers({"float": "many", "0-d tensor": 0}, truth, "right.", "hint")
    assert "'float' is not a whole number" in capsys.readouterr().out
    assert not exercises.check_numbers({"float": ...}, truth, "right.", "hint")  # a key left unanswered
    assert not exercises.check_numbers([4, 0], truth, "right.", "hint")
    assert "keep the dict" in capsys.readouterr().out
