"""The lab's repeated facts, written from one registry into every file that states them.

The registry is pyproject.toml: ``[tool.lab]`` (the notebooks, one ``[[tool.lab.notebooks]]`` each, and
the torch range) and ``[project] version``. A fact measured by a tool is read from that tool's output,
never retyped: ``CHECKED_ON`` is the lab's range from docs/torch-versions.json (``tools/torch_matrix.py``'s
``lab_range``; README names each notebook whose own range is narrower), and the GPU table
(docs/maintaining.md) and INSTRUCTORS.md's GPU-room note are read from docs/gpu-runs/*.json (``tools/gpu_runs.py``).

Each generated region sits between a BEGIN and an END marker line naming it (``REGIONS``); two facts live
on a line that cannot hold a marker (pyproject's dependency list, ``labkit.__version__``) and are rewritten
in place (``LINES``). ``python tools/build_notebooks.py --facts`` writes them all and executes nothing;
``--check`` names each stale file.
"""

from __future__ import annotations

import ast
import json
import math
import pathlib
import re
import textwrap

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

import gpu_runs  # docs/gpu-runs/: which notebooks ran on a GPU
import lesson_metrics  # what each stored notebook holds: words, visible code lines
import torch_matrix  # which releases every notebook passed on
import translations  # the lessons in other languages: lessons/<language>/
from repo import ROOT

TAG = "generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit"
CHECKS_TAG = "generated from labkit.auditing.registry.CHECKS by --facts: do not edit"
CHECK_REGIONS = ("audit-checks", "doctor-only-checks", "checks")  # the regions that list the checks
# How a marker line is written in each kind of file: (begin, end) around the region's name and where it comes from.
MARKERS = {
    "md": ("<!-- BEGIN {name}: {tag} -->", "<!-- END {name} -->"),
    "py-md": ("# <!-- BEGIN {name}: {tag} -->", "# <!-- END {name} -->"),  # a percent source's markdown
    "py": ("# BEGIN {name}: {tag}", "# END {name}"),
    "rst": (".. BEGIN {name}: {tag}", ".. END {name}"),  # inside a docstring: a reStructuredText comment
}
# The keys every [[tool.lab.notebooks]] entry needs.
ENTRY = ("stem", "title", "idea", "short_idea", "execution_s", "demo")
# The keys each table of the registry may hold: another key is a typo, or a fact nothing would read.
ALLOWED = {
    "[tool.lab]": ("github", "branch", "reference_torch", "minimum_torch", "notebooks", "pace", "workshop",
                   "languages"),
    "[tool.lab.languages.*]": (*translations.REQUIRED, "titles", "short_ideas"),
    "[[tool.lab.notebooks]]": (*ENTRY, "when_late", "topics"),
    "[tool.lab.pace]": ("words_per_minute", "code_lines_per_minute", "minutes_per_exercise", "round_to"),
    "[tool.lab.workshop]": ("setup_min", "min_buffer", "agendas"),
    "[[tool.lab.workshop.agendas]]": ("length_min", "notebooks", "breaks", "wrap_up_min", "note", "languages"),
    "[[tool.lab.workshop.agendas.breaks]]": ("after", "minutes", "name"),
}
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen".split()


class FactsError(SystemExit):
    """The registry cannot be written out: one sentence per problem."""


class NotYetChecked(FactsError):
    """No version-matrix row has run the registered notebooks: a named build of a new notebook goes on."""


def pyproject(root: pathlib.Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())


def sources(root: pathlib.Path = ROOT) -> list[str]:
    return sorted(p.stem for p in (root / "lessons").glob("[0-9][0-9]_*.py"))


def unknown_keys(lab: dict) -> list[str]:
    """One sentence per key of ``[tool.lab]`` or its tables that :data:`ALLOWED` does not list, naming the allowed."""
    tables = [("[tool.lab]", "", lab), ("[tool.lab.pace]", "", lab.get("pace", {})),
              ("[tool.lab.workshop]", "", lab.get("workshop", {}))]
    tables += [("[[tool.lab.notebooks]]", f" entry {nb.get('stem')!r}", nb) for nb in lab.get("notebooks", [])]
    tables += [("[tool.lab.languages.*]", f" {code!r}", table) for code, table in lab.get("languages", {}).items()]
    tables += [("[[tool.lab.workshop.agendas]]", f" of {agenda.get('length_min')} minutes", agenda)
               for agenda in lab.get("workshop", {}).get("agendas", [])]
    tables += [("[[tool.lab.workshop.agendas.breaks]]", f" of the {agenda.get('length_min')}-minute agenda", pause)
               for agenda in lab.get("workshop", {}).get("agendas", []) for pause in agenda.get("breaks", [])]
    return [f"pyproject.toml's {table}{which} has an unknown key {key!r}: the allowed keys are "
            f"{', '.join(ALLOWED[table])}"
            for table, which, keys in tables for key in keys if key not in ALLOWED[table]]


