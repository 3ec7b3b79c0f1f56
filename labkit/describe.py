"""One-line descriptions of a learner's values, for labkit's one-sentence refusals.

A tensor's repr spans lines and a hostile ``__repr__`` can raise: error messages name a value
through :func:`brief`, never through ``repr`` directly. Imports nothing of labkit's.

Not here: whole sentences; each module writes its own refusal around :func:`brief`. :func:`describe_value` names a
sample input as a bug report states it (``float32[4, 8]``).
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


def describe_value(value) -> str:
    """One input, briefly and exactly: a tensor's dtype and shape (and device off the CPU), else its value."""
    if isinstance(value, torch.Tensor):
        where = "" if value.device.type == "cpu" else f" on {value.device}"
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}{where}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(describe_value(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return brief(value, 80)
