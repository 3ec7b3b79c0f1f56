"""Build notebooks/NN_*.ipynb from their percent-format sources in lessons/, and run them.

    python tools/build_notebooks.py              # build and execute every notebook
    python tools/build_notebooks.py 00 02        # only these (a number, or a name)
    python tools/build_notebooks.py --check      # executes nothing: fail if a notebook's cells differ
    python tools/build_notebooks.py --check 02   #   from what its source builds (one line per notebook)
    python tools/build_notebooks.py --facts      # executes nothing: rewrite the repeated facts (below)

A translation, ``lessons/<language>/NN_name.py`` (prose only, each cell keyed to the English cell it translates:
tools/translations.py), is built after its English notebook into ``notebooks/<language>/NN_name.ipynb``, with the
English code; ``--check`` checks it too, and names the translated cell an English change left behind.

The lab's repeated facts (the notebook list in README.md, notebook 00's map, INSTRUCTORS.md's timings and
GPU-room note, the times in docs/measurements.md, the GPU table in docs/maintaining.md; the torch range;
CHECKED_ON; the version) come from one registry, pyproject.toml's ``[tool.lab]``, and
sit in the files that state them between generated-region markers (tools/facts.py). Every build
writes them first; ``--check`` with no names also fails, one line per stale file, while one is out of
date, and while a source has no ``[[tool.lab.notebooks]]`` entry or an entry no source. A build or check
of named notebooks still runs then (a new notebook is built before it is registered), with a note.

The sources are jupytext's percent format (``jupytext.reads(text, fmt="py:percent")``):
``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell, and a solution is a code cell
whose source JupyterLab shows collapsed, written with standard cell metadata:
``# %% jupyter={"source_hidden": true} tags=["solution"]``. A cell tagged ``check`` (``# %% tags=["check"]``)
holds the asserts behind the prose above it; the builder collapses it and every solution, in JupyterLab
(``jupyter.source_hidden``) and on Colab (``cellView: form``, titled by the cell's ``#@title`` line).
Outputs are stored by executing the notebook in a fresh kernel, as nbval will, on the reference torch
(``[tool.lab] reference_torch`` in pyproject.toml): outputs recorded on another torch would fail nbval's
comparison there.

Every notebook also gets, from ``[tool.lab]`` (where the lab is published): a navigation cell with
its "Open in Colab" and Binder badges on top, Colab's install cell as its first code cell (collapsed
to its one-line summary: elsewhere it does nothing), and a navigation cell at the bottom.

Widget outputs are stored *without* their live-widget view: GitHub, nbviewer and nbconvert cannot run
a widget and would show "Loading widget..."; what they show instead is the widget's static HTML
rendering of its state, which each lab widget puts in its display bundle.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import pathlib
import re
import sys

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

import jupytext
import nbformat
from nbclient import NotebookClient

import facts  # tools/facts.py, beside this file
import translations  # the language axis: lessons/<language>/NN_name.py
from repo import ROOT

SOURCES = ROOT / "lessons"
NOTEBOOKS = ROOT / "notebooks"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
CONTENTS = "../README.md#the-notebooks"
# Collapsed in JupyterLab (jupyter.source_hidden), shown as a titled form on Colab (cellView + @title).
COLAB_CELL_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}
# Cells a reader sees collapsed: a claim's check (silent: it asserts, prints nothing) and an exercise's solution.
COLLAPSED_TAGS = {"check", "solution"}


def lab_config() -> dict:
    """``[tool.lab]`` of pyproject.toml: where the lab is published, and the reference torch."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["lab"]


def colab_url(name: str) -> str:
    """Colab's address of notebooks/<name> (a name may start with its language's folder, zh-CN/00_....ipynb)."""
    lab = lab_config()
    return f"https://colab.research.google.com/github/{lab['github']}/blob/{lab['branch']}/notebooks/{name}"


def binder_url(name: str) -> str:
    lab = lab_config()
    return f"https://mybinder.org/v2/gh/{lab['github']}/{lab['branch']}?urlpath=lab/tree/notebooks/{name}"