def registry_problems(root: pathlib.Path = ROOT) -> list[str]:
    """One sentence per source without a registry entry, entry without a source, incomplete entry or unknown key."""
    entries = pyproject(root)["tool"]["lab"].get("notebooks", [])
    stems = [e.get("stem") for e in entries]
    found = sources(root)
    problems = [f"lessons/{s}.py has no [[tool.lab.notebooks]] entry in pyproject.toml: add one "
                f"({', '.join(ENTRY)}), then run python tools/build_notebooks.py --facts"
                for s in found if s not in stems]
    problems += [f"pyproject.toml's [[tool.lab.notebooks]] registers {s}, which has no "
                 f"lessons/{s}.py" for s in stems if s not in found]
    problems += [f"pyproject.toml's [[tool.lab.notebooks]] entry {e.get('stem')!r} lacks {', '.join(missing)}"
                 for e in entries if (missing := [k for k in ENTRY if k not in e])]
    if stems != sorted(stems, key=str):
        problems.append("pyproject.toml's [[tool.lab.notebooks]] are not in the order of their numbers")
    lab = pyproject(root)["tool"]["lab"]
    return problems + unknown_keys(lab) + translations.registry_problems(lab, stems, root)


def torch_range(root: pathlib.Path, lab: dict, checked: list[str]) -> list[str]:
    """README's torch line: the lab's range, and each notebook whose own range is narrower (a notebook added
    after the full rows, run on some releases only), so no reader is promised a release its rows never ran."""
    rows = json.loads((root / "docs" / "torch-versions.json").read_text())
    narrow = torch_matrix.narrower(rows, [nb["stem"] for nb in lab["notebooks"]])
    if not narrow:
        return ["", f"**torch >= {lab['minimum_torch']}: every notebook passes on torch {', '.join(checked)}.**", ""]
    but = " and ".join(nb[:2] for nb in narrow)
    own = "; ".join(f"notebook {nb[:2]} on torch {', '.join(releases)}" for nb, releases in narrow.items())
    return ["", f"**torch >= {lab['minimum_torch']}: every notebook but {but} passes on torch {', '.join(checked)}; "
                f"{own}.**", ""]


def learner_minutes(root: pathlib.Path, lab: dict) -> dict[str, int]:
    """{stem: minutes}: the time a learner needs, from what the stored notebook holds ([tool.lab.pace]).

    Reading (prose words, visible code lines), the exercises ("## Exercise" headings of the source) and the
    measured execution, rounded up: a model of measured quantities, never a number typed in."""
    return _rounded_up(unrounded_minutes(root, lab), lab["pace"]["round_to"])


def _rounded_up(minutes: dict[str, float], step: int) -> dict[str, int]:
    return {stem: math.ceil(round(m, 6) / step) * step for stem, m in minutes.items()}


def unrounded_minutes(root: pathlib.Path, lab: dict) -> dict[str, float]:
    """{stem: minutes}: :func:`learner_minutes` before it is rounded up."""
    pace = lab["pace"]
    out = {}
    for nb in lab["notebooks"]:
        path = root / "notebooks" / f"{nb['stem']}.ipynb"
        if not path.exists():
            raise FactsError(f"notebooks/{nb['stem']}.ipynb is missing, and its learner time is counted from it: "
                             f"build it (python tools/build_notebooks.py {nb['stem'][:2]})")
        counted = lesson_metrics.measure(lesson_metrics.nbformat.read(path, as_version=4))
        source = (root / "lessons" / f"{nb['stem']}.py").read_text()
        exercises = len(re.findall(r"^# ## Exercise\b", source, re.M))
        minutes = (counted["words"] / pace["words_per_minute"]
                   + counted["visible code lines"] / pace["code_lines_per_minute"]
                   + exercises * pace["minutes_per_exercise"] + nb["execution_s"] / 60)
        out[nb["stem"]] = minutes
    return out


def translated_minutes(root: pathlib.Path, lab: dict, language: str) -> dict[str, int]:
    """{stem: minutes} of a language's notebooks (notebooks/<language>/), rounded up as the English ones are."""
    return _rounded_up(unrounded_translated_minutes(root, lab, language), lab["pace"]["round_to"])


def unrounded_translated_minutes(root: pathlib.Path, lab: dict, language: str) -> dict[str, float]:
    """{stem: minutes} of a language's notebooks: its Chinese characters at the language's characters_per_minute,
    its words in Latin letters at words_per_minute; code, exercises and execution as the English notebook's (the
    code is the English lesson's). A translation not built yet has the English time: the build writes the facts
    again once it is stored."""
    pace, rate = lab["pace"], lab["languages"][language]["characters_per_minute"]
    english = unrounded_minutes(root, lab)
    out = {}
    for nb in lab["notebooks"]:
        path = root / "notebooks" / language / f"{nb['stem']}.ipynb"
        if not (root / "lessons" / language / f"{nb['stem']}.py").exists():
            continue
        if not path.exists():  # a new translation, before its first build
            out[nb["stem"]] = english[nb["stem"]]
            continue
        ours = lesson_metrics.measure(lesson_metrics.nbformat.read(path, as_version=4))
        theirs = lesson_metrics.measure(lesson_metrics.nbformat.read(
            root / "notebooks" / f"{nb['stem']}.ipynb", as_version=4))
        out[nb["stem"]] = (english[nb["stem"]] - theirs["words"] / pace["words_per_minute"]
                           + ours["words"] / pace["words_per_minute"] + ours.get("characters", 0) / rate)
    return out


