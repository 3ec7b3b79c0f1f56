"""`./lab reset [NOTEBOOK]`: a learner's way back to the published notebook, keeping their own beside it.

Run on copies of the lab script and notebooks, with git history (a clone; Binder) and without it (a zip
download: the copy binder/postBuild keeps). It needs no virtual environment and installs nothing.
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from repo import ROOT

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
    for notebook in ROOT.joinpath("notebooks").glob("*/[0-9][0-9]_*.ipynb"):   # the translations, zh-CN/
        (folder / "notebooks" / notebook.parent.name).mkdir(exist_ok=True)
        if ".mine" not in notebook.name:
            shutil.copy(notebook, folder / "notebooks" / notebook.parent.name)
    return folder


def _edit(notebook: pathlib.Path) -> bytes:
    """A learner's edit: a line added to the first code cell."""
    data = json.loads(notebook.read_text())
    cell = next(c for c in data["cells"] if c["cell_type"] == "code")
    source = cell["source"]
    cell["source"] = ["# my note\n", *source] if isinstance(source, list) else "# my note\n" + source
    notebook.write_text(json.dumps(data))
    return notebook.read_bytes()


def _run(notebook: pathlib.Path) -> bytes:
    """What running a notebook changes: outputs and execution counts, no cell's text."""
    data = json.loads(notebook.read_text())
    for i, cell in enumerate(c for c in data["cells"] if c["cell_type"] == "code"):
        cell["execution_count"], cell["outputs"] = 100 + i, []
    notebook.write_text(json.dumps(data))
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
    assert "choose Revert" in done.stdout, "JupyterLab's File Changed dialog focuses Overwrite: the message says Revert"


def test_a_notebook_only_run_is_restored_without_a_mine_copy(lab_copy):
    """Run All changes outputs and counts, not a cell of the learner's: nothing to keep beside it."""
    _git(lab_copy, "init", "-q")
    _git(lab_copy, "add", ".")
    _git(lab_copy, "commit", "-qm", "published")
    published = (lab_copy / "notebooks" / NAME).read_bytes()
    _run(lab_copy / "notebooks" / NAME)
    done = _lab(lab_copy, "reset")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing to keep" in done.stdout and "choose Revert" in done.stdout
    assert (lab_copy / "notebooks" / NAME).read_bytes() == published
    assert not list((lab_copy / "notebooks").glob("*.mine*")), "no .mine copy of a notebook only run"


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


def _committed(folder: pathlib.Path) -> None:
    _git(folder, "init", "-q")
    _git(folder, "add", ".")
    _git(folder, "commit", "-qm", "published")


def _published(folder: pathlib.Path, tmp_path: pathlib.Path, committed: bool) -> None:
    """The lab as published: a git commit, or (a zip download) the copies binder/postBuild keeps."""
    if committed:
        _committed(folder)
    else:
        subprocess.run([str(folder / "binder" / "postBuild"), str(tmp_path / "prefix")], check=True,
                       env=dict(os.environ, GIT_CEILING_DIRECTORIES=str(folder.parent)))


