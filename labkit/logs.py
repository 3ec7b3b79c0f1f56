"""torch's own logs (``TORCH_LOGS``, ``torch._logging.set_logs``) captured as text a cell can check.

In a script you would run ``TORCH_LOGS="aot_graphs" python train.py`` and read stderr. In a
notebook cell that asserts on the log, the text has to be caught, and torch's releases differ in
*when* their log handler looks at ``sys.stderr``: up to 2.14 when ``set_logs`` runs, from 2.15 at
each message. Redirecting stderr around the whole block catches both. Notebook 00 writes these
lines out; later notebooks call :func:`torch_logs`.
"""

from __future__ import annotations

import contextlib
import io
from typing import Iterator

import torch


class CapturedLog(io.StringIO):
    """What torch logged inside a :func:`torch_logs` block."""

    def artifact(self, name: str) -> list[str]:
        """The lines logged for artifact ``name`` (``"aot_graphs"``, ``"graph_code"``, ...), after its tag."""
        tag = f"[__{name}]"
        return [line.split(tag, 1)[1] for line in self.getvalue().splitlines() if tag in line]


@contextlib.contextmanager
def torch_logs(**settings) -> Iterator[CapturedLog]:
    """``torch._logging.set_logs(**settings)`` for the block; yields what torch logged.

    The block ends with ``torch._logging.set_logs()``: torch's default log settings, on the real
    stderr. (With the ``TORCH_LOGS`` environment variable set, torch ignores ``set_logs``, and so
    nothing is captured.)
    """
    text = CapturedLog()
    with contextlib.redirect_stderr(text):  # torch <= 2.14 binds its handler here, 2.15 reads it per message
        torch._logging.set_logs(**settings)
        try:
            yield text
        finally:
            torch._logging.set_logs()
