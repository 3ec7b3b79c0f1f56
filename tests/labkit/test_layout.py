"""labkit's layout: modules of one job each, in layers without a cycle, and what each one must not do.

These hold the restructuring of issue 33 in place: the helpers stages.py used to hold live in graphs, errors,
compare and state (and stay importable from stages); the private-torch adapter holds no labkit policy;
widgets build no HTML; no library sentence names a notebook by number; an audit check is one entry.

A subpackage's modules are modules too, named by their dotted path under labkit (``doctor.report``; its
``__init__.py`` is ``doctor``): the same rules hold for them.
"""

import ast
import pathlib
import re

import pytest
import torch

import labkit
from labkit import _torch as internals
from labkit import auditing, cache, compare, errors, graphs, lessons, op_names, ops, stages, state
from repo import ROOT

LABKIT = pathlib.Path(labkit.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    """``labkit/auditing.py`` -> ``auditing``; ``labkit/doctor/report.py`` -> ``doctor.report``;
    ``labkit/doctor/__init__.py`` -> ``doctor`` (labkit's own ``__init__.py`` stays ``__init__``)."""
    parts = path.relative_to(LABKIT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


MODULES = sorted(_module_name(p) for p in LABKIT.rglob("*.py"))
LOW = ("graphs", "errors", "compare", "state")  # the jobs stages.py used to hold


def _path(name: str) -> pathlib.Path:
    """The file of a module of :data:`MODULES`."""
    folder = LABKIT.joinpath(*name.split("."))
    return folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")


def _labkit_imports(name: str) -> set[str]:
    """The labkit modules ``name``'s file imports, at module level or inside a function: each import resolved to
    the deepest module of :data:`MODULES` it names (``from .doctor import formats`` -> ``doctor.formats``,
    ``from .doctor import check`` -> ``doctor``, ``from .. import cache`` inside the doctor -> ``cache``)."""
    path = _path(name)
    package = list(path.relative_to(LABKIT).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[:len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
        elif (node.module or "").startswith("labkit."):
            base = node.module.split(".")[1:]
        else:
            continue
        for alias in node.names:
            parts = base + [alias.name]
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            found |= {".".join(parts)} if parts else set()
    return found & set(MODULES)


def test_labkits_imports_form_layers_without_a_cycle():
    graph = {name: _labkit_imports(name) for name in MODULES if name != "__init__"}
    done, path = set(), []

    def visit(name):
        if name in path:
            raise AssertionError(f"labkit's imports have a cycle: {' -> '.join(path[path.index(name):] + [name])}")
        if name in done:
            return
        path.append(name)
        for other in sorted(graph.get(name, ())):
            visit(other)
        path.pop()
        done.add(name)

    for name in graph:
        visit(name)


@pytest.mark.parametrize("name", LOW)
def test_a_low_module_does_not_import_the_orchestration(name):
    assert not _labkit_imports(name) & {"stages", "auditing", "experiments", "render", "widgets"}


ADAPTER = [name for name in MODULES if name == "_torch" or name.startswith("_torch.")]


@pytest.mark.parametrize("name", [*ADAPTER, "describe", "errors", "lessons", "doctor.formats"])
def test_the_bottom_modules_import_nothing_of_labkits(name):
    """The bottom of the layers; the private-torch adapter's modules import only each other."""
    assert _labkit_imports(name) - set(ADAPTER) == set()


MOVED = {
    graphs: ("NodeInfo", "GraphSnapshot", "snapshot"),
    errors: ("TorchError", "as_torch_error", "InputError", "ERROR_KINDS", "raised"),
    compare: ("Verdict", "copy_inputs", "compare_runs", "snapshot_tensor", "input_names", "call_shapes",
              "for_inputs"),
    state: ("FunctionState",),
    ops: ("split_qualname",),
}


@pytest.mark.parametrize("module,name", [(m, n) for m, names in MOVED.items() for n in names],
                         ids=lambda x: getattr(x, "__name__", x))
def test_a_name_moved_out_of_stages_is_still_importable_from_it(module, name):
    assert getattr(stages, name) is getattr(module, name)


def test_the_adapter_holds_no_labkit_policy():
    for name in ("keep_destroyed", "_DESTROYED_REGISTRATIONS", "TORCH_OP_NAMESPACES", "after_reset",
                 "reset_compiler", "copy_dynamo_marks"):
        assert not hasattr(internals, name), f"labkit._torch.{name} is labkit's, not torch's"
    assert callable(ops.keep_destroyed) and "aten" in cache.TORCH_OP_NAMESPACES


def test_config_patches_takes_torchs_spelling_and_undoes_it():
    before = torch.compiler.config.cache_key_tag
    with internals.config_patches(compiler={"cache_key_tag": "labkit-layout-test"}):
        assert torch.compiler.config.cache_key_tag == "labkit-layout-test"
    assert torch.compiler.config.cache_key_tag == before


def test_a_destroyed_raw_op_is_kept_alive():
    @torch.library.custom_op("t::layout_kept", mutates_args=())
    def kept(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    token = internals.registration_of(kept)
    assert ops.destroy_custom_op("t::layout_kept") and not ops.destroy_custom_op("t::layout_kept")
    assert any(held is token for held in op_names._DESTROYED_REGISTRATIONS)


def _html_built_in(name: str) -> list[str]:
    """The HTML tags among labkit/<name>.py's string literals (an f-string's parts too), and ``import html``; for a
    package, among all its modules'."""
    paths = sorted((LABKIT / name).rglob("*.py")) if (LABKIT / name).is_dir() else [LABKIT / f"{name}.py"]
    source = "\n".join(path.read_text() for path in paths)
    literals = [node.value for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    tags = [text for text in literals if re.search(r"<(p|div|i|b|code|table|tr|td|br)\b", text)]
    return tags + (["import html"] if "import html" in source else [])


def test_widgets_build_no_html():
    tags = _html_built_in("widgets")
    assert not tags, f"labkit/widgets.py builds HTML: {tags[:3]}; move it to render"


def test_auditing_builds_no_html_render_draws_its_report():
    tags = _html_built_in("auditing")
    assert not tags, f"labkit/auditing/ builds HTML: {tags[:3]}; move it to render"
    report = auditing.AuditReport("t::x", "t::x(Tensor x) -> Tensor", [], ["declaration"], [], 0.0)
    assert report._repr_html_() == labkit.render.audit_html(report)


# A notebook named by number: "notebook 05", a section header "# --- 05", or its stem "05_dce_and_dynamic_shapes"
# (a registry of where things are shown belongs in tools/, as tools/showings.py).
NUMBERED = re.compile(r"\b[Nn]otebooks? \d\d\b|^# --- (?:notebook )?\d\d\b|\b\d\d_[a-z]\w*", re.M)
# What --facts writes from the registry (labkit/lessons.py's LESSONS) is the one place stems may stand.
GENERATED = re.compile(r"^# BEGIN (\S+): generated .*?^# END \1$", re.M | re.S)


def _numbered(text: str) -> list[str]:
    return NUMBERED.findall(GENERATED.sub("", text))


@pytest.mark.parametrize("name", MODULES)
def test_no_library_module_names_a_notebook_by_number(name):
    found = _numbered(_path(name).read_text())
    assert not found, (f"labkit/{_path(name).relative_to(LABKIT)} names notebooks by number ({found}): name the "
                       "topic, or take the number from labkit.lessons.notebook_about(topic); where a notebook shows "
                       "something goes in tools/")


def test_the_notebook_number_rule_sees_a_stem_a_sentence_and_a_header_but_not_the_generated_registry():
    assert _numbered('Showing("02_mutates_args", DeclarationLab)\n# --- 05 dead code\nsee notebook 04') == [
        "02_mutates_args", "# --- 05", "notebook 04"]
    assert _numbered((LABKIT / "lessons.py").read_text()) == []
    assert "05_dce_and_dynamic_shapes" in (LABKIT / "lessons.py").read_text()  # inside its generated region


@pytest.mark.parametrize("name", MODULES)
def test_every_module_says_its_job_and_what_it_must_not_do(name):
    doc = ast.get_docstring(ast.parse(_path(name).read_text())) or ""
    assert doc.strip() and "Not here:" in doc, (f"labkit/{_path(name).relative_to(LABKIT)}'s docstring must say its "
                                                "job and 'Not here: ...'")


@pytest.mark.parametrize("topic,teaches,sentence", [
    ("effects", "an effect", lambda: auditing.CANNOT_SEE),
    ("compile caches", "cache", lambda: cache.enable()),   # conftest's policy: enable() keeps it
    ("a silent wrong result", "tell the compiler a small lie", None),
    ("mutates_args", "what each *wrong* declaration does", None),
    ("graph breaks", "where `fullgraph` changes what happens to such an op", None),
    ("fake kernels", "what a fake with the wrong **dtype**", None),
])
def test_a_sentence_that_sends_a_learner_to_a_lesson_names_the_notebook_that_teaches_it(topic, teaches, sentence):
    """The notebook a topic points to promises it in its opening (title, hook, What you will learn)."""
    import jupytext

    lesson = lessons.notebook_about(topic)
    opening = jupytext.read(LABKIT.parent / "lessons" / f"{lesson.stem}.py").cells[0].source
    assert teaches in opening, f"{topic!r} points to {lesson.stem}, whose opening does not teach it"
    if sentence is not None:
        assert f"notebook {lesson.number}" in sentence()


def test_a_new_check_is_one_entry_and_its_page_and_lesson_reach_audit_and_the_doctor(monkeypatch):
    """A throwaway check registered in CHECKS shows in audit's report and in the doctor's, there (its JSON and its
    terminal lines) with its own official page and lesson (the doctor used to map kinds to pages in a table of its
    own, and gave a new check a generic page and no lesson); a doctor-only one reaches the doctor's report and not
    audit's, and what it raises is the doctor's report of a labkit bug."""
    from labkit import doctor
    from labkit.doctor import formats

    def extra(overload, call):
        return [auditing.Finding("extra", "a finding of a new check", "why", "fix")]

    def deeper(overload, call, audited):
        assert audited.checks_run == ["declaration", "extra"], "a doctor-only check gets audit's report"
        return [auditing.Finding("deeper:aspect", "a finding only the doctor looks for", "why", "fix"),
                auditing.Finding(auditing.NOTE, "not tried on a second device", "", "")]

    def broken(overload, call, audited):
        raise RuntimeError("a bug in a doctor-only check")

    checks = (auditing.CHECKS[0],
              auditing.Check("extra", extra, "https://example.org/extra", "effects"),
              auditing.Check("deeper", deeper, "https://example.org/deeper", "graph breaks", doctor_only=True),
              auditing.Check("broken", broken, "https://example.org/broken", None, doctor_only=True))
    monkeypatch.setattr(auditing.registry, "CHECKS", checks)
    op = labkit.declare(name="t::layout_audited", returns="fresh")
    report = labkit.audit(op, torch.ones(2))
    assert report.checks_run == ["declaration", "extra"]
    assert [f.check for f in report.findings] == ["extra"] and report.kinds() == {"extra"}

    ran = doctor.check(op, samples={op: [((torch.ones(2),), {})]})
    result = ran.results[0]
    assert result.checks_run == ["declaration", "extra", "deeper"]
    reported = {f["check"]: f for f in formats.as_dict(ran)["results"][0]["findings"]}
    assert set(reported) == {"extra", "deeper:aspect", "doctor"}, reported
    assert reported["extra"]["docs"] == "https://example.org/extra"
    assert reported["extra"]["learn_more"] == auditing.learn_more("effects") != auditing.learn_more("mutates_args")
    assert reported["deeper:aspect"]["docs"] == "https://example.org/deeper"
    assert f"notebook {lessons.notebook_about('graph breaks').number}" in reported["deeper:aspect"]["learn_more"]
    assert "labkit's broken step failed on this op: RuntimeError" in reported["doctor"]["problem"]
    lines = "\n".join(formats.finding_lines(result, full=True))
    assert "https://example.org/extra" in lines and auditing.learn_more("effects") in lines
    assert "not tried on a second device" in result.notes


def test_a_check_with_a_lesson_no_notebook_teaches_or_audits_options_on_a_doctor_check_is_refused():
    with pytest.raises(ValueError, match="lesson 'efects' is no topic"):
        auditing.Check("typo", lambda overload, call: [], "https://example.org", "efects")
    with pytest.raises(ValueError, match="stop_if and told_compiled are audit's"):
        auditing.Check("deep", lambda overload, call, audited: [], "https://example.org", None,
                       stop_if=(auditing.EAGER,), doctor_only=True)


def test_the_doctor_has_no_steps_or_links_table_of_its_own():
    from labkit import doctor

    assert not hasattr(doctor, "STEPS") and not hasattr(doctor, "Step")
    assert not (LABKIT / "doctor" / "steps.py").exists() and not (LABKIT / "doctor" / "links.py").exists()


def test_the_audit_runs_its_checks_in_order_with_named_kinds():
    assert [c.kind for c in auditing.CHECKS] == [auditing.DECLARATION, auditing.MEMORY, auditing.OPCHECK,
                                                 auditing.COMPILE, auditing.ALIASING, auditing.FULLGRAPH,
                                                 auditing.FAKE]
    assert [c.kind for c in auditing.CHECKS if c.doctor_only] == [auditing.FULLGRAPH, auditing.FAKE]
    assert all(c.docs.startswith("https://") for c in auditing.CHECKS), "every check names its official page"
    stops = {c.kind: c.stop_if for c in auditing.CHECKS}
    assert stops[auditing.COMPILE] == (auditing.EAGER,) and stops[auditing.ALIASING] == (auditing.COMPILE,)


# --- docs/labkit.md, the map: one entry per module ---------------------------------------------------------------

MAP = ROOT / "docs" / "labkit.md"
# an entry: a list item that starts with the module's dotted name (labkit/__init__.py's is plain `labkit`)
_ENTRY = re.compile(r"^\s*- `(labkit(?:\.[A-Za-z_][\w]*)*)`", re.M)


def _entries(text: str) -> list[str]:
    """The modules a map has an entry for, as :data:`MODULES` names them (``doctor.report``; ``__init__``)."""
    return [found.removeprefix("labkit.") if found != "labkit" else "__init__" for found in _ENTRY.findall(text)]


def _map_problems(text: str, modules: list[str]) -> list[str]:
    entries = _entries(text)
    return ([f"labkit.{name} has no entry in docs/labkit.md: add a '- `labkit.{name}` — its job' line to the "
             "part of the map for its audience" for name in modules if name not in entries]
            + [f"docs/labkit.md has an entry for labkit.{name}, which is no module: rename or remove it"
               for name in sorted(set(entries) - set(modules))]
            + [f"docs/labkit.md has {entries.count(name)} entries for labkit.{name}: keep one"
               for name in sorted(set(entries)) if entries.count(name) > 1])


def test_the_map_has_one_entry_for_every_module_and_none_for_a_module_that_is_gone():
    assert _map_problems(MAP.read_text(), MODULES) == []


def test_the_map_check_fails_on_a_new_module_a_stale_entry_and_a_second_entry():
    text = MAP.read_text()
    assert _map_problems(text, MODULES + ["doctor.newjob"]) == [
        "labkit.doctor.newjob has no entry in docs/labkit.md: add a '- `labkit.doctor.newjob` — its job' line to the "
        "part of the map for its audience"]
    gone = text.replace("- `labkit.describe`", "- `labkit.descriptions`")
    assert sorted(_map_problems(gone, MODULES))[0].startswith("docs/labkit.md has an entry for labkit.descriptions")
    twice = text + "\n- `labkit.ops` — again\n"
    assert _map_problems(twice, MODULES) == ["docs/labkit.md has 2 entries for labkit.ops: keep one"]


def test_the_map_walks_the_widget_path_first_then_the_audiences_in_order():
    headings = re.findall(r"^## (.+)$", MAP.read_text(), re.M)
    order = ["The widget path", "The teaching layer", "The engine", "The checks", "The doctor", "The workshop tools"]
    found = [part for heading in headings for part in order if heading.startswith(part)]
    assert found == order, f"docs/labkit.md's sections are {headings}; the map wants {order}, in that order"
    walk = MAP.read_text().split("## The widget path")[1].split("\n## ")[0]
    files = re.findall(r"^\d+\. `(labkit/[\w/]+\.py)`", walk, re.M)
    assert files == ["labkit/widgets.py", "labkit/experiments.py", "labkit/ops.py", "labkit/stages.py",
                     "labkit/views.py", "labkit/render.py"] and all((ROOT / f).is_file() for f in files), files


# --- one check vocabulary: facts travel as fields (issue 73) -----------------------------------------------------

# How labkit used to read a fact back from a finding's or a check's words: the graph-break count written into a
# check's name and parsed back, audit's notes joined into one string and split on "; ", a phrase searched for in the
# notes, torch's "Could not run" matched in a finding's problem, and audit's private log filter borrowed.
READ_BACK = {
    "a count parsed from a check's name": re.compile(r"BROKE_IN|[\"']broke_in="),
    "audit's notes split back out of one string": re.compile(r"cannot_see\.split|\.split\([\"']; [\"']\)"),
    "a phrase searched for in the notes": re.compile(r"GRAPH_BREAK (?:not )?in "),
    "torch's no-kernel message matched outside labkit.errors": re.compile(r"Could not run '"),
    "audit's private names borrowed": re.compile(r"auditing\._[a-z]"),
    "a check's failure read from its problem": re.compile(r"problem\.startswith\("),
}


def _read_back(text: str, where: str) -> list[str]:
    return [f"{where}: {what}" for what, pattern in READ_BACK.items()
            if pattern.search(text) and not (what.startswith("torch's no-kernel") and where == "errors")]


def test_no_code_reads_a_fact_back_from_a_findings_words():
    """A finding's facts are fields (labkit.findings.Finding: raised, broke_in, could_not_run; AuditReport.notes,
    broke_in, missing_backend): no module of labkit's, nor the pytest plugin, parses a finding's text for one."""
    found = [problem for name in MODULES for problem in _read_back(_path(name).read_text(), name)]
    found += _read_back((ROOT / "labkit_pytest.py").read_text(), "labkit_pytest")
    assert found == []


def test_the_read_back_check_sees_each_old_way():
    old = ('int(f.check.partition(BROKE_IN)[2])', 'audited.cannot_see.split("; ")', 'auditing.GRAPH_BREAK not in n',
           'NO_KERNEL = re.compile(r"Could not run \'[^\']*\'")', 'with auditing._torch_logs_held_back():',
           'f.problem.startswith("the check could not run")')
    assert [len(_read_back(line, "doctor.examining")) for line in old] == [1] * len(old)


def test_audit_and_the_doctor_share_one_finding_type():
    from labkit import doctor, findings

    assert auditing.Finding is doctor.Finding is findings.Finding
    assert not hasattr(auditing, "kind_of"), "a finding's kind is its .kind"


def test_a_subpackages_modules_are_at_most_300_lines_and_never_import_their_package():
    """labkit/auditing/ and labkit/doctor/ are split by job: no module of theirs over 300 lines, and none imports its
    own package's __init__ (the names it gathers sit above every module of the package)."""
    long = [f"{name}: {len(_path(name).read_text().splitlines())} lines" for name in MODULES
            if "." in name and name.split(".")[0] == "auditing" and len(_path(name).read_text().splitlines()) > 300]
    assert long == [], "split the module by job"
    up = [f"{name} imports {name.split('.')[0]}" for name in MODULES if "." in name
          and name.split(".")[0] in _labkit_imports(name)]
    assert up == []


def test_the_doctors_help_lists_the_registrys_checks_a_new_one_too(monkeypatch):
    """`python -m labkit doctor --help` says what each check looks at, from CHECKS (it used to be written by hand and
    named neither the declaration nor the memory check)."""
    from labkit.doctor.command import _parser

    def words(text):
        return " ".join(text.split())

    assert all(check.what for check in auditing.registry.CHECKS), "each check says what it looks at, for --help"
    shown = words(_parser().format_help())
    assert all(words(f"{check.kind}: {check.what}") in shown for check in auditing.registry.CHECKS), shown
    extra = auditing.Check("extra", lambda overload, call: [], "https://example.org", None, what="a new look")
    monkeypatch.setattr(auditing.registry, "CHECKS", (*auditing.registry.CHECKS, extra))
    assert "extra: a new look" in words(_parser().format_help())


def test_no_module_is_over_600_lines():
    """Issues 76 and 77: one job per module, the private-torch adapter a package by subject."""
    long = {name: n for name in MODULES if (n := len(_path(name).read_text().splitlines())) > 600}
    assert not long, f"labkit modules over 600 lines: {long}; split each by job"
