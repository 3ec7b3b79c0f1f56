"""A report that carries an error says it in one sentence when a learner asks for a stage's code: 02's trap
(the setup cell run again mid-notebook drops the notebook's ops, then an earlier cell) once ended in
``KeyError: 'inductor'`` while the real cause sat unseen in ``report.error``."""

import pytest
import torch

import labkit
from labkit.render import NoStageCode


def test_a_stale_op_is_named_with_the_cell_to_run_again_never_a_key_error():
    labkit.drop_namespace("t31b")
    bump = labkit.declare(name="t31b::bump", writes=("x",), mutates_args=("x",), returns="none")

    def step(x):
        bump(x)
        return x * 2

    assert "t31b.bump" in labkit.render.stage_code(labkit.compile_and_compare(step, torch.ones(3),
                                                                          backend="inductor"))["inductor"]
    labkit.drop_namespace("t31b")                       # what 02's setup cell does when it is run again
    report = labkit.compile_and_compare(step, torch.ones(3), backend="inductor")
    with pytest.raises(NoStageCode) as raised:
        labkit.render.stage_code(report)["inductor"]
    sentence = str(raised.value)
    assert not isinstance(raised.value, KeyError), "a learner never sees a KeyError"
    assert sentence.count(". ") == 0 and sentence.endswith("then this one."), "one sentence"
    assert "`t31b::bump` was redeclared or dropped" in sentence, sentence
    assert "run again the cell that declares `t31b::bump`" in sentence, sentence
    assert raised.value._render_traceback_() == [f"✘ {sentence}"], "IPython shows the sentence, not a traceback"
    assert labkit.render.error_sentence(report) in sentence


def test_any_other_error_is_torchs_first_line_and_a_missing_stage_says_why():
    labkit.drop_namespace("t31b")
    nofake = labkit.declare(name="t31b::nofake", returns="fresh", fake=False)
    report = labkit.compile_and_compare(lambda x: nofake(x) + 1, torch.ones(3), backend="inductor")
    with pytest.raises(NoStageCode, match=r"^No Inductor code: torch raised \w+ \(compiled\): "):
        labkit.render.stage_code(report)["inductor"]
    ok = labkit.compile_and_compare(lambda x: x + 1, torch.ones(3), backend="aot_eager")
    assert labkit.render.error_sentence(ok) is None
    with pytest.raises(NoStageCode, match="the backend 'aot_eager' has no Inductor stage"):
        labkit.render.stage_code(ok)["inductor"]
    labkit.drop_namespace("t31b")


def test_outcome_names_each_way_a_declaration_can_end():
    labkit.drop_namespace("t31b")
    cases = {"correct": dict(writes=("x",), mutates_args=("x",), returns="none"),
             "silently wrong": dict(writes=("x",), mutates_args=(), returns="none"),
             "error in eager (alias_return)": dict(writes=("x",), mutates_args=("x",), returns="input"),
             "error when compiling (missing_fake)": dict(returns="fresh", fake=False)}
    for expected, fields in cases.items():
        op = labkit.declare(name="t31b::case", **fields)
        report = labkit.compile_and_compare(labkit.experiments.uses_result(op), torch.ones(3), backend="inductor")
        assert labkit.render.outcome(report) == expected, (expected, report)
    with pytest.raises(TypeError, match="takes the report"):
        labkit.render.outcome("correct")
    labkit.drop_namespace("t31b")
