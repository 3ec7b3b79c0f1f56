"""Charts of what ran in this kernel: bars of measured numbers (the cost of one call through each boundary around a
kernel) and a grid of outcomes (what compile, training and export did through each), in the look of
:mod:`labkit.pictures`, whose figures are of graphs and tensors. Never from numbers or words typed in.

Not here: measuring or running (:mod:`labkit.boundaries` times the calls, the lesson runs the rest; this module
only draws what it is given).
"""

from __future__ import annotations

from .pictures import FONT, PALETTE


def per_call(costs: dict[str, float], where: str = "this machine"):
    """One horizontal bar per boundary: the microseconds of one eager call, its figure written beside it.

    ValueError, in one sentence, for no costs, or a cost that is not a positive number."""
    import matplotlib.pyplot as plt

    if not costs or not all(isinstance(v, (int, float)) and v > 0 for v in costs.values()):
        raise ValueError(f"per_call() draws positive microseconds per boundary, as per_call_us returns, not {costs!r}.")
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(costs) + 0.9))
    plt.close(fig)
    labels, values = list(costs)[::-1], list(costs.values())[::-1]
    ax.barh(labels, values, color=PALETTE["input"], edgecolor=PALETTE["edge"])
    for y, value in enumerate(values):
        ax.text(value, y, f" {value:.1f} µs", va="center", fontsize=FONT)
    ax.set_xlim(0, max(values) * 1.25)
    ax.set_xlabel(f"microseconds per eager call ({where}; the fastest of several rounds)", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def outcome_grid(outcomes: dict[str, dict[str, tuple[str, str]]]):
    """A table as a picture: one row per boundary, one column per question (compile, training, export), each cell
    the words a run returned, in its tone (``"ok"``, ``"warn"``, ``"bad"`` or ``"muted"``, from
    :data:`labkit.pictures.PALETTE`): the decision drawn from what ran, never typed in.

    ValueError, in one sentence, for rows of different columns or a tone the palette lacks."""
    import matplotlib.patches as patches
    import matplotlib.pyplot as plt

    columns = list(next(iter(outcomes.values()), {}))
    tones = {"ok", "warn", "bad", "muted"}
    if not columns or any(list(row) != columns for row in outcomes.values()) or \
            any(tone not in tones for row in outcomes.values() for _, tone in row.values()):
        raise ValueError("outcome_grid() draws {boundary: {question: (words, tone)}} with the same questions in "
                         f"every row and a tone among {sorted(tones)}.")
    fig, ax = plt.subplots(figsize=(3.2 + 2.6 * len(columns), 0.55 * len(outcomes) + 0.7))
    plt.close(fig)
    ax.axis("off")
    for j, column in enumerate(columns):
        ax.text(1.6 + 2.6 * j + 1.25, len(outcomes) + 0.25, column, ha="center", va="center", fontsize=FONT,
                weight="bold")
    for i, (boundary, row) in enumerate(outcomes.items()):
        y = len(outcomes) - i - 0.5
        ax.text(1.5, y, boundary, ha="right", va="center", fontsize=FONT)
        for j, (words, tone) in enumerate(row.values()):
            ax.add_patch(patches.Rectangle((1.6 + 2.6 * j, y - 0.42), 2.5, 0.84, facecolor=PALETTE[tone],
                                           edgecolor=PALETTE["edge"]))
            ax.text(1.6 + 2.6 * j + 1.25, y, words, ha="center", va="center", fontsize=FONT - 1, wrap=True)
    ax.set(xlim=(-1.6, 1.7 + 2.6 * len(columns)), ylim=(-0.1, len(outcomes) + 0.6))
    return fig
