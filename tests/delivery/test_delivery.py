"""Where readers open the lab: GitHub's viewer, Colab, Binder, nbconvert HTML.

The links come from ``[tool.lab]`` in pyproject.toml; these tests check that every notebook's
badges and navigation point at files that exist, that Colab's install cell installs labkit and
tlparse, nothing else, and that a widget cell reads as static HTML where no widget can run.
"""

import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile

import pytest

import build_notebooks
from repo import ROOT

# Every notebook, the translations (notebooks/zh-CN/) too.
NOTEBOOKS = [build_notebooks.target_of(source)
             for source in build_notebooks.with_translations(build_notebooks.all_sources())]
PUB = build_notebooks.lab_config()
LINK = re.compile(r"\]\(([^)\s]+)\)")
WIDGET_VIEW = build_notebooks.WIDGET_VIEW


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _name(path) -> str:
    """A notebook's test id: its path under notebooks/, zh-CN/00_start_here for a translation."""
    return path.relative_to(ROOT / "notebooks").with_suffix("").as_posix()


def _text(cell) -> str:
    return "".join(cell["source"])


def _widget_outputs(path):
    """Outputs of the cells that display a lab widget (their text/plain is the widget's repr)."""
    return [o for c in _cells(path) for o in c.get("outputs", [])
            if "Lab(" in "".join(o.get("data", {}).get("text/plain", ""))]


def test_the_publication_is_named_once():
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", PUB["github"]) and PUB["branch"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_badges_open_this_very_file(path):
    top = _text(_cells(path)[0])
    name = path.relative_to(ROOT / "notebooks").as_posix()   # zh-CN/00_start_here.ipynb for a translation
    colab = f"https://colab.research.google.com/github/{PUB['github']}/blob/{PUB['branch']}/notebooks/{name}"
    binder = f"https://mybinder.org/v2/gh/{PUB['github']}/{PUB['branch']}?urlpath=lab/tree/notebooks/{name}"
    assert f"]({colab})" in top and f"]({binder})" in top  # both end in this file's path in the repo
    assert path.parent in (ROOT / "notebooks", *(ROOT / "notebooks" / lang for lang in PUB.get("languages", {})))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_navigation_links_resolve(path):
    cells = _cells(path)
    for nav in (_text(cells[0]), _text(cells[-1])):
        local = [u for u in LINK.findall(nav) if not u.startswith("http")]
        assert local, nav
        for url in local:
            target, _, anchor = url.partition("#")
            assert (path.parent / target).is_file(), url
            if anchor:
                headings = re.findall(r"^#+ (.+)$", (path.parent / target).read_text(), re.MULTILINE)
                assert anchor in {re.sub(r"[^\w -]", "", h).strip().lower().replace(" ", "-") for h in headings}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_first_code_cell_installs_labkit_on_colab_only_and_says_so_collapsed(path):
    """Outside Colab the cell must not read like an install step: it is collapsed (JupyterLab shows its
    first line; Colab shows a form titled by it) and that line says it does nothing here."""
    first = next(c for c in _cells(path) if c["cell_type"] == "code")
    source = _text(first)
    assert 'if "google.colab" in sys.modules:' in source
    assert f'"labkit @ git+https://github.com/{PUB["github"]}@{PUB["branch"]}"' in source
    assert "--no-deps" in source and not first["outputs"]
    assert first["metadata"]["jupyter"] == {"source_hidden": True} and first["metadata"]["cellView"] == "form"
    summary = source.splitlines()[0]
    assert summary.startswith("#@title Colab only") and "Elsewhere this cell does nothing" in summary


@pytest.mark.slow  # pip resolves against the index
def test_colab_install_installs_labkit_and_tlparse_and_nothing_else(tmp_path):
    """The cell's pip arguments, pointed at this checkout instead of GitHub: only labkit and tlparse (a binary
    wheel with no dependencies, which notebooks 01 and 07 run) would install, so Colab's torch and ipywidgets
    stay as they are."""
    line = next(ln for ln in build_notebooks.colab_install_cell().splitlines() if "%pip install" in ln)
    *args, requirement, tool = shlex.split(line.split("%pip install", 1)[1])
    assert requirement.startswith("labkit @ git+https://github.com/") and tool.startswith("tlparse")
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report",
                           str(report), "--disable-pip-version-check", *args, str(ROOT), tool],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    installs = sorted(item["metadata"]["name"] for item in json.loads(report.read_text())["install"])
    assert installs == ["labkit", "tlparse"]


