"""Turn a :class:`~labkit.stages.StageReport` into text, HTML and pictures; draw every widget's view and an audit's
report.

It only presents what the core found, so the same report looks the same in a notebook, a widget,
a test or a terminal. The widgets' HTML is built here too, in named functions, and the widgets call them.

Not here: computing anything about torch (the core does), and controls (:mod:`labkit.widgets`).
"""

from __future__ import annotations

import html
import re

import torch

from . import recordings
from .ops import split_qualname
from .stages import StageReport

STAGES = (("dynamo", "Dynamo graph"), ("aot", "AOTAutograd graph"), ("inductor", "Inductor code"),
          ("ran", "kernel ran"))
CODE_TITLES = {**dict(STAGES), "backward": "AOTAutograd backward graph"}
_PICTURE_TITLES = {"dynamo": "Dynamo\ngraph", "aot": "AOTAutograd\ngraph", "inductor": "Inductor\ncode",
                   "ran": "real kernel\nran?"}


def inductor_call(code: str) -> str:
    """The ``call()`` function of Inductor's generated module: where kernels are invoked."""
    match = re.search(r"\n( *)def call\(self, args\):\n(.*?)\n\1    return [^\n]*", code, re.S)
    if not match:
        match = re.search(r"\ndef call\(args\):\n(.*?)\n    return [^\n]*", code, re.S)
    if not match:
        return code.strip()
    return "\n".join(line for line in _dedent(match.group(0)).splitlines() if line.strip())


def _dedent(text: str) -> str:
    lines = text.strip("\n").splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines)


def ran_outside_graphs(fate: dict) -> bool:
    """In no Dynamo graph, yet its kernel ran under torch.compile: Dynamo broke the graph at it and ran it
    eagerly (a data-dependent output size under ``fullgraph=False``, say). Absent is not removed."""
    return fate["dynamo"] is False and fate["ran"] is True


STAGE_NAMES = {"dynamo": "Dynamo", "aot": "AOTAutograd", "inductor": "Inductor"}
# What a stage's mark means; the table, the text and the picture all use these words.
KEPT, REMOVED, RAISED, NOT_REACHED, NOT_USED, NO_GRAPH = (
    "kept", "removed", "torch raised here", "not reached", "not used", "no graph")
OUTSIDE = "in no graph (a graph break): ran eagerly"
RAN_THEN_RAISED, RAISED_AT_RUN_TIME = "yes, then torch raised", "torch raised at run time"   # the "ran" box's marks
_PICTURE_WORDS = {RAISED: "torch\nraised here", OUTSIDE: "graph break,\nran eagerly",   # two lines in a box
                  RAN_THEN_RAISED: "yes, then\ntorch raised", RAISED_AT_RUN_TIME: "torch raised\nat run time"}
RAN_TONES = {"yes": "ok", "no": "bad", "—": "muted", RAN_THEN_RAISED: "bad", RAISED_AT_RUN_TIME: "bad"}
TONES = {KEPT: "ok", REMOVED: "bad", RAISED: "bad", NOT_REACHED: "muted", NOT_USED: "muted", NO_GRAPH: "muted",
         OUTSIDE: "warn"}
ORDINALS = ("first", "second", "third", "fourth", "fifth")


def stage_marks(report: StageReport, op_name: str) -> dict[str, str]:
    """The op's mark at each stage (``dynamo``, ``aot``, ``inductor``), from the graphs and code that exist:
    kept or removed where the stage made something; where torch raised; not reached after that; not used by
    this backend. One source of truth for the table, the text and the picture, so they cannot disagree."""
    fate = report.fate(op_name)
    raised = report.error.raised_in if report.error else ""
    marks, stopped = {}, False
    for stage in STAGE_NAMES:
        if ran_outside_graphs(fate):
            marks[stage] = OUTSIDE
        elif stage not in report.stages():
            marks[stage] = NOT_USED
        elif fate[stage] is not None:
            marks[stage] = KEPT if fate[stage] else REMOVED
        elif raised == STAGE_NAMES[stage]:
            marks[stage], stopped = RAISED, True
        else:
            marks[stage] = NOT_REACHED if (stopped or report.error) else NO_GRAPH
    return marks


def ran_mark(report: StageReport, op_name: str) -> str:
    """Whether the op's kernel ran compiled: yes, no, or "—" when torch raised before it could have; where torch
    raised while the compiled code ran (a stage's check of the op's outputs), that too: every stage traced it, yet
    the compiled call did not finish."""
    ran = report.fate(op_name)["ran"]
    if report.error is not None and report.error.raised_in == "run time":
        return RAN_THEN_RAISED if ran else RAISED_AT_RUN_TIME
    return {True: "yes", False: "no", None: "—"}[ran]


