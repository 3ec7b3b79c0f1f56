"""Small functions the lessons compile again and again, defined once."""

from __future__ import annotations


def discards_result(op):
    """``f(x)`` that calls ``op(x)``, throws the result away and returns ``x + 1``.

    The smallest program in which an op is dead code unless something keeps it alive.
    """

    def f(x):
        op(x)
        return x + 1

    f.__name__ = f"discards_{getattr(op, '__name__', 'op')}_result"
    return f
