"""labkit.exercises' helpers for notebook 05: a whole number, and several predictions checked at once."""

from labkit import exercises

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
