"""One-line descriptions of a learner's values, for labkit's one-sentence refusals.

A tensor's repr spans lines and a hostile ``__repr__`` can raise: error messages name a value
through :func:`brief`, never through ``repr`` directly. Imports nothing of labkit's.

Not here: whole sentences; each module writes its own refusal around :func:`brief`.
"""

from __future__ import annotations

import torch


def brief(value, limit: int = 60) -> str:
    """A value as one short line for an error message: a tensor by its shape and dtype, anything else its repr
    on one line, cut at ``limit`` characters."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)} ({str(value.dtype).removeprefix('torch.')})"
    try:
        text = " ".join(repr(value).split())
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break the message
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 1] + "…"
