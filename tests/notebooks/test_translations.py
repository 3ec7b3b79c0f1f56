"""The language axis (tools/translations.py): a translation is built from its English lesson, kept in step with it,
timed at its language's reading rate, and held to the same rules.

English is the source of truth: a changed English sentence fails ``--check`` naming the translated cell to update; a
changed English code cell leaves the translated notebook stale too (its code is the English lesson's); what
``--facts`` writes into the English prose (a learner time, notebook 00's map) moves no translation.
"""

import json
import re
import string
import subprocess
import sys
import unicodedata

import jupytext
import lesson_metrics
import nbformat
import pytest
import translations

import build_notebooks
from repo import ROOT
from test_sources import _check, _copy_of_the_lab

TRANSLATIONS = translations.translations(ROOT)
LAB = build_notebooks.lab_config()
# What each language calls the parts every notebook has (test_sources.py's teaching shape, in that language).
SHAPE = {"zh-CN": ("你将学到", "时间", "练习", "在你自己的项目中", "要点回顾", "思考题", "延伸阅读")}
CLOSING = {"zh-CN": ("要点回顾", "思考题", "延伸阅读")}
# The length caps in each language. The English caps are words (test_learner_first.py: 00 ≤ 1,000, the others
# ≤ 1,800), i.e. minutes at words_per_minute. At the rates pyproject states, the same content takes a Chinese reader
# longer (notebook 00: about 1.3 times; the test prints it), so the English minutes as a Chinese cap would make a
# faithful translation of a lesson at its cap impossible. A translation's cap is therefore its English cap's minutes
# times this ratio, and it may read at most this ratio times its own English source.
MAX_READING_RATIO = 1.5


def _id(path):
    return path.relative_to(ROOT / "lessons").with_suffix("").as_posix()


def _stored(path):
    return nbformat.read(build_notebooks.target_of(path), as_version=4)


def test_there_is_a_chinese_edition_of_notebook_00():
    assert ROOT / "lessons" / "zh-CN" / "00_start_here.py" in TRANSLATIONS
    assert build_notebooks.target_of(TRANSLATIONS[0]) == ROOT / "notebooks" / "zh-CN" / "00_start_here.ipynb"


@pytest.mark.parametrize("path", TRANSLATIONS, ids=_id)
def test_a_translation_is_current_and_its_code_is_the_english_lessons(path):
    assert translations.drift(path, ROOT) == []
    ours, theirs = _stored(path), _stored(translations.english_of(path))
    asks = [c for c in ours.cells if c.cell_type == "code" and "labkit.use_language(" in c.source]
    assert len(asks) == 1 and f'labkit.use_language("{translations.language_of(path)}")' in asks[0].source, \
        "one cell asks labkit to speak the translation's language"
    assert asks[0].metadata.get("jupyter", {}).get("source_hidden") and asks[0].source.startswith("#@title ")
    first_setup = next(i for i, c in enumerate(ours.cells) if c.cell_type == "code" and "labkit.setup()" in c.source)
    assert ours.cells.index(asks[0]) < first_setup, "before the setup cell, whose lines it puts in Chinese"
    cells = [c for c in ours.cells if c is not asks[0]]
    assert [c.cell_type for c in cells] == [c.cell_type for c in theirs.cells]
    code = [(c.source, c.metadata.get("tags")) for c in cells if c.cell_type == "code"]
    assert code == [(c.source, c.metadata.get("tags")) for c in theirs.cells if c.cell_type == "code"]
    assert not [o for c in ours.cells for o in c.get("outputs", []) if o["output_type"] == "error"], path.name
    assert all(c.execution_count is not None for c in ours.cells if c.cell_type == "code"), "stored unexecuted"
    assert "https://" in "".join(c.source for c in ours.cells if c.cell_type == "markdown"), "links to read further"


@pytest.mark.parametrize("language", list(LAB.get("languages", {})))
def test_what_a_language_calls_english_is_english(language):
    """A notebook marked （英文） in a translation or the language's README, in a sentence written by hand, is one
    with no translation yet: the mark goes stale the day it is translated, and this test says where."""
    words = LAB["languages"][language]
    translated = {p.stem[:2] for p in TRANSLATIONS if translations.language_of(p) == language}
    pages = [p for p in TRANSLATIONS if translations.language_of(p) == language] + [ROOT / words["readme"]]
    stale = [f"{page.relative_to(ROOT)}: {number} is marked {words['in_english']} and is translated"
             for page in pages for number in re.findall(rf"\b(\d\d) · [^|\n]*?{re.escape(words['in_english'])}",
                                                           page.read_text()) if number in translated]
    assert not stale, stale
    readme = (ROOT / "README.md").read_text()
    said = re.search(r"\(notebooks? ([\d, and]+) in Chinese so far", readme)
    assert said and set(re.findall(r"\d\d", said.group(1))) == translated, "README.md's 中文版 line"


