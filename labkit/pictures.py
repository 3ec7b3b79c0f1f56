"""Pictures for the lessons, drawn with matplotlib from live data: a graph torch made, strides a tensor has,
calls a kernel counted. Never from numbers typed in: a picture is evidence of the run that drew it.

Every function returns a matplotlib ``Figure`` (:func:`png`, its bytes) and closes it from pyplot's list, so that a cell
ending in the call shows it exactly once (and a test can draw thousands without leaking memory). The look
is shared: one palette, one font size, boxes for values and arrows for what flows.

Not here: computing anything about torch (the core does; this module only draws what it is given), and
text or HTML (:mod:`labkit.render`, whose words and tones the stage pictures share; :mod:`labkit.views` embeds
:func:`draw_fate` in each lab's panel as a PNG).
"""

from __future__ import annotations

from .logs import call_steps
from .ops import split_qualname
from .render import (OUTSIDE, RAISED, RAISED_AT_RUN_TIME, RAN_THEN_RAISED, inductor_kernel_calls, mark_tone, ran_mark,
                     removal_tone, require_report, stage_code, stage_marks)

PALETTE = {"op": "#ffe08a", "input": "#dbe9ff", "output": "#d8f0d2", "write": "#b00020", "written": "#f8c9cf",
           "plain": "#f2f2f2", "removed": "#bbbbbb", "edge": "#555555", "blank": "#ffffff",   # then a mark's tone:
           "ok": "#c8ecd2", "bad": "#f8c9cf", "warn": "#fde9c4", "muted": "#e6e6e6"}   # labkit.render.mark_tone
FONT = 9


def figure(width: float, height: float):
    """A new figure and its axes, off, in the lab's style, not kept by pyplot (see the module docstring)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height))
    ax.axis("off")
    plt.close(fig)
    return fig, ax


def box(ax, x: float, y: float, text: str, kind: str = "plain", width: float = 1.6, height: float = 0.5):
    """A labelled box centred at (x, y); ``kind`` picks its colour from PALETTE."""
    import matplotlib.patches as patches

    written = kind == "write"       # what an op wrote: a light fill, a red edge, the text still readable
    face = PALETTE["written"] if written else PALETTE.get(kind, PALETTE["plain"])
    ax.add_patch(patches.FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                        boxstyle="round,pad=0.03", facecolor=face,
                                        edgecolor=PALETTE["write"] if written else PALETTE["edge"],
                                        linewidth=2 if written else 1))
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT, family="monospace")


def arrow(ax, start: tuple, end: tuple, label: str = "", color: str = PALETTE["edge"]):
    """An arrow from ``start`` to ``end``, with an optional label at its middle."""
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color=color, lw=1.2))
    if label:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2, label, ha="center", va="bottom",
                fontsize=FONT - 1, color=color)


# --- a mutating op on a view -------------------------------------------------------------------


def view_written_back(report, op_name: str, before, after):
    """The base, the view the op wrote, and the ``copy_`` back, as functionalization recorded them in the
    AOTAutograd graph of ``report`` (``_x_slice_start/_end``), with ``x``'s values before and after (eager)."""
    import re

    code = "\n".join(g.code for g in report.aot_graphs)
    found = re.search(r"_\w+_slice_start = (\d+), _\w+_slice_end = (\d+)", code)
    if found is None:
        raise ValueError(f"{op_name} is not called on a slice in this report's AOTAutograd graph")
    start, end = int(found.group(1)), int(found.group(2))
    before, after = [float(v) for v in before], [float(v) for v in after]
    fig, ax = figure(1.2 + 0.9 * len(before), 3.2)
    rows = ((2.4, "x (the base), before", before), (0.6, "the new base the op made", after))
    for y, label, values in rows:
        ax.text(-0.2, y, label, ha="right", va="center", fontsize=FONT)
        for i, value in enumerate(values):
            inside = start <= i < end
            box(ax, i * 0.9, y, f"{value:g}", "write" if inside and y < 1 else "op" if inside else "input",
                width=0.8, height=0.5)
    ax.annotate("", xy=(((start + end - 1) / 2) * 0.9, 0.9), xytext=(((start + end - 1) / 2) * 0.9, 2.1),
                arrowprops=dict(arrowstyle="->", color=PALETTE["write"], lw=1.5))
    ax.text(((start + end - 1) / 2) * 0.9 + 0.15, 1.5, f"{op_name} on x[{start}:{end}]", fontsize=FONT,
            color=PALETTE["write"], va="center")
    ax.text((len(before) - 1) * 0.9 / 2, -0.2, "then copy_(x, new base): x now holds the new values",
            ha="center", fontsize=FONT, color=PALETTE["edge"])
    ax.set_xlim(-3.2, len(before) * 0.9)
    ax.set_ylim(-0.5, 2.9)
    return fig


