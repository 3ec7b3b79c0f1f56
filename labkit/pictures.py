"""Pictures for the lessons, drawn with matplotlib from live data: a graph torch made, strides a tensor has,
calls a kernel counted. Never from numbers typed in: a picture is evidence of the run that drew it.

Every function returns a matplotlib ``Figure`` and closes it from pyplot's list, so that a notebook cell
ending in the call shows it exactly once (and a test can draw thousands without leaking memory). The look
is shared: one palette, one font size, boxes for values and arrows for what flows. This module computes
nothing about torch (that is the core's job); it only draws what it is given.
"""

from __future__ import annotations

PALETTE = {"op": "#ffe08a", "input": "#dbe9ff", "output": "#d8f0d2", "write": "#b00020", "written": "#f8c9cf",
           "plain": "#f2f2f2", "removed": "#bbbbbb", "edge": "#555555"}
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


# --- 03: a mutating op on a view -------------------------------------------------------------------


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


# --- 08: what a compiled training step runs: the forward graph, what it saves, the backward graph ------------


def _computes(node) -> str:
    """What a graph node calls: the custom op's qualified name, else ``aten.<op>``."""
    return node.custom_op or "aten." + node.target.split(".")[0]


def forward_backward(forward, backward, op_name: str):
    """AOTAutograd's forward graph (each call, ``op_name`` highlighted), the values it saves for the backward
    (the backward graph's inputs, each with an arrow from the forward node that made it), and the backward
    graph's calls counted by op: from two :class:`labkit.stages.GraphSnapshot`."""
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


# --- 09: what Inductor's generated code runs, step by step -------------------------------------------------

STEP_KINDS = {"op": "op", "kernel": "input", "alloc": "removed"}   # a custom op; Inductor's kernel; a new buffer


def inductor_steps(codes: dict):
    """One row per labelled piece of Inductor code (``{label: code}``): the steps its ``call`` function runs,
    left to right, as :func:`labkit.logs.call_steps` reads them: a custom op called by name (yellow), a kernel
    Inductor generated (blue), a buffer it allocates (grey)."""
    from .logs import call_steps

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


# --- 01: what each stage of torch.compile hands an op: fake tensors while tracing, data when it runs ----------

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


# --- 06: what Dynamo captures of a data-dependent op, and where it breaks the graph -------------------------


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