@pytest.mark.parametrize("path", TRANSLATIONS, ids=_id)
def test_a_translation_has_the_teaching_shape_in_its_language(path):
    prose = "\n".join(c.source for c in _stored(path).cells if c.cell_type == "markdown")
    for part in SHAPE[translations.language_of(path)]:
        assert part in prose, f"{_id(path)} lacks '{part}'"
    headings = [h for h in re.findall(r"^#+\s*(.+?)\s*$", prose, re.M) if h in CLOSING[translations.language_of(path)]]
    assert headings == list(CLOSING[translations.language_of(path)]), headings


@pytest.mark.parametrize("path", TRANSLATIONS, ids=_id)
def test_a_translations_questions_sections_and_exercises_are_the_english_ones(path):
    """The answer key (INSTRUCTORS.md) answers the English questions and cites their sections (§N) and exercises; a
    translated question stands where its English one does, numbered alike, as do the numbered sections and the
    exercises, so the key's "00, question k, §N" reads true beside the translation too."""
    from test_answer_key import Notebook, markdown_lines, numbered_items, section
    english = Notebook(translations.english_of(path))
    lines = markdown_lines(path)
    questions = numbered_items(section(lines, lambda line: line.startswith("## 思考题"), "##"))
    assert [n for n, _ in questions] == [n for n, _ in english.questions] != [], questions
    assert {int(m.group(1)) for line in lines if (m := re.match(r"^## (\d+)\. ", line))} == english.sections
    assert sum(line.startswith("## 练习") for line in lines) == len(english.exercises)


@pytest.mark.parametrize("path", TRANSLATIONS, ids=_id)
def test_a_translation_reads_no_longer_than_its_source_allows(path):
    pace = LAB["pace"]
    rate = LAB["languages"][translations.language_of(path)]["characters_per_minute"]
    ours = lesson_metrics.measure(_stored(path))
    theirs = lesson_metrics.measure(_stored(translations.english_of(path)))
    from test_learner_first import MAX_WORDS, MAX_WORDS_DEFAULT
    reading = ours["words"] / pace["words_per_minute"] + ours["characters"] / rate
    source = theirs["words"] / pace["words_per_minute"]
    cap = MAX_READING_RATIO * MAX_WORDS.get(path.stem[:2], MAX_WORDS_DEFAULT) / pace["words_per_minute"]
    assert reading <= MAX_READING_RATIO * source, \
        f"{_id(path)} reads for {reading:.1f} min, {reading / source:.2f} times its English source: tighten it"
    assert reading <= cap, f"{_id(path)} reads for {reading:.1f} min, over its cap of {cap:.1f} min: tighten it"
    assert ours["visible releases"] <= 3, "test_learner_first.py's rule: at most 3 torch releases in view"


# A line of prose that ends in a Chinese character or punctuation, continued on the next line: Markdown joins the two
# with a space, which Chinese text does not have ("发生、 找到"). A paragraph is one line in a translation.
CJK_END = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]$")
BLOCK = re.compile(r"^(#{1,6} |[-*] |\d+\. |\||<!--|```|$)")


def _punctuation(char: str) -> bool:
    return char in string.punctuation or unicodedata.category(char).startswith("P")


def _unclosed_bold(line: str) -> list[int]:
    """Where a line's closing ** cannot close (CommonMark: not right-flanking when it follows punctuation and a
    letter follows it, as in **时间：**约), pairing the **s of the line in order."""
    marks = [m.start() for m in re.finditer(r"\*\*", line)][1::2]
    return [at for at in marks if _punctuation(line[at - 1]) and at + 2 < len(line)
            and not line[at + 2].isspace() and not _punctuation(line[at + 2])]


def _rendering_problems(text: str) -> list[str]:
    """Where Markdown would render a Chinese text wrong: a stray space between joined lines, a bold left open."""
    lines, found, fence = text.splitlines(), [], False
    for a, b in zip(lines, lines[1:]):
        fence ^= a.startswith("```")
        if not fence and CJK_END.search(a) and not BLOCK.match(b):
            found.append(f"{a[-20:]!r} + {b[:20]!r} joins with a space: make the paragraph one line")
    return found + [f"{line[max(0, at - 12):at + 4]!r} does not close its bold: put the punctuation after the ** "
                    "(or a space after it)" for line in lines for at in _unclosed_bold(line)]


