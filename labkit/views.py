"""What each lab's panel and each GPU cell show: the views a learner meets, drawn from the core's results.

A lab's panel (:mod:`labkit.widgets` wires its controls; these draw): its headline, what changed since the
previous state, the op's path through the stages as a picture, and :mod:`labkit.render`'s report; the naming
experiment's table; the words shown while a state compiles, or when it could not. A GPU cell without a GPU: its
recording, labelled with which code it ran (:func:`show_gpu_recording`).

Not here: the report itself as text or HTML (:mod:`labkit.render`), figures (:mod:`labkit.pictures`), controls
(:mod:`labkit.widgets`), and computing anything (the core).
"""

from __future__ import annotations

import html
import re

from . import pictures, recordings
from .render import (CELL_STYLE, COLOURS, NUMBER_STYLE, REMOVED, STAGE_NAMES, and_list, ran_mark, removal_tone,
                     require_report, stage_marks, to_html)
from .language import Said, said, say, say_html
from .stages import StageReport


# --- a lab's headline, and what changed since the previous state ------------------------------------


def _times(n: int) -> Said:
    return said("once") if n == 1 else said("twice") if n == 2 else said("{n} times", n=n)


def lab_headline(report: StageReport, op_name: str, side_effect: bool = False) -> tuple[str, Said]:
    """A lab's headline for one state, as (tone, sentence): what a user of the compiled function could observe.

    Outputs and inputs (the verdict), a stage that raised, and, for an op whose kernel has a Python side effect
    (``side_effect``: the lab's catalogue says which), how many times it ran: a side effect that ran a different
    number of times compiled is a difference even where outputs and inputs agree, so it is never green. A pure op
    whose unused result is removed as dead code is no difference a caller can observe: green, and said.
    The sentence is English (:class:`~labkit.language.Said`); the panel says it in the lab's language.
    """
    require_report(report, "views.lab_headline")
    if report.verdict is None:   # only where torch raised: compile_and_compare compares every run that finished
        runs = said("eagerly and compiled" if report.eager_error and report.error
                    else "eagerly" if report.eager_error else "compiled")
        return "bad", said("torch raised ({runs}), so there are no results to compare: where and why below",
                           runs=runs)
    if not report.verdict.agree:
        return "bad", report.verdict.said()
    eager, compiled = report.eager_calls.get(op_name, 0), report.compiled_calls.get(op_name, 0)
    if side_effect and eager != compiled:
        return "bad", said("outputs and inputs agree, but the op's Python side effect is lost: its kernel ran "
                           "{eager} eagerly and {compiled} compiled" if compiled < eager else
                           "outputs and inputs agree, but the op's Python side effect ran more often than in eager: "
                           "its kernel ran {eager} eagerly and {compiled} compiled",
                           eager=_times(eager), compiled=_times(compiled))
    verdict = report.verdict.said()
    if side_effect:
        return "ok", said("{verdict}; the op's Python side effect ran {times}, as in eager", verdict=verdict,
                          times=_times(eager))
    if compiled == 0 < eager and REMOVED in stage_marks(report, op_name).values():
        return "ok", said("{verdict}; the op's kernel was removed as dead code (its result is unused): nothing a "
                          "caller can observe", verdict=verdict)
    return "ok", verdict


def headline_word(tone_and_sentence: tuple[str, str]) -> str:
    """The headline in a word or two, for "since the previous state"."""
    tone, sentence = tone_and_sentence
    if sentence.startswith("torch raised"):
        return "torch raised"
    if "side effect is lost" in sentence:
        return "side effect lost"
    if "side effect ran more often" in sentence:
        return "side effect ran more often"
    if tone == "ok":
        return "agree"
    return "DIFFER" if "DIFFER" in sentence else "cannot say"