# --- what a compiled training step runs: the forward graph, what it saves, the backward graph ------------


def _computes(node) -> str:
    """What a graph node calls: the custom op's qualified name, else ``aten.<op>``."""
    return node.custom_op or "aten." + node.target.split(".")[0]


def forward_backward(forward, backward, op_name: str):
    """AOTAutograd's forward graph (each call, ``op_name`` highlighted), the values it saves for the backward
    (the backward graph's inputs, each with an arrow from the forward node that made it), and the backward
    graph's calls counted by op: from two :class:`labkit.graphs.GraphSnapshot`."""
    calls = [n for n in forward.nodes if n.op == "call_function"]
    made = {n.name: i for i, n in enumerate(calls)}
    saved = [n.name for n in backward.nodes if n.op == "placeholder"]
    counts: dict[str, int] = {}
    for n in backward.nodes:
        if n.op == "call_function":
            counts[_computes(n)] = counts.get(_computes(n), 0) + 1
    rows = max(len(calls), len(saved), 1)
    fig, ax = figure(10.5, 0.62 * rows + 1.6)
    top, middle = rows - 1, (rows - 1) / 2
    for x, title in ((0, "forward graph"), (4.3, "saved for the backward"), (8.4, "backward graph")):
        ax.text(x, top + 0.85, title, ha="center", fontsize=FONT + 1, weight="bold")
    for i, node in enumerate(calls):
        box(ax, 0, top - i, f"{node.name} = {_computes(node)}", "op" if node.custom_op == op_name else "plain",
            width=2.8)
    for j, name in enumerate(saved):
        note = " (incoming grad)" if name.startswith("tangents") else "" if name in made else " (an input)"
        box(ax, 4.3, top - j, name + note, "output" if note == " (incoming grad)" else "input", width=3.1)
        if name in made:
            arrow(ax, (1.4, top - made[name]), (2.75, top - j))
        arrow(ax, (5.85, top - j), (7.15, middle))
    listing = "\n".join(f"{what} ×{count}" for what, count in counts.items())
    height = max(rows - 0.4, 0.16 * len(counts) + 0.9)
    box(ax, 8.4, middle, f"{sum(counts.values())} calls:\n{listing}", "plain", width=2.5, height=height)
    in_forward, in_backward = sum(n.custom_op == op_name for n in calls), counts.get(op_name, 0)
    ax.text(4.3, min(-0.8, middle - height / 2 - 0.3), f"{op_name}: called {in_forward}× in the forward graph, "
            f"{in_backward}× in the backward graph", ha="center", fontsize=FONT, color=PALETTE["edge"])
    ax.set_xlim(-1.6, 9.8)
    ax.set_ylim(min(-1.1, middle - height / 2 - 0.6), top + 1.2)
    return fig


# --- what Inductor's generated code runs, step by step -------------------------------------------------

STEP_KINDS = {"op": "op", "kernel": "input", "alloc": "removed"}   # a custom op; Inductor's kernel; a new buffer


def inductor_steps(codes: dict):
    """One row per labelled piece of Inductor code (``{label: code}``): the steps its ``call`` function runs,
    left to right, as :func:`labkit.logs.call_steps` reads them: a custom op called by name (yellow), a kernel
    Inductor generated (blue), a buffer it allocates (grey)."""

    rows = {label: call_steps(code) for label, code in codes.items()}
    widest, step = max((len(steps) for steps in rows.values()), default=1), 3.4
    fig, ax = figure(2.4 + step * widest, 0.95 * len(rows) + 1.1)
    for r, (label, steps) in enumerate(rows.items()):
        y = -r * 0.95
        ax.text(-0.2, y, label, ha="right", va="center", fontsize=FONT, weight="bold")
        for i, (kind, text) in enumerate(steps):
            name, _, args = text.partition("(")
            box(ax, 1.7 + i * step, y, f"{name}\n({args}" if args else name, STEP_KINDS[kind], width=3.25,
                height=0.66)
            if i:
                arrow(ax, (1.7 + (i - 1) * step + 1.55, y), (1.7 + i * step - 1.55, y))
    legend = ("yellow: a custom op, called by name", "blue: a kernel Inductor generated",
              "grey: a buffer Inductor allocates")
    ax.text(0.15, -0.95 * len(rows) + 0.25, ("   ·   " if widest > 2 else "\n").join(legend), va="top",
            fontsize=FONT - 1, color=PALETTE["edge"])
    ax.set_xlim(-2.4, step * widest + 0.1)
    ax.set_ylim(-0.95 * len(rows) - (0.1 if widest > 2 else 0.5), 0.6)
    return fig