def call_name(report: StageReport, index: int) -> str:
    """``"the second call (inputs of shape [6])"``."""
    which = ORDINALS[index] if index < len(ORDINALS) else f"call number {index + 1}"
    shape = report.shapes[index] if index < len(report.shapes) else "?"
    return f"the {which} call (inputs of shape {shape or 'none'})"


def what_happened(report: StageReport) -> list[str]:
    """One clause per run that torch stopped: where it raised, on which call. torch's message follows each."""
    said = []
    if report.eager_error:
        said.append(f"Eager: torch raised on {call_name(report, report.eager_error.call)}")
    error = report.error
    if error:
        done = [STAGE_NAMES[s] for s in report.stages() if report.made(s)]
        where = call_name(report, error.call)
        if error.raised_in == "run time":
            said.append(f"torch.compile: traced by {_and(done)}, then torch raised at run time, on {where}")
        elif error.raised_in == "Dynamo" or not done:
            said.append(f"torch.compile: torch raised while Dynamo traced {where}, so no graph went further")
        else:
            said.append(f"torch.compile: traced by {_and(done)}, then torch raised in {error.raised_in}, on {where}")
    return said


def fate_line(report: StageReport, op_name: str) -> str:
    marks = stage_marks(report, op_name)
    if OUTSIDE in marks.values():
        return (f"{op_name}: in no graph (a graph break: Dynamo ran it eagerly) · "
                f"kernel ran: {ran_mark(report, op_name)}")
    words = {stage: ("REMOVED" if mark == REMOVED else "—" if mark in (NOT_USED, NO_GRAPH) else mark)
             for stage, mark in marks.items()}
    ran = ran_mark(report, op_name)
    return (f"{op_name}: Dynamo {words['dynamo']} · AOT {words['aot']} · Inductor {words['inductor']} · "
            f"kernel ran: {'NO' if ran == 'no' else ran}")


def _require_report(report, caller: str) -> None:
    """TypeError with one sentence unless ``report`` is what ``compile_and_compare`` returns."""
    if not isinstance(report, StageReport):
        what = "a nested tensor" if isinstance(report, torch.Tensor) and report.is_nested else type(report).__name__
        raise TypeError(f"labkit.{caller} takes the report that labkit.compile_and_compare(fn, *inputs) returns, "
                        f"not {what}: report = labkit.compile_and_compare(fn, x), then labkit.{caller}(report).")


def _ops_to_show(report: StageReport, ops) -> list[str]:
    """``ops`` checked (each 'namespace::name'), or every op the report involved."""
    if ops is None:
        return sorted(set(report.eager_calls) | set(report.compiled_calls))
    if isinstance(ops, str):
        ops = [ops]
    if not isinstance(ops, (list, tuple, set, frozenset)):
        raise TypeError(f"ops must be an op name or a list of names like ['mylab::bump'], not "
                        f"{type(ops).__name__}.")
    for op in ops:
        split_qualname(op)
    return list(ops)


def head_line(report: StageReport) -> str:
    return (f"backend={report.backend} · dynamic={report.dynamic} · calls on inputs of shape "
            f"{' then '.join(report.shapes)} · graphs compiled per call {report.graphs_per_call}")


def summary(report: StageReport, ops: list[str] | None = None) -> str:
    """A few lines: the experiment, the verdict or where torch raised, kernel runs, each op's fate."""
    _require_report(report, "summary")
    ops = _ops_to_show(report, ops)
    lines = [head_line(report)]
    for sentence, error in zip(what_happened(report), [e for e in (report.eager_error, report.error) if e]):
        lines.append(f"{sentence}: {error.type_name}: {error.message}")
    if report.verdict:
        lines.append(("✔ " if report.verdict.agree else "✘ ") + str(report.verdict))
    for op in ops:
        lines.append(f"{op}: kernel runs eager {report.eager_calls.get(op, 0)}, compiled "
                     f"{report.compiled_calls.get(op, 0)}")
        lines.append("  " + fate_line(report, op))
    return "\n".join(lines)


_STALE = re.compile(r"This handle to (\S+) is stale")


