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


# --- 10: the order a tensor's elements lie in memory, read from its strides --------------------------------


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


# --- 11: how a package finds its custom op: by name, when it loads ------------------------------------------


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
