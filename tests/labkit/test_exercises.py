"""labkit.exercises: answers in other words are understood, wrong ones told what is allowed, and a fake kernel
is checked beyond its first dtype and device."""

import warnings

import numpy as np
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


@pytest.mark.parametrize("answer", [[0, 1, 2, 1, 0], (0, 1.0, 2, 1, 0), torch.tensor([0.0, 1, 2, 1, 0]),
                                    torch.tensor([0, 1, 2, 1, 0]), np.array([0, 1, 2, 1, 0]),
                                    list(torch.tensor([0, 1, 2, 1, 0])), list(np.array([0.0, 1, 2, 1, 0]))])
def test_a_list_answer_is_read_as_a_list_a_tuple_or_a_tensor(answer, capsys):
    assert exercises.check_list(answer, [0.0, 1.0, 2.0, 1.0, 0.0], "right.", "look again.")
    assert capsys.readouterr().out == "✔ right.\n"


@pytest.mark.parametrize("answer", [[0, 1, 1, 1, 0], torch.tensor([0, 1, 1, 1, 0])])
def test_a_wrong_list_gets_the_hint(answer, capsys):
    assert not exercises.check_list(answer, [0, 1, 2, 1, 0], "right.", "which elements does each bump touch?")
    assert capsys.readouterr().out == "✘ Not yet. which elements does each bump touch?\n"


@pytest.mark.parametrize("answer", [[0, 1, 2], ["0", "1", "2", "1", "0"], [True] * 5, torch.zeros(5, 1),
                                    torch.tensor(2.0), "0 1 2 1 0", None, {"a": 1}, [10 ** 400] * 5])
def test_what_is_not_a_list_of_numbers_of_that_length_gets_one_sentence(answer, capsys):
    assert not exercises.check_list(answer, [0, 1, 2, 1, 0], "right.", "hint")
    said = capsys.readouterr().out
    assert said.startswith("✘ the answer is ")
    assert said.endswith("answer a list of 5 numbers, such as [0, 0, 0, 0, 0].\n")


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


# --- notebook 05's helpers: a whole number, and several predictions checked at once -------------------------


ANSWERS = {"runs": ["ran", "kept"], "removed": ["erased"]}
TRUTH = {"a": "removed", "b": "runs"}


def test_whole_number_accepts_its_spellings_and_refuses_the_rest():
    for spelling in (2, 2.0, "2", " 2 ", "two", "Two."):
        assert exercises.whole_number(spelling) == 2, spelling
    for other in (True, 2.5, "2 graphs", None, ...):
        assert exercises.whole_number(other) is None, other


def test_check_number_asks_for_a_number_before_it_judges(capsys):
    assert not exercises.check_number("two graphs", 2, "right", "hint")
    assert "answer a whole number" in capsys.readouterr().out, "a non-number is told what to write"
    assert not exercises.check_number(3, 2, "right", "hint")
    assert "Not yet. hint" in capsys.readouterr().out, "a wrong number gets the hint"
    assert exercises.check_number("two", 2, "right", "hint")


def test_wrong_keys_is_silent_and_tells_wrong_from_unreadable(capsys):
    assert exercises.wrong_keys({"a": "Erased", "b": "ran"}, TRUTH, ANSWERS) == []
    assert exercises.wrong_keys({"a": "runs", "b": "runs"}, TRUTH, ANSWERS) == ["a"]
    assert exercises.wrong_keys({"a": "gone", "b": "runs"}, TRUTH, ANSWERS) is None, "a word not allowed"
    assert exercises.wrong_keys({"b": "runs"}, TRUTH, ANSWERS) is None, "a missing key"
    assert capsys.readouterr().out == "", "silent: a solution cell asserts on it"


def test_check_each_lists_the_allowed_words_or_the_keys_to_revisit(capsys):
    assert not exercises.check_each({"a": "gone", "b": "runs"}, TRUTH, ANSWERS, "hint")
    assert "answer one of 'runs', 'removed'" in capsys.readouterr().out
    assert not exercises.check_each({"a": "runs", "b": "runs"}, TRUTH, ANSWERS, "hint")
    assert "look again at a: hint" in capsys.readouterr().out
    assert exercises.check_each({"a": "removed", "b": "kept"}, TRUTH, ANSWERS, "hint")


# --- check: True or False (a one-element boolean too), or one sentence naming what it expects ---------------


def _nested():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that nested tensors are a prototype
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


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


def test_check_numbers_says_the_hint_of_each_wrong_key_only(capsys):
    truth, hints = {"int": 3, "SymInt": 1}, {"int": "a value seen before?", "SymInt": "symbolic from the start?"}
    assert not exercises.check_numbers({"int": 4, "SymInt": 1}, truth, "both hold.", hints)
    said = capsys.readouterr().out
    assert "look again at 'int' (a value seen before?)." in said and "symbolic" not in said
    assert not exercises.check_numbers({"int": 4, "SymInt": 2}, truth, "both hold.", hints)
    assert "'int' (a value seen before?); 'SymInt' (symbolic from the start?)" in capsys.readouterr().out, \
        "each wrong key with its own hint"
    assert not exercises.check_numbers({"int": 4, "SymInt": 1}, truth, "both hold.", {"SymInt": "?"})
    assert "look again at 'int'." in capsys.readouterr().out, "a key without a hint is named alone, no KeyError"
    assert exercises.check_numbers({"int": "three", "SymInt": 1}, truth, "both hold.", hints)
    assert "both hold." in capsys.readouterr().out


def test_check_number_names_the_answer_it_cannot_read(capsys):
    assert not exercises.check_number("1 graph", 1, "right", "hint", name="the answer for 'SymInt'")
    assert capsys.readouterr().out.startswith("✘ the answer for 'SymInt' is '1 graph': answer a whole number"), \
        "the sentence names which of the answers to rewrite"
    assert not exercises.check_number(None, 1, "right", "hint")
    assert capsys.readouterr().out.startswith("✘ the answer is None:"), "one answer: the default name"
    assert exercises.check_number("one", 1, "right", "hint", name="the answer for 'SymInt'"), \
        "a name changes no verdict"
    assert capsys.readouterr().out == "✔ right\n"