def error_sentence(report: StageReport) -> str | None:
    """The error a report carries, as one sentence a learner can act on; None when torch raised nothing.

    A stale op (a setup cell run again drops a notebook's ops) is named, with the fix: run again the cell
    that declares it. Any other error is torch's type and the first line of its message.
    """
    error = report.error or report.eager_error
    if error is None:
        return None
    stale = _STALE.search(error.message)
    if error.type_name == "StaleOpError" and stale:
        return (f"`{stale.group(1)}` was redeclared or dropped after this function was defined (a setup cell run "
                f"again drops it): run again the cell that declares `{stale.group(1)}`, then this one.")
    first = (error.message.strip().splitlines() or [""])[0]
    return f"torch raised {error.type_name} ({'eager' if error is report.eager_error else 'compiled'}): {first}"


def outcome(report: StageReport) -> str:
    """What a compile came to, in a few words: ``"correct"``, ``"silently wrong"`` (no error, a different answer),
    ``"error in eager (<kind>)"`` or ``"error when compiling (<kind>)"``, the kind as :class:`TorchError` names it."""
    _require_report(report, "render.outcome")
    if report.eager_error:
        return f"error in eager ({report.eager_error.kind})"
    if report.error:
        return f"error when compiling ({report.error.kind})"
    return "correct" if report.verdict.agree else "silently wrong"


class NoStageCode(LookupError):
    """A stage a report made no code for, said in one sentence (IPython shows the sentence, no traceback)."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return [f"✘ {self}"]


class StageCode(dict):
    """Each stage's readable code, by stage. Asking for a stage that made none raises :class:`NoStageCode`
    with one sentence: the error the report carries (a stale op named, with the cell to re-run), or why."""

    def __init__(self, report: StageReport, codes: dict[str, str]):
        super().__init__(codes)
        self._report = report

    def __missing__(self, stage):
        report = self._report
        title = CODE_TITLES.get(stage, stage)
        carried = error_sentence(report)
        if carried:
            raise NoStageCode(f"No {title}: {carried}")
        made = ", ".join(repr(s) for s in self) or "none"
        why = (f"the backend {report.backend!r} has no {STAGE_NAMES.get(stage, stage)} stage"
               if stage in STAGE_NAMES and stage not in report.stages() else "this experiment made no such code")
        raise NoStageCode(f"No {title} for this report ({why}); it has: {made}.")


def stage_code(report: StageReport) -> StageCode:
    """Readable code for each stage that ran (graphs joined when Dynamo made several).

    ``"backward"`` is there only when the experiment ran ``.backward()`` (``backward=True``). A stage that made
    no code raises :class:`NoStageCode` with one sentence: the error the report carries, or why it is absent.
    """
    out = {}
    for stage, codes in (("dynamo", [g.code for g in report.dynamo_graphs]),
                         ("aot", [g.code for g in report.aot_graphs]),
                         ("backward", [g.code for g in report.backward_graphs]),
                         ("inductor", [inductor_call(c) for c in report.inductor_code])):
        if len(codes) == 1:
            out[stage] = codes[0]
        elif codes:
            out[stage] = "\n\n".join(f"# graph {i + 1} of {len(codes)}\n{c}" for i, c in enumerate(codes))
    return StageCode(report, out)


def text(report: StageReport, ops: list[str] | None = None) -> str:
    _require_report(report, "text")
    parts = [summary(report, ops)]
    for stage, code in stage_code(report).items():
        title = CODE_TITLES[stage]
        parts.append(f"--- {title} ---\n{code}")
    return "\n\n".join(parts)


def _highlight(code: str, ops: list[str]) -> str:
    escaped = html.escape(code)
    for op in ops:
        namespace, name = (re.escape(part) for part in split_qualname(op))
        escaped = re.sub(rf"(torch\.ops\.{namespace}\.{name}\.\w+|{namespace}\.{name}\.\w+)",
                         r'<b style="background:#ffe08a">\1</b>', escaped)
    escaped = re.sub(r"(auto_functionalized(?:_v2)?|with_effects|aten\.copy_\.default)",
                     r'<b style="color:#b00020">\1</b>', escaped)
    return escaped


COLOURS = {"ok": "#1b7f3b", "bad": "#b00020", "warn": "#8a5a00", "muted": "#777777"}
_CELL = "padding:3px 10px;border-bottom:1px solid #ddd"
_NUMBER = _CELL + ";text-align:right;font-variant-numeric:tabular-nums"
_PRE = ("font-family:monospace;font-size:11px;white-space:pre-wrap;word-break:break-all;text-align:left;"
        "margin:4px 0;padding:6px;background:#f7f7f7")


def _mark_cell(mark: str, span: int = 1) -> str:
    weight = "bold" if TONES[mark] in ("bad", "warn") else "normal"
    return (f'<td style="{_CELL};color:{COLOURS[TONES[mark]]};font-weight:{weight}"'
            f'{f" colspan={span}" if span > 1 else ""}>{mark}</td>')


def fate_table(report: StageReport, ops: list[str]) -> str:
    """Kernel runs (eager, compiled) and the op's mark at each stage, one row per op, columns aligned."""
    heads = ["op", "kernel runs, eager", "kernel runs, compiled", "Dynamo graph", "AOTAutograd graph", "Inductor code"]
    rows = []
    for op in ops:
        marks = stage_marks(report, op)
        cells = (_mark_cell(OUTSIDE, 3) if OUTSIDE in marks.values() else "".join(_mark_cell(marks[s]) for s in marks))
        rows.append(f'<tr><td style="{_CELL}"><code>{html.escape(op)}</code></td>'
                    f'<td style="{_NUMBER}">{report.eager_calls.get(op, 0)}</td>'
                    f'<td style="{_NUMBER}">{report.compiled_calls.get(op, 0)}</td>{cells}</tr>')
    head = "".join(f'<th style="{_CELL};text-align:{"right" if "runs" in h else "left"}">{h}</th>' for h in heads)
    note = (f"<p style='color:{COLOURS['muted']};font-size:90%;margin:2px 0'>"
            f"{'not used: this backend stops before that stage · ' if NOT_USED in _all_marks(report, ops) else ''}"
            "kernel runs: the real kernel's calls, counted inside it, over all calls</p>")
    return f"<table style='border-collapse:collapse;margin:4px 0'><tr>{head}</tr>{''.join(rows)}</table>{note}"


