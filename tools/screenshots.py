"""Regenerate every screenshot the README shows, and the manifest that says what each one shows.

    .venv/bin/python tools/screenshots.py     # the browser test, with LAB_UPDATE_SCREENSHOTS=1

It takes 3.5 to 4.5 minutes on a busy 2-core machine (measured: 3 min 33 s, 4 min 26 s). It first checks that the
pictured notebooks agree with their sources (``tools/build_notebooks.py --check``): JupyterLab shows the built
notebook, the manifest digests its source.

Every picture is taken by ``tests/delivery/test_browser.py`` in ``./lab``'s own JupyterLab, driven in Chromium
(Debian's ``chromium`` and playwright, ``tests/requirements.txt``). With ``LAB_UPDATE_SCREENSHOTS=1``
the test copies each picture to ``docs/screenshots/`` and writes its entry in
``docs/screenshots/manifest.json``: the date, a digest of each file whose content the picture shows
(``SHOWS``), and, for the first run, the names JupyterLab's file browser listed. ``tests/delivery/test_screenshots.py``
(fast, no browser) recomputes them from the working tree and fails, naming the picture and this
command, once any of them changed: a picture is never older than what it shows.
"""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import time

from repo import CELL_MARKER, ROOT
from showings import SHOWINGS  # where each widget is shown, and its README picture

SCREENSHOTS = ROOT / "docs" / "screenshots"
MANIFEST = SCREENSHOTS / "manifest.json"
COMMAND = ".venv/bin/python tools/screenshots.py"
SOURCES = "lessons"

# The labkit modules whose text a widget's view shows (its controls, its report, the op names).
WIDGET_CODE = ("labkit/widgets.py", "labkit/views.py", "labkit/render.py", "labkit/pictures.py",
               "labkit/experiments.py", "labkit/naming.py")

# Picture -> what it shows: whole files ("path"), or the cells of a notebook source that contain a
# string and the cell just before it ("path::string": a widget's cell, or a GPU cell of notebook 09 and its prose).
SHOWS = {
    # notebook 00 from its top after Run All: its source and what labkit.setup() prints
    "first-run.png": (f"{SOURCES}/00_start_here.py", "labkit/__init__.py", "labkit/env.py", "labkit/warmup.py"),
    "09_gpu_recording.png": (f"{SOURCES}/09_gpu_kernels.py::# GPU cell: CUDA graphs skip an op that mutates an input",
                             "labkit/gpu_recordings/09_gpu_kernels.json", "labkit/views.py", "labkit/recordings.py"),
}
# Each widget's README picture: the notebook cell that builds it, the showing itself (tools/showings.py: the flips
# made before it is taken) and the code of its view.
SHOWS.update({showing.screenshot: (f"{SOURCES}/{showing.notebook}.py::{showing.call}", "tools/showings.py",
                                   *WIDGET_CODE, *(() if showing.language == "en" else (
                                       "labkit/language.py", f"labkit/catalogues/{showing.language}.json")))
              for showing in SHOWINGS if showing.screenshot})
# The picture that shows JupyterLab's file browser (its listing is recorded and checked too).
FILE_BROWSER_PICTURE = "first-run.png"
# JupyterLab hides dot files, and the lab's server config hides these (binder/postBuild installs it).
HIDE_GLOBS = json.loads((ROOT / "binder" / "jupyter_server_config.json").read_text())["ContentsManager"]["hide_globs"]


def _cells(source: str) -> list[str]:
    """The cells of a jupytext percent-format source, each with its ``# %%`` line (``# %%writefile`` is a magic)."""
    return re.split(rf"(?m)^(?={CELL_MARKER})", source)


def shown_text(item: str) -> bytes:
    """The bytes of ITEM ("path" or "path::string", see SHOWS); a missing file or string is a ValueError."""
    path, _, needle = item.partition("::")
    file = ROOT / path
    if not file.is_file():
        raise ValueError(f"{path} does not exist: update SHOWS in tools/screenshots.py")
    if not needle:
        return file.read_bytes()
    cells = _cells(file.read_text())
    found = [i for i, cell in enumerate(cells) if needle in cell]
    if not found:
        raise ValueError(f"no cell of {path} contains {needle!r}: update SHOWS in tools/screenshots.py")
    return "".join(cells[max(found[0] - 1, 0):found[0] + 1]).encode()


