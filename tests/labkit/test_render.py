"""labkit.render: a report as a summary, text, HTML and a picture of each stage; a stage's code asked of a report
that carries an error, and anything that is not a report, get one sentence."""

import warnings

import pytest
import torch

import labkit
from labkit import compile_and_compare, declare, pictures, render, views
from labkit.render import NoStageCode


def _undeclared_report(backend="inductor"):
    op = declare(name="t::bump", writes=("x",), returns="none")

    def f(x):
        op(x)
        return x * 3

    return compile_and_compare(f, torch.ones(3), backend=backend)


def test_summary_states_the_verdict_and_the_fate():
    text = render.summary(_undeclared_report())
    assert "✘ eager and compiled DIFFER" in text
    assert "t::bump: Dynamo kept · AOT REMOVED · Inductor REMOVED · kernel ran: NO" in text
    assert "t::bump: kernel runs eager 1, compiled 0" in text


def test_text_shows_each_stage():
    text = render.text(_undeclared_report())
    assert "--- Dynamo graph ---" in text and "torch.ops.t.bump.default" in text
    assert "--- Inductor code ---" in text and "def call(self, args):" in text


def test_inductor_call_extracts_the_call_function():
    code = "x = 1\nclass Runner:\n    def call(self, args):\n        a, = args\n        return (a, )\n\nrunner = 1\n"
    assert render.inductor_call(code) == "def call(self, args):\n    a, = args\n    return (a, )"


def test_html_marks_removed_ops_and_errors():
    html = render.to_html(_undeclared_report("aot_eager"))
    assert "removed" in html and "DIFFER" in html and "<table" in html
    op = declare(name="t::nofake", fake=False)
    failed = compile_and_compare(lambda x: op(x) + 1, torch.ones(1))
    assert "no fake impl registered" in render.to_html(failed)
    assert "torch.compile: torch raised while Dynamo traced the first call (inputs of shape [1]), so no graph " \
        "went further: RuntimeError" in repr(labkit.show(failed))


def test_draw_fate_draws_one_box_per_stage():
    import matplotlib.pyplot as plt

    fig = labkit.draw_fate(_undeclared_report(), "t::bump")
    ax, = fig.axes
    assert fig.number not in plt.get_fignums(), "closed: a cell ending in the call shows it once"
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.texts if t.get_text() in ("kept", "removed")] == ["kept", "removed", "removed"]


def test_an_op_run_eagerly_at_a_graph_break_is_not_called_removed():
    """A data-dependent op under fullgraph=False is in no graph, yet its kernel ran: absent is not removed."""
    from labkit.experiments import dce_experiment

    op, report = dce_experiment("pure, result unused", False, (4,), namespace="t", op_kind="data-dependent")
    html_text, line = render.to_html(report, [op.name]), render.fate_line(report, op.name)
    assert "graph break" in html_text and "removed" not in html_text
    assert "graph break" in line and "REMOVED" not in line
    _, pure_report = dce_experiment("pure, result unused", False, (4,), namespace="t")
    assert "REMOVED" in render.fate_line(pure_report, "t::pure__result_unused")


def test_a_labs_headline_is_green_only_where_nothing_observable_differs():
    """A side effect run fewer times compiled is a difference even where outputs and inputs agree; a pure op removed
    as dead code is none, and the words say it was removed; a raise is never green, and the strip marks it."""
    from labkit.experiments import dce_experiment, declaration_experiment

    op, report = dce_experiment("-> None with a Python side effect", False, (4, 6), namespace="t")
    assert report.verdict.agree and (report.eager_calls[op.name], report.compiled_calls[op.name]) == (2, 0)
    tone, words = views.lab_headline(report, op.name, side_effect=True)
    assert tone == "bad" and "side effect is lost: its kernel ran twice eagerly and 0 times compiled" in words
    op, report = dce_experiment("has_side_effect", False, (4,), namespace="t")
    assert views.lab_headline(report, op.name, side_effect=True) == \
        ("ok", "eager and compiled agree (outputs and inputs); the op's Python side effect ran once, as in eager")
    op, report = dce_experiment("pure, result unused", False, (4,), namespace="t")
    tone, words = views.lab_headline(report, op.name)
    assert tone == "ok" and "removed as dead code" in words
    assert views.headline_word((tone, words)) == "agree"
    op, report = declaration_experiment("returns its input", "inductor", False, namespace="t", sizes=(3,))
    assert report.error.raised_in == "run time" and report.compiled_calls[op.name] == 1
    assert views.lab_headline(report, op.name) == \
        ("bad", "torch raised (eagerly and compiled), so there are no results to compare: where and why below")
    assert render.ran_mark(report, op.name) == "yes, then torch raised"
    assert "ran yes, then torch raised" in views.fate_picture_html(report, op.name)
    assert "kernel ran: yes, then torch raised" in render.fate_line(report, op.name)
    assert views.report_facts(report, op.name)["eager vs compiled"] == "torch raised"
    labkit.drop_namespace("t")


def test_an_unreadable_recording_is_named_not_taken_for_no_recording(tmp_path, monkeypatch):
    """A GPU cell whose recording file is broken says so, in the sentence that says no recording was found."""
    from labkit import recordings

    (tmp_path / "42_broken.json").write_text('{"device": "X"')
    monkeypatch.setattr(recordings, "FOLDER", tmp_path)
    shown = views.gpu_recording_text(recordings.status("a cell", lambda _: None))
    assert "No GPU recording of this cell exists yet" in shown
    assert "42_broken.json cannot be read (JSONDecodeError" in shown and len(shown.splitlines()) == 2


# --- a stage's code asked of a report that carries an error: one sentence, never a KeyError -----------------
# 02's trap (the setup cell run again mid-notebook drops the notebook's ops, then an earlier cell) once
# ended in ``KeyError: 'inductor'`` while the real cause sat unseen in ``report.error``.


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


# --- what is not a report, or not an op name: one sentence (a TypeError naming what is expected) ------------
# Never a raw AttributeError or torch's "ambiguous" RuntimeError, nested tensors included.


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
                                     pictures.draw_stages, views.lab_headline])
@pytest.mark.parametrize("bad", NOT_REPORTS, ids=lambda b: type(b).__name__)
def test_what_is_not_a_report_gets_one_sentence(present, bad):
    args = (bad, "t::op") if present in (labkit.draw_fate, views.lab_headline) else (bad,)
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


def test_the_stage_pictures_are_closed_figures_in_one_palette_and_render_draws_none():
    """Issue 76: every figure comes from labkit.pictures, which closes what it draws (pyplot keeps none, so a
    notebook shows the one its cell returns) in its one palette; render and views only embed a PNG."""
    import matplotlib.pyplot as plt
    import pathlib

    before = set(plt.get_fignums())
    report = _undeclared_report()
    fig = pictures.draw_stages(report, "t::bump")
    assert set(plt.get_fignums()) == before
    faces = {matplotlib_colour(patch.get_facecolor()) for ax in fig.axes for patch in ax.patches}
    assert faces <= set(pictures.PALETTE.values()), faces - set(pictures.PALETTE.values())
    assert pictures.PALETTE["op"] in faces, "the op's node is the palette's op colour"
    views.fate_picture_html(report, "t::bump")
    assert set(plt.get_fignums()) == before
    for module in (render, views):
        assert "matplotlib" not in pathlib.Path(module.__file__).read_text(), f"{module.__name__} draws a figure"


def matplotlib_colour(rgba) -> str:
    import matplotlib.colors

    return matplotlib.colors.to_hex(rgba)