def _all_marks(report: StageReport, ops) -> set[str]:
    return {mark for op in ops for mark in stage_marks(report, op).values()}


def _error_html(sentence: str, error, same: bool = False) -> str:
    """torch's message after where it raised, wrapped; in full on demand. ``same``: eager's message again."""
    message = "the same message as eager's" if same else f"{error.type_name}: {error.message}"
    return (f"<p style='color:{COLOURS['bad']};margin:4px 0'><b>{html.escape(sentence)}:</b> "
            f"{html.escape(message)}</p>"
            f"<details><summary>torch's full message</summary><pre style='{_PRE}'>{html.escape(error.full)}</pre>"
            "</details>")


def _headline_html(tone: str, sentence: str) -> str:
    return f'<p style="color:{COLOURS[tone]};font-weight:bold;margin:4px 0">{html.escape(sentence)}</p>'


def to_html(report: StageReport, ops: list[str] | None = None, headline: tuple[str, str] | None = None) -> str:
    """The report as HTML: the experiment, what happened, the table, and the code of every stage that made some.
    Wraps long lines itself (a widget's HTML does not wrap by default). ``headline`` (a tone and a sentence, as
    :func:`lab_headline` gives) replaces the verdict's line: a lab speaks to what its op does."""
    _require_report(report, "render.to_html")
    ops = _ops_to_show(report, ops)
    verdict = ""
    if headline is not None:
        verdict = _headline_html(*headline)
    elif report.verdict is not None:
        verdict = _headline_html("ok" if report.verdict.agree else "bad", str(report.verdict))
    raised = [e for e in (report.eager_error, report.error) if e]
    errors = "".join(_error_html(sentence, error, same=i == 1 and error.message == raised[0].message)
                     for i, (sentence, error) in enumerate(zip(what_happened(report), raised)))
    code = "".join(
        f"<details{' open' if stage != 'dynamo' else ''}><summary>{CODE_TITLES[stage]}</summary>"
        f"<pre style='{_PRE}'>{_highlight(c, ops)}</pre></details>"
        for stage, c in stage_code(report).items())
    head = f"<p style='margin:4px 0'>{html.escape(head_line(report))}</p>"
    return (f"<div class='labkit-report' style='text-align:left;white-space:normal'>{head}{verdict}{errors}"
            f"{fate_table(report, ops)}{code}</div>")


class Shown:
    """Displays as HTML in a notebook and as the text summary anywhere else."""

    def __init__(self, report: StageReport, ops: list[str] | None = None):
        self.report, self.ops = report, ops

    def _repr_html_(self) -> str:
        return to_html(self.report, self.ops)

    def __repr__(self) -> str:
        return summary(self.report, self.ops)