# --- what functionalization does to a mutating op, and the order Inductor runs an undeclared write in -------


def _call_label(node) -> str:
    """``name = target(args)`` for a graph node, the target without its overload (``mul.Tensor`` -> ``mul``);
    ``target(args)`` alone when the node is named after its target (``copy_``, ``auto_functionalized_v2``)."""
    target = node.target.split(".")[0]
    return f"{target}({node.args})" if node.name == target else f"{node.name} = {target}({node.args})"


def functionalized(report, op_name: str):
    """A mutating op before and after functionalization, from a report's first Dynamo graph (the call writes its
    input, as you wrote it) and first AOTAutograd graph (the wrapped call returns the new value; ``copy_`` writes
    it back). Calls of ``op_name`` are yellow, writes red-edged. A report that carries an error says it, in one
    sentence (:class:`labkit.render.NoStageCode`)."""

    stage_code(report)["aot"]           # no AOTAutograd graph: the sentence that says why
    columns = [(report.dynamo_graphs[0], "Dynamo graph: what you wrote"),
               (report.aot_graphs[0], "AOTAutograd graph: functional")]
    rows = [[n for n in graph.nodes if n.op == "call_function"] for graph, _ in columns]
    height = max(len(r) for r in rows)
    inputs = {n.name for graph, _ in columns for n in graph.nodes if n.op == "placeholder"}
    fig, ax = figure(13, 0.7 * height + 1.5)
    for c, ((_graph, title), calls) in enumerate(zip(columns, rows)):
        x = c * 5.6
        ax.text(x, height - 0.2, title, ha="center", fontsize=FONT + 1, weight="bold")
        for i, node in enumerate(calls):
            writes = node.mutating and not node.wrapper
            kind = "write" if writes else "op" if node.custom_op == op_name else "plain"
            box(ax, x, height - 1 - i, _call_label(node), kind, width=5.1)
            target = node.args.split(", ")[0]
            note = (f"writes {target}{', the input' if target in inputs else ''}" if writes else
                    "returns the new value, writes nothing" if node.wrapper else "")
            ax.text(x + (2.7 if c else -2.7), height - 1 - i, note, ha="left" if c else "right", va="center",
                    fontsize=FONT - 1, color=PALETTE["write"])
            if i:
                arrow(ax, (x, height - i - 0.25), (x, height - i - 0.72))
    writes = [sum(n.mutating and not n.wrapper for n in calls) for calls in rows]
    ax.text(2.8, -0.55, f"in-place writes in the graph: {writes[0]} on the left (the op), {writes[1]} on the right "
            "(the copy_ back into the input, at the end)", ha="center", fontsize=FONT, color=PALETTE["edge"])
    ax.set_xlim(-4.6, 10.6)
    ax.set_ylim(-0.9, height + 0.2)
    return fig


def _fits(label: str, limit: int = 40) -> str:
    """A lane's label within ``limit`` characters: without its ``name = `` when that is too long, then cut."""
    if len(label) > limit and " = " in label:
        label = label.split(" = ", 1)[1]
    return label if len(label) <= limit else label[: limit - 1] + "…"


