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