def report_facts(report: StageReport, op_name: str, side_effect: bool = False) -> dict[str, str]:
    """What a panel says of one op in one state, as short facts: what "changed since the last state" compares."""
    marks = stage_marks(report, op_name)
    return {"eager vs compiled": headline_word(lab_headline(report, op_name, side_effect)),
            "kernel runs, eager": str(report.eager_calls.get(op_name, 0)),
            "kernel runs, compiled": str(report.compiled_calls.get(op_name, 0)),
            **{f"{STAGE_NAMES[s]} {'code' if s == 'inductor' else 'graph'}": m for s, m in marks.items()},
            "graphs compiled per call": str(report.graphs_per_call)}


# The words of the labs' facts (report_facts, the naming lab's): what "since the previous state" shows, each said in
# the lab's language there (the facts themselves, compared between states, stay as they are).
FACT_WORDS = ("eager vs compiled", "kernel runs, eager", "kernel runs, compiled", "Dynamo graph", "AOTAutograd graph",
              "Inductor code", "graphs compiled per call", "agree", "DIFFER", "torch raised", "side effect lost",
              "side effect ran more often", "cannot say", "kept", "removed", "torch raised here", "not reached",
              "not used", "no graph", "outcome", "name refused", "hit: reused", "miss: compiled", "cache",
              "kernel runs", "x after")
STEP_FACT = re.compile(r"^step (\d+) (.+)$")   # the naming lab's "step 2 cache"


def _fact(text: str) -> str:
    """A fact's key or value as the panel says it: its words in the lab's language, a number or a state as it is."""
    step = STEP_FACT.match(text)
    if step and step.group(2) in FACT_WORDS:
        return say("step {n}: {what}", n=step.group(1), what=say(step.group(2)))
    return say(text) if text in FACT_WORDS else text


def changes_html(controls: list[tuple[str, object, object]], before: dict[str, str] | None,
                 after: dict[str, str]) -> str:
    """One line: which controls changed since the previous state, and which facts changed with them."""
    if before is None or not controls:
        return ""
    flipped = say("; ").join(say("{name}: {old} → {new}", name=name, old=old, new=new) for name, old, new in controls)
    moved = [say_html("{key}: {old} → {new}", key=html.escape(_fact(key)), old=html.escape(_fact(before[key])),
                      new=f"<b>{html.escape(_fact(value))}</b>")
             for key, value in after.items() if key in before and before[key] != value]
    said = html.escape(say("; ")).join(moved) if moved else html.escape(say("nothing else changed"))
    since = f"<b>{html.escape(say('Since the previous state'))}</b>"
    sentence = say_html("{since} ({flipped}): {said}.", since=since, flipped=html.escape(flipped), said=said)
    return (f"<div style='white-space:normal;border-left:4px solid #e6a700;background:#fff8e1;padding:3px 8px;"
            f"margin:4px 0'>{sentence}</div>")


def naming_html(result, story: str) -> str:
    """The naming experiment's table: each step's declaration, what its handle reports, kernel runs, x, the cache;
    then the story (a lesson it names is linked under the view: :func:`lesson_link_html`)."""
    hit = f"<b style='color:{COLOURS['bad']}'>{html.escape(say('hit: reused'))}</b>"
    missed = html.escape(say("miss: compiled"))
    rows = "".join(
        f"<tr><td style='{CELL_STYLE}'>"
        + say_html("{n}. declare {name} as {declared}, compile", n=i + 1, name=f"<code>{html.escape(s.name)}</code>",
                   declared=f"<b>{html.escape(say(s.declared))}</b>")
        + f"</td><td style='{CELL_STYLE}'><code>{html.escape(s.schema_now)}</code></td>"
        f"<td style='{NUMBER_STYLE}'>{s.kernel_calls}</td>"
        f"<td style='{CELL_STYLE}'>{html.escape(say('{x} (eager {eager})', x=s.x_after, eager=s.x_after_eager))}</td>"
        f"<td style='{CELL_STYLE}'>{hit if s.stale else missed}</td></tr>"
        for i, s in enumerate(result.steps))
    head = "".join(f"<th style='{CELL_STYLE};text-align:{'right' if h == NAMING_COLUMNS[2] else 'left'}'>"
                   f"{html.escape(say(h))}</th>" for h in NAMING_COLUMNS)
    intro = say_html("The kernel always adds 1 to {x} (zeros); only the declaration changes. Cache policy {policy}, "
                     "in a fresh cache directory.", x="<code>x</code>",
                     policy=f"<code>{html.escape(result.policy)}</code>")
    return (f"<div style='white-space:normal'><p style='margin:4px 0'>{intro}</p><table style='border-collapse:"
            f"collapse;margin:4px 0'><tr>{head}</tr>{rows}</table><p style='margin:4px 0'>{html.escape(say(story))}"
            "</p></div>")