def write_order(report, op_name: str, writes: str = "x"):
    """Two lanes: the order the program asks for (its Dynamo graph) and the order Inductor's ``call`` runs (its
    code, :func:`labkit.logs.call_steps`), from one report. The call of ``op_name`` (which writes ``writes``, the
    input: ``arg0_1`` in Inductor's code, or a copy of it) is red-edged; each step that reads the input is marked
    with whether it sees ``writes`` before or after the write."""

    stage_code(report)["inductor"]      # no Inductor code: the sentence that says why
    graph = report.dynamo_graphs[0]
    inputs = [n.name for n in graph.nodes if n.op == "placeholder"]
    eager = [(_fits(_call_label(n)), n.custom_op == op_name, any(i in n.args.split(", ") for i in inputs))
             for n in graph.nodes if n.op == "call_function"]
    short = op_name.replace("::", ".")
    compiled = [(_fits(text), text.startswith(short + "("), "arg0_1" in text)
                for kind, text in call_steps(report.inductor_code[0]) if kind != "alloc"]
    lanes = [("eager: the order you wrote", eager), ("compiled: the order Inductor runs", compiled)]
    width = max(len(steps) for _, steps in lanes)
    step = 4.6
    fig, ax = figure(2.6 + step * width, 3.4)
    for r, (title, steps) in enumerate(lanes):
        y = 1.8 - 1.7 * r
        ax.text(-0.3, y, title, ha="right", va="center", fontsize=FONT, weight="bold")
        written = False
        for i, (text, is_op, reads) in enumerate(steps):
            box(ax, 2.3 + step * i, y, text, "write" if is_op else "input" if reads else "plain", width=4.4)
            hits = is_op and (reads or r == 0)          # compiled: the op is handed x itself, not a copy
            note = (f"writes {writes}" if hits else f"writes a copy of {writes}" if is_op else
                    f"reads {writes} after the write" if reads and written else
                    f"reads {writes} before the write" if reads else "")
            ax.text(2.3 + step * i, y + 0.42, note, ha="center", fontsize=FONT - 1,
                    color=PALETTE["write"] if hits or (reads and written) else PALETTE["edge"])
            written = written or hits
            if i:
                arrow(ax, (2.3 + step * (i - 1) + 2.2, y), (2.3 + step * i - 2.2, y))
    verdict = "compiled == eager" if report.verdict and report.verdict.agree else \
        f"✘ {report.verdict.said() if report.verdict else None}"   # English: matplotlib finds no Chinese font
    ax.text(0.05, -0.75, verdict, fontsize=FONT, color=PALETTE["edge"])
    ax.set(xlim=(-3.4, step * width + 0.1), ylim=(-1.0, 2.6))
    return fig


# --- what the cache key sees of a changed declaration, with and without labkit's fingerprint ---------------


def _short_tag(tag: str) -> str:
    return repr(tag if len(tag) <= 22 else tag[:21] + "…") if tag else "'' (empty)"


def cache_keys(results: dict):
    """One row per :class:`labkit.naming.NamingResult` (``{label: result}``, e.g. one per cache policy): the two
    declarations as each compile saw them (the schema, and ``cache_key_tag``, which is part of every cache key),
    whether the tag changed between them, and what the second compile got: the cache's artifact or a fresh one."""
    fig, ax = figure(14.5, 1.4 * len(results) + 0.9)
    for r, (label, result) in enumerate(results.items()):
        y = -1.4 * r
        first, second = result.steps
        ax.text(-0.3, y, label, ha="right", va="center", fontsize=FONT, weight="bold")
        for x, step in ((2.8, first), (8.8, second)):
            box(ax, x, y, f"{step.declared}: {step.schema_now}\ncache_key_tag = {_short_tag(step.tag)}",
                "input" if step.declared == "pure" else "op", width=5.5, height=0.8)
        changed = first.tag != second.tag
        arrow(ax, (5.55, y), (6.05, y), color=PALETTE["edge"] if changed else PALETTE["write"])
        ax.text(5.8, y - 0.62, "tag changed:\na new key" if changed else "same tag:\nthe same key", ha="center",
                fontsize=FONT - 1, color=PALETTE["edge"] if changed else PALETTE["write"])
        ran = f"x = {second.x_after}, eager {second.x_after_eager}"
        verdict = f"cache hit: the old artifact\n{ran}" if second.stale else f"compiled afresh\n{ran}"
        box(ax, 14.1, y, verdict, "write" if not second.correct else "output", width=4.5, height=0.8)
        arrow(ax, (11.55, y), (11.85, y))
    for x, title in ((2.8, "first compile"), (8.8, "after the fix: a reset, a new torch.compile"),
                     (14.1, "what the fixed program ran")):
        ax.text(x, 0.7, title, ha="center", fontsize=FONT, weight="bold")
    ax.set_xlim(-2.6, 16.4)
    ax.set_ylim(-1.4 * len(results) + 0.45, 1.0)
    return fig


# --- the order a tensor's elements lie in memory, read from its strides --------------------------------


