"""Turn a :class:`~labkit.stages.StageReport` into text and HTML, and an audit's report into HTML.

It only presents what the core found, so the same report looks the same in a notebook, a widget,
a test or a terminal: one set of marks (kept, removed, …) and tones, which the pictures share.

Not here: computing anything about torch (the core does), figures (:mod:`labkit.pictures`: this module draws
none), each lab's panel and a GPU cell's recording (:mod:`labkit.views`), and controls (:mod:`labkit.widgets`).
"""

from __future__ import annotations

import html
import re

import torch

from .language import Said, said, said_together, say, say_html
from .ops import split_qualname
from .stages import StageReport

STAGES = (("dynamo", "Dynamo graph"), ("aot", "AOTAutograd graph"), ("inductor", "Inductor code"),
          ("ran", "kernel ran"))
CODE_TITLES = {**dict(STAGES), "backward": "AOTAutograd backward graph"}


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
RAN_TONES = {"yes": "ok", "no": "bad", "—": "muted", RAN_THEN_RAISED: "bad", RAISED_AT_RUN_TIME: "bad"}
TONES = {KEPT: "ok", REMOVED: "bad", RAISED: "bad", NOT_REACHED: "muted", NOT_USED: "muted", NO_GRAPH: "muted",
         OUTSIDE: "warn"}
RUNS_NOTE = "kernel runs: the real kernel's calls, counted inside it, over all calls"
FULL_MESSAGE = "torch's full message"
ORDINALS = ("the first call (inputs of shape {shape})", "the second call (inputs of shape {shape})",
            "the third call (inputs of shape {shape})", "the fourth call (inputs of shape {shape})",
            "the fifth call (inputs of shape {shape})")
# The words this module shows, each said in the language labkit speaks where it is shown (labkit.language); the
# marks and titles above stay what the code compares and tests read.
WORDS = (*STAGE_NAMES.values(), *TONES, *RAN_TONES, *CODE_TITLES.values(), "REMOVED", "NO", "op",
         "kernel runs, eager", "kernel runs, compiled", "Inductor code")


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
    shape = say(report.shapes[index]) if index < len(report.shapes) else "?"
    if index < len(ORDINALS):
        return say(ORDINALS[index], shape=shape or say("none"))
    return say("call number {number} (inputs of shape {shape})", number=index + 1, shape=shape or say("none"))


def what_happened(report: StageReport) -> list[str]:
    """One clause per run that torch stopped: where it raised, on which call. torch's message follows each."""
    said = []
    if report.eager_error:
        said.append(say("Eager: torch raised on {call}", call=call_name(report, report.eager_error.call)))
    error = report.error
    if error:
        done = [STAGE_NAMES[s] for s in report.stages() if report.made(s)]
        where = call_name(report, error.call)
        if error.raised_in == "run time":
            said.append(say("torch.compile: traced by {stages}, then torch raised at run time, on {call}",
                            stages=say(said_together(done)), call=where))
        elif error.raised_in == "Dynamo" or not done:
            said.append(say("torch.compile: torch raised while Dynamo traced {call}, so no graph went further",
                            call=where))
        else:
            said.append(say("torch.compile: traced by {stages}, then torch raised in {stage}, on {call}",
                            stages=say(said_together(done)), stage=error.raised_in, call=where))
    return said


def fate_line(report: StageReport, op_name: str) -> str:
    """One line: the op's mark at each stage and whether its kernel ran, in the language labkit speaks."""
    marks = stage_marks(report, op_name)
    ran = ran_mark(report, op_name)
    if OUTSIDE in marks.values():
        return say("{op}: in no graph (a graph break: Dynamo ran it eagerly) · kernel ran: {ran}", op=op_name,
                   ran=say(ran))
    words = {stage: (say("REMOVED") if mark == REMOVED else "—" if mark in (NOT_USED, NO_GRAPH) else say(mark))
             for stage, mark in marks.items()}
    return say("{op}: Dynamo {dynamo} · AOT {aot} · Inductor {inductor} · kernel ran: {ran}", op=op_name,
               **words, ran=say("NO") if ran == "no" else say(ran))


def require_report(report, caller: str) -> None:
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
    return say("backend={backend} · dynamic={dynamic} · calls on inputs of shape {shapes} · graphs compiled per "
               "call {per_call}", backend=report.backend, dynamic=report.dynamic,
               shapes=say(" then ").join(say(shape) for shape in report.shapes), per_call=report.graphs_per_call)