def show(report: StageReport, ops: list[str] | None = None) -> Shown:
    """Use as the last line of a cell: ``labkit.show(report)``. Checks its arguments now, not when
    Jupyter draws it (an error there would be a formatter traceback)."""
    _require_report(report, "show")
    _ops_to_show(report, ops)
    return Shown(report, ops)


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def lab_headline(report: StageReport, op_name: str, side_effect: bool = False) -> tuple[str, str]:
    """A lab's headline for one state, as (tone, sentence): what a user of the compiled function could observe.

    Outputs and inputs (the verdict), a stage that raised, and, for an op whose kernel has a Python side effect
    (``side_effect``: the lab's catalogue says which), how many times it ran: a side effect that ran a different
    number of times compiled is a difference even where outputs and inputs agree, so it is never green. A pure op
    whose unused result is removed as dead code is no difference a caller can observe: green, and said.
    """
    _require_report(report, "render.lab_headline")
    if report.verdict is None:   # only where torch raised: compile_and_compare compares every run that finished
        runs = [run for run, error in (("eagerly", report.eager_error), ("compiled", report.error)) if error]
        return "bad", f"torch raised ({_and(runs)}), so there are no results to compare: where and why below"
    if not report.verdict.agree:
        return "bad", str(report.verdict)
    eager, compiled = report.eager_calls.get(op_name, 0), report.compiled_calls.get(op_name, 0)
    if side_effect and eager != compiled:
        what = "is lost" if compiled < eager else "ran more often than in eager"
        return "bad", (f"outputs and inputs agree, but the op's Python side effect {what}: its kernel ran "
                       f"{_times(eager)} eagerly and {_times(compiled)} compiled")
    said = str(report.verdict)
    if side_effect:
        return "ok", f"{said}; the op's Python side effect ran {_times(eager)}, as in eager"
    if compiled == 0 < eager and REMOVED in stage_marks(report, op_name).values():
        return "ok", (f"{said}; the op's kernel was removed as dead code (its result is unused): nothing a caller "
                      "can observe")
    return "ok", said


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


def changes_html(controls: list[tuple[str, object, object]], before: dict[str, str] | None,
                 after: dict[str, str]) -> str:
    """One line: which controls changed since the previous state, and which facts changed with them."""
    if before is None or not controls:
        return ""
    flipped = ", ".join(f"{name} {old!s} → {new!s}" for name, old, new in controls)
    moved = [f"{html.escape(key)}: {html.escape(before[key])} → <b>{html.escape(value)}</b>"
             for key, value in after.items() if key in before and before[key] != value]
    said = "; ".join(moved) if moved else "nothing else changed"
    return (f"<div style='white-space:normal;border-left:4px solid #e6a700;background:#fff8e1;padding:3px 8px;"
            f"margin:4px 0'><b>Since the previous state</b> ({html.escape(flipped)}): {said}.</div>")


def naming_html(result, story: str, link: tuple[str, str] | None = None) -> str:
    """The naming experiment's table: each step's declaration, what its handle reports, kernel runs, x, the cache;
    then the story. ``link`` (words, href): where the story names a lesson in those words, they link to it."""
    hit = f"<b style='color:{COLOURS['bad']}'>hit: reused</b>"
    rows = "".join(
        f"<tr><td style='{_CELL}'>{i + 1}. declare <code>{html.escape(s.name)}</code> as <b>{s.declared}</b>, "
        f"compile</td><td style='{_CELL}'><code>{html.escape(s.schema_now)}</code></td>"
        f"<td style='{_NUMBER}'>{s.kernel_calls}</td><td style='{_CELL}'>{s.x_after} (eager {s.x_after_eager})</td>"
        f"<td style='{_CELL}'>{hit if s.stale else 'miss: compiled'}</td></tr>"
        for i, s in enumerate(result.steps))
    heads = ("step", "this step's handle reports now", "kernel runs", "x after the compiled call", "FX/AOT cache")
    head = "".join(f"<th style='{_CELL};text-align:{'right' if h == 'kernel runs' else 'left'}'>{h}</th>"
                   for h in heads)
    return (f"<div style='white-space:normal'><p style='margin:4px 0'>The kernel always adds 1 to <code>x</code> "
            f"(zeros); only the declaration changes. Cache policy <code>{html.escape(result.policy)}</code>, in a "
            f"fresh cache directory.</p><table style='border-collapse:collapse;margin:4px 0'><tr>{head}</tr>{rows}"
            f"</table><p style='margin:4px 0'>{_linked(story, link)}</p></div>")


def _linked(text: str, link: tuple[str, str] | None) -> str:
    """``text`` as HTML, its first mention of ``link``'s words a link to its href (split before escaping, so the
    words are never matched inside an escaped character)."""
    if link is None or link[0] not in text:
        return html.escape(text)
    before, words, after = text.partition(link[0])
    return (html.escape(before) + f"<a href='{html.escape(link[1])}' target='_blank' "
            f"style='color:#0645ad;text-decoration:underline'>{html.escape(words)}</a>" + html.escape(after))


