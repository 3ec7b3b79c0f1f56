"""The repository: its root folder (ROOT) and its commit, for the tests, tools and benchmarks that read the lab's files.

The bottom of tools/: it imports nothing of the lab's, so every tool and test can import it (pytest's pythonpath
has tools/; a script run as ``python tools/x.py`` has its own folder on sys.path).
"""

import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The line that opens a cell of a lesson (jupytext's percent format): "# %%" alone or before a space; a line such as
# "# %%writefile {path}" is a cell magic inside a cell, not a new cell.
CELL_MARKER = r"# %%(?: |$)"


def starts_a_cell(line: str) -> bool:
    return re.match(CELL_MARKER, line) is not None


def commit() -> str | None:
    """The checkout's commit, with "+changes" when tracked files differ from it; None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")
