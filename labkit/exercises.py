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
    """Print the outcome of a self-check and return it."""
    print(("✔ " + success) if passed else ("✘ Not yet. " + hint))
    return bool(passed)