# The naming lab's table's columns (a test reads a Chinese table back through them).
NAMING_COLUMNS = ("step", "this step's handle reports now", "kernel runs, compiled", "x after the compiled call",
                  "FX/AOT cache")


def lesson_link_html(words: str, href: str, heading: str) -> str:
    """A link to the lesson a lab's story names. A lab shows it in an ``Output`` widget, so that JupyterLab's own
    renderer draws it: there a link to a notebook opens it in JupyterLab, beside this one (at its section where it
    is open already, at its top where JupyterLab has just opened it); in a widget's HTML view the browser would open
    a second JupyterLab in a new tab. An absolute address (Colab's) opens in a new tab, and says so."""
    away = href.startswith("https://")
    target = " target='_blank' rel='noopener'" if away else ""
    link = (f"<a href='{html.escape(href)}'{target} style='color:#0645ad;text-decoration:underline'>"
            f"{html.escape(say(words))}</a>")
    return ("<p style='margin:4px 0'>"
            + say_html("Why: {link}, “{heading}” (opens in a new tab)." if away else "Why: {link}, “{heading}”.",
                       link=link, heading=html.escape(heading)) + "</p>")


def lesson_link_output(link: tuple[str, str, str] | None) -> tuple[dict, ...]:
    """An ``Output`` widget's outputs showing :func:`lesson_link_html` for ``link`` (words, href, heading); none
    for None. Set as the widget's ``outputs``, never printed, so nothing leaks into a cell's stored output."""
    if link is None:
        return ()
    words, href, heading = link
    return ({"output_type": "display_data", "metadata": {},
             "data": {"text/html": lesson_link_html(*link),
                      "text/plain": say("Why: {words}, “{heading}” ({href})", words=say(words), heading=heading,
                                        href=href)}},)


_FATE_PNGS: dict[tuple, str] = {}


def fate_picture_html(report: StageReport, op_name: str, headline: tuple[str, str] | None = None) -> str:
    """:func:`labkit.pictures.draw_fate`'s picture as an HTML image (a widget shows it so), a removal in the tone of
    the panel's ``headline``; cached by what it shows."""
    import base64

    removal = removal_tone(report, headline)
    key = (tuple(stage_marks(report, op_name).values()), ran_mark(report, op_name), removal)
    if key not in _FATE_PNGS:
        figure = pictures.draw_fate(report, op_name, title=False, removal=removal)
        _FATE_PNGS[key] = base64.b64encode(pictures.png(figure)).decode()
    # The picture's words stay English (the plotting library finds no Chinese font on Colab or Binder: it would draw
    # boxes); its alt text, which a screen reader reads and a hover shows, is said in the lab's language.
    alt = html.escape(say(", ").join(say("{stage} {mark}", stage=STAGE_NAMES[s], mark=say(m))
                                     for s, m in zip(STAGE_NAMES, key[0]))
                      + say(", ran {ran}", ran=say(key[1])))
    return f"<img alt='{alt}' title='{alt}' src='data:image/png;base64,{_FATE_PNGS[key]}' style='max-width:100%'>"