def language_minutes(root: pathlib.Path, lab: dict, language: str) -> dict[str, int]:
    """{stem: minutes} for a reader of this language: its notebooks' times where translated, else the English."""
    return {**learner_minutes(root, lab), **translated_minutes(root, lab, language)}


def headroom(root: pathlib.Path, lab: dict) -> list[str]:
    """docs/maintaining.md's table: how much longer each notebook of a workshop agenda may grow before an agenda's
    buffer falls under min_buffer and ``--facts`` refuses the build. A notebook's learner time is rounded up to
    round_to minutes, so what is left is the room to its next step, plus a whole step for each step of buffer an
    agenda has above its floor (the least over the agendas it is in). A translated notebook has its own learner time
    and the agendas hold in every language: where a translation has less room, the row says so in its characters;
    the words are the English prose's room (it does not move a translation's time), the code lines the least room
    (code and execution move every language's time)."""
    pace = lab["pace"]
    exact = unrounded_minutes(root, lab)
    rooms = {"": _room(lab, exact)}
    for language in translations.languages(lab):
        rooms[language] = _room(lab, {**exact, **unrounded_translated_minutes(root, lab, language)}, language)
    lines = ["", "| notebook | learner time (unrounded) | room before an agenda's buffer falls under its floor | "
             "as prose words | or as visible code lines |", "|---|---|---|---|---|"]
    for stem in sorted(rooms[""]):
        # English prose does not move a translation's time (its own prose does), while code and execution move both
        least = min(room.get(stem, math.inf) for room in rooms.values())   # absent: in no agenda that language has
        limits = [f"{language}: {room[stem]:.1f} min, "
                  f"{int(room[stem] * lab['languages'][language]['characters_per_minute'])} characters"
                  for language, room in rooms.items() if language and room.get(stem, math.inf) < rooms[""][stem]]
        shown = f"{rooms[''][stem]:.1f} min" + (f" ({'; '.join(limits)})" if limits else "")
        lines.append(f"| {stem[:2]} | {exact[stem]:.1f} min ({_rounded_up(exact, pace['round_to'])[stem]}) | "
                     f"{shown} | {int(rooms[''][stem] * pace['words_per_minute'])} | "
                     f"{int(least * pace['code_lines_per_minute'])} |")
    return lines + [""]


def offered(agenda: dict, language: str) -> bool:
    """Whether an agenda is taught in ``language`` ("en", or a registered translation's code): its ``languages``,
    where it names some (a language whose notebooks take longer may not fit an agenda's buffer), else every one."""
    return language in agenda.get("languages", [language])


def _room(lab: dict, exact: dict[str, float], language: str = "en") -> dict[str, float]:
    """{stem: minutes} each notebook of an agenda may grow, at these learner times, before an agenda is refused."""
    workshop, step = lab["workshop"], lab["pace"]["round_to"]
    rounded = _rounded_up(exact, step)
    stems = {nb["stem"][:2]: nb["stem"] for nb in lab["notebooks"]}
    room: dict[str, float] = {}
    for agenda in [a for a in workshop["agendas"] if offered(a, language)]:
        length = agenda["length_min"]
        numbers = [n for n in agenda["notebooks"] if n in stems]   # agendas() refuses the others in one sentence
        used = _used_minutes(agenda, workshop, [rounded[stems[n]] for n in numbers], numbers)
        spare_steps = max(0, math.floor((length - used - workshop["min_buffer"] * length) / step))
        for number in numbers:
            stem = stems[number]
            left = rounded[stem] - exact[stem] + spare_steps * step
            room[stem] = min(room.get(stem, left), left)
    return room


def _used_minutes(agenda: dict, workshop: dict, notebook_minutes: list[int], numbers: list[str]) -> int:
    """An agenda's minutes before its buffer: the opening, its notebooks, its breaks (a lunch is one), the wrap-up."""
    pauses = sum(pause.get("minutes", 0) for pause in agenda.get("breaks", []) if pause.get("after") in numbers)
    return workshop["setup_min"] + sum(notebook_minutes) + pauses + agenda["wrap_up_min"]


