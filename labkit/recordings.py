"""GPU recordings: what a notebook's GPU cells printed on a GPU, and what code printed it.

A recording is evidence of the code it ran, nothing more. Each one keeps that code: the GPU cell and
every cell the GPU cell declares it needs, with the device, torch, Triton and labkit it ran on and the
date. A reader without a GPU sees the recording beside this kernel's own code only with one of three
labels, decided here by comparing the two:

* ``current``: the code this kernel ran for the cell, and for what it needs, is the recorded code;
* ``earlier``: the recording was made for an earlier version of that code (and what changed is said);
* ``none``: no recording of this cell exists yet, so what it claims is unverified.

How cells are named (the first line of a code cell, read by this module and by tools/record_gpu.py)::

    # GPU cell: <title>        a cell that needs CUDA; its first branch is `if not GPU:`
    # needs: <title>; <title>   (its second line, optional) the cells whose names it uses
    # GPU setup: <title>       a cell a GPU cell needs (imports, helpers, the ops it runs)

"This kernel's code" is the source IPython last ran under each title since labkit was imported
(``listen``). The comparison sees what travels in code, not state set elsewhere (a config patch in a
cell that is not needed); declaring the cells a GPU cell reads from keeps that gap small, and
``tests/notebooks/test_gpu_recordings.py`` checks that the names a GPU cell uses are bound by what it declares.

Not here: torch's state (this module only reads files and the sources of titled cells), and showing a
recording (:func:`labkit.views.gpu_recording_text` and its HTML twin).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import json
import pathlib

FOLDER = pathlib.Path(__file__).with_name("gpu_recordings")   # package data: Colab has it too
GPU_CELL, GPU_SETUP, NEEDS = "# GPU cell: ", "# GPU setup: ", "# needs: "
FORMAT = 2


def title(source: str) -> str | None:
    """The title of a GPU cell or GPU setup cell (its first line, after the marker); None for other cells."""
    first = source.split("\n", 1)[0].rstrip()
    for marker in (GPU_CELL, GPU_SETUP):
        if first.startswith(marker):
            return first[len(marker):].strip()
    return None


def is_gpu_cell(source: str) -> bool:
    return source.startswith(GPU_CELL)


def needs(source: str) -> list[str]:
    """The titles a cell declares on its second line (``# needs: a; b``), in order."""
    lines = source.split("\n", 2)
    if len(lines) < 2 or not lines[1].startswith(NEEDS):
        return []
    return [part.strip() for part in lines[1][len(NEEDS):].split(";") if part.strip()]


def closure(cell_title: str, code_of) -> dict[str, str | None]:
    """{title: source} of a cell and everything it needs, transitively; ``code_of(title)`` gives a source or None."""
    found: dict[str, str | None] = {}
    pending = [cell_title]
    while pending:
        name = pending.pop(0)
        if name in found:
            continue
        found[name] = source = code_of(name)
        pending += needs(source) if source is not None else []
    return found


@dataclasses.dataclass(frozen=True)
class Recording:
    """One GPU cell's recording: what it printed, the code that printed it, and where."""

    notebook: str
    title: str
    output: str
    code: dict          # {title: source}: the GPU cell first, then what it needs
    environment: dict   # device, torch, triton, labkit, commit, date

    def where(self) -> str:
        env = self.environment
        labkit = f"labkit {env.get('labkit', '?')}" + (f" at {env['commit']}" if env.get("commit") else "")
        return (f"{env.get('device', 'a GPU')} (torch {env.get('torch', '?')}, Triton {env.get('triton', '?')}, "
                f"{labkit}) on {env.get('date', 'an unknown date')}")


def load(folder: pathlib.Path | None = None) -> dict[str, Recording]:
    """Every recorded GPU cell, by title. A file that cannot be read is skipped (``problems`` names it)."""
    found = {}
    for path in sorted((folder or FOLDER).glob("*.json")):
        try:
            found.update({rec.title: rec for rec in _read(path)})
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return found


def problems(folder: pathlib.Path | None = None) -> list[str]:
    """One sentence per recording file that cannot be read."""
    out = []
    for path in sorted((folder or FOLDER).glob("*.json")):
        try:
            _read(path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            out.append(f"{path.name} cannot be read ({type(error).__name__}: {error}): re-record it or delete it")
    return out


def _read(path: pathlib.Path) -> list[Recording]:
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"format {data.get('format')!r}, not {FORMAT}")
    environment = {key: data.get(key) for key in ("device", "torch", "triton", "labkit", "commit", "date")}
    return [Recording(data["notebook"], cell["title"], cell["output"], dict(cell["code"]), environment)
            for cell in data["cells"]]


@dataclasses.dataclass(frozen=True)
class Status:
    """How a recording relates to the code a kernel ran: ``kind`` is current, earlier, none or unchecked."""

    kind: str
    title: str
    recording: Recording | None = None
    changes: tuple = ()      # one phrase per difference, e.g. "this cell changed (2 lines)"
    diff: tuple = ()         # unified-diff lines, recorded (-) against now (+)


def status(cell_title: str, code_of, recordings: dict[str, Recording] | None = None) -> Status:
    """Compare the recording of ``cell_title`` with the code ``code_of(title)`` gives (None: not run here)."""
    recordings = load() if recordings is None else recordings
    recording = recordings.get(cell_title)
    if recording is None:
        return Status("none", cell_title)
    now = closure(cell_title, code_of)
    missing = [name for name, source in now.items() if source is None]
    if missing:
        return Status("unchecked", cell_title, recording,
                      tuple(f"{_name(name, cell_title)} has not run in this kernel" for name in missing))
    changes, diff, added = [], [], []
    for name, source in now.items():
        recorded = recording.code.get(name)
        if recorded is None:
            added.append(f"'{name}'")
        elif recorded != source:
            lines = list(difflib.unified_diff(recorded.splitlines(), source.splitlines(), "recorded", "now",
                                              lineterm="", n=0))
            changed = sum(1 for line in lines[2:] if line[:1] in "+-")
            changes.append(f"{_name(name, cell_title)} changed ({changed} line{'s' * (changed != 1)})")
            diff += [f"{name}:"] * (len(now) > 1) + [line for line in lines[2:] if not line.startswith("@@")]
    if added:
        changes.append(f"it now needs {_count(added, 'cell')} the recording did not run ({', '.join(added)})")
    gone = [f"'{name}'" for name in recording.code if name not in now]
    if gone:
        changes.append(f"it no longer needs {', '.join(gone)}")
    return Status("earlier" if changes else "current", cell_title, recording, tuple(changes), tuple(diff))


def _count(items, noun: str) -> str:
    return f"a {noun}" if len(items) == 1 else f"{len(items)} {noun}s"


def _name(name: str, cell_title: str) -> str:
    return "this cell" if name == cell_title else f"'{name}'"


_RAN: dict[str, str] = {}     # title -> the source IPython last ran under it (only titled cells are kept)
_RUNNING: list[str] = [""]    # the cell IPython is running now


def _remember(source: str, running: bool) -> None:
    if running:
        _RUNNING[0] = source
    name = title(source or "")
    if name is not None:
        _RAN[name] = source.rstrip("\n")


def listen() -> None:
    """Keep, for each '# GPU cell:' / '# GPU setup:' title, the source IPython last ran under it.

    IPython's own history cannot tell: nbval runs cells with store_history=False. The hooks keep titled cells
    only (a few strings), and change nothing else; the cell that imports labkit is kept when it ends.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or getattr(shell, "_labkit_listens", False):
        return
    shell.events.register("pre_run_cell", lambda info: _remember(info.raw_cell, running=True))
    shell.events.register("post_run_cell", lambda result: _remember(result.info.raw_cell, running=False))
    shell._labkit_listens = True


def kernel_code(name: str) -> str | None:
    """The source IPython last ran under this title (a GPU cell or GPU setup cell) since labkit was imported."""
    return _RAN.get(name)


def running_cell() -> str | None:
    """The source of the cell IPython is running now; None outside IPython or before labkit listened."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return (_RUNNING[0] or None) if get_ipython() is not None else None


def why_no_gpu() -> str:
    """What this kernel lacks for a GPU cell, in a few words."""
    import torch

    lacks = [what for what, ok in (("a CUDA GPU", torch.cuda.is_available()),
                                   ("Triton", importlib.util.find_spec("triton") is not None)) if not ok]
    return " and ".join(lacks) if lacks else "nothing, but GPU is False"


def cell_status(cell_title: str | None = None) -> Status:
    """The status of a GPU cell against this kernel's code; by default the cell running now."""
    if cell_title is None:
        cell_title = title(running_cell() or "")
        if cell_title is None:
            raise ValueError("show_gpu_recording() names the cell it runs in by that cell's first line, "
                             "'# GPU cell: <title>'; outside such a cell, pass the title")
    return status(cell_title, kernel_code)