# --- the widgets' views: labkit.widgets wires controls, these draw -----------------------------------------

COMPILING = "⏳ compiling this state for the first time…"
COMPUTED_NOW = "computed now (seen states come back instantly)"
INTERRUPTED = ("Interrupted", "(Ctrl-C / the stop button) before this state finished compiling: change a control to "
                              "compute again.")


def compiling_html() -> str:
    """The status line while a state compiles, in the language labkit speaks."""
    return f"<i>{html.escape(say(COMPILING))}</i>"


def computed_now_html() -> str:
    return f"<i>{html.escape(say(COMPUTED_NOW))}</i>"


def interrupted_html() -> str:
    return (f"<p style='color:#b00020'><b>{html.escape(say(INTERRUPTED[0]))}</b> "
            f"{html.escape(say(INTERRUPTED[1]))}</p>")


def lab_heading_html(title: str) -> str:
    """A widget's title line, as its static view shows it too."""
    return f"<p><b>{html.escape(title)}</b></p>"


def could_not_compute_html(error: BaseException) -> str:
    """What a widget shows instead of a view when its experiment raised: the error in one line, cut at 500."""
    return (f"<p style='color:#b00020'><b>{html.escape(say('labkit could not compute this state'))}</b>: "
            f"{html.escape(type(error).__name__)}: {html.escape(str(error)[:500])}</p>")


def static_view_html(title: str, described: str, view_html: str) -> str:
    """A widget as a page without a kernel shows it (nbviewer, GitHub): its title, the state, the last view."""
    return (f"<div><p><b>{html.escape(title)}</b> ("
            + html.escape(say("static view of: {described}; run the notebook to use the controls",
                              described=described))
            + f")</p>{view_html}</div>")


def declaration_view_html(declaration: str, meaning: str, schema: str, report: StageReport, op_name: str) -> str:
    """The declaration lab's view: the declaration and its schema, the program, the op's fate and the report (its
    headline :func:`lab_headline`'s: the kernels write ``x``, which the verdict compares; no other side effect)."""
    said = say_html("{declaration}: the kernel {meaning}.", declaration=f"<b>{html.escape(declaration)}</b>",
                    meaning=html.escape(meaning))
    return (f"<div style='white-space:normal'><p style='margin:4px 0'>{said}"
            "<br>" + say_html("schema: {schema}", schema=f"<code>{html.escape(schema)}</code>") + "<br>"
            "<code>def step(x): out = op(x); return x * 2 if out is None else x + out</code></p>"
            + _fate_and_report(report, op_name, lab_headline(report, op_name)) + "</div>")


def name_refused_html(problem: str) -> str:
    """The naming lab's view of a name it cannot use: the one sentence saying why."""
    return (f"<p style='color:#b00020'><b>{html.escape(say('That name cannot be used:'))}</b> "
            f"{html.escape(problem)}</p>")


def dce_view_html(schema: str, op_name: str, report: StageReport, side_effect: bool = False) -> str:
    """The dynamic-shapes and DCE lab's view: the program, the graphs per call and their shapes, the op's fate;
    ``side_effect``: the op's kernel has a Python side effect (see :func:`lab_headline`)."""
    sizes = " | ".join(", ".join(g.input_shapes) for g in report.dynamo_graphs)
    program = say_html("{program}: the op's result is never used.",
                       program="<code>def unused_result(x): op(x); return x + 1</code>")
    graphs = say_html("graphs compiled per call: {per_call} (recompiles: {recompiles}); input shapes each graph was "
                      "built for: {sizes}", per_call=f"<b>{report.graphs_per_call}</b>", recompiles=report.recompiles,
                      sizes=f"<code>{html.escape(sizes or say('none'))}</code>")
    schema = say_html("schema: {schema}", schema=f"<code>{html.escape(schema)}</code>")
    return (f"<div style='white-space:normal'><p style='margin:4px 0'>{program}<br>{schema}<br>{graphs}</p>"
            + _fate_and_report(report, op_name, lab_headline(report, op_name, side_effect)) + "</div>")