@pytest.mark.parametrize("path", TRANSLATIONS, ids=_id)
def test_a_translations_paragraphs_render_without_stray_spaces_or_broken_bold(path):
    found = [f"cell {number}: {problem}"
             for number, cell in enumerate(c for c in _stored(path).cells if c.cell_type == "markdown")
             for problem in _rendering_problems(cell.source)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("language", list(LAB.get("languages", {})))
def test_a_languages_readme_renders_without_stray_spaces_or_broken_bold(language):
    readme = ROOT / LAB["languages"][language]["readme"]
    assert not _rendering_problems(readme.read_text()), "\n".join(_rendering_problems(readme.read_text()))


def test_the_bold_rule_reads_commonmark_as_jupyterlab_renders_it():
    assert _unclosed_bold("**时间：**约 20") and _unclosed_bold("**`opcheck`**用")
    assert not _unclosed_bold("**时间**：约") and not _unclosed_bold("**`opcheck`** 用")
    assert not _unclosed_bold("一次也**没有**运行。**Dynamo** 读取，**AOTAutograd** 改写")


def test_characters_and_latin_words_are_counted_apart():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("`torch.compile` 会删掉这个算子。")])
    row = lesson_metrics.measure(nb)
    assert row["characters"] == 7 and row["words"] == 1, row   # 会删掉这个算子 (。 is punctuation); torch.compile
    assert "characters" not in lesson_metrics.measure(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("plain English")]))