def summary(report: StageReport, ops: list[str] | None = None) -> str:
    """A few lines: the experiment, the verdict or where torch raised, kernel runs, each op's fate."""
    require_report(report, "summary")
    ops = _ops_to_show(report, ops)
    lines = [head_line(report)]
    for sentence, error in zip(what_happened(report), [e for e in (report.eager_error, report.error) if e]):
        lines.append(f"{sentence}: {error.type_name}: {error.message}")
    if report.verdict:
        lines.append(("✔ " if report.verdict.agree else "✘ ") + str(report.verdict))
    for op in ops:
        lines.append(say("{op}: kernel runs eager {eager}, compiled {compiled}", op=op,
                         eager=report.eager_calls.get(op, 0), compiled=report.compiled_calls.get(op, 0)))
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
        return said("`{op}` was redeclared or dropped after this function was defined (a setup cell run again drops "
                    "it): run again the cell that declares `{op}`, then this one.", op=stale.group(1))
    first = (error.message.strip().splitlines() or [""])[0]
    return said("torch raised {error} (eager): {message}" if error is report.eager_error else
                "torch raised {error} (compiled): {message}", error=error.type_name, message=first)


def outcome(report: StageReport) -> str:
    """What a compile came to, in a few words: ``"correct"``, ``"silently wrong"`` (no error, a different answer),
    ``"error in eager (<kind>)"`` or ``"error when compiling (<kind>)"``, the kind as :class:`TorchError` names it."""
    require_report(report, "render.outcome")
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
            raise NoStageCode(say("No {title}: {why}", title=say(title), why=carried))
        made = ", ".join(repr(s) for s in self) or say("none")
        why = (say("the backend {backend} has no {stage} stage", backend=repr(report.backend),
                   stage=STAGE_NAMES.get(stage, stage))
               if stage in STAGE_NAMES and stage not in report.stages() else say("this experiment made no such code"))
        raise NoStageCode(say("No {title} for this report ({why}); it has: {made}.", title=say(title), why=why,
                              made=made))


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
    require_report(report, "text")
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
CELL_STYLE = "padding:3px 10px;border-bottom:1px solid #ddd"
NUMBER_STYLE = CELL_STYLE + ";text-align:right;font-variant-numeric:tabular-nums"
_PRE = ("font-family:monospace;font-size:11px;white-space:pre-wrap;word-break:break-all;text-align:left;"
        "margin:4px 0;padding:6px;background:#f7f7f7")


def mark_tone(mark: str, removal: str = "bad") -> str:
    """A stage's mark's tone. ``removal`` is the tone of "removed" and of a kernel that did not run ("no"): a removal
    is the bug where the panel's headline is red (a write lost, a side effect lost), and no difference a caller can
    observe where it is green (dead code), so a panel gives its headline's tone: one tone for the whole panel."""
    return removal if mark in (REMOVED, "no") else {**TONES, **RAN_TONES}[mark]


def removal_tone(report: StageReport, headline: tuple[str, str] | None = None) -> str:
    """The tone a removal takes in a panel: its headline's (``headline``, as :func:`labkit.views.lab_headline`
    gives, which weighs a lost Python side effect too); "bad" without one, since the verdict compares outputs and
    inputs only, and an op removed with its side effect would read as harmless."""
    return "bad" if headline is None else headline[0]


def _mark_cell(mark: str, span: int = 1, removal: str = "bad") -> str:
    tone = mark_tone(mark, removal)
    weight = "bold" if tone in ("bad", "warn") else "normal"
    return (f'<td style="{CELL_STYLE};color:{COLOURS[tone]};font-weight:{weight}"'
            f'{f" colspan={span}" if span > 1 else ""}>{html.escape(say(mark))}</td>')


def fate_table(report: StageReport, ops: list[str], removal: str = "bad") -> str:
    """Kernel runs (eager, compiled) and the op's mark at each stage, one row per op, columns aligned; "removed" in
    the ``removal`` tone (:func:`removal_tone`)."""
    heads = ["op", "kernel runs, eager", "kernel runs, compiled", "Dynamo graph", "AOTAutograd graph", "Inductor code"]
    rows = []
    for op in ops:
        marks = stage_marks(report, op)
        cells = (_mark_cell(OUTSIDE, 3) if OUTSIDE in marks.values()
                 else "".join(_mark_cell(marks[s], removal=removal) for s in marks))
        rows.append(f'<tr><td style="{CELL_STYLE}"><code>{html.escape(op)}</code></td>'
                    f'<td style="{NUMBER_STYLE}">{report.eager_calls.get(op, 0)}</td>'
                    f'<td style="{NUMBER_STYLE}">{report.compiled_calls.get(op, 0)}</td>{cells}</tr>')
    # a heading wraps at its spaces only: Chinese may break between any two characters ("Inductor 代 / 码"); on one
    # line (nowrap), the table outgrows a widget's panel
    head = "".join(f'<th style="{CELL_STYLE};word-break:keep-all;text-align:{"right" if "runs" in h else "left"}">'
                   f'{html.escape(say(h))}</th>' for h in heads)
    unused = (say("not used: this backend stops before that stage") + " · "
              if NOT_USED in _all_marks(report, ops) else "")
    note = (f"<p style='color:{COLOURS['muted']};font-size:90%;margin:2px 0'>{html.escape(unused)}"
            f"{html.escape(say(RUNS_NOTE))}</p>")
    return f"<table style='border-collapse:collapse;margin:4px 0'><tr>{head}</tr>{''.join(rows)}</table>{note}"


