"""The lab's language axis: a lesson's prose in another language, kept in step with its English source.

English is the source of truth. A translation, ``lessons/<language>/NN_name.py``, holds only prose: one
markdown cell (jupytext's percent format) for each markdown cell of the English source, in the same order,
each opened with the digest of the English text it translates::

    # %% [markdown] en="3f2a9c1b7d"
    # # 00 · 从这里开始：……

Its code cells come from the English source when the notebook is built (``notebooks/<language>/NN_name.ipynb``),
so the code a reader runs is the code the English lesson asserts. The digest is taken of the English text with
what ``--facts`` generates left out (the regions between BEGIN and END markers, the number of a "**Time:** about
N minutes" line): a changed learner time moves no translation, a changed sentence does.

Which languages exist, their titles and their reading rate is ``[tool.lab.languages.<language>]`` of
pyproject.toml: ``name`` (the language in itself), ``readme`` (its README), ``characters_per_minute`` (the rate a
learner reads its characters at; tools/facts.py times its notebooks with it), and ``titles`` and
``short_ideas`` per notebook stem (the navigation cells, notebook 00's map, its README's table; a notebook without
them, added in English after the translation began, shows its English title and idea, marked as English).
"""

from __future__ import annotations

import hashlib
import pathlib
import re

import jupytext

from repo import ROOT

# What --facts writes into an English cell, replaced before the digest (tools/facts.py writes these).
GENERATED_REGION = re.compile(r"<!-- BEGIN ([\w-]+):.*?<!-- END \1 -->", re.S)
TIME_LINE = re.compile(r"(\*\*Time:\*\* about )\d+( minutes)")
DIGEST = re.compile(r"^[0-9a-f]{10}$")
# What a language's [tool.lab.languages.<code>] must give: the build and --facts write its prose from these.
REQUIRED = ("name", "readme", "contents", "characters_per_minute", "all_notebooks", "in_english", "time_line",
            "map_columns", "this_one", "minutes", "language_cell")


class TranslationError(SystemExit):
    """A translation that cannot be built: one sentence naming the cell and the fix."""


def english_digest(text: str) -> str:
    """The digest a translated cell carries of the English text it translates, less what --facts generates."""
    text = TIME_LINE.sub(r"\g<1>N\g<2>", GENERATED_REGION.sub(r"<!-- \1 -->", text))
    return hashlib.sha256(text.strip().encode()).hexdigest()[:10]


def languages(lab: dict) -> dict[str, dict]:
    """{language code: its [tool.lab.languages.<code>] table}, e.g. {"zh-CN": {...}}."""
    return lab.get("languages", {})


def title_of(lab: dict, language: str, stem: str) -> str:
    """A notebook's title in a language, or its English title where the language has none yet."""
    titles = lab["languages"][language].get("titles", {})
    return titles.get(stem) or next(nb["title"] for nb in lab["notebooks"] if nb["stem"] == stem)


def short_idea_of(lab: dict, language: str, stem: str) -> str:
    ideas = lab["languages"][language].get("short_ideas", {})
    return ideas.get(stem) or next(nb["short_idea"] for nb in lab["notebooks"] if nb["stem"] == stem)


