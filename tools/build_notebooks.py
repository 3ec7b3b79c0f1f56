"""Build notebooks/NN_*.ipynb from their percent-format sources in notebooks/src/, and run them.

    python tools/build_notebooks.py            # build and execute every notebook
    python tools/build_notebooks.py 00 02      # only these
    python tools/build_notebooks.py --check    # fail if an .ipynb's cells differ from its source

Source format: ``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell (its lines
written as ``# text``), and ``# %% solution`` a code cell whose source JupyterLab shows
collapsed (a hidden-by-default solution). Outputs are stored by executing the notebook
in a fresh kernel, as nbval will.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


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
    nb = nbformat.v4.new_notebook(cells=parse(source.read_text()))
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata["language_info"] = {"name": "python"}
    target = ROOT / "notebooks" / (source.stem + ".ipynb")
    if execute:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": str(target.parent)}}).execute()
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
        built = [(c.cell_type, c.source) for c in parse(source.read_text())]
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
