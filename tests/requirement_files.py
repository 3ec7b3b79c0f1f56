"""The one reader of requirements files for the tests (pip's rules), so that each test reads them alike."""

from __future__ import annotations

import pathlib
import re

from packaging.requirements import Requirement


def lines(path: pathlib.Path) -> list[str]:
    """Requirement and option lines without comments or blanks (pip's rule: '#' at the start or after a space)."""
    out = []
    for raw in path.read_text().splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line:
            out.append(line)
    return out


def option(line: str) -> tuple[str | None, str]:
    """('--extra-index-url', 'URL') for 'OPTION VALUE' or 'OPTION=VALUE' lines, else (None, line)."""
    m = re.match(r"^(-[-\w]+)(?:\s*=\s*|\s+)(.+)$", line)
    return (m.group(1), m.group(2).strip()) if m else (None, line)


def requirements(path: pathlib.Path) -> list[Requirement]:
    """The file's requirements (options such as -r or --extra-index-url left out)."""
    return [Requirement(line) for line in lines(path) if option(line)[0] is None and not line.startswith("-")]


def applies_here(requirement: Requirement) -> bool:
    """False for a requirement whose environment marker excludes this Python (pip would skip it)."""
    return requirement.marker is None or requirement.marker.evaluate()
