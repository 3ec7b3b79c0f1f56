"""Every notebook matches its source (tools/build_notebooks.py --check), carries no stored errors, and follows the
lab's shape; every generated fact is current (--facts, tools/facts.py), and the builder refuses what it must."""

import json
import re
import pathlib
import shutil
import subprocess
import sys

import pytest

from repo import ROOT

SOURCES = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
NOTEBOOKS = [ROOT / "notebooks" / f"{source.stem}.ipynb" for source in SOURCES]
TRANSLATIONS = sorted((ROOT / "lessons").glob("*/[0-9][0-9]_*.py"))   # lessons/zh-CN/00_start_here.py


def _check(root: pathlib.Path, *names: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "tools" / "build_notebooks.py"), "--check", *names],
                          capture_output=True, text=True, timeout=120)


def test_notebooks_match_their_sources():
    done = _check(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_executes_nothing_and_names_the_notebook_whose_source_changed(tmp_path):
    """--check compares cells only: a changed source fails it with one line naming that notebook (and one for each
    of its translations, whose code is that source's), and no notebook is rebuilt (--check 02 used to re-execute
    notebook 02 over the stored one)."""
    _copy_of_the_lab(tmp_path)
    source = tmp_path / "lessons" / SOURCES[2].name
    source.write_text(source.read_text() + "\n# %%\nprint('a new cell')\n")
    stored = (tmp_path / "notebooks" / NOTEBOOKS[2].name).read_bytes()

    everything, only_that_one, another_one = _check(tmp_path), _check(tmp_path, SOURCES[2].stem[:2]), \
        _check(tmp_path, SOURCES[0].stem[:2])
    assert everything.returncode == only_that_one.returncode == 1
    assert everything.stdout.splitlines() == only_that_one.stdout.splitlines()
    translated = len(list((ROOT / "lessons").glob(f"*/{SOURCES[2].name}")))
    assert len(everything.stdout.splitlines()) == 1 + translated and NOTEBOOKS[2].name in everything.stdout
    assert another_one.returncode == 0, another_one.stdout
    assert (tmp_path / "notebooks" / NOTEBOOKS[2].name).read_bytes() == stored


def _copy_of_the_lab(tmp_path: pathlib.Path) -> pathlib.Path:
    """The files tools/build_notebooks.py --facts reads and writes, with only the registered sources."""
    for folder in ("tools", "lessons", "notebooks", "labkit", "docs", "binder"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    for name in ("pyproject.toml", "README.md", "README.zh-CN.md", "INSTRUCTORS.md", "requirements.txt"):
        shutil.copy(ROOT / name, tmp_path)
    import facts
    registered = {nb["stem"] for nb in facts.pyproject(ROOT)["tool"]["lab"]["notebooks"]}
    for source in (tmp_path / "lessons").glob("[0-9][0-9]_*.py"):
        if source.stem not in registered:  # a notebook being written, not yet registered
            source.unlink()
    return tmp_path


def _facts(root: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "tools" / "build_notebooks.py"), "--facts"],
                          capture_output=True, text=True, timeout=120)


def test_every_generated_fact_is_current():
    """README's notebook table and torch range, notebook 00's map, INSTRUCTORS.md's timings and GPU-room note,
    docs/measurements.md's times, docs/maintaining.md's GPU table, CHECKED_ON,
    MINIMUM_TORCH, the torch floor and pin, and labkit.__version__ say what pyproject.toml's registry says."""
    import facts
    assert facts.stale(ROOT) == []


