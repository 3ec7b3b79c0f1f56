"""Binder, checked without Binder: what repo2docker would build from binder/, and what it installs.

mybinder.org runs ``repo2docker`` on the repository; its dry run (``--no-build``) prints the
Dockerfile with no Docker engine. The CPU index of torch is not reachable from every machine, so
the ``+cpu`` pin is checked statically and everything else is resolved with pip against PyPI.
"""

import importlib.metadata
import importlib.util
import json
import pathlib
import re
import shutil
import subprocess
import sys

try:
    import tomllib
except ImportError:  # Python 3.10: requirements.txt installs tomli there
    import tomli as tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from repo import ROOT
from requirement_files import applies_here, lines as _lines, option as _option, requirements

pytestmark = pytest.mark.slow  # repo2docker and pip dry runs: minutes, and what Binder builds, not labkit

BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The pin is written from pyproject's [tool.lab] reference_torch by tools/build_notebooks.py --facts
# (tests/notebooks/test_sources.py checks it is current); these tests check what it pins.
TORCH_PIN = next(line for line in _lines(BINDER / "requirements.txt") if re.match(r"torch\b", line))
PYTHON = "3.11"
BINDER_UID, BINDER_USER = "1000", "jovyan"  # what BinderHub passes to repo2docker


# ---------------------------------------------------------------- repo2docker's dry run