def test_a_chinese_learner_time_counts_characters_at_the_stated_rate():
    import facts
    minutes = facts.translated_minutes(ROOT, LAB, "zh-CN")
    unrounded = facts.unrounded_minutes(ROOT, LAB)
    pace, rate = LAB["pace"], LAB["languages"]["zh-CN"]["characters_per_minute"]
    ours = lesson_metrics.measure(_stored(TRANSLATIONS[0]))
    english = lesson_metrics.measure(_stored(translations.english_of(TRANSLATIONS[0])))
    expected = (unrounded["00_start_here"] - english["words"] / pace["words_per_minute"]
                + ours["words"] / pace["words_per_minute"] + ours["characters"] / rate)
    assert minutes["00_start_here"] == -(-expected // pace["round_to"]) * pace["round_to"]
    assert f"**时间**：约 {minutes['00_start_here']} 分钟" in TRANSLATIONS[0].read_text()


def test_a_changed_english_sentence_fails_check_naming_the_chinese_cell(tmp_path):
    root = _copy_of_the_lab(tmp_path)
    english = root / "lessons" / "00_start_here.py"
    english.write_text(english.read_text().replace("Eagerly the result is 4.", "Run eagerly, the result is 4."))
    done = _check(root)
    assert done.returncode == 1
    line = next(line for line in done.stdout.splitlines() if line.startswith("lessons/zh-CN/00_start_here.py"))
    assert "cell 4 (line" in line and "'eager 模式下结果是 4。" in line, line
    assert "lessons/00_start_here.py line" in line and "Run eagerly, the result is 4." in line, line
    wanted = re.search(r'its en= to "([0-9a-f]{10})"', line).group(1)
    assert wanted == translations.english_digest(
        [c for c in jupytext.read(english).cells if c.cell_type == "markdown"][3].source)
    assert _check(root, "00").returncode == 1, "a named check too"
    # the fix the sentence names: the translation's digest updated (its text too, in real life)
    zh = root / "lessons" / "zh-CN" / "00_start_here.py"
    old = re.findall(r'en="([0-9a-f]{10})"', zh.read_text())[3]
    zh.write_text(zh.read_text().replace(f'en="{old}"', f'en="{wanted}"'))
    after = _check(root).stdout
    assert "lessons/zh-CN/00_start_here.py" not in after, after   # in step again; only the English notebook is stale
    assert "00_start_here.ipynb: " in after


def test_a_generated_learner_time_moves_no_translation():
    text = "**Time:** about 20 minutes. <!-- BEGIN map: x -->\n| a | b |\n<!-- END map -->"
    assert translations.english_digest(text) == translations.english_digest(
        text.replace("20", "35").replace("| a | b |", "| c | d |"))
    assert translations.english_digest(text) != translations.english_digest(text.replace("Time", "Times"))


def test_a_changed_english_code_cell_leaves_the_chinese_notebook_stale(tmp_path):
    root = _copy_of_the_lab(tmp_path)
    english = root / "lessons" / "00_start_here.py"
    english.write_text(english.read_text().replace("eager_x, compiled_x = torch.ones(3), torch.ones(3)",
                                                   "eager_x, compiled_x = torch.ones(3), torch.ones(3)  # two copies"))
    lines = _check(root).stdout.splitlines()
    assert any(line.startswith("zh-CN/00_start_here.ipynb: 1 cell(s) differ") for line in lines), lines
    assert any(line.startswith("00_start_here.ipynb: 1 cell(s) differ") for line in lines), lines


def test_a_translation_with_a_cell_too_few_or_in_an_unregistered_language_gets_one_sentence(tmp_path):
    root = _copy_of_the_lab(tmp_path)
    zh = root / "lessons" / "zh-CN" / "00_start_here.py"
    zh.write_text(zh.read_text()[:zh.read_text().rindex("# %% [markdown] en=")])   # its last cell gone
    assert "has 9 prose cells and lessons/00_start_here.py has 10" in _check(root).stdout
    (root / "lessons" / "fr").mkdir()   # a whole translation, in step with the English, of no registered language
    (root / "lessons" / "fr" / "00_start_here.py").write_text(
        (ROOT / "lessons" / "zh-CN" / "00_start_here.py").read_text())
    done = _check(root)
    assert "lessons/fr/00_start_here.py is in a language pyproject.toml does not register" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    named = _check(root, "00")
    assert "lessons/fr/00_start_here.py is in a language" in named.stdout and "Traceback" not in named.stderr


def test_a_translation_with_code_is_refused_in_one_sentence(tmp_path):
    root = _copy_of_the_lab(tmp_path)
    zh = root / "lessons" / "zh-CN" / "00_start_here.py"
    zh.write_text(zh.read_text() + "\n# %%\nprint('mine')\n")
    said = [line for line in _check(root).stdout.splitlines() if line.startswith("lessons/zh-CN/00_start_here.py")]
    assert len(said) == 1 and "holds prose only" in said[0] and "print('mine')" in said[0], said


@pytest.mark.parametrize("path", TRANSLATIONS, ids=_id)
def test_a_translation_names_issues_only_under_further_reading(path):
    """test_learner_first.py's rule (i), in the translation's prose: a bug is named in words, linked at the end."""
    from test_learner_first import ISSUE
    prose = "\n".join(c.source for c in _stored(path).cells if c.cell_type == "markdown")
    before_reading = re.split(r"^#+\s*延伸阅读", prose, flags=re.M)[0]
    assert not ISSUE.findall(before_reading), ISSUE.findall(before_reading)


def test_a_build_refuses_a_stale_translation_and_still_builds_the_english(tmp_path):
    """Named build of a notebook whose translation drifted: the translation is refused with its sentence (exit 1)."""
    root = _copy_of_the_lab(tmp_path)
    english = root / "lessons" / "00_start_here.py"
    english.write_text(english.read_text().replace("## 3. Tell the truth", "## 3. Say what it does"))
    sources = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'tools'); import build_notebooks; "
                              "import translations; print([str(p) for p in build_notebooks.select(['00'])]); "
                              "build_notebooks.built_notebook(build_notebooks.select(['00'])[1])"],
                             cwd=root, capture_output=True, text=True, timeout=120)
    assert "zh-CN/00_start_here.py" in sources.stdout
    assert sources.returncode == 1 and "cell 5 (line" in sources.stderr and "Traceback" not in sources.stderr, \
        sources.stderr


def test_the_chinese_readme_is_linked_and_lists_every_notebook():
    readme = (ROOT / "README.md").read_text()
    assert "(README.zh-CN.md)" in readme
    chinese = (ROOT / "README.zh-CN.md").read_text()
    assert "(README.md)" in chinese
    for nb in LAB["notebooks"]:
        translated = (ROOT / "lessons" / "zh-CN" / f"{nb['stem']}.py").exists()
        assert f"(notebooks/{'zh-CN/' if translated else ''}{nb['stem']}.ipynb)" in chinese, nb["stem"]
    assert json.dumps(LAB["languages"]["zh-CN"]["name"], ensure_ascii=False).strip('"') == "简体中文"