def _break_problems(agenda: dict) -> list[str]:
    """One sentence per break that is not after one of the agenda's notebooks, or has no whole minutes."""
    where = f"pyproject's {agenda['length_min']}-minute agenda"
    problems = [f"{where} has a break after {pause.get('after')!r}, which is none of its notebooks "
                f"({', '.join(agenda['notebooks'])}): give its after = the notebook it follows"
                for pause in agenda.get("breaks", []) if pause.get("after") not in agenda["notebooks"]]
    return problems + [f"{where} has a break of {pause.get('minutes')!r} minutes: give its minutes = a whole number "
                       "above 0" for pause in agenda.get("breaks", [])
                       if not (type(pause.get("minutes")) is int and pause["minutes"] > 0)]


def _sections(root: pathlib.Path, stem: str) -> set[str]:
    source = (root / "lessons" / f"{stem}.py").read_text()
    return set(re.findall(r"^# ## (\d+)\.", source, re.M))


def instructors_agendas(root: pathlib.Path, lab: dict, learner: dict[str, int]) -> list[str]:
    """INSTRUCTORS.md's agendas: those taught in English, at the English times (and the buffer an agenda not taught
    in a language would leave there), then those taught in each other language, at its notebooks' times."""
    others = {code: (words["name"], language_minutes(root, lab, code))
              for code, words in translations.languages(lab).items()}
    lines = agendas(root, lab, learner, elsewhere=others)
    for code, (_, minutes) in others.items():
        lines += agendas(root, lab, minutes, code)[1:]
    return lines


def agendas(root: pathlib.Path, lab: dict, minutes: dict[str, int], language: str = "en",
            elsewhere: dict[str, tuple[str, dict[str, int]]] | None = None) -> list[str]:
    """INSTRUCTORS.md's agendas ([tool.lab.workshop]) taught in ``language``: each block's start and length, the
    buffer, what to skip when late, the notebooks it leaves out; for an agenda not taught in a language of
    ``elsewhere`` ({code: (its name, its learner minutes)}), the buffer it would leave there. FactsError when an
    agenda leaves less buffer than min_buffer, names a missing §, or has a break after none of its notebooks or of
    no whole minutes."""
    workshop, by_number = lab["workshop"], {nb["stem"][:2]: nb for nb in lab["notebooks"]}
    known = ["en", *translations.languages(lab)]
    for agenda in workshop["agendas"]:
        unknown = [code for code in agenda.get("languages", []) if code not in known]
        if unknown or agenda.get("languages") == []:
            raise FactsError(f"pyproject's {agenda['length_min']}-minute agenda is taught in {unknown or 'no language'}"
                             f": its languages are among {', '.join(known)} (or leave languages out: every one)")
    lines = []
    for agenda in [a for a in workshop["agendas"] if offered(a, language)]:
        length = agenda["length_min"]
        taught = "" if language == "en" else f", in {lab['languages'][language]['name']}"
        if problems := _break_problems(agenda):
            raise FactsError("; ".join(problems))
        opening = "Opening: collect the pre-flight results done at home, triage each ✘ (table above)"
        blocks = [(opening, workshop["setup_min"], "")]
        for number in agenda["notebooks"]:
            if number not in by_number:
                raise FactsError(f"pyproject's [tool.lab.workshop] agenda of {length} minutes names notebook "
                                 f"{number!r}, which no [[tool.lab.notebooks]] registers: name one of "
                                 f"{', '.join(by_number)}")
            nb = by_number[number]
            late = nb.get("when_late", "")
            missing = sorted(set(re.findall(r"§(\d+)", late)) - _sections(root, nb["stem"]))
            if missing:
                raise FactsError(f"pyproject's when_late for {nb['stem']} names §{', §'.join(missing)}, which the "
                                 f"notebook has no section for: name its sections as its headings number them")
            blocks.append((f"{number} · {nb['title']}", minutes[nb["stem"]], late))
            blocks += [(pause.get("name", "Break"), pause["minutes"], "")
                       for pause in agenda.get("breaks", []) if pause["after"] == number]
        blocks.append(("Wrap-up: What to remember, and the Questions (answer key below)", agenda["wrap_up_min"], ""))
        buffer = length - _used_minutes(agenda, workshop, [minutes[by_number[n]["stem"]] for n in agenda["notebooks"]],
                                        agenda["notebooks"])
        if buffer < workshop["min_buffer"] * length:
            raise FactsError(f"the {length}-minute agenda leaves {buffer} min of buffer, less than "
                             f"{workshop['min_buffer']:.0%}: take a notebook out of it in pyproject's "
                             "[tool.lab.workshop]")
        lines += ["", f"### {length} minutes{taught}", "",
                  "| Start | Block | Minutes | When late, skip |", "|---|---|---|---|"]
        start = 0
        for name, block_minutes, late in blocks:
            lines.append(f"| {start // 60}:{start % 60:02d} | {name} | {block_minutes} | {late} |")
            start += block_minutes
        rest = [nb for number, nb in by_number.items() if number not in agenda["notebooks"]]
        lines += [f"| {start // 60}:{start % 60:02d} | Buffer (stragglers, setup failures, questions) | {buffer} "
                  f"({buffer / length:.0%}) | |", "", agenda["note"]]
        if rest:
            lines += ["", f"Not in this agenda ({duration(sum(minutes[nb['stem']] for nb in rest))} of learner time): "
                          + ", ".join(f"{nb['stem'][:2]} ({minutes[nb['stem']]} min)" for nb in rest) + "."]
        for code, (name, theirs) in (elsewhere or {}).items():
            if not offered(agenda, code):
                left = length - _used_minutes(agenda, workshop, [theirs[by_number[n]["stem"]]
                                                                 for n in agenda["notebooks"]], agenda["notebooks"])
                times = ", ".join(f"{n} {theirs[by_number[n]['stem']]} min" for n in agenda["notebooks"])
                under = left < workshop["min_buffer"] * length
                lines += ["", f"Not taught in {name} ({code}): at its notebooks' learner times ({times}) it would "
                              f"leave {left} min of buffer ({left / length:.0%})"
                              + (f", under {workshop['min_buffer']:.0%}." if under else
                                 f", enough: add {code!r} to its languages in pyproject.toml.")]
    return lines + [""]