@pytest.fixture(scope="module")
def dry_run():
    """The output of ``repo2docker --no-build --debug ROOT``, as BinderHub would call it."""
    if importlib.util.find_spec("repo2docker") is None:
        pytest.skip("jupyter-repo2docker is not installed (tests/requirements.txt installs it)")
    exe = pathlib.Path(sys.executable).with_name("repo2docker")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "repo2docker"]
    cmd += ["--no-build", "--debug", "--user-id", BINDER_UID, "--user-name", BINDER_USER, str(ROOT)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return out


def _dockerfile(out):
    return [line.strip() for line in out.splitlines()]


def test_repo2docker_uses_python_3_11_from_runtime_txt(dry_run):
    """runtime.txt is read: without it repo2docker warns and silently picks its default Python."""
    assert re.search(rf"python\s*=\s*{re.escape(PYTHON)}\b", dry_run), dry_run
    assert "version unspecified" not in dry_run.lower()
    assert (BINDER / "runtime.txt").read_text().strip() == f"python-{PYTHON}"


def test_repo2docker_picks_the_pip_buildpack_not_conda(dry_run):
    """An environment.yml anywhere it looks would switch Binder to conda and skip our pip file."""
    assert "environment.yml" not in dry_run
    assert not re.search(r"\benv\s+(update|create)\b", dry_run), dry_run
    pip_lines = [ln for ln in _dockerfile(dry_run) if re.match(r"RUN\b.*\bpip\b.*\binstall\b", ln)]
    assert len(pip_lines) == 1, pip_lines  # only binder/requirements.txt, never the root one
    assert re.search(r'\binstall\b.*\s-r\s+"?binder/requirements\.txt"?(\s|$)', pip_lines[0])


def test_binder_requirements_are_installed_after_the_repo_is_copied(dry_run):
    """``-e .`` needs the whole repository in place, and as the notebook user, who owns it."""
    lines = _dockerfile(dry_run)
    pip = next(i for i, ln in enumerate(lines) if re.search(r"\bpip\b.*-r\s+\"?binder/requirements", ln))
    copies = [i for i, ln in enumerate(lines) if re.match(r"COPY\b.*\ssrc/?\s+\$\{?REPO_DIR\}?/?$", ln)]
    workdirs = [i for i, ln in enumerate(lines) if re.match(r"WORKDIR\s+\$\{?REPO_DIR\}?/?$", ln)]
    assert copies and copies[-1] < pip, "pip install runs before the repository is copied"
    assert workdirs and workdirs[-1] < pip, "pip does not run in the repository, so -e . misses it"
    copy = lines[copies[-1]]
    assert re.search(rf"--chown=({BINDER_UID}|\$\{{?NB_UID\}}?)\b", copy), copy
    user = [ln for ln in lines[:pip] if re.match(r"USER\s", ln)][-1]
    assert re.match(rf"USER\s+(\$\{{?NB_USER\}}?|{BINDER_USER})$", user), user


def test_binder_installs_the_labs_jupyterlab_settings_like_the_lab_script(dry_run, tmp_path):
    """binder/postBuild runs after the requirements (JupyterLab is there), and it is what ./lab runs too:
    no news pop-up, every cell rendered, the maintainers' folders hidden, jupytext's extensions off."""
    lines = _dockerfile(dry_run)
    pip = next(i for i, ln in enumerate(lines) if re.search(r"\bpip\b.*-r\s+\"?binder/requirements", ln))
    post = [i for i, ln in enumerate(lines) if re.match(r"RUN\s+\./binder/postBuild$", ln)]
    assert post and post[0] > pip, "postBuild does not run after the requirements are installed"
    assert 'binder/postBuild "$venv"' in (ROOT / "lab").read_text()
    done = subprocess.run([str(BINDER / "postBuild"), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    overrides = json.loads((tmp_path / "share/jupyter/lab/settings/overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert overrides["@jupyterlab/notebook-extension:tracker"]["windowingMode"] == "none"
    extensions = sorted((tmp_path / "etc/jupyter/jupyter_server_config.d").glob("*.json"))
    assert len(extensions) == 1 and extensions[0].name > "jupytext.json"  # loaded after jupytext's own file
    assert json.loads(extensions[0].read_text())["ServerApp"]["jpserver_extensions"] == {"jupyterlab_jupytext": False}
    config = json.loads((tmp_path / "etc/jupyter/jupyter_server_config.json").read_text())
    assert {"tools", "tests", "benchmarks", "binder", "__pycache__"} <= set(config["ContentsManager"]["hide_globs"])
    page = json.loads(next((tmp_path / "etc/jupyter/labconfig/page_config.d").glob("*.json")).read_text())
    assert page["disabledExtensions"] == {"jupyterlab-jupytext": True}


# ---------------------------------------------------------------- binder/requirements.txt itself


def test_binder_pins_the_cpu_build_of_torch_from_the_cpu_index():
    """A plain ``torch`` is the multi-GB CUDA build: too big for Binder's 1-2 GB and useless there."""
    lines = _lines(BINDER / "requirements.txt")
    indexes = [value for opt, value in map(_option, lines) if opt in ("--extra-index-url", "--index-url", "-i")]
    assert indexes == [CPU_INDEX], indexes
    torch = [ln for ln in lines if re.match(r"torch\b", ln)]
    assert len(torch) == 1 and re.fullmatch(r"torch==\d+\.\d+\.\d+\+cpu", torch[0]), torch
    assert not [ln for ln in lines if re.match(r"(nvidia-|triton\b|torch\w)", ln)], lines
    assert "--pre" not in lines


def test_binder_includes_the_lab_requirements_and_labkit():
    """Binder must install what ./lab installs: requirements.txt and labkit itself."""
    lines = _lines(BINDER / "requirements.txt")
    nested = [value for opt, value in map(_option, lines) if opt in ("-r", "--requirement")]
    assert [(BINDER / n).resolve() for n in nested] == [ROOT / "requirements.txt"], nested
    assert "-e ." in lines  # repo2docker runs pip from the repository root


def test_the_torch_pin_satisfies_every_torch_range():
    """The pin and the ranges in requirements.txt and pyproject.toml must not contradict each other."""
    pinned = Version(TORCH_PIN.split("==")[1])
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    ranges = [Requirement(r) for r in _lines(ROOT / "requirements.txt") + deps if re.match(r"torch\b", r)]
    assert ranges and all(r.specifier.contains(pinned, prereleases=True) for r in ranges), ranges


# ---------------------------------------------------------------- resolution with pip (PyPI only)


def _pip(*args, cwd):
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-input", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _report(path):
    return {i["metadata"]["name"].lower(): i["metadata"]["version"]
            for i in json.loads(path.read_text())["install"]}


def test_binder_requirements_resolve_without_the_cpu_index(tmp_path):
    """The whole file, as Binder runs it from the repository root, less the unreachable CPU index.

    The venv already has torch, so the dry run downloads nothing big; it would, and the report
    would show it, if anything in the file asked for a torch the venv does not have.
    """
    try:
        importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("torch is not installed here: resolving would download a CUDA build from PyPI")
    repo = tmp_path / "repo"  # a copy: an editable build writes labkit.egg-info into the project
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".*", "*.egg-info", "__pycache__", "build"))
    kept = []
    for line in _lines(BINDER / "requirements.txt"):
        _, value = _option(line)
        if value.startswith("https://download.pytorch.org/") or line == TORCH_PIN:
            continue  # checked statically above
        kept.append(line)
    (repo / "binder" / "requirements.txt").write_text("\n".join(kept) + "\n")
    report = tmp_path / "report.json"
    _pip("--report", str(report), "-r", "binder/requirements.txt", cwd=repo)
    installs = _report(report)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert installs.get("labkit") == version, installs
    big = [n for n in installs if n == "torch" or n == "triton" or n.startswith("nvidia-")]
    assert not big, installs


def test_the_lab_requirements_exist_on_the_index(tmp_path):
    """Installed here is not enough: each requirement must resolve from the index for a fresh image."""
    reqs = [r for r in requirements(ROOT / "requirements.txt") if r.name != "torch" and applies_here(r)]
    assert reqs
    report = tmp_path / "report.json"
    _pip("--ignore-installed", "--no-deps", "--report", str(report), *map(str, reqs), cwd=tmp_path)
    names = {r.name.lower().replace("_", "-") for r in reqs}
    assert names <= set(_report(report)), (names, _report(report))
