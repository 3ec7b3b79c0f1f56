"""The README's pictures exist and are never older than what they show (fast: no browser).

docs/screenshots/manifest.json records, for each screenshot, a digest of every file (or notebook cell)
it shows and the names JupyterLab's file browser listed; ``tools/screenshots.py`` (the browser test
with LAB_UPDATE_SCREENSHOTS=1) writes it with the pictures. Here the digests are recomputed from the
working tree: a notebook, widget module or recording changed since its picture was taken fails, naming
the picture and the command that retakes it.
"""

import pathlib
import re

import pytest

import screenshots
from repo import ROOT

# README.md and each language's README (README.zh-CN.md): a translation's README shows its own pictures
README = "\n".join(path.read_text() for path in [ROOT / "README.md", *sorted(ROOT.glob("README.*.md"))])
IMAGES = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", README)
README_SCREENSHOTS = [pathlib.PurePosixPath(path).name for path in IMAGES if path.startswith("docs/screenshots/")]
RETAKE = f"retake the screenshots with `{screenshots.COMMAND}` (the browser test, about 5 minutes)"


def test_every_image_the_readme_shows_exists():
    local = [path for path in IMAGES if not re.match(r"https?://", path)]
    assert README_SCREENSHOTS, "the README shows no screenshot any more: update this test"
    missing = [path for path in local if not (ROOT / path).is_file()]
    assert not missing, f"README.md shows images that do not exist: {missing}"


def test_every_readme_screenshot_is_one_the_tool_takes():
    untaken = sorted(set(README_SCREENSHOTS) - set(screenshots.SHOWS))
    assert not untaken, f"README.md shows {untaken}, which tools/screenshots.py's SHOWS does not know"


def test_every_screenshot_in_docs_is_shown_by_the_readme():
    unused = sorted({png.name for png in screenshots.SCREENSHOTS.glob("*.png")} - set(README_SCREENSHOTS))
    assert not unused, f"docs/screenshots/ holds {unused}, which README.md does not show: show or delete them"


@pytest.mark.parametrize("picture", sorted(screenshots.SHOWS))
def test_a_screenshot_is_not_older_than_what_it_shows(picture):
    problems = [problem for problem in screenshots.stale() if problem.startswith(f"{picture}")]
    assert not problems, "; ".join(problems) + f": {RETAKE}"


def test_the_stale_check_names_a_changed_file(monkeypatch):
    """The check can fail: a manifest entry whose digest differs is reported for that picture."""
    manifest = screenshots.read_manifest()
    picture, entry = next(iter(manifest.items()))
    item = next(iter(entry["shows"]))
    changed = {**manifest, picture: {**entry, "shows": {**entry["shows"], item: "0" * 64}}}
    monkeypatch.setattr(screenshots, "read_manifest", lambda: changed)
    assert f"{picture} ({entry['taken']}) shows an older or different {item}" in screenshots.stale()


def test_the_stale_check_notices_a_file_browser_listing_that_changed(monkeypatch):
    manifest = screenshots.read_manifest()
    picture = screenshots.FILE_BROWSER_PICTURE
    entry = manifest[picture]
    shown = {**entry["file_browser"], "names": entry["file_browser"]["names"][1:]}
    monkeypatch.setattr(screenshots, "read_manifest", lambda: {**manifest, picture: {**entry, "file_browser": shown}})
    assert any(problem.startswith(f"{picture}: JupyterLab's file browser") for problem in screenshots.stale())


def test_listing_hides_what_the_lab_server_hides():
    top = screenshots.listing("")
    assert {"README.md", "INSTRUCTORS.md", "notebooks", "labkit", "lessons"} <= set(top)
    assert not {"tools", "tests", "benchmarks", "binder", ".git", ".gitignore"} & set(top), top