def memory_order(tensors: dict, slots: int = 12):
    """One row per labelled tensor (``{label: tensor}``, 4-d NCHW-indexed): its first ``slots`` memory slots,
    left to right, each box naming the element ``n,c,h,w`` stored there, coloured by channel, computed from the
    tensor's own shape and strides (its storage offset aside). NCHW walks ``w`` first; channels-last, ``c``."""
    import itertools

    rows = {}
    for label, t in tensors.items():
        where = {sum(i * s for i, s in zip(index, t.stride())): index
                 for index in itertools.product(*(range(n) for n in t.shape))}
        rows[label] = (tuple(t.stride()), [where[k] for k in sorted(where)[:slots]])
    fig, ax = figure(1.2 + 0.95 * slots, 1.0 * len(rows) + 0.9)
    colours = ("input", "op", "output", "written", "plain", "removed")
    for r, (label, (strides, elements)) in enumerate(rows.items()):
        y = -r * 1.0
        ax.text(-0.55, y + 0.42, f"{label}: strides {strides}", ha="left", fontsize=FONT, weight="bold")
        for i, (n, c, h, w) in enumerate(elements):
            box(ax, i * 0.95, y, f"{n},{c},{h},{w}", colours[c % len(colours)], width=0.88, height=0.4)
    ax.text(-0.55, -1.0 * len(rows) + 0.35, "each box: the element n,c,h,w at that memory slot (slot 0 on the "
            "left), coloured by its channel c", fontsize=FONT - 1, color=PALETTE["edge"])
    ax.set_xlim(-0.6, 0.95 * slots)
    ax.set_ylim(-1.0 * len(rows) + 0.1, 0.8)
    return fig


# --- how a package finds its custom op: by name, when it loads ------------------------------------------


def package_lookup(package_name: str, calls: list[dict], registered: dict):
    """One row per custom-op call a package holds (:func:`labkit.packages.op_calls`): the generated code's
    call (through the proxy executor or not), the name and argument names the package's JSON stores, and what
    this process registers under that name (``registered``: ``{name: schema or None}``,
    :func:`labkit.packages.registered_now`), which is what the package runs once loaded."""
    fig, ax = figure(11, 1.0 * max(len(calls), 1) + 1.3)
    for x, title in ((0, f"{package_name}: generated C++"), (3.9, "what the package stores"),
                     (8.0, "registered under that name, at load")):
        ax.text(x, 0.75, title, ha="center", fontsize=FONT + 1, weight="bold")
    for r, call in enumerate(calls):
        y = -r * 1.0
        code = "proxy executor call" if call["via proxy executor"] else "direct call"
        box(ax, 0, y, code, "plain", width=2.6)
        box(ax, 3.9, y, f"{call['target']}({', '.join(call['inputs'])})", "input", width=3.0)
        schema = registered.get(call["target"])
        box(ax, 8.0, y, schema or "nothing: the package cannot load", "op" if schema else "written", width=4.0)
        arrow(ax, (1.3, y), (2.4, y), "by name")
        arrow(ax, (5.4, y), (6.0, y), "lookup")
    ax.set_xlim(-1.4, 10.1)
    ax.set_ylim(-1.0 * len(calls) + 0.4, 1.05)
    return fig


# --- what each stage of torch.compile hands an op: fake tensors while tracing, data when it runs ----------

STAGE_TITLES = {"dynamo": "Dynamo traces", "aot": "AOTAutograd traces", "inductor": "Inductor lowers",
                "tracing": "tracing"}


