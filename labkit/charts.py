"""Bar charts of numbers measured in this kernel (the cost of one call through each boundary around a kernel), in
the look of :mod:`labkit.pictures`, whose figures are of graphs and tensors. Never from numbers typed in.

Not here: measuring (:mod:`labkit.boundaries` times the calls; this module only draws what it is given).
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