_FILL = {"ok": "#c8ecd2", "bad": "#f8c9cf", "warn": "#fde9c4", "muted": "#e6e6e6"}


def draw_fate(report: StageReport, op_name: str, ax=None, title: bool = True):
    """A picture of the op's path through the stages, with the marks the table uses (kept, removed, …)."""
    import matplotlib.pyplot as plt

    _require_report(report, "draw_fate")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 1.6))
    marks = stage_marks(report, op_name)
    ran = ran_mark(report, op_name)
    boxes = [(_PICTURE_TITLES[s], marks[s], TONES[marks[s]]) for s in marks]
    boxes.append((_PICTURE_TITLES["ran"], ran, RAN_TONES[ran]))
    for i, (label, word, tone) in enumerate(boxes):
        ax.add_patch(plt.Rectangle((i * 2.5, 0), 2.1, 1, facecolor=_FILL[tone], edgecolor="#555"))
        ax.text(i * 2.5 + 1.05, 0.68, label, ha="center", va="center", fontsize=9)
        ax.text(i * 2.5 + 1.05, 0.25, _PICTURE_WORDS.get(word, word), ha="center", va="center",
                fontsize=10 if word not in _PICTURE_WORDS else 8, weight="bold")
        if i:
            ax.annotate("", xy=(i * 2.5, 0.5), xytext=(i * 2.5 - 0.4, 0.5),
                        arrowprops=dict(arrowstyle="->", color="#555"))
    ax.set_xlim(-0.1, len(boxes) * 2.5)
    ax.set_ylim(-0.1, 1.1)
    ax.axis("off")
    if title:
        ax.set_title(f"{op_name}  (backend={report.backend}, dynamic={report.dynamic})", fontsize=10)
    return ax


_FATE_PNGS: dict[tuple, str] = {}


def fate_picture_html(report: StageReport, op_name: str) -> str:
    """:func:`draw_fate`'s picture as an HTML image (a widget shows it so); cached by what it shows."""
    import base64
    import io

    import matplotlib.pyplot as plt

    key = (tuple(stage_marks(report, op_name).values()), ran_mark(report, op_name))
    if key not in _FATE_PNGS:
        ax = draw_fate(report, op_name, title=False)
        buffer = io.BytesIO()
        ax.figure.savefig(buffer, format="png", dpi=72, bbox_inches="tight")
        plt.close(ax.figure)
        _FATE_PNGS[key] = base64.b64encode(buffer.getvalue()).decode()
    alt = html.escape(", ".join(f"{STAGE_NAMES[s]} {m}" for s, m in zip(STAGE_NAMES, key[0])) + f", ran {key[1]}")
    return f"<img alt='{alt}' title='{alt}' src='data:image/png;base64,{_FATE_PNGS[key]}' style='max-width:100%'>"


# --- an audit's report: labkit.auditing finds, this draws ------------------------------------------------


def audit_html(report) -> str:
    """A :class:`labkit.auditing.AuditReport` as a notebook shows it: a table of the findings (check, problem, why,
    fix, what torch.compile did), or "no problems found"; then what the audit cannot see."""
    rows = "".join(f"<tr><td><code>{html.escape(f.check)}</code></td><td>{html.escape(f.problem)}</td>"
                   f"<td>{html.escape(f.why)}</td><td>{html.escape(f.fix)}</td>"
                   f"<td>{html.escape(f.compiled)}</td></tr>" for f in report.findings)
    verdict = ("<p style='color:#1b7f3b'><b>no problems found</b></p>" if report.ok else
               "<table><tr><th>check</th><th>problem</th><th>why it matters</th><th>fix</th>"
               f"<th>seen under torch.compile</th></tr>{rows}</table>")
    return (f"<div><p>audit of <code>{html.escape(report.schema)}</code>: {len(report.checks_run)} checks</p>"
            f"{verdict}<p><i>not checkable here: {html.escape(report.cannot_see)}</i></p></div>")


# --- the widgets' views: labkit.widgets wires controls, these draw -----------------------------------------

COMPILING_HTML = "<i>⏳ compiling this state for the first time…</i>"
COMPUTED_NOW_HTML = "<i>computed now (seen states come back instantly)</i>"
INTERRUPTED_HTML = ("<p style='color:#b00020'><b>Interrupted</b> (Ctrl-C / the stop button) before "
                    "this state finished compiling: change a control to compute again.</p>")