def duration(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if hours else f"{rest} min"


def colab_folder(lab: dict) -> str:
    """Where Colab opens the published notebooks: a notebook's address there is this and its file name."""
    return f"https://colab.research.google.com/github/{lab['github']}/blob/{lab['branch']}/notebooks/"


def colab(lab: dict, stem: str) -> str:
    return f"{colab_folder(lab)}{stem}.ipynb"


def readme_notebooks(lab: dict, nbs: list[dict], learner: dict[str, int]) -> list[str]:
    lines = ["| Notebook | Idea | Time | Open |", "|---|---|---|---|"]
    for nb in nbs:
        lines.append(f"| [{nb['stem'][:2]} · {nb['title']}](notebooks/{nb['stem']}.ipynb) | {nb['idea']} | "
                     f"{learner[nb['stem']]} min | [Colab]({colab(lab, nb['stem'])}) |")
    minutes, seconds = sum(learner.values()), sum(nb["execution_s"] for nb in nbs)
    count = NUMBER_WORDS[len(nbs)] if len(nbs) < len(NUMBER_WORDS) else str(len(nbs))
    return lines + [
        "",
        f"Total: about {duration(minutes)} of reading and exercises (each notebook's time is computed from its "
        "length, its exercises and its measured run: [INSTRUCTORS.md](INSTRUCTORS.md#timings) says how).",
        f"Executed one at a time, each from empty compile caches, all {count} notebooks take about "
        f"{seconds // 60} min {seconds % 60} s of computer time on a 2-core CPU (the sum of the measured "
        "times in [INSTRUCTORS.md](INSTRUCTORS.md#timings)); one build of them all reuses torch's caches "
        "and takes less."]


def map_cell(nbs: list[dict], learner: dict[str, int]) -> list[str]:
    lines = ["| Notebook | Idea | Time |", "|---|---|---|"]
    for i, nb in enumerate(nbs):
        name = f"{nb['stem'][:2]} · {nb['title']}"
        lines.append(f"| {f'**{name}** (this one)' if i == 0 else name} | {nb['short_idea']} | "
                     f"{learner[nb['stem']]} min |")
    return ["#", *("# " + line for line in lines), "#"]


def translated_map_cell(root: pathlib.Path, lab: dict, language: str, minutes: dict[str, int]) -> list[str]:
    """Notebook 00's map in a language: its titles and short ideas, the untranslated notebooks marked."""
    words = lab["languages"][language]
    lines = ["| " + " | ".join(words["map_columns"]) + " |", "|---|---|---|"]
    for i, nb in enumerate(lab["notebooks"]):
        name = f"{nb['stem'][:2]} · {translations.title_of(lab, language, nb['stem'])}"
        if not (root / "lessons" / language / f"{nb['stem']}.py").exists():
            name += words["in_english"]
        lines.append(f"| {f'**{name}**' + words['this_one'] if i == 0 else name} | "
                     f"{translations.short_idea_of(lab, language, nb['stem'])} | "
                     f"{words['minutes'].format(minutes=minutes[nb['stem']])} |")
    return ["#", *("# " + line for line in lines), "#"]


def translated_readme_notebooks(root: pathlib.Path, lab: dict, language: str, minutes: dict[str, int]) -> list[str]:
    """A language's README table: each notebook in that language where translated, else the English one, marked."""
    words = lab["languages"][language]
    lines = ["| " + " | ".join(words["map_columns"]) + " | Colab |", "|---|---|---|---|"]
    for nb in lab["notebooks"]:
        stem, title = nb["stem"], translations.title_of(lab, language, nb["stem"])
        translated = (root / "lessons" / language / f"{stem}.py").exists()
        path = f"{language}/{stem}.ipynb" if translated else f"{stem}.ipynb"
        name = f"{stem[:2]} · {title}" + ("" if translated else words["in_english"])
        lines.append(f"| [{name}](notebooks/{path}) | {translations.short_idea_of(lab, language, stem)} | "
                     f"{words['minutes'].format(minutes=minutes[stem])} | [Colab]({colab_folder(lab)}{path}) |")
    return ["", *lines, ""]


def readme_times(nbs: list[dict]) -> list[str]:
    """docs/measurements.md's row of cold execution times, one column per notebook (INSTRUCTORS.md's figures)."""
    return ["", "| " + " | ".join(nb["stem"][:2] for nb in nbs) + " |", "|---" * len(nbs) + "|",
            "| " + " | ".join(f"{nb['execution_s']} s" for nb in nbs) + " |", ""]


def lesson_table(root: pathlib.Path, language: str = "") -> list[str]:
    """docs/measurements.md's table of what a learner reads, per stored notebook (tools/lesson_metrics.py), of
    notebooks/ or of a language's folder."""
    rows = {path.stem: lesson_metrics.measure(lesson_metrics.nbformat.read(path, as_version=4))
            for path in sorted((root / "notebooks" / language).glob("[0-9][0-9]_*.ipynb"))}
    return lesson_metrics.table(rows).splitlines() if rows else ["(none yet)"]


def instructors_timings(nbs: list[dict], learner: dict[str, int]) -> list[str]:
    lines = ["", "| Notebook | Execution | Learner time | Demo live |", "|---|---|---|---|"]
    for nb in nbs:
        lines.append(f"| {nb['stem'][:2]} {nb['title']} | {nb['execution_s']} s | {learner[nb['stem']]} min "
                     f"| {nb['demo']} |")
    return lines + [""]


def lessons(lab: dict, nbs: list[dict]) -> list[str]:
    """labkit/lessons.py's LESSONS: each topic a notebook's ``topics`` names -> (its stem, its title); and
    ON_COLAB, where Colab opens the published notebooks (a link from a notebook open on Colab)."""
    lines, taken = ["LESSONS = {"], {}
    for nb in nbs:
        for topic in nb.get("topics", []):
            if topic in taken:
                raise FactsError(f"pyproject.toml's [[tool.lab.notebooks]] {taken[topic]!r} and {nb['stem']!r} both "
                                 f"list the topic {topic!r}: a topic is taught by one notebook")
            taken[topic] = nb["stem"]
            quoted = [json.dumps(text, ensure_ascii=False) for text in (topic, nb["stem"], nb["title"])]
            lines.append(f"    {quoted[0]}: ({quoted[1]}, {quoted[2]}),")
    return lines + ["}", f"ON_COLAB = {json.dumps(colab_folder(lab))}"]


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """Each module-level ``NAME = value`` (or ``NAME: type = value``) of ``tree``: name -> value."""
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) and node.value is not None else []
        found.update({t.id: node.value for t in targets if isinstance(t, ast.Name)})
    return found


