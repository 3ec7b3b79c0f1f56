"""Every notebook's closing Questions have an answer in INSTRUCTORS.md's answer key, in order, each citing a
section that exists (docs/notebook-style.md: "Questions (each answered in INSTRUCTORS.md's key)")."""

import pathlib
import re

import pytest

from repo import ROOT, starts_a_cell

SOURCES = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
INSTRUCTORS = ROOT / "INSTRUCTORS.md"
KEY_HEADING = "## Answer key: the Questions at the end of each notebook"

NUMBERED = re.compile(r"^(\d+)\.\s+(.*)$")
# a citation: §N, or NN §N for a section of another notebook; (Exercise) or (Exercise N)
SECTION_CITE = re.compile(r"(?:\b(\d\d) )?§(\d+)")
EXERCISE_CITE = re.compile(r"\bExercise(?: (\d+))?\b")


def markdown_lines(source: pathlib.Path) -> list[str]:
    """The lines of a jupytext percent source's markdown cells, without their leading '# '."""
    lines, in_markdown = [], False
    for line in source.read_text().splitlines():
        if starts_a_cell(line):
            in_markdown = "[markdown]" in line
        elif in_markdown:
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    return lines


def numbered_items(lines: list[str]) -> list[tuple[int, str]]:
    """The numbered list in lines ('1. …', continuation lines indented), as (number, text joined)."""
    items = []
    for line in lines:
        found = NUMBERED.match(line)
        if found:
            items.append((int(found.group(1)), found.group(2).strip()))
        elif items and line.startswith(" ") and line.strip():
            items[-1] = (items[-1][0], f"{items[-1][1]} {line.strip()}")
        elif items and line.strip():
            break                                  # the list ended
    return items


def section(lines: list[str], is_heading, level: str) -> list[str]:
    """The lines after the first heading is_heading accepts, up to the next heading of that level or higher."""
    start = next((i for i, line in enumerate(lines) if is_heading(line)), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines))
                if re.match(rf"^#{{1,{len(level)}}} ", lines[i])), len(lines))
    return lines[start + 1:end]


class Notebook:
    def __init__(self, source: pathlib.Path):
        self.source, self.number = source, source.stem[:2]
        self.lines = markdown_lines(source)
        title = next(line[2:] for line in self.lines if line.startswith("# "))
        self.title = title.split(" · ", 1)[1].split(": ", 1)[0].strip()     # "Start here" of "00 · Start here: …"
        self.questions = numbered_items(section(self.lines, lambda line: line.startswith("## Question"), "##"))
        self.sections = {int(m.group(1)) for line in self.lines if (m := re.match(r"^## (\d+)\. ", line))}
        self.exercises = {m.group(1) or "" for line in self.lines if (m := re.match(r"^## Exercise(?: (\d+))?:", line))}


NOTEBOOKS = {source.stem[:2]: Notebook(source) for source in SOURCES}


def answer_key() -> dict[str, tuple[str, list[tuple[int, str]]]]:
    """INSTRUCTORS.md's answer key: {NN: (the subsection's title, its numbered answers)}."""
    lines = INSTRUCTORS.read_text().splitlines()
    key = section(lines, lambda line: line.strip() == KEY_HEADING, "##")
    subsections = {}
    for i, line in enumerate(key):
        found = re.match(r"^### (\d\d) (.*)$", line)
        if found:
            body = section(key[i:], lambda candidate, heading=line: candidate == heading, "###")
            subsections[found.group(1)] = (found.group(2).strip(), numbered_items(body))
    return subsections


def test_the_parsers_read_every_notebooks_questions():
    assert NOTEBOOKS, "no notebook sources found"
    for notebook in NOTEBOOKS.values():
        assert notebook.questions, (
            f"{notebook.source.name} has no numbered list under a '## Questions' heading: the answer key needs one")
        assert [n for n, _ in notebook.questions] == list(range(1, len(notebook.questions) + 1)), \
            f"{notebook.source.name}: the Questions are not numbered 1, 2, 3, …"
        assert all(text for _, text in notebook.questions), f"{notebook.source.name}: a question is empty"


def test_instructors_md_has_the_answer_key():
    text = INSTRUCTORS.read_text()
    assert KEY_HEADING in text.splitlines(), (
        f"INSTRUCTORS.md has no '{KEY_HEADING}' section: append it, with a '### NN Title' subsection per notebook "
        "and one numbered answer per question")


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_every_question_has_an_answer(number):
    notebook, key = NOTEBOOKS[number], answer_key()
    name = notebook.source.name
    assert number in key, (
        f"{name}: INSTRUCTORS.md's answer key has no '### {number} {notebook.title}' subsection: add one, with "
        f"an answer to each of its {len(notebook.questions)} questions")
    title, answers = key[number]
    assert title == notebook.title, (
        f"{name}: the answer key's subsection is '### {number} {title}', the notebook's title is "
        f"'{notebook.title}': rename the subsection")
    numbers = [n for n, _ in answers]
    for question, text in notebook.questions:
        assert question in numbers, (
            f"{name}, question {question} ({text[:70]}…) has no answer: add '{question}. **…** …' under "
            f"'### {number} {title}' in INSTRUCTORS.md")
    assert numbers == list(range(1, len(notebook.questions) + 1)), (
        f"{name}: the answer key has answers {numbers} for questions 1 to {len(notebook.questions)}: one "
        "answer per question, in the notebook's order (remove or renumber the extra ones)")


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_every_answer_says_something_and_cites_what_exists(number):
    notebook, key = NOTEBOOKS[number], answer_key()
    if number not in key:
        pytest.skip(f"no subsection for {number}: test_every_question_has_an_answer says so")
    name = notebook.source.name
    for question, answer in key[number][1]:
        where = f"{name}, question {question}"
        bold = re.match(r"^\*\*(.+?)\*\*\s*(.*)$", answer)
        assert bold, f"{where}: the answer does not start with the question in bold ('**Why …?** the answer')"
        assert bold.group(2).strip(), f"{where}: the answer is empty: write 1–3 sentences after the bold question"
        assert re.search(r"\((?:[^()]*)(?:§\d+|Exercise(?: \d+)?)[^()]*\)\.?$", answer), (
            f"{where}: the answer does not end with where the notebook shows it, e.g. '(§2)' or '(Exercise 1)'")
        for other, cited in SECTION_CITE.findall(answer):
            target = NOTEBOOKS.get(other or number)
            assert target is not None, f"{where}: it cites '{other} §{cited}', and there is no notebook {other}"
            assert int(cited) in target.sections, (
                f"{where}: it cites §{cited}, and {target.source.name} has no '## {cited}. …' heading: cite the "
                f"section that shows it (there: {sorted(target.sections)})")
        for cited in EXERCISE_CITE.findall(answer):
            assert cited in notebook.exercises, (
                f"{where}: it cites 'Exercise{' ' + cited if cited else ''}', and {name} has no such "
                f"'## Exercise…:' heading (there: {sorted(notebook.exercises)})")


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_every_answer_restates_its_question_word_for_word(number):
    """An answer to a question the notebook no longer asks cannot stay green: each answer opens with the
    notebook's question, in bold, exactly as the notebook's Questions section words it today."""
    questions = dict(NOTEBOOKS[number].questions)
    for n, answer in answer_key().get(number, ("", []))[1]:
        bold = re.match(r"^\*\*(.+?)\*\*", answer)
        assert bold and bold.group(1) == questions.get(n), (
            f"INSTRUCTORS.md's answer {number}.{n} restates {bold.group(1) if bold else None!r}, but notebook "
            f"{number} asks {questions.get(n)!r}: copy the question and check the answer still fits it")