def digests(picture: str) -> dict[str, str]:
    """What PICTURE shows, as {item: sha256 of its bytes}."""
    return {item: hashlib.sha256(shown_text(item)).hexdigest() for item in SHOWS[picture]}


def listing(folder: str) -> list[str]:
    """The names JupyterLab's file browser lists in FOLDER (relative to the repository; "" is the root):
    what git tracks or would track there, less dot files and the server's hide_globs."""
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", folder or "."], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.splitlines()
        prefix = f"{folder}/" if folder else ""
        names = {path[len(prefix):].split("/")[0] for path in files if path.startswith(prefix)}
        names = {name for name in names if (ROOT / folder / name).exists()}  # deleted, not yet committed
    except (OSError, subprocess.CalledProcessError):  # no git (a zip download): the folder itself
        names = set(os.listdir(ROOT / folder))
    return sorted(name for name in names
                  if not name.startswith(".") and not any(fnmatch.fnmatch(name, glob) for glob in HIDE_GLOBS))


def pictured_notebooks() -> list[str]:
    """The numbers of the notebooks some picture shows ("00", "02", ...)."""
    paths = {item.partition("::")[0] for items in SHOWS.values() for item in items}
    return sorted(pathlib.Path(path).name[:2] for path in paths if path.startswith(SOURCES))


def read_manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


def record(picture: str, file_browser: dict | None = None) -> None:
    """Write PICTURE's manifest entry (the browser test calls this as it copies the picture)."""
    entry = {"taken": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "shows": digests(picture)}
    if file_browser is not None:
        entry["file_browser"] = file_browser
    manifest = {name: value for name, value in read_manifest().items() if name in SHOWS}
    manifest[picture] = entry
    MANIFEST.write_text(json.dumps(dict(sorted(manifest.items())), indent=2) + "\n")


def stale() -> list[str]:
    """One sentence per picture that is missing or older than what it shows; [] when all are current."""
    manifest, problems = read_manifest(), []
    for picture in SHOWS:
        entry = manifest.get(picture)
        if not (SCREENSHOTS / picture).is_file() or entry is None:
            problems.append(f"{picture}: no picture or no manifest entry")
            continue
        try:
            now = digests(picture)
        except ValueError as error:
            problems.append(f"{picture}: {error}")
            continue
        for item in sorted(set(now) | set(entry["shows"])):
            if now.get(item) != entry["shows"].get(item):
                problems.append(f"{picture} ({entry['taken']}) shows an older or different {item}")
        shown = entry.get("file_browser")
        if picture == FILE_BROWSER_PICTURE and (shown is None or shown["names"] != listing(shown["folder"])):
            problems.append(f"{picture}: JupyterLab's file browser would now list something else")
    return problems


def main() -> int:
    started = time.monotonic()
    chromium = os.environ.get("LAB_CHROMIUM", "/usr/bin/chromium")  # as tests/delivery/test_browser.py
    if not pathlib.Path(chromium).exists():
        print(f"No Chromium at {chromium}: install Debian's (apt-get install chromium), then run this again.")
        return 1
    # JupyterLab shows the built notebooks, the manifest digests their sources: they must agree
    check = [sys.executable, "tools/build_notebooks.py", "--check", *pictured_notebooks()]
    if subprocess.run(check, cwd=ROOT).returncode:
        print("Build the notebooks named above first (python tools/build_notebooks.py NN), then run this again.")
        return 1
    env = dict(os.environ, LAB_UPDATE_SCREENSHOTS="1", LAB_CI="1", TORCHINDUCTOR_VEC_ISA_OK="1")
    # LAB_CI=1: a missing Chromium or playwright fails instead of skipping; -n 0: one browser, one worker
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q",
               "tests/delivery/test_browser.py"]
    print("$", " ".join(command[2:]), flush=True)
    tests = subprocess.run(command, cwd=ROOT, env=env).returncode
    problems = stale()
    stale_pictures = {picture for picture in SHOWS for problem in problems if problem.startswith(picture)}
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    for problem in problems:
        print("still stale:", problem)
    print(f"{'done' if tests == 0 and not problems else 'FAILED'} in {minutes} min {seconds} s: "
          f"{len(SHOWS) - len(stale_pictures)} of {len(SHOWS)} screenshots current ({MANIFEST.relative_to(ROOT)})")
    return 1 if tests or problems else 0


if __name__ == "__main__":
    sys.exit(main())