def _all_marks(report: StageReport, ops) -> set[str]:
    return {mark for op in ops for mark in stage_marks(report, op).values()}


def _error_html(sentence: str, error, same: bool = False) -> str:
    """torch's message after where it raised, wrapped; in full on demand. ``same``: eager's message again."""
    message = say("the same message as eager's") if same else f"{error.type_name}: {error.message}"
    return (f"<p style='color:{COLOURS['bad']};margin:4px 0'>"
            + say_html("{sentence}: {message}", sentence=f"<b>{html.escape(sentence)}</b>",
                       message=html.escape(message))
            + f"</p><details><summary>{html.escape(say(FULL_MESSAGE))}</summary>"
            f"<pre style='{_PRE}'>{html.escape(error.full)}</pre></details>")


def _headline_html(tone: str, sentence: str) -> str:
    shown = say(sentence) if isinstance(sentence, Said) else sentence   # a caller's own sentence, as it is
    return f'<p style="color:{COLOURS[tone]};font-weight:bold;margin:4px 0">{html.escape(shown)}</p>'


def to_html(report: StageReport, ops: list[str] | None = None, headline: tuple[str, str] | None = None) -> str:
    """The report as HTML: the experiment, what happened, the table, and the code of every stage that made some.
    Wraps long lines itself (a widget's HTML does not wrap by default). ``headline`` (a tone and a sentence, as
    :func:`labkit.views.lab_headline` gives) replaces the verdict's line: a lab speaks to what its op does."""
    require_report(report, "render.to_html")
    ops = _ops_to_show(report, ops)
    verdict = ""
    if headline is not None:
        verdict = _headline_html(*headline)
    elif report.verdict is not None:
        verdict = _headline_html("ok" if report.verdict.agree else "bad", report.verdict.said())
    raised = [e for e in (report.eager_error, report.error) if e]
    errors = "".join(_error_html(sentence, error, same=i == 1 and error.message == raised[0].message)
                     for i, (sentence, error) in enumerate(zip(what_happened(report), raised)))
    code = "".join(
        f"<details{' open' if stage != 'dynamo' else ''}><summary>{html.escape(say(CODE_TITLES[stage]))}</summary>"
        f"<pre style='{_PRE}'>{_highlight(c, ops)}</pre></details>"
        for stage, c in stage_code(report).items())
    head = f"<p style='margin:4px 0'>{html.escape(head_line(report))}</p>"
    return (f"<div class='labkit-report' style='text-align:left;white-space:normal'>{head}{verdict}{errors}"
            f"{fate_table(report, ops, removal_tone(report, headline))}{code}</div>")


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
    require_report(report, "show")
    _ops_to_show(report, ops)
    return Shown(report, ops)


# --- an audit's report: labkit.auditing finds, this draws ------------------------------------------------


def audit_html(report) -> str:
    """A :class:`labkit.auditing.AuditReport` as a notebook shows it: a table of the findings (check, problem, why,
    fix, what torch.compile did), or "no problems found"; then what the audit cannot see."""
    rows = "".join(f"<tr><td><code>{html.escape(f.check)}</code></td><td>{html.escape(f.problem)}</td>"
                   f"<td>{html.escape(f.why)}</td><td>{html.escape(f.fix)}</td>"
                   f"<td>{html.escape(f.compiled)}</td></tr>" for f in report.findings)
    heads = "".join(f"<th>{html.escape(say(head))}</th>" for head in AUDIT_COLUMNS)
    verdict = (f"<p style='color:#1b7f3b'><b>{html.escape(say('no problems found'))}</b></p>" if report.ok else
               f"<table><tr>{heads}</tr>{rows}</table>")
    title = say_html("audit of {schema}: {count} checks", schema=f"<code>{html.escape(report.schema)}</code>",
                     count=len(report.checks_run))
    unseen = html.escape(say("not checkable here: {what}", what=report.cannot_see))
    return f"<div><p>{title}</p>{verdict}<p><i>{unseen}</i></p></div>"


# The columns of an audit's table: its frame is said in the language labkit speaks; the findings themselves, the
# sentences of labkit/auditing, are English still (docs/maintaining.md says why).
AUDIT_COLUMNS = ("check", "problem", "why it matters", "fix", "seen under torch.compile")


def inductor_kernel_calls(code: str) -> list[str]:
    """The lines of Inductor's ``call()`` that launch work: generated kernels and op calls."""
    calls = []
    for line in inductor_call(code).splitlines():
        line = line.strip()
        if re.match(r"(cpp_fused_\w+|triton_\w+\.run|torch\.ops\.\w+\.\w+\.\w+|extern_kernels\.\w+)\(", line) \
                or re.match(r"\w+ = (torch\.ops|extern_kernels)\.", line):
            calls.append(re.sub(r"\(.*", "(…)", re.sub(r"^\w+ = ", "", line)))
    return calls


def and_list(items) -> str:
    """"a", "a and b", "a, b and c"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