def registered_checks(root: pathlib.Path = ROOT) -> list[tuple[str, str, bool]]:
    """(kind, what, doctor_only) of each check of ``labkit.auditing.registry.CHECKS``, in the registry's order: read
    from the source, so that --check imports no torch (tests/notebooks/test_sources.py holds it equal to the
    imported registry). FactsError, naming the fix, for a check written in a form this cannot read."""
    folder = root / "labkit" / "auditing"
    names = {**_assignments(ast.parse((folder / "vocabulary.py").read_text())),
             **_assignments(ast.parse((folder / "registry.py").read_text()))}
    kinds = {name: value.value for name, value in names.items()
             if isinstance(value, ast.Constant) and isinstance(value.value, str)}
    if not isinstance(names.get("CHECKS"), ast.Tuple):
        raise FactsError("labkit/auditing/registry.py has no CHECKS = (Check(...), ...): put it back")
    fields = ("kind", "find", "docs", "lesson", "stop_if", "told_compiled", "doctor_only", "what")  # Check's order
    checks = []
    for call in names["CHECKS"].elts:
        keywords = {k.arg: k.value for k in getattr(call, "keywords", [])}
        keywords.update(zip(fields, getattr(call, "args", [])))
        first = keywords.get("kind")
        kind = kinds.get(first.id) if isinstance(first, ast.Name) else getattr(first, "value", None)
        what, only = keywords.get("what"), keywords.get("doctor_only", ast.Constant(False))
        if not (isinstance(kind, str) and isinstance(what, ast.Constant) and isinstance(what.value, str) and what.value
                and isinstance(only, ast.Constant)):
            raise FactsError(f"labkit/auditing/registry.py line {call.lineno}: each Check in CHECKS needs its kind "
                             "(a string, or a name given a string in registry.py or auditing/vocabulary.py) and "
                             "what=\"...\" as plain strings, and doctor_only as True or False: the lists of checks "
                             "are written from them")
        checks.append((kind, what.value, bool(only.value)))
    return checks


