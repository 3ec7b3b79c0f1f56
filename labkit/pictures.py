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


# --- 05: what keeps each node alive through dead-code elimination ------------------------------------------


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