def language(source: pathlib.Path) -> str | None:
    """The language of a translated lesson (lessons/zh-CN/00_start_here.py: "zh-CN"); None for an English one."""
    return source.parent.name if source.parent != SOURCES else None


def colab_install_cell() -> str:
    """Installs labkit on Colab only; --no-deps keeps Colab's own torch and ipywidgets untouched.
    tlparse (a binary wheel with no dependencies) comes with it: notebooks 01 and 07 run it, and nothing
    downloads while a lesson runs.

    Its first line is all a learner sees (the cell is collapsed), so it says what the cell is for.
    """
    lab = lab_config()
    return ("#@title Colab only: installs labkit there. Elsewhere this cell does nothing.\n"
            "# --no-deps keeps Colab's own torch and ipywidgets (labkit works with ipywidgets >=7.7,<9);\n"
            "# tlparse, a program with no dependencies, turns notebooks 01 and 07's TORCH_TRACE logs into reports.\n"
            "import sys\n\n"
            'if "google.colab" in sys.modules:\n'
            f'    %pip install --quiet --no-deps "labkit @ git+https://github.com/{lab["github"]}@{lab["branch"]}" '
            '"tlparse>=0.4"')


def title(source: pathlib.Path) -> str:
    """The notebook's H1 before its colon (a full-width one in Chinese), without markdown code marks."""
    first = next(line for line in source.read_text().splitlines() if line.startswith("# # "))
    return re.split("[:：]", first[4:])[0].replace("`", "").strip()


def _neighbour(source: pathlib.Path, other: pathlib.Path) -> tuple[str, str]:
    """(the link's text, its target) for a neighbouring notebook: in the source's language where it is translated,
    else the English notebook, under the language's title for it (pyproject's titles) marked as English."""
    lang = language(source)
    if lang is None:
        return title(other), f"{other.stem}.ipynb"
    translated = SOURCES / lang / other.name
    if translated.exists():
        return title(translated), f"{other.stem}.ipynb"
    words = lab_config()["languages"][lang]
    name = translations.title_of(lab_config(), lang, other.stem).replace("`", "")
    return f"{other.stem[:2]} · {name}{words['in_english']}", f"../{other.stem}.ipynb"


def navigation(source: pathlib.Path, top: bool) -> str:
    sources = all_sources()
    english = translations.english_of(source) if language(source) else source
    i = sources.index(english)
    lang = language(source)
    words = lab_config()["languages"][lang] if lang else {"all_notebooks": "All notebooks", "contents": None}
    contents = f"../../{words['contents']}" if lang else CONTENTS
    links = []
    if i > 0:
        text, target = _neighbour(source, sources[i - 1])
        links.append(f"[← {text}]({target})")
    links.append(f"[{words['all_notebooks']}]({contents})")
    if i + 1 < len(sources):
        text, target = _neighbour(source, sources[i + 1])
        links.append(f"[{text} →]({target})")
    nav = " · ".join(links)
    if not top:
        return nav
    name = f"{lang}/{source.stem}.ipynb" if lang else source.stem + ".ipynb"
    return (f"[![Open In Colab]({COLAB_BADGE})]({colab_url(name)}) "
            f"[![Binder]({BINDER_BADGE})]({binder_url(name)}) · {nav}")


def all_sources() -> list[pathlib.Path]:
    return sorted(SOURCES.glob("[0-9][0-9]_*.py"))


def source_cells(source: pathlib.Path) -> list:
    """The source's cells, as jupytext reads them, less jupytext's own layout bookkeeping. A translation's are
    the English source's cells with its prose in their place (TranslationError while it is stale)."""
    if language(source):
        prose = iter(translations.translated_markdown(source, ROOT))
        cells = source_cells(translations.english_of(source))
        for cell in cells:
            if cell.cell_type == "markdown":
                cell.source = next(prose)
        return cells
    cells = jupytext.reads(source.read_text(), fmt="py:percent").cells
    for cell in cells:
        cell.metadata.pop("lines_to_next_cell", None)
    return cells