def translations(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """Every translated lesson: lessons/<language>/NN_name.py."""
    return sorted((root / "lessons").glob("*/[0-9][0-9]_*.py"))


def english_of(translation: pathlib.Path) -> pathlib.Path:
    """The English source a translation translates: lessons/zh-CN/00_start_here.py -> lessons/00_start_here.py."""
    return translation.parent.parent / translation.name


def language_of(translation: pathlib.Path) -> str:
    return translation.parent.name


def _markdown(path: pathlib.Path) -> list:
    return [cell for cell in jupytext.reads(path.read_text(), fmt="py:percent").cells if cell.cell_type == "markdown"]


def _line_of(path: pathlib.Path, index: int) -> int:
    """The line of a source on which its index-th markdown cell starts (1-based)."""
    starts = [n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("# %% [markdown]")]
    return starts[index] if index < len(starts) else 0


def _opening(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.strip()[:60]


def drift(translation: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """One sentence per translated cell that no longer matches its English cell, naming both and the fix."""
    english = english_of(translation)
    name = translation.relative_to(root)
    if not english.exists():
        return [f"{name} translates {english.relative_to(root)}, which does not exist: remove it, or rename it "
                "after the English lesson it translates"]
    ours, theirs = _markdown(translation), _markdown(english)
    code = [cell for cell in jupytext.reads(translation.read_text(), fmt="py:percent").cells
            if cell.cell_type != "markdown" and cell.source.strip()]
    if code:
        return [f"{name} has {len(code)} code cell(s) ({_opening(code[0].source)!r}): a translation holds prose "
                f"only, its code comes from {english.relative_to(root)}; make each cell # %% [markdown] en=\"...\""]
    problems = [f"{name} cell {i + 1} (line {_line_of(translation, i)}) has no en=\"<digest>\" of the English text "
                f"it translates: open it with # %% [markdown] en=\"{english_digest(theirs[i].source)}\""
                for i, cell in enumerate(ours)
                if i < len(theirs) and not DIGEST.match(str(cell.metadata.get("en", "")))]
    if len(ours) != len(theirs):
        first = next((i for i, (mine, source) in enumerate(zip(ours, theirs))
                      if mine.metadata.get("en") != english_digest(source.source)), min(len(ours), len(theirs)))
        where = (f"the first that differs: cell {first + 1} (line {_line_of(translation, first)}"
                 + (f", {_opening(ours[first].source)!r}" if first < len(ours) else "")
                 + f"), beside {english.relative_to(root)} line {_line_of(english, first)}"
                 + (f", {_opening(theirs[first].source)!r}" if first < len(theirs) else ""))
        return problems + [
            f"{name} has {len(ours)} prose cells and {english.relative_to(root)} has {len(theirs)}: a translation has "
            f"one cell per English markdown cell, in the same order ({where})"]
    for i, (mine, source) in enumerate(zip(ours, theirs)):
        wanted = english_digest(source.source)
        if DIGEST.match(str(mine.metadata.get("en", ""))) and mine.metadata["en"] != wanted:
            problems.append(
                f"{name} cell {i + 1} (line {_line_of(translation, i)}, {_opening(mine.source)!r}) translates an "
                f"English cell that has changed ({english.relative_to(root)} line {_line_of(english, i)}, "
                f"{_opening(source.source)!r}): update the translation, then its en= to \"{wanted}\"")
    return problems


def translated_markdown(translation: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """The translation's prose cells, in order; TranslationError (its drift, one sentence a cell) when stale."""
    problems = drift(translation, root)
    if problems:
        raise TranslationError("\n".join(problems))
    return [cell.source for cell in _markdown(translation)]


def language_problem(translation: pathlib.Path, lab: dict) -> str | None:
    """Why a translation's language cannot be built (not registered, or its table lacks what the build writes its
    prose from), in one sentence; None when it can."""
    code, table = language_of(translation), languages(lab).get(language_of(translation))
    if table is None:
        return (f"lessons/{code}/{translation.name} is in a language pyproject.toml does not register: add "
                f"[tool.lab.languages.{code}] ({', '.join(REQUIRED)}; titles and short_ideas)")
    missing = [key for key in REQUIRED if key not in table]
    if missing:
        return (f"pyproject.toml's [tool.lab.languages.{code}] lacks {', '.join(missing)}: the build writes its "
                "prose from them")
    for key in ("time_line", "minutes"):
        if str(table[key]).count("{minutes}") != 1:
            return (f"pyproject.toml's [tool.lab.languages.{code}] {key} must hold {{minutes}} once, where the "
                    "number goes")
    return None


def registry_problems(lab: dict, stems: list[str], root: pathlib.Path = ROOT) -> list[str]:
    """One sentence per translation whose language cannot be built (language_problem), per translation of no English
    lesson, or per title of a notebook pyproject does not register."""
    found = []
    registered = languages(lab)
    for translation in translations(root):
        if not english_of(translation).exists():
            found.append(f"{translation.relative_to(root)} translates lessons/{translation.name}, which does not "
                         "exist: remove it, or rename it after the English lesson it translates")
        elif language_problem(translation, lab):
            found.append(language_problem(translation, lab))
    for code, table in registered.items():   # a notebook no language names yet has its English title, marked
        for key in ("titles", "short_ideas"):
            unknown = [s for s in table.get(key, {}) if s not in stems]
            if unknown:
                found.append(f"pyproject.toml's [tool.lab.languages.{code}.{key}] names {', '.join(unknown)}, "
                             "which no [[tool.lab.notebooks]] registers")
    return list(dict.fromkeys(found))