def _lab_names(folder: pathlib.Path) -> list[str]:
    return sorted(p.stem for p in (folder / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("committed", [True, False])
def test_an_unknown_notebook_gets_one_sentence_listing_the_labs_notebooks(lab_copy, tmp_path, committed):
    _published(lab_copy, tmp_path, committed)
    names = _lab_names(lab_copy)
    assert len(names) >= 10  # 00 to 09 at least: the range below is derived, not written here
    done = _lab(lab_copy, "reset", "7")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "download" not in done.stderr
    assert done.stderr.startswith("'7' is not one of the lab's notebooks")
    assert f"({names[0][:2]} to {names[-1][:2]})" in done.stderr and ", ".join(names) in done.stderr


def test_a_learners_own_notebook_is_not_one_of_the_labs(lab_copy):
    _committed(lab_copy)
    (lab_copy / "notebooks" / "my_notes.ipynb").write_text("{}")
    (lab_copy / "notebooks" / "98_my_notes.ipynb").write_text("{}")
    for own in ("my_notes", "98_my_notes.ipynb", "98"):
        done = _lab(lab_copy, "reset", own)
        assert done.returncode == 2 and "not one of the lab's notebooks" in done.stderr, done.stderr
        assert "download the lab again" not in done.stderr and "02_mutates_args" in done.stderr
    assert (lab_copy / "notebooks" / "my_notes.ipynb").read_text() == "{}"


@pytest.mark.parametrize("pattern", ["0.", "0*", ".*", "0[0-9]", "[", "02_.*", "^02", "02|03"])
def test_a_name_is_plain_text_never_a_pattern(lab_copy, pattern):
    _committed(lab_copy)
    edited = _edit(lab_copy / "notebooks" / NAME)
    done = _lab(lab_copy, "reset", pattern)
    assert done.returncode == 2 and "not one of the lab's notebooks" in done.stderr, done.stdout + done.stderr
    assert (lab_copy / "notebooks" / NAME).read_bytes() == edited and not list(lab_copy.glob("notebooks/*.mine*"))


def test_jupyterlabs_copy_is_not_taken_for_the_notebook(lab_copy):
    _committed(lab_copy)
    published = (lab_copy / "notebooks" / NAME).read_bytes()
    copy = lab_copy / "notebooks" / "02_mutates_args-Copy1.ipynb"  # File > Duplicate; sorts first
    copy.write_bytes(_edit(lab_copy / "notebooks" / NAME))
    done = _lab(lab_copy, "reset", "02")
    assert done.returncode == 0 and "Restored 02_mutates_args.ipynb" in done.stdout, done.stdout + done.stderr
    assert (lab_copy / "notebooks" / NAME).read_bytes() == published and copy.read_bytes() != published
    assert "Copy1" not in done.stdout + done.stderr


@pytest.mark.parametrize("committed", [True, False])
def test_a_deleted_notebook_is_restored(lab_copy, tmp_path, committed):
    _published(lab_copy, tmp_path, committed)
    published = (lab_copy / "notebooks" / NAME).read_bytes()
    (lab_copy / "notebooks" / NAME).unlink()
    done = _lab(lab_copy, "reset", "02")
    assert done.returncode == 0 and "had been deleted" in done.stdout, done.stdout + done.stderr
    assert (lab_copy / "notebooks" / NAME).read_bytes() == published and not list(lab_copy.glob("notebooks/*.mine*"))
    (lab_copy / "notebooks" / NAME).unlink()
    assert _lab(lab_copy, "reset").returncode == 0  # every notebook, the deleted one too
    assert (lab_copy / "notebooks" / NAME).read_bytes() == published


@pytest.mark.parametrize("committed", [True, False])
def test_a_translated_notebook_is_reset_by_its_languages_folder_and_the_number_alone_is_the_english(
        lab_copy, tmp_path, committed):
    _published(lab_copy, tmp_path, committed)
    chinese = lab_copy / "notebooks" / "zh-CN" / "00_start_here.ipynb"
    english = lab_copy / "notebooks" / "00_start_here.ipynb"
    published = chinese.read_bytes(), english.read_bytes()
    mine = _edit(chinese), _edit(english)

    done = _lab(lab_copy, "reset", "zh-CN/00")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1, done.stdout + done.stderr
    assert "Restored zh-CN/00_start_here.ipynb" in done.stdout and "zh-CN/00_start_here.mine.ipynb" in done.stdout
    assert chinese.read_bytes() == published[0] and english.read_bytes() == mine[1], "the English one untouched"
    assert (chinese.parent / "00_start_here.mine.ipynb").read_bytes() == mine[0]

    assert _lab(lab_copy, "reset", "00").returncode == 0 and english.read_bytes() == published[1]
    _edit(chinese)
    chinese_path = _lab(lab_copy, "reset", "notebooks/zh-CN/00_start_here.ipynb")
    assert chinese_path.returncode == 0 and chinese.read_bytes() == published[0], chinese_path.stderr
    chinese.unlink()
    assert _lab(lab_copy, "reset").returncode == 0 and chinese.read_bytes() == published[0], "all: a translation too"
    shutil.rmtree(chinese.parent)                                   # the language's whole folder deleted
    done = _lab(lab_copy, "reset", "zh-CN/00")
    assert done.returncode == 0 and "had been deleted" in done.stdout and chinese.read_bytes() == published[0]
    full = _lab(lab_copy, "reset", str(english))                    # a full path, as a terminal's tab gives it
    assert full.returncode == 0 and "Restored 00_start_here.ipynb" in full.stdout + full.stderr or \
        "already as published" in full.stdout, full.stdout + full.stderr


def test_an_unknown_name_lists_the_translations_too(lab_copy):
    _committed(lab_copy)
    for unknown in ("zh-CN/07", "fr-FR/00", "zh-CN"):
        done = _lab(lab_copy, "reset", unknown)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        translated = ", ".join(f"zh-CN/{p.stem[:2]}" for p in sorted((ROOT / "lessons" / "zh-CN").glob("*.py")))
        assert f"(in another language: {translated})" in done.stderr and "(00 to " in done.stderr, done.stderr