def lab_heading_html(title: str) -> str:
    """A widget's title line, as its static view shows it too."""
    return f"<p><b>{html.escape(title)}</b></p>"


def could_not_compute_html(error: BaseException) -> str:
    """What a widget shows instead of a view when its experiment raised: the error in one line, cut at 500."""
    return (f"<p style='color:#b00020'><b>labkit could not compute this state</b>: "
            f"{html.escape(type(error).__name__)}: {html.escape(str(error)[:500])}</p>")


def static_view_html(title: str, described: str, view_html: str) -> str:
    """A widget as a page without a kernel shows it (nbviewer, GitHub): its title, the state, the last view."""
    return (f"<div><p><b>{html.escape(title)}</b> (static view of: "
            f"{html.escape(described)}; run the notebook to use the controls)</p>"
            f"{view_html}</div>")


def declaration_view_html(declaration: str, meaning: str, schema: str, report: StageReport, op_name: str) -> str:
    """The declaration lab's view: the declaration and its schema, the program, the op's fate and the report (its
    headline :func:`lab_headline`'s: the kernels write ``x``, which the verdict compares; no other side effect)."""
    return (f"<div style='white-space:normal'><p style='margin:4px 0'><b>{html.escape(declaration)}</b>: the "
            f"kernel {html.escape(meaning)}.<br>schema: <code>{html.escape(schema)}</code><br>"
            f"<code>def step(x): out = op(x); return x * 2 if out is None else x + out</code></p>"
            + fate_picture_html(report, op_name) + to_html(report, [op_name], lab_headline(report, op_name))
            + "</div>")


def name_refused_html(problem: str) -> str:
    """The naming lab's view of a name it cannot use: the one sentence saying why."""
    return f"<p style='color:#b00020'><b>That name cannot be used:</b> {html.escape(problem)}</p>"


def dce_view_html(schema: str, op_name: str, report: StageReport, side_effect: bool = False) -> str:
    """The dynamic-shapes and DCE lab's view: the program, the graphs per call and their shapes, the op's fate;
    ``side_effect``: the op's kernel has a Python side effect (see :func:`lab_headline`)."""
    sizes = " | ".join(", ".join(g.input_shapes) for g in report.dynamo_graphs)
    return (f"<div style='white-space:normal'><p style='margin:4px 0'><code>def unused_result(x): op(x); "
            f"return x + 1</code>: the op's result is never used.<br>schema <code>{html.escape(schema)}</code>"
            f"<br>graphs compiled per call: <b>{report.graphs_per_call}</b> (recompiles: {report.recompiles}); "
            f"input shapes each graph was built for: <code>{html.escape(sizes or 'none')}</code></p>"
            + fate_picture_html(report, op_name)
            + to_html(report, [op_name], lab_headline(report, op_name, side_effect)) + "</div>")


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def inductor_kernel_calls(code: str) -> list[str]:
    """The lines of Inductor's ``call()`` that launch work: generated kernels and op calls."""
    calls = []
    for line in inductor_call(code).splitlines():
        line = line.strip()
        if re.match(r"(cpp_fused_\w+|triton_\w+\.run|torch\.ops\.\w+\.\w+\.\w+|extern_kernels\.\w+)\(", line) \
                or re.match(r"\w+ = (torch\.ops|extern_kernels)\.", line):
            calls.append(re.sub(r"\(.*", "(…)", re.sub(r"^\w+ = ", "", line)))
    return calls


def _node_label(node) -> str:
    if node.op in ("placeholder", "output"):
        return f"{node.op}: {node.name}"
    if node.custom_op and node.wrapper:
        return f"{node.wrapper}({node.custom_op})"
    return node.custom_op or node.target