def built_notebook(source: pathlib.Path):
    """The notebook before execution: the source's cells with the navigation and Colab cells added."""
    cells = source_cells(source)
    colab = nbformat.v4.new_code_cell(colab_install_cell(), metadata=COLAB_CELL_METADATA)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(navigation(source, top=True)), cells[0],
                                         colab, *language_cell(source), *cells[1:],
                                         nbformat.v4.new_markdown_cell(navigation(source, top=False))])
    for cell in nb.cells:
        if COLLAPSED_TAGS & set(cell.metadata.get("tags", ())):
            cell.metadata.update(COLAB_CELL_METADATA)     # collapsed in JupyterLab and on Colab alike
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):  # stable ids keep diffs small
        cell["id"] = f"{source.stem[:2]}-{i:03d}"
    return nb


def language_cell(source: pathlib.Path) -> list:
    """A translation's cell that asks labkit to speak its language (labkit.use_language), collapsed to its title,
    before the setup cell: none for an English notebook, or for a language labkit has no catalogue of."""
    lang = language(source)
    if lang is None or not (ROOT / "labkit" / "catalogues" / f"{lang}.json").exists():
        return []
    title = lab_config()["languages"][lang]["language_cell"]
    return [nbformat.v4.new_code_cell(f'#@title {title}\nimport labkit\n\nlabkit.use_language("{lang}")',
                                      metadata=COLAB_CELL_METADATA)]


def target_of(source: pathlib.Path) -> pathlib.Path:
    """notebooks/NN_name.ipynb, or notebooks/<language>/NN_name.ipynb for a translation."""
    lang = language(source)
    return (NOTEBOOKS / lang if lang else NOTEBOOKS) / (source.stem + ".ipynb")


