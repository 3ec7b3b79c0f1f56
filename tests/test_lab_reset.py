"""`./lab reset [NOTEBOOK]`: a learner's way back to the published notebook, keeping their own beside it.

Run on copies of the lab script and notebooks, with git history (a clone; Binder) and without it (a zip
download: the copy binder/postBuild keeps). It needs no virtual environment and installs nothing.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAME = "02_mutates_args.ipynb"


def _lab(folder: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LAB_VENV=str(folder / "no-venv"), GIT_CEILING_DIRECTORIES=str(folder.parent))
    return subprocess.run(["bash", "./lab", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60)


def _git(folder: pathlib.Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=folder, check=True, capture_output=True)


@pytest.fixture
def lab_copy(tmp_path):
    folder = tmp_path / "lab"
    folder.mkdir()
    shutil.copy(ROOT / "lab", folder)
    shutil.copytree(ROOT / "binder", folder / "binder")
    (folder / "notebooks").mkdir()
    for notebook in ROOT.joinpath("notebooks").glob("[0-9][0-9]_*.ipynb"):
        if ".mine" not in notebook.name:
            shutil.copy(notebook, folder / "notebooks")
    return folder


def _edit(notebook: pathlib.Path) -> bytes:
    notebook.write_text(notebook.read_text().replace('"cells": [', '"cells": [ ', 1))
    return notebook.read_bytes()


def test_reset_by_number_restores_the_last_commit_and_keeps_the_learners_copy(lab_copy):
    _git(lab_copy, "init", "-q")
    _git(lab_copy, "add", ".")
    _git(lab_copy, "commit", "-qm", "published")
    published = (lab_copy / "notebooks" / NAME).read_bytes()
    mine = _edit(lab_copy / "notebooks" / NAME)

    done = _lab(lab_copy, "reset", "02")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1, done.stdout + done.stderr
    assert "02_mutates_args.mine.ipynb" in done.stdout
    assert (lab_copy / "notebooks" / NAME).read_bytes() == published
    assert (lab_copy / "notebooks" / "02_mutates_args.mine.ipynb").read_bytes() == mine
    assert not (lab_copy / "no-venv").exists()  # nothing set up, nothing installed

    again = _edit(lab_copy / "notebooks" / NAME)
    assert _lab(lab_copy, "reset", "02_mutates_args").returncode == 0
    assert (lab_copy / "notebooks" / "02_mutates_args.mine-2.ipynb").read_bytes() == again  # the first kept
    assert "already as published" in _lab(lab_copy, "reset", "02").stdout


def test_without_git_reset_uses_the_copy_postbuild_kept(lab_copy, tmp_path):
    subprocess.run([str(lab_copy / "binder" / "postBuild"), str(tmp_path / "prefix")], check=True,
                   env=dict(os.environ, GIT_CEILING_DIRECTORIES=str(lab_copy.parent)))
    published = (lab_copy / "notebooks" / NAME).read_bytes()
    _edit(lab_copy / "notebooks" / NAME)

    done = _lab(lab_copy, "reset")  # every notebook: only the edited one changes
    assert done.returncode == 0, done.stderr
    assert (lab_copy / "notebooks" / NAME).read_bytes() == published
    assert sorted(p.name for p in (lab_copy / "notebooks").glob("*.mine*")) == ["02_mutates_args.mine.ipynb"]


def test_without_git_or_a_kept_copy_reset_says_so_in_one_sentence(lab_copy):
    _edit(lab_copy / "notebooks" / NAME)
    done = _lab(lab_copy, "reset", "02")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "download the lab again" in done.stderr
    assert not list((lab_copy / "notebooks").glob("*.mine*"))


def test_an_unknown_notebook_gets_one_sentence(lab_copy):
    done = _lab(lab_copy, "reset", "7")
    assert done.returncode == 2 and done.stderr == "No notebook '7': give its number (00 to 05) or its name, e.g. ./lab reset 02.\n"