def calls_by_stage(calls, op_name: str):
    """Every call of an op's kernel and fake kernel, in order, grouped into columns by the stage that made it:
    ``calls`` is a list of ``(who, stage, x)`` as recorded inside the kernels (``who``: ``"kernel"`` or
    ``"fake"``; ``stage``: :func:`labkit.stages.calling_stage`; ``x``: the tensor the call received). A call
    while tracing shows only the shape and dtype it got; a real call shows the values."""
    columns: list[tuple[str, list]] = []
    for who, stage, x in calls:
        if not columns or columns[-1][0] != stage:
            columns.append((stage, []))
        columns[-1][1].append((who, x))
    tallest = max((len(c) for _, c in columns), default=1)
    fig, ax = figure(2.3 * max(len(columns), 1) + 0.4, 0.75 * tallest + 1.4)
    traced = False
    for c, (stage, column) in enumerate(columns):
        x0 = c * 2.3
        title = STAGE_TITLES.get(stage, stage) if stage != "run" else "compiled call" if traced else "eager call"
        traced = traced or stage != "run"
        ax.text(x0, 0.6, title, ha="center", fontsize=FONT + 1, weight="bold")
        for r, (who, x) in enumerate(column):
            seen = f"{list(x.shape)} {str(x.dtype).replace('torch.', '')}\nno data" if stage != "run" \
                else f"{[round(float(v), 3) for v in x.flatten()[:4]]}"
            label = "fake kernel" if who == "fake" else who
            box(ax, x0, -0.75 * r, f"{label}\n{seen}", "input" if who == "fake" else "op", width=2.0, height=0.62)
        if c:
            arrow(ax, (x0 - 2.3 + 1.05, 0.1), (x0 - 1.05, 0.1))
    ax.text(2.3 * (len(columns) - 1) / 2, -0.75 * tallest - 0.05, f"{op_name}: {len(calls)} calls, left to right "
            "in time · blue: its fake kernel · yellow: its kernel", ha="center", fontsize=FONT, color=PALETTE["edge"])
    ax.set_xlim(-1.2, 2.3 * max(len(columns) - 1, 0) + 1.2)
    ax.set_ylim(-0.75 * tallest - 0.35, 0.95)
    return fig


# --- what Dynamo captures of a data-dependent op, and where it breaks the graph -------------------------


def _short_target(node) -> str:
    target = str(node.target)
    if target.startswith("<built-in function "):
        return target[len("<built-in function "):-1]
    return target.replace(".default", "").replace("aten.", "")


def graph_breaks(runs: dict, highlight: str):
    """One row per ``{label: torch._dynamo.explain(fn)(...)}``: the graphs Dynamo made, left to right, each with its
    calls (functions, methods, modules; a graph holding ``highlight``, an op's qualified name or a namespace
    ``"ns::"``, in yellow), and a red box for each graph break, with the operator its reason names."""
    import re

    dotted = highlight.replace("::", ".")
    rows = []
    for label, out in runs.items():
        items, breaks = [], [str(r.reason) for r in out.break_reasons]
        for g, gm in enumerate(out.graphs):
            nodes = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
            holds = any(str(n.target).startswith(dotted) for n in nodes)
            items.append(("op" if holds else "plain", [f"graph {g + 1}"] + [_short_target(n) for n in nodes]))
            if g < len(breaks):
                named = re.search(r"`([\w.]+)`", breaks[g])
                what = named.group(1).replace(".default", "") if named else "an operator"
                items.append(("write", ["graph break", what, "runs eagerly"]))
        rows.append((label, items))
    line, step = 0.26, 2.9
    heights = [max((len(text) for _, text in items), default=1) * line + 0.5 for _, items in rows]
    widest = max((len(items) for _, items in rows), default=1)
    fig, ax = figure(3.2 + 2.3 * widest, 0.75 * sum(heights) + 0.3)
    y = 0.0
    for (label, items), height in zip(rows, heights):
        y -= height / 2
        ax.text(-0.2, y, label.replace(", ", "\n", 1), ha="right", va="center", fontsize=FONT, weight="bold")
        for i, (kind, text) in enumerate(items):
            box(ax, 1.3 + i * step, y, "\n".join(text), kind, width=2.6, height=len(text) * line + 0.15)
            if i:
                arrow(ax, (1.3 + (i - 1) * step + 1.32, y), (1.3 + i * step - 1.32, y))
        y -= height / 2
    ax.set_xlim(-3.6, step * widest)
    ax.set_ylim(y, 0.05)
    return fig


# --- what keeps each node alive through dead-code elimination ------------------------------------------


def _why_alive(node) -> str:
    """One word for why dead-code elimination left ``node``: it is impure, the graph returns it, or what uses it."""
    if node.is_impure():
        return "impure"
    users = [u for u in node.users if u.op != "output"]
    if len(users) < len(node.users):
        return "returned"
    return "used by " + users[0].name if users else "unused"


KEPT_KINDS = {"impure": "write", "returned": "output"}   # red edge; green; anything used by another node: grey-white


