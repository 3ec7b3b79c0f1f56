"""Turn a :class:`~labkit.stages.StageReport` into text, HTML and pictures.

Nothing here computes anything about torch: it only presents what the core found,
so the same report looks the same in a notebook, a widget, a test or a terminal.
"""

from __future__ import annotations

import html
import re

import torch

from . import recordings
from .stages import StageReport, split_qualname

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


def fate_line(report: StageReport, op_name: str) -> str:
    marks = {True: "kept", False: "REMOVED", None: "—"}
    fate = report.fate(op_name)
    if ran_outside_graphs(fate):
        return f"{op_name}: in no graph (a graph break: Dynamo ran it eagerly) · kernel ran: yes"
    ran = {True: "yes", False: "NO", None: "—"}[fate["ran"]]
    return (f"{op_name}: Dynamo {marks[fate['dynamo']]} · AOT {marks[fate['aot']]} · "
            f"Inductor {marks[fate['inductor']]} · kernel ran: {ran}")


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


def summary(report: StageReport, ops: list[str] | None = None) -> str:
    """A few lines: the experiment, the verdict, kernel calls, each op's fate."""
    _require_report(report, "summary")
    ops = _ops_to_show(report, ops)
    lines = [f"backend={report.backend}  dynamic={report.dynamic}  inputs: {' | '.join(report.shapes)}"]
    if report.eager_error:
        lines.append(f"eager raised {report.eager_error.type_name}: {report.eager_error.message}")
    if report.error:
        lines.append(f"torch.compile raised {report.error.type_name}: {report.error.message}")
    if report.verdict:
        lines.append(("✔ " if report.verdict.agree else "✘ ") + str(report.verdict))
    lines.append(f"graphs compiled per call: {report.graphs_per_call}")
    for op in ops:
        lines.append(f"{op}: real kernel calls eager={report.eager_calls.get(op, 0)} "
                     f"compiled={report.compiled_calls.get(op, 0)}")
        if report.ok:
            lines.append("  " + fate_line(report, op))
    return "\n".join(lines)


def stage_code(report: StageReport) -> dict[str, str]:
    """Readable code for each stage that ran (graphs joined when Dynamo made several).

    ``"backward"`` is there only when the experiment ran ``.backward()`` (``backward=True``).
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
    return out


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


def to_html(report: StageReport, ops: list[str] | None = None) -> str:
    _require_report(report, "render.to_html")
    ops = _ops_to_show(report, ops)
    verdict = ""
    if report.verdict is not None:
        colour = "#1b7f3b" if report.verdict.agree else "#b00020"
        verdict = f'<p style="color:{colour};font-weight:bold">{html.escape(str(report.verdict))}</p>'
    errors = "".join(
        f'<p style="color:#b00020"><b>{label} raised {html.escape(e.type_name)}</b>: {html.escape(e.message)}</p>'
        for label, e in (("eager", report.eager_error), ("torch.compile", report.error)) if e)
    rows = "".join(
        f"<tr><td><code>{html.escape(op)}</code></td><td>{report.eager_calls.get(op, 0)}</td>"
        f"<td>{report.compiled_calls.get(op, 0)}</td>"
        + (_outside_cells() if report.ok and ran_outside_graphs(report.fate(op)) else
           "".join(_fate_cell(report.fate(op)[s]) if report.ok else "<td>—</td>" for s, _ in STAGES[:3]))
        + "</tr>" for op in ops)
    table = ("<table><tr><th>op</th><th>calls eager</th><th>calls compiled</th>"
             + "".join(f"<th>{t}</th>" for _, t in STAGES[:3]) + f"</tr>{rows}</table>")
    code = "".join(
        f"<details{' open' if stage != 'dynamo' else ''}><summary>{CODE_TITLES[stage]}</summary>"
        f"<pre style='font-family:monospace;font-size:11px;white-space:pre;text-align:left'>"
        f"{_highlight(c, ops)}</pre></details>"
        for stage, c in stage_code(report).items())
    head = (f"<p><code>backend={report.backend}</code> · <code>dynamic={report.dynamic}</code> · "
            f"inputs {html.escape(' | '.join(report.shapes))} · graphs per call {report.graphs_per_call}</p>")
    return f"<div class='labkit-report' style='text-align:left'>{head}{verdict}{errors}{table}{code}</div>"


def _outside_cells() -> str:
    return '<td colspan="3" style="color:#8a5a00"><b>in no graph: a graph break, ran eagerly</b></td>'


def _fate_cell(present: bool | None) -> str:
    if present is None:
        return "<td>—</td>"
    return "<td>kept</td>" if present else '<td style="color:#b00020"><b>removed</b></td>'


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


def draw_fate(report: StageReport, op_name: str, ax=None):
    """A picture of the op's path through the stages: kept (green) or removed (red)."""
    import matplotlib.pyplot as plt

    _require_report(report, "draw_fate")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 1.6))
    fate = report.fate(op_name)
    outside = ran_outside_graphs(fate)
    for i, (stage, _title) in enumerate(STAGES):
        present = fate[stage]
        colour = {True: "#c8ecd2", False: "#f8c9cf", None: "#e6e6e6"}[present]
        word = {True: "kept", False: "removed", None: "not run"}[present]
        if outside and stage != "ran":
            colour, word = "#fde9c4", "graph break"
        if stage == "ran":
            word = {True: "yes", False: "no", None: "—"}[present]
        ax.add_patch(plt.Rectangle((i * 2.5, 0), 2.1, 1, facecolor=colour, edgecolor="#555"))
        ax.text(i * 2.5 + 1.05, 0.68, _PICTURE_TITLES[stage], ha="center", va="center", fontsize=9)
        ax.text(i * 2.5 + 1.05, 0.25, word, ha="center", va="center", fontsize=10, weight="bold")
        if i:
            ax.annotate("", xy=(i * 2.5, 0.5), xytext=(i * 2.5 - 0.4, 0.5),
                        arrowprops=dict(arrowstyle="->", color="#555"))
    ax.set_xlim(-0.1, len(STAGES) * 2.5)
    ax.set_ylim(-0.1, 1.1)
    ax.axis("off")
    ax.set_title(f"{op_name}  (backend={report.backend}, dynamic={report.dynamic})", fontsize=10)
    return ax


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


def _and(phrases) -> str:
    phrases = list(phrases)
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


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