def test_gpu_recordings_and_the_language_catalogues_travel_inside_the_labkit_wheel(tmp_path):
    """Colab installs labkit from git, without the repository around it: the GPU recordings a
    notebook shows, and the catalogues labkit speaks another language from (labkit/catalogues/), must be inside the
    package."""
    source = tmp_path / "src"           # a clean copy: no build/ left over from an earlier build
    shutil.copytree(ROOT / "labkit", source / "labkit", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "--disable-pip-version-check", "-w", str(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    names = set(zipfile.ZipFile(next(tmp_path.glob("labkit-*.whl"))).namelist())
    recordings = {f"labkit/gpu_recordings/{p.name}" for p in (ROOT / "labkit" / "gpu_recordings").glob("*.json")}
    assert recordings and recordings <= names
    catalogues = {f"labkit/catalogues/{p.name}" for p in (ROOT / "labkit" / "catalogues").glob("*.json")}
    assert "labkit/catalogues/zh-CN.json" in catalogues and catalogues <= names
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "labkit").rglob("*.py")}   # a subpackage too
    assert modules - names == set(), "add the package to pyproject.toml's [tool.setuptools] packages"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if _widget_outputs(p)], ids=_name)
def test_stored_widget_outputs_are_static_html(path):
    """GitHub and nbviewer show 'Loading widget...' for a stored widget view; ours store the
    widget's HTML rendering of its state instead (the live view returns when the cell runs)."""
    assert "widgets" not in json.loads(path.read_text())["metadata"]
    for output in _widget_outputs(path):
        assert WIDGET_VIEW not in output["data"]
        html = "".join(output["data"]["text/html"])
        assert _static_view_words(path) in html and "<table" in html


STATIC_VIEW = "static view of: {described}; run the notebook to use the controls"   # what labkit.views says


def _static_view_words(path) -> str:
    """How a static view opens in the notebook's language: "static view of", or its translation's words."""
    from labkit.language import catalogue

    language = "en" if path.parent.name == "notebooks" else path.parent.name
    return catalogue(language).get(STATIC_VIEW, STATIC_VIEW).split("{")[0].rstrip(": ：")


def test_nbconvert_html_shows_each_widget_state():
    from nbconvert import HTMLExporter

    with_widgets = [p for p in NOTEBOOKS if _widget_outputs(p)]
    assert len(with_widgets) >= 3
    for path in with_widgets:
        body, _ = HTMLExporter().from_filename(str(path))
        assert body.count(_static_view_words(path)) == len(_widget_outputs(path)), path.name
        assert WIDGET_VIEW not in body and "Loading widget" not in body


def test_readme_badges_and_pictures_point_at_real_files():
    readme = (ROOT / "README.md").read_text()
    assert f"https://mybinder.org/v2/gh/{PUB['github']}/{PUB['branch']}?urlpath=lab/tree/notebooks/" in readme
    colab = re.findall(r"https://colab\.research\.google\.com/github/([^)\s]+)", readme)
    assert len(colab) >= len([path for path in NOTEBOOKS if path.parent.name == "notebooks"]), "each English one"
    for url in colab:
        repo, path = url.split(f"/blob/{PUB['branch']}/")
        assert repo == PUB["github"] and (ROOT / path).is_file(), url
    pictures = re.findall(r"!\[[^\]]*\]\((docs/[^)]+)\)", readme)
    assert len(pictures) >= 3 and all((ROOT / p).is_file() for p in pictures)


# The pages a learner, an instructor or a maintainer reads, whose links must land (the other docs are written by
# their tools).
PAGES = ["README.md", "README.zh-CN.md", "INSTRUCTORS.md", "docs/maintaining.md", "docs/measurements.md",
         "docs/labkit.md", "lessons/README.md"]


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"(?m)^#{1,6} (.+)$", re.sub(r"(?s)```.*?```", "", markdown))}


def test_every_notebooks_contents_link_opens_the_readmes_notebook_table_its_first_section():
    readme = (ROOT / "README.md").read_text()
    assert re.findall(r"(?m)^## (.+)$", readme)[0] == "The notebooks", "the notebook table comes first"
    assert "the-notebooks" in _anchors(readme)
    for path in NOTEBOOKS:
        if path.parent == ROOT / "notebooks":
            assert build_notebooks.CONTENTS in json.dumps(_cells(path)), path.name
    assert build_notebooks.CONTENTS == "../README.md#the-notebooks"
    for language, words in PUB.get("languages", {}).items():   # a translation's README: its table first too
        page, anchor = words["contents"].split("#")
        assert re.findall(r"(?m)^## (.+)$", (ROOT / page).read_text())[0].lower().replace(" ", "-") == anchor
        for path in (ROOT / "notebooks" / language).glob("*.ipynb"):
            assert f"](../../{words['contents']})" in _text(_cells(path)[0]), path.name


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_of_a_page_lands_on_a_file_and_a_heading(page):
    text = (ROOT / page).read_text()
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (ROOT / page).parent / path if path else ROOT / page
        if not file.exists():
            broken.append(f"{target} (no file)")
        elif anchor and anchor not in _anchors(file.read_text()):
            broken.append(f"{target} (no heading)")
    assert not broken, f"{page}: {broken}"