def check_list(checks: list[tuple[str, str, bool]], which: str, style: str) -> list[str]:
    """A numbered list of the checks in the order they run: ``which`` is "audit" (audit's), "doctor_only" or "all"
    (the doctor's: audit's first, then its own, wherever they stand in the registry)."""
    chosen = [(kind, what, only) for kind, what, only in sorted(checks, key=lambda check: check[2])
              if which == "all" or only == (which == "doctor_only")]
    code = "``{}``" if style == "rst" else "`{}`"
    width = 114 if style == "py-md" else 116   # ruff's 120, less a docstring's or a markdown comment's indent
    lines = [line for i, (kind, what, only) in enumerate(chosen, 1) for line in textwrap.wrap(
        f"{i}. {code.format(kind)}{' (the doctor only)' if only and which == 'all' else ''}: {what}",
        width=width, subsequent_indent="   ", break_on_hyphens=False)]
    return ["#", *(f"# {line}" for line in lines), "#"] if style == "py-md" else ["", *lines, ""]


def regions(project: dict, checked: list[str], root: pathlib.Path = ROOT) -> dict[str, list[tuple[str, str, list]]]:
    """{file: [(region name, marker style, the lines between its markers)]}."""
    lab, nbs = project["tool"]["lab"], project["tool"]["lab"]["notebooks"]
    minimum = tuple(int(p) for p in lab["minimum_torch"].split("."))
    quoted = ", ".join(f'"{v}"' for v in checked) + ("," if len(checked) == 1 else "")
    learner = learner_minutes(root, lab)
    checks = registered_checks(root)
    found = {
        "README.md": [
            ("torch-range", "md", torch_range(root, lab, checked)),
            ("notebooks", "md", ["", *readme_notebooks(lab, nbs, learner), ""]),
            ("checks", "md", check_list(checks, "all", "md"))],
        "docs/measurements.md": [("times", "md", readme_times(nbs)),
                                 ("lesson-metrics", "md", ["", *lesson_table(root), ""])],
        "docs/maintaining.md": [("gpu-runs", "md", ["", *gpu_runs.table(root), ""]),
                                ("headroom", "md", headroom(root, lab))],
        "docs/doctor.md": [("checks", "md", check_list(checks, "all", "md"))],
        "docs/labkit.md": [("checks", "md", check_list(checks, "all", "md"))],
        "labkit/auditing/__init__.py": [("checks", "rst", check_list(checks, "all", "rst"))],
        "lessons/00_start_here.py": [("map", "py-md", map_cell(nbs, learner))],
        "lessons/06_field_guide.py": [("audit-checks", "py-md", check_list(checks, "audit", "py-md")),
                                      ("doctor-only-checks", "py-md", check_list(checks, "doctor_only", "py-md"))],
        "INSTRUCTORS.md": [("timings", "md", instructors_timings(nbs, learner)),
                           ("agendas", "md", instructors_agendas(root, lab, learner)),
                           ("gpu-room", "md", ["", *gpu_runs.room(root), ""])],
        "labkit/_torch/__init__.py": [("checked-on", "py", [f"CHECKED_ON = ({quoted})"])],
        "labkit/env.py": [("minimum-torch", "py", [f"MINIMUM_TORCH = {minimum!r}"])],
        "labkit/lessons.py": [("lessons", "py", lessons(lab, nbs))],
        "requirements.txt": [("torch-floor", "py", [f"torch>={lab['minimum_torch']}"])],
        "binder/requirements.txt": [("reference-torch", "py", [f"torch=={lab['reference_torch']}+cpu"])],
    }
    for path, items in translated_regions(root, lab).items():
        found.setdefault(path, []).extend(items)
    return found


def translated_regions(root: pathlib.Path, lab: dict) -> dict[str, list[tuple[str, str, list]]]:
    """Each language's generated prose: its README's table, notebook 00's map, its lesson metrics. FactsError when
    an agenda would leave less than its buffer at that language's learner times."""
    out: dict[str, list] = {"docs/measurements.md": []}
    for language, words in translations.languages(lab).items():
        minutes = language_minutes(root, lab, language)
        try:
            agendas(root, lab, minutes, language)  # the buffer rule holds for a workshop taught in this language
        except FactsError as error:
            raise FactsError(f"At the learner times of the {words['name']} notebooks ({language}): {error}") from None
        out[words["readme"]] = [("notebooks", "md", translated_readme_notebooks(root, lab, language, minutes))]
        if (root / "lessons" / language / "00_start_here.py").exists():
            out[f"lessons/{language}/00_start_here.py"] = [
                ("map", "py-md", translated_map_cell(root, lab, language, minutes))]
        out["docs/measurements.md"].append((f"lesson-metrics-{language}", "md",
                                            ["", *lesson_table(root, language), ""]))
    return out