def what_keeps_alive(runs: dict):
    """One row per program (``{label: labkit.logs.DeadCodeRun}``): each call left in its first forward graph,
    with why dead-code elimination kept it (red edge: impure; else returned, or used by which node), then one grey
    box naming the nodes it erased."""
    PITCH = 0.95   # noqa: N806 - the row pitch: room for a two-line box of erased names
    rows = {label: ([n for n in run.graphs[0].graph.nodes if n.op == "call_function"], run.erased)
            for label, run in runs.items()}
    widest, step = max((len(kept) + bool(erased) for kept, erased in rows.values()), default=1), 2.6
    fig, ax = figure(2.8 + step * widest, PITCH * len(rows) + 0.9)
    for r, (label, (kept, erased)) in enumerate(rows.items()):
        y = -r * PITCH
        ax.text(-0.3, y, label, ha="right", va="center", fontsize=FONT, weight="bold")
        for i, node in enumerate(kept):
            why = _why_alive(node)
            box(ax, 1.1 + i * step, y, f"{node.name}\n{why}", KEPT_KINDS.get(why, "plain"), width=2.5, height=0.62)
        if erased:   # one grey box for all the erased nodes, as many names a line as fit
            lines = [""]
            for name in erased:
                lines[-1:] = [lines[-1] + ", " + name] if lines[-1] and len(lines[-1] + name) < 26 else \
                    [lines[-1], name] if lines[-1] else [name]
            box(ax, 1.1 + len(kept) * step, y, "erased:\n" + "\n".join(lines), "removed", width=2.5,
                height=max(0.62, 0.2 * len(lines) + 0.4))
    ax.text(-0.1, -PITCH * len(rows) + 0.2, "red edge: impure, kept for itself · green: the graph returns it · "
            "white: another node uses it · grey: erased by dead-code elimination", va="top", fontsize=FONT - 1,
            color=PALETTE["edge"])
    ax.set_xlim(-3.3, step * widest + 0.2)
    ax.set_ylim(-PITCH * len(rows) - 0.2, 0.6)
    return fig


# --- which compiled graph served each call, or none (eager) ----------------------------------------------


def which_graph(runs: dict, calls):
    """One row per :class:`labkit.stages.Served` (``{label: served}``), one box per call, left to right: the
    graph that ran it, yellow where that call compiled it, blue where an earlier graph's guards accepted it
    again, red-edged where no graph ran it (the frame ran eagerly: past ``recompile_limit``). ``calls`` names
    what each call passed (``"n = 2"``, ``"size 0"``); each row ends with how many graphs it compiled."""
    calls = [str(c) for c in calls]
    for label, run in runs.items():
        if len(run.served) != len(calls):
            raise ValueError(f"{label!r} made {len(run.served)} calls, and calls names {len(calls)}: give one "
                             "name per call.")
    step = 1.75
    fig, ax = figure(3.6 + step * len(calls), 0.85 * len(runs) + 0.9)
    for r, (label, run) in enumerate(runs.items()):
        y, seen = -0.85 * r, set()
        ax.text(-0.25, y, label, ha="right", va="center", fontsize=FONT, weight="bold")
        for i, (call, graph) in enumerate(zip(calls, run.served)):
            kind, text = ("write", "eager") if graph is None else \
                ("input", f"graph {graph} again") if graph in seen else ("op", f"graph {graph} (new)")
            seen.add(graph)
            box(ax, 0.8 + i * step, y, f"{call}\n{text}", kind, width=1.6, height=0.62)
        count = len(run.graphs)
        ax.text(0.8 + len(calls) * step - 0.6, y, f"{count} graph{'s' * (count != 1)}", va="center",
                fontsize=FONT, color=PALETTE["edge"])
    ax.text(0.0, -0.85 * len(runs) + 0.3, "yellow: the call compiled a new graph · blue: a graph compiled before "
            "ran it · red edge: no graph ran it, eager", va="top", fontsize=FONT - 1, color=PALETTE["edge"])
    ax.set_xlim(-3.4, step * len(calls) + 1.0)
    ax.set_ylim(-0.85 * len(runs), 0.5)
    return fig


# --- an op's path through the stages: the marks labkit.render's table and text use ----------------------------

PICTURE_TITLES = {"dynamo": "Dynamo\ngraph", "aot": "AOTAutograd\ngraph", "inductor": "Inductor\ncode",
                  "ran": "real kernel\nran?"}
PICTURE_WORDS = {RAISED: "torch\nraised here", OUTSIDE: "graph break,\nran eagerly",   # marks too long for a box
                 RAN_THEN_RAISED: "yes, then\ntorch raised", RAISED_AT_RUN_TIME: "torch raised\nat run time"}