def drop_live_widget_views(nb) -> None:
    """Keep widget outputs as their static HTML (the saved widget state is off in NotebookClient)."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and "text/html" in data:
                del data[WIDGET_VIEW]


def build(source: pathlib.Path) -> pathlib.Path:
    """Execute the notebook a source builds and store it; TranslationError (one sentence) for a translation whose
    language is not registered or whose prose is stale."""
    if language(source) and translations.language_problem(source, lab_config()):
        raise translations.TranslationError(translations.language_problem(source, lab_config()))
    nb = built_notebook(source)
    target = target_of(source)
    target.parent.mkdir(exist_ok=True)
    NotebookClient(nb, timeout=900, kernel_name="python3", store_widget_state=False, record_timing=False,
                   resources={"metadata": {"path": str(target.parent)}}).execute()
    drop_live_widget_views(nb)
    nbformat.write(nb, target)
    return target


def comparable(cell) -> tuple:
    """What the builder decides about a cell: its id, type, source and metadata (not its outputs)."""
    metadata = {k: v for k, v in cell.metadata.items() if k != "execution"}  # nbclient's timings
    return cell.get("id"), cell.cell_type, cell.source, metadata


def difference(source: pathlib.Path) -> str | None:
    """One line naming how the stored notebook differs from what its source builds, or None."""
    target = target_of(source)
    shown = target.relative_to(NOTEBOOKS).as_posix()   # zh-CN/00_start_here.ipynb for a translation
    if language(source):   # what keeps a translation from building comes first: its language, its drift
        problem = translations.language_problem(source, lab_config())
        problems = [problem] if problem else translations.drift(source, ROOT)
        if problems:
            return "\n".join(problems)
    if not target.exists():
        return f"{shown} is missing: build it with python tools/build_notebooks.py {source.stem[:2]}"
    built = [comparable(c) for c in built_notebook(source).cells]   # a translation's drift is named above
    stored = [comparable(c) for c in nbformat.read(target, 4).cells]
    if built == stored:
        return None
    fix = f"rebuild it with python tools/build_notebooks.py {source.stem[:2]}"
    if len(built) != len(stored):
        return f"{shown} has {len(stored)} cells, {source.relative_to(SOURCES)} makes {len(built)}: {fix}"
    fields = ("id", "type", "source", "metadata")
    differing = [(i, [f for f, b, s in zip(fields, b_cell, s_cell) if b != s])
                 for i, (b_cell, s_cell) in enumerate(zip(built, stored)) if b_cell != s_cell]
    first, what = differing[0]
    return (f"{shown}: {len(differing)} cell(s) differ from {source.relative_to(SOURCES)} "
            f"(first: cell {first}, its {' and '.join(what)}): {fix}")


def check(sources: list[pathlib.Path], with_facts: bool) -> int:
    problems = [line for line in map(difference, sources) if line]
    if with_facts:
        problems += facts.stale(ROOT)
    print("\n".join(problems) or f"{len(sources)} notebook(s) match their sources"
          + (", and every generated fact its registry" if with_facts else ""))
    return 1 if problems else 0


def write_facts(strict: bool) -> int:
    """Rewrite the generated regions from the registry. Strict (--facts, a whole build): a source without
    a registry entry, an entry without a source, or a registry that cannot be written fails; when named
    notebooks are built, a registry that no version-matrix row has run yet is a note."""
    try:
        changed = facts.write(ROOT)
    except facts.NotYetChecked as error:  # a new notebook that no version-matrix row has run yet
        print(error if strict else f"note: {error} (the facts were not rewritten)", file=sys.stderr)
        return 1 if strict else 0
    except facts.FactsError as error:
        print(error, file=sys.stderr)
        return 1
    for path in changed:
        print("wrote", path)
    problems = facts.registry_problems(ROOT)
    if problems:
        print("\n".join(problems if strict else [f"note: {line}" for line in problems]), file=sys.stderr)
    return 1 if problems and strict else 0


def wrong_torch() -> str | None:
    """Why this environment cannot record the stored outputs, or None."""
    reference = lab_config()["reference_torch"]
    installed = importlib.metadata.version("torch").split("+")[0]
    if installed != reference:
        return (f"Outputs are recorded on torch {reference} (pyproject's [tool.lab] reference_torch) and this "
                f"is torch {installed}: build in the lab's environment (./lab sets it up), or pass --any-torch.")
    return None


def select(names: list[str]) -> list[pathlib.Path]:
    """The sources named by number ("02") or name ("02_mutates_args"), each with its translations after it; all of
    them for none."""
    sources = all_sources()
    if not names:
        return with_translations(sources)
    chosen = []
    for name in names:
        found = [s for s in sources if name in (s.stem, s.stem[:2], s.name, s.stem + ".ipynb")]
        if not found:
            raise SystemExit(f"No notebook {name!r}: give a number from "
                             f"{', '.join(s.stem[:2] for s in sources)}, or a name such as {sources[0].stem}.")
        chosen += found
    return with_translations(chosen)


def with_translations(sources: list[pathlib.Path]) -> list[pathlib.Path]:
    """Each English source followed by its translations (lessons/<language>/ of the same name)."""
    return [path for source in sources for path in [source, *sorted(SOURCES.glob(f"*/{source.name}"))]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", help="numbers (02) or names; all when none")
    parser.add_argument("--check", action="store_true",
                        help="execute nothing; exit 1 if a stored notebook differs from its source")
    parser.add_argument("--facts", action="store_true",
                        help="execute nothing; rewrite the facts generated from pyproject's [tool.lab]")
    parser.add_argument("--any-torch", action="store_true",
                        help="record outputs on a torch other than the reference one")
    args = parser.parse_args(argv)
    if args.facts:
        if args.notebooks or args.check:
            parser.error("--facts writes every generated fact: give it no notebooks, and not --check")
        return write_facts(strict=True)
    sources = select(args.notebooks)
    if args.check:
        return check(sources, with_facts=not args.notebooks)
    if not args.any_torch and wrong_torch():
        print(wrong_torch(), file=sys.stderr)
        return 2
    if write_facts(strict=not args.notebooks):  # before executing: notebook 00's map is in its source
        return 1
    failed = 0
    for source in sources:
        try:
            print("built", build(source).relative_to(ROOT))
        except translations.TranslationError as stale:  # the English one is built; this translation is not
            print(f"not built: {target_of(source).relative_to(ROOT)}\n{stale}", file=sys.stderr)
            failed = 1
    if failed:   # the facts of what was built are written all the same
        write_facts(strict=False)
        return 1
    # again after executing: docs/measurements.md's lesson metrics count the notebooks just stored
    return write_facts(strict=not args.notebooks)


if __name__ == "__main__":
    sys.exit(main())