def test_a_changed_registry_value_fails_check_naming_each_stale_file_and_facts_fixes_it(tmp_path):
    root = _copy_of_the_lab(tmp_path)
    assert _check(root).returncode == 0, _check(root).stdout
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace("round_to = 5", "round_to = 1").replace('minimum_torch = "2.11"',
                                                                              'minimum_torch = "2.12"'))
    readme_before = (root / "README.md").read_text()

    stale = _check(root)
    assert stale.returncode == 1
    assert "2.12" in stale.stdout and "oldest release" in stale.stdout  # a minimum the table does not measure
    pyproject.write_text(text.replace("round_to = 5", "round_to = 1"))  # learner times to the minute
    stale = _check(root)
    named = {line.split(":")[0] for line in stale.stdout.splitlines()}
    assert stale.returncode == 1, stale.stdout
    assert {"README.md", "INSTRUCTORS.md", "lessons/00_start_here.py"} <= named, stale.stdout
    assert named <= {"README.md", "README.zh-CN.md", "INSTRUCTORS.md", "docs/maintaining.md"} | {  # maintaining.md:
        f"lessons/{s.relative_to(ROOT / 'lessons').as_posix()}" for s in SOURCES + TRANSLATIONS}  # the headroom
    assert all(line.endswith("run python tools/build_notebooks.py --facts") for line in stale.stdout.splitlines())
    assert (root / "README.md").read_text() == readme_before  # --check writes nothing

    fixed = _facts(root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    import facts  # on the path since _copy_of_the_lab
    learner = facts.learner_minutes(root, facts.pyproject(root)["tool"]["lab"])
    readme = (root / "README.md").read_text()
    assert facts.duration(sum(learner.values())) in readme
    assert any(minutes % 5 for minutes in learner.values()), "to the minute now, not rounded up to 5"
    # the notebooks left stale are exactly those whose source (its Time line, 00's map) --facts rewrote
    left = sorted(line.split(":")[0] for line in _check(root).stdout.splitlines())
    rewritten = sorted(pathlib.Path(name).relative_to("lessons").with_suffix(".ipynb").as_posix()
                       for name in named if name.startswith("lessons/"))
    assert left == rewritten, _check(root).stdout


def test_an_agenda_without_its_buffer_or_with_a_missing_section_is_refused(tmp_path):
    """The agendas are built from the learner times: one that leaves less than min_buffer, or skips a section
    its notebook does not have, is refused in one sentence that names the fix."""
    root = _copy_of_the_lab(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace("words_per_minute = 120", "words_per_minute = 40"))  # slow readers
    refused = _facts(root)
    assert refused.returncode == 1 and "agenda leaves" in refused.stdout + refused.stderr, refused.stdout
    assert "take a notebook out of it" in refused.stdout + refused.stderr
    pyproject.write_text(text.replace('when_late = "§3, and the exercise', 'when_late = "§9, and the exercise', 1))
    refused = _facts(root)
    assert refused.returncode == 1 and "names §9, which the notebook has no section for" in \
        refused.stdout + refused.stderr, refused.stdout + refused.stderr


def test_an_unknown_registry_key_is_refused_naming_the_key_and_the_allowed_ones():
    import facts

    lab = facts.pyproject(ROOT)["tool"]["lab"]
    assert facts.unknown_keys(lab) == []
    typo = {**lab, "notebooks": [{**lab["notebooks"][0], "topic": ["x"]}, *lab["notebooks"][1:]],
            "pace": {**lab["pace"], "round": 5}}
    said = facts.unknown_keys(typo)
    assert said == [
        "pyproject.toml's [tool.lab.pace] has an unknown key 'round': the allowed keys are words_per_minute, "
        "code_lines_per_minute, minutes_per_exercise, round_to",
        f"pyproject.toml's [[tool.lab.notebooks]] entry {lab['notebooks'][0]['stem']!r} has an unknown key 'topic': "
        "the allowed keys are stem, title, idea, short_idea, execution_s, demo, when_late, topics"], said


def test_an_agenda_naming_an_unregistered_notebook_gets_one_sentence():
    import facts

    lab = facts.pyproject(ROOT)["tool"]["lab"]
    agenda = {**lab["workshop"]["agendas"][0], "notebooks": ["00", "42"]}
    with pytest.raises(facts.FactsError, match=r"names notebook '42', which no \[\[tool.lab.notebooks\]\] "
                                                r"registers: name one of 00, 01, "):
        facts.agendas(ROOT, {**lab, "workshop": {**lab["workshop"], "agendas": [agenda]}},
                      {nb["stem"]: 5 for nb in lab["notebooks"]})


def test_the_day_agenda_has_a_lunch_two_breaks_and_its_homework_and_check_catches_it_stale(tmp_path):
    """The one-day agenda is generated like the others: two breaks and a lunch where pyproject puts them, the
    notebooks it leaves out listed as homework; a longer lunch leaves INSTRUCTORS.md stale for --check; a break
    after a notebook the agenda does not hold, of no minutes, or with a key nothing reads is refused in one
    sentence."""
    import facts

    lab = facts.pyproject(ROOT)["tool"]["lab"]
    day = max(lab["workshop"]["agendas"], key=lambda agenda: agenda["length_min"])
    minutes = facts.learner_minutes(ROOT, lab)
    text = "\n".join(facts.agendas(ROOT, lab, minutes))
    section = text[text.index(f"### {day['length_min']} minutes"):]
    blocks = [row.split(" | ")[1] for row in section.splitlines() if row.startswith("| ") and " | " in row]
    assert [block for block in blocks if block in ("Break", "Lunch")] == ["Break", "Lunch", "Break"], blocks
    left_out = [nb["stem"] for nb in lab["notebooks"] if nb["stem"][:2] not in day["notebooks"]]
    homework = facts.duration(sum(minutes[stem] for stem in left_out))
    assert left_out and f"Not in this agenda ({homework} of learner time): {left_out[0][:2]} (" in section, section
    for bad, said in ((dict(after="11", minutes=10), "which is none of its notebooks"),
                      (dict(minutes=10), "break after None, which is none of its notebooks"),
                      (dict(after="01"), "break of None minutes"), (dict(after="01", minutes=True), "of True minutes"),
                      (dict(after="01", minutes=0), "a whole number above 0")):
        agenda = {**day, "breaks": [*day["breaks"], bad]}
        with pytest.raises(facts.FactsError, match=said):
            facts.agendas(ROOT, {**lab, "workshop": {**lab["workshop"], "agendas": [agenda]}}, minutes)
    typo = {**lab, "workshop": {**lab["workshop"], "agendas": [{**day, "breaks": [dict(after="01", minute=5)]}]}}
    assert facts.unknown_keys(typo) == [f"pyproject.toml's [[tool.lab.workshop.agendas.breaks]] of the "
                                        f"{day['length_min']}-minute agenda has an unknown key 'minute': the allowed "
                                        "keys are after, minutes, name"]
    root = _copy_of_the_lab(tmp_path)
    assert _check(root).returncode == 0, "the copy is current before the lunch grows"
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('minutes = 45, name = "Lunch"', 'minutes = 50, name = "Lunch"'))
    stale = _check(root)
    assert stale.returncode == 1 and "INSTRUCTORS.md" in stale.stdout, stale.stdout


