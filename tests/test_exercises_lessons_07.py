"""labkit.exercises for notebook 07: an exercise that asks for several whole numbers says which one is unreadable."""

from labkit import exercises


def test_check_number_names_the_answer_it_cannot_read(capsys):
    assert not exercises.check_number("1 graph", 1, "right", "hint", name="the answer for 'SymInt'")
    assert capsys.readouterr().out.startswith("✘ the answer for 'SymInt' is '1 graph': answer a whole number"), \
        "the sentence names which of the answers to rewrite"
    assert not exercises.check_number(None, 1, "right", "hint")
    assert capsys.readouterr().out.startswith("✘ the answer is None:"), "one answer: the default name"
    assert exercises.check_number("one", 1, "right", "hint", name="the answer for 'SymInt'"), \
        "a name changes no verdict"
    assert capsys.readouterr().out == "✔ right\n"