def draw_stages(report: StageReport, op_name: str | None = None, figsize=(11, 3.6)):
    """Each stage's steps as a column of boxes; ``op_name``'s node in yellow, writes in red."""
    import matplotlib.pyplot as plt

    _require_report(report, "render.draw_stages")
    if op_name is not None:
        split_qualname(op_name)
    columns = []
    if report.dynamo_graphs:
        columns.append(("Dynamo graph", [_node_label(n) for n in report.dynamo_graphs[0].nodes],
                        [n for n in report.dynamo_graphs[0].nodes]))
    if report.aot_graphs:
        columns.append(("AOTAutograd graph", [_node_label(n) for n in report.aot_graphs[0].nodes],
                        [n for n in report.aot_graphs[0].nodes]))
    if report.inductor_code:
        lines = inductor_kernel_calls(report.inductor_code[0])
        columns.append(("Inductor call()", lines or ["(no kernel calls)"], [None] * max(len(lines), 1)))
    fig, axes = plt.subplots(1, max(len(columns), 1), figsize=figsize, squeeze=False)
    namespace_dot = op_name.replace("::", ".") if op_name else None
    for ax, (title, labels, nodes) in zip(axes[0], columns):
        n = len(labels)
        for i, (label, node) in enumerate(zip(labels, nodes)):
            y = n - i
            is_op = bool(op_name) and ((node is not None and node.custom_op == op_name)
                                       or (node is None and namespace_dot in label))
            writes = node is not None and node.mutating
            face = "#ffe08a" if is_op else "#eeeeee" if node is not None and node.op in ("placeholder", "output") \
                else "white"
            ax.add_patch(plt.Rectangle((0, y - 0.3), 1, 0.6, facecolor=face,
                                       edgecolor="#b00020" if writes else "#777", linewidth=2 if writes else 1))
            ax.text(0.5, y, label if len(label) <= 46 else label[:45] + "…", ha="center", va="center", fontsize=7.5)
            if i:
                ax.annotate("", xy=(0.5, y + 0.3), xytext=(0.5, y + 0.7), arrowprops=dict(arrowstyle="->"))
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(0.4, max(n, 1) + 0.6)
        ax.axis("off")
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


DIFF_LINES = 12   # the plain-text view cuts a longer difference, and says how to see it whole


def _gpu_recording_parts(status: recordings.Status, lacks: str) -> tuple[list[str], list[str], list[str]]:
    """(what the label says, what the recording printed, how the recorded code differs) for a GPU cell."""
    said = [f"This kernel lacks {lacks}, so this cell did not run here."]
    rec = status.recording
    if status.kind == "none":
        unreadable = recordings.problems()
        return said + ["No GPU recording of this cell exists yet: what it shows is unverified until it runs on a "
                       "GPU (a Colab GPU runtime will do)." + (f" ({'; '.join(unreadable)}.)" if unreadable else "")
                       ], [], []
    if status.kind == "current":
        said.append(f"Recorded from this code on {rec.where()}, it printed:")
    elif status.kind == "unchecked":
        said.append(f"Recorded on {rec.where()}, but this kernel's code cannot be compared with the code it ran: "
                    f"{'; '.join(status.changes)}. It printed:")
    else:
        said.append(f"Recorded on {rec.where()} for an earlier version of this code: since then, "
                    f"{_and(status.changes)}. What that code printed:")
    return said, rec.output.rstrip("\n").splitlines(), list(status.diff)


def gpu_recording_text(status: recordings.Status, lacks: str = "a CUDA GPU and Triton") -> str:
    """What a GPU cell shows in a kernel without a GPU: its recording, labelled with how it relates to this code.

    Never passes a recording off as this kernel's output: the first line says the cell did not run here;
    the second says which code the recording ran (this cell's, an earlier version's, or none yet).
    """
    said, printed, diff = _gpu_recording_parts(status, lacks)
    lines = said + ["    " + line for line in printed]
    if diff:
        lines += ["How the recorded code differs (- recorded, + this kernel's):",
                  *("    " + line for line in diff[:DIFF_LINES])]
        if len(diff) > DIFF_LINES:
            lines.append(f"    ... {len(diff) - DIFF_LINES} more lines: "
                         f"labkit.recordings.load()[{status.title!r}].code has the recorded code whole.")
    return "\n".join(lines)


def gpu_recording_html(status: recordings.Status, lacks: str = "a CUDA GPU and Triton") -> str:
    """The same as :func:`gpu_recording_text`, with the code's difference folded away under a summary line."""
    said, printed, diff = _gpu_recording_parts(status, lacks)
    pre = "margin:0.3em 0 0.3em 1.5em;padding:0.4em;background:#f6f6f6;white-space:pre-wrap"
    parts = ["<div class='lab-gpu-recording' style='border-left:3px solid #888;padding-left:0.6em'>",
             *(f"<div>{html.escape(line)}</div>" for line in said)]
    if printed:
        parts.append(f"<pre style='{pre}'>{html.escape(chr(10).join(printed))}</pre>")
    if diff:
        changed = sum(1 for line in diff if line[:1] in "+-")
        parts.append(f"<details><summary>How the recorded code differs ({changed} changed lines; - recorded, "
                     f"+ this kernel's)</summary><pre style='{pre}'>{html.escape(chr(10).join(diff))}</pre></details>")
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