def _fate_and_report(report: StageReport, op_name: str, headline: tuple[str, str]) -> str:
    """The op's fate as a picture, then the report under the lab's ``headline``: both give a removal its tone."""
    return fate_picture_html(report, op_name, headline) + to_html(report, [op_name], headline)


# --- a GPU cell's recording, in a kernel without a GPU --------------------------------------------------

def _gpu_recording_parts(status: recordings.Status, lacks: str) -> tuple[list[str], list[str]]:
    """(what the label says, what the recording printed) for a GPU cell.

    How the recorded code differs from this cell's is a maintainer's question (``tools/record_gpu.py --status``
    prints it): a learner reads which code the recording ran and what changed since, never a diff.
    """
    said = [f"This kernel lacks {lacks}, so this cell did not run here."]
    rec = status.recording
    if status.kind == "none":
        unreadable = recordings.problems()
        unread = f" ({'; '.join(unreadable)}.)" if unreadable else ""
        return said + ["No GPU recording of this cell exists yet: what it prints on a GPU has not been seen by this "
                       f"lab. Run it on a GPU runtime (Colab's works) to see its output.{unread}"], []
    if status.kind == "current":
        said.append(f"Recorded from this code on {rec.where()}, it printed:")
    elif status.kind == "unchecked":
        said.append(f"Recorded on {rec.where()}, but this kernel's code cannot be compared with the code it ran: "
                    f"{'; '.join(status.changes)}. It printed:")
    else:
        said.append(f"Recorded on {rec.where()} for an earlier version of this code: since then, "
                    f"{and_list(status.changes)}. What that code printed:")
    return said, rec.output.rstrip("\n").splitlines()


def gpu_recording_text(status: recordings.Status, lacks: str = "a CUDA GPU and Triton") -> str:
    """What a GPU cell shows in a kernel without a GPU: its recording, labelled with how it relates to this code.

    Never passes a recording off as this kernel's output: the first line says the cell did not run here;
    the second says which code the recording ran (this cell's, an earlier version's, or none yet).
    """
    said, printed = _gpu_recording_parts(status, lacks)
    return "\n".join(said + ["    " + line for line in printed])


def gpu_recording_html(status: recordings.Status, lacks: str = "a CUDA GPU and Triton") -> str:
    """The same as :func:`gpu_recording_text`, the recorded output in a grey block."""
    said, printed = _gpu_recording_parts(status, lacks)
    pre = "margin:0.3em 0 0.3em 1.5em;padding:0.4em;background:#f6f6f6;white-space:pre-wrap"
    parts = ["<div class='lab-gpu-recording' style='border-left:3px solid #888;padding-left:0.6em'>",
             *(f"<div>{html.escape(line)}</div>" for line in said)]
    if printed:
        parts.append(f"<pre style='{pre}'>{html.escape(chr(10).join(printed))}</pre>")
    return "".join(parts + ["</div>"])


class _GpuRecordingView:
    """A GPU cell's recording as IPython shows it: HTML in a notebook, the plain text elsewhere."""

    def __init__(self, status: recordings.Status, lacks: str):
        self._status, self._lacks = status, lacks

    def __repr__(self) -> str:
        return gpu_recording_text(self._status, self._lacks)

    def _repr_html_(self) -> str:
        return gpu_recording_html(self._status, self._lacks)


def show_gpu_recording(title: str | None = None) -> None:
    """Show the running GPU cell's recording, labelled (the ``if not GPU:`` branch of every GPU cell).

    ``title`` defaults to the running cell's ``# GPU cell: <title>`` line. Bad input gets one sentence.
    """
    try:
        status = recordings.cell_status(title)
    except ValueError as error:
        print(error)
        return
    view = _GpuRecordingView(status, recordings.why_no_gpu())
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(view)
    else:
        print(repr(view))