def lines(project: dict, root: pathlib.Path = ROOT) -> dict[str, list[tuple[str, str]]]:
    """{file: [(a pattern matching exactly one line's fact, what it becomes)]}: facts without markers."""
    lab = project["tool"]["lab"]
    learner = learner_minutes(root, lab)
    headers = {f"lessons/{nb['stem']}.py": [(r"(?m)^(# \*\*Time:\*\* about )\d+( minutes)",
                                                             rf"\g<1>{learner[nb['stem']]}\g<2>")]
               for nb in lab["notebooks"]}
    for language, words in translations.languages(lab).items():
        minutes = translated_minutes(root, lab, language)
        before, after = (re.escape(part) for part in words["time_line"].split("{minutes}"))
        headers.update({f"lessons/{language}/{stem}.py": [(rf"(?m)^(# {before})\d+({after})",
                                                           rf"\g<1>{n}\g<2>")] for stem, n in minutes.items()})
    return {**headers,
        "pyproject.toml": [(r'(?m)^(dependencies = \[.*?)"torch>=[^"]*"',
                            rf'\g<1>"torch>={project["tool"]["lab"]["minimum_torch"]}"')],
        "labkit/__init__.py": [(r'(?m)^__version__ = "[^"]*"$', f'__version__ = "{project["project"]["version"]}"')],
    }


def rewritten(text: str, name: str, style: str, body: list[str], path: str) -> str:
    tag = CHECKS_TAG if name in CHECK_REGIONS else TAG
    begin, end = (m.format(name=name, tag=tag) for m in MARKERS[style])
    pattern = re.compile(rf"^{re.escape(begin)}\n.*?^{re.escape(end)}$", re.S | re.M)
    if len(pattern.findall(text)) != 1:
        raise FactsError(f"{path} has no region {name!r} (a line {begin!r}, then a line {end!r}): put them back")
    return pattern.sub(lambda _: "\n".join([begin, *body, end]), text)


def expected(root: pathlib.Path = ROOT) -> dict[str, tuple[str, str]]:
    """{file: (its text now, its text with every fact written)}; FactsError if the registry cannot be."""
    project = pyproject(root)
    lab = project["tool"]["lab"]
    incomplete = [p for p in registry_problems(root) if " lacks " in p or "not in the order" in p
                  or " unknown key " in p or " must hold " in p]
    if incomplete:
        raise FactsError("\n".join(incomplete))
    stems = [nb["stem"] for nb in lab.get("notebooks", [])]
    rows = json.loads((root / "docs" / "torch-versions.json").read_text())
    checked = torch_matrix.lab_range(rows, stems)
    if not checked:
        raise NotYetChecked(f"No full row of docs/torch-versions.json ran the registered notebooks ({len(stems)}) "
                            "and passed: run python tools/torch_matrix.py for each release before writing CHECKED_ON")
    unchecked = [s for s in stems if not torch_matrix.supported(rows, s)]
    if unchecked:
        numbers = " ".join(s[:2] for s in unchecked)
        raise NotYetChecked(f"No row of docs/torch-versions.json ran {', '.join(unchecked)} and passed: run "
                            f"python tools/torch_matrix.py {checked[-1]} --notebooks {numbers} (and on the lab's "
                            "other releases) before writing the facts")
    if checked[0].split(".")[:2] != lab["minimum_torch"].split("."):
        raise FactsError(f"pyproject's [tool.lab] minimum_torch is {lab['minimum_torch']}, but the oldest release "
                         f"on which every notebook passes (docs/torch-versions.json) is {checked[0]}: make them agree")
    out = {}
    for path, items in regions(project, checked, root).items():
        text = new = (root / path).read_text()
        for name, style, body in items:
            new = rewritten(new, name, style, body, path)
        out[path] = (text, new)
    for path, subs in lines(project, root).items():
        text = (root / path).read_text()
        new = out.get(path, (text, text))[1]  # on top of the regions written in it above
        for pattern, replacement in subs:
            new, found = re.subn(pattern, replacement, new, count=1)
            if not found:
                raise FactsError(f"{path} has no line matching {pattern!r} for the builder to write: put it back")
        out[path] = (out.get(path, (text,))[0], new)
    return out


def stale(root: pathlib.Path = ROOT) -> list[str]:
    """One line per file whose generated facts are out of date, or per registry problem."""
    try:
        files = expected(root)
    except FactsError as error:
        return list(dict.fromkeys(registry_problems(root) + str(error).splitlines()))
    return registry_problems(root) + [
        f"{path}: its generated facts are stale: run python tools/build_notebooks.py --facts"
        for path, (old, new) in files.items() if old != new]


def write(root: pathlib.Path = ROOT) -> list[str]:
    """Rewrite the stale facts; the files changed. FactsError if the registry cannot be written."""
    changed = []
    for path, (old, new) in expected(root).items():
        if old != new:
            (root / path).write_text(new)
            changed.append(path)
    return changed
