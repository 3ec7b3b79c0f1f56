"""Build notebooks/NN_*.ipynb from their percent-format sources in notebooks/src/, and run them.

    python tools/build_notebooks.py            # build and execute every notebook
    python tools/build_notebooks.py 00 02      # only these
    python tools/build_notebooks.py --check    # fail if an .ipynb's cells differ from its source

Source format: ``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell (its lines
written as ``# text``), and ``# %% solution`` a code cell whose source JupyterLab shows
collapsed (a hidden-by-default solution). Outputs are stored by executing the notebook
in a fresh kernel, as nbval will.

Every notebook also gets, from ``[tool.lab]`` in pyproject.toml (where the lab is published):
a navigation cell with its "Open in Colab" and Binder badges on top, a Colab-only install
cell as its first code cell, and a navigation cell at the bottom.

Widget outputs are stored *without* their live-widget view: GitHub, nbviewer and nbconvert
cannot run a widget and would show "Loading widget..."; what they show instead is the widget's
static HTML rendering of its state, which each lab widget puts in its display bundle.
"""

from __future__ import annotations

import pathlib
import sys

try:
    import tomllib
except ImportError:  # Python 3.10: pip vendors the same parser
    from pip._vendor import tomli as tomllib

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
CONTENTS = "../README.md#the-notebooks"


def publication() -> dict:
    """``[tool.lab]`` of pyproject.toml: the GitHub ``owner/name`` and branch the lab is published at."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["lab"]


def colab_url(name: str) -> str:
    pub = publication()
    return f"https://colab.research.google.com/github/{pub['github']}/blob/{pub['branch']}/notebooks/{name}"


def binder_url(name: str) -> str:
    pub = publication()
    return f"https://mybinder.org/v2/gh/{pub['github']}/{pub['branch']}?urlpath=lab/tree/notebooks/{name}"


def colab_install_cell() -> str:
    """Installs labkit on Colab only; --no-deps keeps Colab's own torch and ipywidgets untouched."""
    pub = publication()
    return ("# On Colab only: install labkit from the lab's repository. --no-deps keeps Colab's own\n"
            "# torch and ipywidgets (labkit works with ipywidgets >=7.7,<9). Elsewhere: nothing to do.\n"
            "import sys\n\n"
            'if "google.colab" in sys.modules:\n'
            f'    %pip install --quiet --no-deps "labkit @ git+https://github.com/{pub["github"]}@{pub["branch"]}"')


def title(source: pathlib.Path) -> str:
    """The notebook's H1, without markdown code marks."""
    first = next(line for line in source.read_text().splitlines() if line.startswith("# # "))
    return first[4:].split(":")[0].replace("`", "").strip()


def navigation(source: pathlib.Path, top: bool) -> str:
    sources = sorted(SRC.glob("*.py"))
    i = sources.index(source)
    links = []
    if i > 0:
        links.append(f"[← {title(sources[i - 1])}]({sources[i - 1].stem}.ipynb)")
    links.append(f"[All notebooks]({CONTENTS})")
    if i + 1 < len(sources):
        links.append(f"[{title(sources[i + 1])} →]({sources[i + 1].stem}.ipynb)")
    nav = " · ".join(links)
    if not top:
        return nav
    name = source.stem + ".ipynb"
    return (f"[![Open In Colab]({COLAB_BADGE})]({colab_url(name)}) "
            f"[![Binder]({BINDER_BADGE})]({binder_url(name)}) · {nav}")


def cells_of(source: pathlib.Path) -> list:
    """The notebook's cells: the source's, with the navigation cells and Colab's install cell added."""
    cells = parse(source.read_text())
    return ([nbformat.v4.new_markdown_cell(navigation(source, top=True)), cells[0],
             nbformat.v4.new_code_cell(colab_install_cell())]
            + cells[1:] + [nbformat.v4.new_markdown_cell(navigation(source, top=False))])


def static_widgets(nb) -> None:
    """Keep widget outputs as their static HTML: no live-widget view, no saved widget state."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and "text/html" in data:
                del data[WIDGET_VIEW]


def parse(text: str) -> list:
    cells, kind, lines = [], None, []

    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cell = nbformat.v4.new_code_cell(body)
            if kind == "solution":
                cell.metadata["jupyter"] = {"source_hidden": True}
                cell.metadata["tags"] = ["solution"]
            cells.append(cell)

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            marker = line[4:].strip()
            kind = "markdown" if marker == "[markdown]" else "solution" if marker == "solution" else "code"
            lines = []
        else:
            lines.append(line)
    flush()
    return cells


def build(source: pathlib.Path, execute: bool = True) -> pathlib.Path:
    nb = nbformat.v4.new_notebook(cells=cells_of(source))
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata["language_info"] = {"name": "python"}
    target = ROOT / "notebooks" / (source.stem + ".ipynb")
    if execute:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": str(target.parent)}}).execute()
        static_widgets(nb)
    for i, cell in enumerate(nb.cells):  # stable ids keep diffs small
        cell["id"] = f"{source.stem[:2]}-{i:03d}"
    nbformat.write(nb, target)
    return target


def check() -> int:
    problems = []
    for source in sorted(SRC.glob("*.py")):
        target = ROOT / "notebooks" / (source.stem + ".ipynb")
        if not target.exists():
            problems.append(f"{target.name} is missing")
            continue
        built = [(c.cell_type, c.source) for c in cells_of(source)]
        stored = [(c.cell_type, c.source) for c in nbformat.read(target, 4).cells]
        if built != stored:
            problems.append(f"{target.name} differs from {source.relative_to(ROOT)}: rebuild it")
    print("\n".join(problems) or "notebooks match their sources")
    return 1 if problems else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--check"]:
        sys.exit(check())
    for source in sorted(SRC.glob("*.py")):
        if not args or source.stem[:2] in args:
            print("built", build(source).relative_to(ROOT))
