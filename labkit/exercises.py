"""Self-checks for exercises: a clear ✔ or ✘ with a hint, never a traceback."""

from __future__ import annotations

from typing import Any

UNANSWERED = ...  # the placeholder exercise cells start with


def answered(value: Any) -> bool:
    if value is UNANSWERED:
        print("✎ Not answered yet: replace the ... with your answer and run this cell again.")
        return False
    return True


def check(passed: bool, success: str, hint: str) -> bool:
    """Print the outcome of a self-check and return it.

    ``passed`` is True or False (a one-element tensor or array also reads as one); anything else,
    e.g. ``a == b`` on whole tensors, raises TypeError with one sentence naming the fix.
    """
    if not isinstance(success, str) or not isinstance(hint, str):
        raise TypeError(f"check(passed, success, hint) takes two sentences (str) after passed, "
                        f"not {type(success).__name__} and {type(hint).__name__}.")
    passed = _truth(passed)
    print(("✔ " + success) if passed else ("✘ Not yet. " + hint))
    return passed


def _truth(passed: Any) -> bool:
    """``passed`` as a bool, or TypeError naming what is expected (never an 'ambiguous' raw error)."""
    if isinstance(passed, bool) or type(passed).__name__ == "bool_":  # numpy's bool too
        return bool(passed)
    size = getattr(passed, "numel", getattr(passed, "size", None))
    nested = getattr(passed, "is_nested", False) is True
    try:
        count = None if nested else size() if callable(size) else size
    except Exception:  # noqa: BLE001 - a hostile object: refused below
        count = None
    if count == 1 and hasattr(passed, "item") and isinstance(passed.item(), bool):
        return bool(passed.item())
    raise TypeError(f"check's first argument must be True or False, not {type(passed).__name__}"
                    f"{' (nested)' if nested else ''}: compare whole tensors with torch.equal(a, b) or "
                    f"(a == b).all().item().")