def draw_fate(report, op_name: str, title: bool = True, removal: str | None = None):
    """The op's path through the stages: a box per stage with the table's mark in its tone, then whether its kernel
    ran. A removal is red, or in ``removal``'s tone (a lab's headline's: :func:`render.removal_tone`)."""
    import matplotlib.patches as patches

    require_report(report, "draw_fate")
    if removal not in (None, "ok", "bad"):
        raise ValueError(f"removal must be 'ok' or 'bad' (or left out: red), not {removal!r}.")
    fig, ax, words, removal = *figure(7.5, 1.6), PICTURE_WORDS, removal or removal_tone(report)
    marks, ran = stage_marks(report, op_name), ran_mark(report, op_name)
    boxes = [(PICTURE_TITLES[s], m, mark_tone(m, removal)) for s, m in [*marks.items(), ("ran", ran)]]
    for i, (label, word, tone) in enumerate(boxes):
        ax.add_patch(patches.Rectangle((i * 2.5, 0), 2.1, 1, facecolor=PALETTE[tone], edgecolor=PALETTE["edge"]))
        ax.text(i * 2.5 + 1.05, 0.68, label, ha="center", va="center", fontsize=FONT)
        ax.text(i * 2.5 + 1.05, 0.25, words.get(word, word), ha="center", va="center",
                fontsize=10 if word not in words else 8, weight="bold")
        if i:
            ax.annotate("", xy=(i * 2.5, 0.5), xytext=(i * 2.5 - 0.4, 0.5),
                        arrowprops=dict(arrowstyle="->", color=PALETTE["edge"]))
    ax.set(xlim=(-0.1, len(boxes) * 2.5), ylim=(-0.1, 1.1))
    if title:
        ax.set_title(f"{op_name}  (backend={report.backend}, dynamic={report.dynamic})", fontsize=10)
    return fig


def png(fig, dpi: int = 72) -> bytes:
    """``fig`` as PNG bytes, cropped to what it shows (a widget embeds its picture so)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _node_label(node) -> str:
    if node.op in ("placeholder", "output"):
        return f"{node.op}: {node.name}"
    if node.custom_op and node.wrapper:
        return f"{node.wrapper}({node.custom_op})"
    return node.custom_op or node.target


def draw_stages(report, op_name: str | None = None, figsize=(11, 3.6)):
    """Each stage's steps as a column of boxes: the Dynamo graph, the AOTAutograd graph and the kernel calls of
    Inductor's ``call()``; ``op_name``'s node in yellow, a node that writes with a red edge."""
    import matplotlib.patches as patches
    import matplotlib.pyplot as plt

    require_report(report, "pictures.draw_stages")
    if op_name is not None:
        split_qualname(op_name)
    columns = []
    for title, graphs in (("Dynamo graph", report.dynamo_graphs), ("AOTAutograd graph", report.aot_graphs)):
        if graphs:
            columns.append((title, [_node_label(n) for n in graphs[0].nodes], list(graphs[0].nodes)))
    if report.inductor_code:
        lines = inductor_kernel_calls(report.inductor_code[0])
        columns.append(("Inductor call()", lines or ["(no kernel calls)"], [None] * max(len(lines), 1)))
    fig, axes = plt.subplots(1, max(len(columns), 1), figsize=figsize, squeeze=False)
    plt.close(fig)
    namespace_dot = op_name.replace("::", ".") if op_name else None
    for ax, (title, labels, nodes) in zip(axes[0], columns):
        n = len(labels)
        for i, (label, node) in enumerate(zip(labels, nodes)):
            y = n - i
            is_op = bool(op_name) and ((node is not None and node.custom_op == op_name)
                                       or (node is None and namespace_dot in label))
            writes = node is not None and node.mutating
            face = "op" if is_op else "plain" if node is not None and node.op in ("placeholder", "output") \
                else "blank"
            ax.add_patch(patches.Rectangle((0, y - 0.3), 1, 0.6, facecolor=PALETTE[face], linewidth=2 if writes else 1,
                                           edgecolor=PALETTE["write" if writes else "edge"]))
            ax.text(0.5, y, _fits(label, 46), ha="center", va="center", fontsize=7.5)
            if i:
                ax.annotate("", xy=(0.5, y + 0.3), xytext=(0.5, y + 0.7),
                            arrowprops=dict(arrowstyle="->", color=PALETTE["edge"]))
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(0.4, max(n, 1) + 0.6)
        ax.set_title(title, fontsize=10)
    for ax in axes[0]:
        ax.axis("off")
    fig.tight_layout()
    return fig
