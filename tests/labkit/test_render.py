import torch

import labkit
from labkit import compile_and_compare, declare, render


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
    ax = labkit.draw_fate(_undeclared_report(), "t::bump")
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


def test_an_unreadable_recording_is_named_not_taken_for_no_recording(tmp_path, monkeypatch):
    """A GPU cell whose recording file is broken says so, in the sentence that says no recording was found."""
    from labkit import recordings

    (tmp_path / "42_broken.json").write_text('{"device": "X"')
    monkeypatch.setattr(recordings, "FOLDER", tmp_path)
    shown = render.gpu_recording_text(recordings.status("a cell", lambda _: None))
    assert "No GPU recording of this cell exists yet" in shown
    assert "42_broken.json cannot be read (JSONDecodeError" in shown and len(shown.splitlines()) == 2