def test_a_source_without_a_registry_entry_is_refused_but_still_builds_by_name(tmp_path):
    root = _copy_of_the_lab(tmp_path)
    new = root / "lessons" / "98_new_idea.py"
    new.write_text("# %% [markdown]\n# # A new idea\n")
    for command in (_check(root), _facts(root)):
        assert command.returncode == 1 and "98_new_idea.py has no [[tool.lab.notebooks]] entry" in \
            command.stdout + command.stderr
    named = _check(root, "98")  # the notebook's author can check it before it is registered
    assert "98_new_idea.ipynb is missing" in named.stdout and "entry" not in named.stdout
    new.unlink()
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('stem = "06_field_guide"', 'stem = "06_gone"'))
    assert "registers 06_gone, which has no lessons/06_gone.py" in _check(root).stdout


def test_a_new_registered_notebook_builds_by_name_before_the_version_matrix_ran_it(tmp_path):
    """A new notebook is registered and built before tools/torch_matrix.py can run it (the matrix runs the
    built notebooks): building it by name only notes that the facts wait for the matrix; --facts and --check
    still fail until then."""
    root = _copy_of_the_lab(tmp_path)
    (root / "lessons" / "98_new_idea.py").write_text("# %% [markdown]\n# # 98 · A new idea\n#\n"
                                                     "# **Time:** about 5 minutes.\n")
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[[tool.lab.notebooks]]\nstem = "98_new_idea"\ntitle = "A new '
                         'idea"\nidea = "x"\nshort_idea = "x"\nexecution_s = 1\ndemo = "x"\n')
    built = subprocess.run([sys.executable, str(root / "tools" / "build_notebooks.py"), "98", "--any-torch"],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    refusal = "No row of docs/torch-versions.json ran 98_new_idea and passed: run python tools/torch_matrix.py"
    assert f"note: {refusal}" in built.stderr and "--notebooks 98 " in built.stderr, built.stderr
    assert (root / "notebooks" / "98_new_idea.ipynb").is_file(), "the notebook was built"
    assert _facts(root).returncode == 1, "--facts refuses until the matrix ran the new notebook"
    assert refusal in _check(root).stdout
    # Its own rows (tools/torch_matrix.py 2.13.0 --notebooks 98), not the whole matrix, let the facts be written:
    # README names its narrower range and the lab's range stays.
    results = root / "docs" / "torch-versions.json"
    rows = json.loads(results.read_text())
    before = [r["torch"] for r in rows if r["result"] == "all notebooks pass" and not r["colab"]]
    rows.append({"row": "2.13.0", "torch": "2.13.0", "python": "3.11", "colab": False, "partial": True,
                 "notebooks": {"98_new_idea": "pass"}, "result": "the named notebooks pass", "date": "2026-12-07"})
    results.write_text(json.dumps(rows))
    facts_run = _facts(root)
    assert facts_run.returncode == 0, facts_run.stdout + facts_run.stderr
    readme = (root / "README.md").read_text()
    assert re.search(rf"every notebook but (\d\d and )*98 passes on torch {', '.join(before)};", readme), "the lab's"
    assert re.search(r"notebook 98 on torch 2\.13\.0[.;]", readme), "and the new notebook's own range"


def test_an_unknown_notebook_gets_one_sentence():
    done = _check(ROOT, "99")
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0 and "No notebook '99'" in done.stderr


def test_each_notebook_has_the_teaching_shape():
    assert NOTEBOOKS
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for part in ("What you will learn", "Time:", "Exercise", "In your own project", "What to remember",
                     "Question", "Further reading"):
            assert part in markdown, f"{path.name} lacks '{part}'"
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert re.search(r"torch\.library\.|torch\.compile\(|set_logs|TORCH_LOGS", source), \
            f"{path.name} shows no plain torch (torch.library, torch.compile, set_logs)"
        assert "https://" in markdown, f"{path.name} links nothing to read further"
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(c["execution_count"] is not None for c in code), f"{path.name} has unexecuted cells"
        assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"], path.name
        assert any("assert " in "".join(c["source"]) for c in code), f"{path.name} asserts nothing"


def test_a_changed_measured_time_names_every_page_that_states_it(tmp_path):
    """The cold times moved to docs/measurements.md with their region: --check still keeps them true there."""
    root = _copy_of_the_lab(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    last = re.findall(r"(?m)^execution_s = (\d+)$", text)[-1]   # the last notebook's, in no agenda: the facts hold
    at = text.rindex("execution_s = ")
    pyproject.write_text(text[:at] + "execution_s = 1" + text[at + len("execution_s = "):])
    stale = _check(root)
    named = {line.split(":")[0] for line in stale.stdout.splitlines()}
    assert {"README.md", "INSTRUCTORS.md", "docs/measurements.md"} <= named, stale.stdout  # and 12, if its time moved
    assert _facts(root).returncode == 0
    assert f"| 1{last} s |" in (root / "docs" / "measurements.md").read_text()  # 47 s became 147 s


@pytest.mark.parametrize("longer_day", [0, 10])
def test_the_headroom_table_is_the_room_before_an_agenda_is_refused(longer_day):
    """docs/maintaining.md's headroom, checked by doing what it predicts: a notebook that grows by a little less
    than its room (here as execution seconds) still builds the agendas; a little more is refused. With the
    longest agenda 10 minutes longer, its notebooks' room includes whole 5-minute steps of spare buffer."""
    import facts

    lab = facts.pyproject(ROOT)["tool"]["lab"]
    longest = max(a["length_min"] for a in lab["workshop"]["agendas"])
    lab = {**lab, "workshop": {**lab["workshop"], "agendas": [
        {**a, "length_min": a["length_min"] + longer_day * (a["length_min"] == longest)}
        for a in lab["workshop"]["agendas"]]}}
    rows = [line.split(" | ") for line in facts.headroom(ROOT, lab) if line.startswith("| 0")]
    assert rows, "the table lists the agenda notebooks"
    for row in rows:
        # the least room of the row: the English one, or a translation's where it says "zh-CN: 0.7 min, ..."
        number, room = row[0].strip("| "), min(float(m) for m in re.findall(r"([\d.]+) min", row[2]))
        for extra_s, refused in ((room * 60 - 5, False), (room * 60 + 5, True)):
            grown = {**lab, "notebooks": [{**nb, "execution_s": nb["execution_s"] + extra_s}
                                          if nb["stem"][:2] == number else nb for nb in lab["notebooks"]]}
            try:  # the agendas taught in English at its learner times, and those of each language at its times
                for language, minutes in [("en", facts.learner_minutes(ROOT, grown))] + [
                        (language, facts.language_minutes(ROOT, grown, language))
                        for language in grown.get("languages", {})]:
                    facts.agendas(ROOT, grown, minutes, language)
                said = False
            except facts.FactsError:
                said = True
            assert said == refused, (number, room, extra_s)
    if longer_day:
        assert max(float(row[2].split()[0]) for row in rows) > 5, "a whole step of spare buffer is counted"


def test_the_lists_of_checks_are_the_registrys():
    """--facts reads labkit.auditing.registry.CHECKS from its source, importing no torch: what it reads is what
    Python imports, check for check."""
    import facts
    from labkit.auditing import registry

    assert facts.registered_checks(ROOT) == [(c.kind, c.what, c.doctor_only) for c in registry.CHECKS]


def test_a_check_added_to_the_registry_appears_in_every_list_after_facts(tmp_path):
    """Issue 75: the checks are listed in README, docs/doctor.md, docs/labkit.md, auditing's
    docstring and notebook 06 (twice); a new check is one entry in CHECKS, --check names every list it leaves
    stale, and --facts writes it into each, in the order the checks run: an audit check added at the end of the
    registry still comes before the doctor's own (the doctor runs audit first), and goes in 06 §1, the doctor's
    own in §5."""
    root = _copy_of_the_lab(tmp_path)
    registry = root / "labkit" / "auditing" / "registry.py"
    text = registry.read_text()
    last = text.index("    Check(FAKE, _fake_findings")
    doctors = ('    Check("ranges", _fake_findings, FAKE_DOCS, None, doctor_only=True,\n'
               '          what="every output inside the range its schema promises"),\n')
    audits = '    Check("spans", _fake_findings, FAKE_DOCS, None, (), False, False, "each output\'s span of bytes"),\n'
    end = text.index("\n)\n", last) + 1
    registry.write_text(text[:last] + doctors + text[last:end] + audits + text[end:])

    stale = _check(root)
    named = {line.split(":")[0] for line in stale.stdout.splitlines()}
    lists = {"README.md", "docs/doctor.md", "docs/labkit.md", "labkit/auditing/__init__.py",
             "lessons/06_field_guide.py"}
    assert stale.returncode == 1 and named == lists, stale.stdout
    assert _facts(root).returncode == 0
    for name in lists:
        written = (root / name).read_text()
        assert "ranges`" in written and "inside the range its schema" in written, name
        if "BEGIN checks:" in written:
            region = written[written.index("BEGIN checks:"):written.index("END checks")]
            assert region.index("spans`") < region.index("fullgraph`"), f"{name}: audit's checks run first"
    lesson = (root / "lessons" / "06_field_guide.py").read_text()
    doctors_own = lesson[lesson.index("BEGIN doctor-only-checks"):lesson.index("END doctor-only-checks")]
    audit_s = lesson[lesson.index("BEGIN audit-checks"):lesson.index("END audit-checks")]
    assert "`ranges`" in doctors_own and "`spans`" not in doctors_own
    assert "`spans`" in audit_s and "`ranges`" not in audit_s and "`fullgraph`" not in audit_s
    assert [line.split(":")[0] for line in _check(root).stdout.splitlines()] == ["06_field_guide.ipynb"]

    registry.write_text(text[:last] + doctors.replace('what="every', 'what=f"every') + text[last:])
    refused = _facts(root)
    assert refused.returncode == 1 and "needs its kind" in refused.stdout + refused.stderr, refused.stderr
    assert (refused.stdout + refused.stderr).count("\n") <= 2, "one sentence, not a traceback"


def test_an_agenda_is_held_to_its_buffer_in_the_languages_it_is_taught_in_and_says_what_it_would_leave_elsewhere():
    """An agenda names the languages it is taught in where a translation's notebooks take too long for its buffer:
    its buffer is not checked at those times, and INSTRUCTORS.md says the buffer it would leave there; an agenda of
    one language is checked at that language's times."""
    import facts

    lab = facts.pyproject(ROOT)["tool"]["lab"]
    english, chinese = facts.learner_minutes(ROOT, lab), facts.language_minutes(ROOT, lab, "zh-CN")
    short = {"length_min": 90, "notebooks": ["00", "02"], "wrap_up_min": 5, "note": "n", "languages": ["en"]}
    only = {**lab, "workshop": {**lab["workshop"], "agendas": [short]}}
    assert facts.agendas(ROOT, only, chinese, "zh-CN") == [""], "not taught in Chinese: nothing to hold there"
    left = 90 - (lab["workshop"]["setup_min"] + chinese["00_start_here"] + chinese["02_mutates_args"] + 5)
    text = "\n".join(facts.agendas(ROOT, only, english, elsewhere={"zh-CN": ("简体中文", chinese)}))
    assert f"Not taught in 简体中文 (zh-CN): at its notebooks' learner times (00 {chinese['00_start_here']} min, " \
           f"02 {chinese['02_mutates_args']} min) it would leave {left} min of buffer" in text, text
    everywhere = {**lab, "workshop": {**lab["workshop"], "agendas": [{k: v for k, v in short.items()
                                                                      if k != "languages"}]}}
    assert left < lab["workshop"]["min_buffer"] * 90, "the figure INSTRUCTORS.md gives is under the floor"
    with pytest.raises(facts.FactsError, match="90-minute agenda leaves"):
        facts.agendas(ROOT, everywhere, chinese, "zh-CN")
    roomy = {**lab, "workshop": {**lab["workshop"], "agendas": [{**short, "length_min": 180}]}}
    said = "\n".join(facts.agendas(ROOT, roomy, english, elsewhere={"zh-CN": ("简体中文", chinese)}))
    assert "enough: add 'zh-CN' to its languages" in said and "under" not in said, "no false 'under'"
    for wrong in (["zh"], ["en", "fr"], []):
        typo = {**lab, "workshop": {**lab["workshop"], "agendas": [{**short, "languages": wrong}]}}
        with pytest.raises(facts.FactsError, match="its languages are among en, zh-CN"):
            facts.agendas(ROOT, typo, english)
