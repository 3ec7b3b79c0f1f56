"""labkit doctor (the package labkit/doctor/, its report written by labkit/doctor/formats.py, the command line
labkit/doctor/command.py and the pytest plugin labkit_pytest.py) on small ops these tests declare: a correct one,
each kind of wrong one, several overloads, and the hostile inputs a project can give it, each answered in one
sentence.

Each module is written to a temporary folder and examined from there, as a project's would be. The slow proof on
a real package is tests/labkit/test_doctor_third_party.py.
"""

import contextlib
import importlib.metadata
import json
import os
import pathlib
import re
import sys
import textwrap
import xml.etree.ElementTree as ElementTree

import pytest
import torch

import labkit
from labkit import doctor
from labkit.doctor import formats
from labkit.doctor.command import main

pytest_plugins = ("pytester",)

# pytester puts sys.modules back after each in-process run: a torch module first imported inside one (the doctor's
# first compile, when that test is the first of its worker to compile) is imported again by the next compile, and
# Dynamo refuses to register its backends twice ("duplicate name: dynamo_minifier_backend": every later compile in
# that worker fails). Imported here, before any test, they are in every snapshot.
torch._dynamo.list_backends(exclude_tags=())
torch.compile(lambda x: x + 1, backend="inductor")(torch.ones(2))

OPS = '''
import torch

@torch.library.custom_op("t::doc_good", mutates_args=("out",))
def good(x: torch.Tensor, alpha: float, out: torch.Tensor) -> None:
    out.copy_(x * alpha)

@torch.library.custom_op("t::doc_lies", mutates_args=())
def lies(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)

@torch.library.custom_op("t::doc_listy", mutates_args=())
def listy(xs: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(xs).sum(0)

listy.register_fake(lambda xs: torch.empty_like(xs[0]))

X, OUT = torch.arange(4.0), torch.zeros(4)
SAMPLES = {good: [((X, 2.0, OUT), {})], "t::doc_lies": lambda: [((X, OUT), {})]}
'''


def _module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def _run(capsys, *argv):
    status = main(["doctor", *argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def library_ops():
    """Two overloads of one Library.define op (no custom_op), freed afterwards (conftest frees custom_op's only)."""
    lib = torch.library.Library("t", "FRAGMENT")
    lib.define("doc_twice(Tensor x) -> Tensor")
    lib.define("doc_twice.scaled(Tensor x, float s) -> Tensor")
    lib.impl("doc_twice", lambda x: x * 2, "CompositeExplicitAutograd")
    lib.impl("doc_twice.scaled", lambda x, s: x * s, "CompositeExplicitAutograd")
    torch.library.register_fake("t::doc_twice", lambda x: torch.empty_like(x), lib=lib)
    # a fake that forgets its input's dtype and device: opcheck passes it on float32 CPU samples
    torch.library.register_fake("t::doc_twice.scaled", lambda x, s: torch.empty(x.shape), lib=lib)
    yield torch.ops.t.doc_twice
    lib._destroy()


def test_a_module_with_a_correct_a_wrong_and_an_unsampled_op_gets_a_table_json_junit_and_exit_1(tmp_path, capsys):
    """...and leaves the project's sample tensors, and the caller's random state, as they were."""
    path = _module(tmp_path, "doc_ops", OPS)
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    random_state = torch.random.get_rng_state()
    status, out, err = _run(capsys, path, "--json", str(json_path), "--junit-xml", str(junit_path))
    assert status == 1, out + err
    module = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == path)
    assert torch.equal(module.OUT, torch.zeros(4)) and torch.equal(module.X, torch.arange(4.0)), \
        "the project's samples are only ever copied"
    assert torch.equal(torch.random.get_rng_state(), random_state), "the caller's random state is left alone"
    report = json.loads(json_path.read_text())
    verdicts = {r["op"]: r["verdict"] for r in report["results"]}
    assert verdicts == {"t::doc_good.default": "pass", "t::doc_lies.default": "fail", "t::doc_listy.default": "skip"}
    lies = next(r for r in report["results"] if r["op"] == "t::doc_lies.default")
    assert "declaration" in {f["check"] for f in lies["findings"]}
    schema = next(f for f in lies["findings"] if f["check"] == "opcheck:test_schema")
    assert "OpCheckError" in schema["detail"] and schema["docs"].startswith("https://docs.pytorch.org/")
    assert lies["samples"] == [{"source": "SAMPLES", "inputs": "float32[4], float32[4]"}]
    good = next(r for r in report["results"] if r["op"] == "t::doc_good.default")
    assert {"opcheck", "compile", "aliasing", "fullgraph", "fake"} <= set(good["checks_run"])
    assert "cache" not in good["checks_run"], "nothing about a Python-defined op's cache key can fail: no check"
    assert any("a note, not a check" in n for n in good["notes"]), good["notes"]
    assert report["environment"]["torch"] == torch.__version__ and report["environment"]["labkit"]
    listy = next(r for r in report["results"] if r["op"] == "t::doc_listy.default")
    assert "add SAMPLES['t::doc_listy']" in listy["notes"][0], "an op without samples is skipped, saying what to add"
    # the terminal: a row per overload, torch's message shortened with a pointer to the whole
    assert "t::doc_good.default" in out and "FAIL" in out and "--json or --junit-xml" in out
    assert "fix: add 'out' to mutates_args" in out
    cases = ElementTree.parse(junit_path).getroot().findall("testcase")
    assert {c.get("name"): [child.tag for child in c if child.tag != "system-out"] for c in cases} == {
        "t::doc_good.default": [], "t::doc_lies.default": ["failure"], "t::doc_listy.default": ["skipped"]}
    assert "Inductor" in err or labkit.warmup.status().startswith("done"), "the warm-up says so, once"


def test_each_overload_is_examined_apart_and_a_fake_that_ignores_dtype_and_device_is_named(library_ops):
    report = doctor.check(library_ops)
    assert [r.op for r in report.results] == ["t::doc_twice.default", "t::doc_twice.scaled"]
    assert all(r.samples[0].source == "generated from the schema" for r in report.results)
    assert report.result("t::doc_twice").verdict == "pass"
    scaled = report.result("t::doc_twice.scaled")
    assert {f.check for f in scaled.findings} == {"fake:device", "fake:dtype"}, scaled.findings
    assert "generated from the schema" in report.table()
    assert report.exit_status == 1


def test_a_kernel_that_raises_and_samples_of_the_wrong_shape_are_findings_not_crashes():
    @torch.library.custom_op("t::doc_raises", mutates_args=())
    def raises(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("the kernel is broken")

    raises.register_fake(lambda x: torch.empty_like(x))

    @torch.library.custom_op("t::doc_add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y

    add.register_fake(lambda x, y: torch.empty_like(x))
    report = doctor.check([raises, add], samples={raises: [((torch.ones(2),), {})],
                                                  add: [((torch.ones(2), torch.ones(3)), {})]})
    for op in ("t::doc_raises", "t::doc_add"):
        result = report.result(op)
        assert result.verdict == "fail" and result.findings[0].check == "eager", result.findings
    assert "the kernel is broken" in report.result("t::doc_raises").findings[0].problem


def test_malformed_samples_are_a_finding_that_says_the_form(capsys):
    @torch.library.custom_op("t::doc_plain", mutates_args=())
    def plain(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    plain.register_fake(lambda x: torch.empty_like(x))
    for bad in ([torch.ones(2)], "x", lambda: 1 / 0):
        result = doctor.check(plain, samples={"t::doc_plain": bad}).results[0]
        assert result.verdict == "fail" and result.findings[0].check == "samples", result
        assert "(args, kwargs)" in result.findings[0].fix


def test_a_sample_whose_args_lack_the_comma_of_a_one_tuple_is_named_so():
    """((x), {}) is a pair whose args are a tensor: the finding says so and how to write one argument, never that
    the pair is no pair (what it said before)."""
    @torch.library.custom_op("t::doc_comma", mutates_args=())
    def plain(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    plain.register_fake(lambda x: torch.empty_like(x))
    (finding,) = doctor.check(plain, samples={plain: [((torch.ones(2)), {})]}).results[0].findings
    assert finding.problem.startswith("SAMPLES['t::doc_comma'][0]'s args are a tensor"), finding.problem
    assert "(x,), with a comma" in finding.problem and "not an (args, kwargs) pair" not in finding.problem


def test_a_data_dependent_int_result_is_named_as_a_graph_break():
    @torch.library.custom_op("t::doc_count", mutates_args=())
    def count(x: torch.Tensor) -> int:
        return int((x > 0).sum())

    count.register_fake(lambda x: torch.library.get_ctx().new_dynamic_size())
    result = doctor.check(count, samples={count: [((torch.randn(6),), {})]}).results[0]
    assert [f.check for f in result.findings] == ["fullgraph"], result.findings
    assert "output shape depends on input Tensor data" in result.findings[0].problem


def _named_settings(finding) -> set[str]:
    """Every capture setting the finding's fix tells the reader to turn on (``torch._dynamo.config.X = True``)."""
    return set(re.findall(r"torch\._dynamo\.config\.(capture_\w+) = True", finding.fix))


def _captures(fn, x, qualname: str, fullgraph: bool = False, **settings) -> tuple[int, bool]:
    """Compile ``fn`` under ``settings`` (torch._dynamo.config): its graph breaks, and whether the op is in a graph
    (with ``fullgraph=True``: whether it compiled, with the op in its one graph)."""
    name = qualname.replace("::", ".")
    with torch._dynamo.config.patch(**settings):
        if fullgraph:
            run = labkit.compile_and_compare(fn, x, backend="eager", fullgraph=True)
            return (0 if run.error is None else 1), bool(run.error is None and run.fate(qualname)["dynamo"])
        explained = torch._dynamo.explain(fn)(x)
    return explained.graph_break_count, any(name in str(n.target) for g in explained.graphs for n in g.graph.nodes)


def _use(result_kind):
    """A program that uses the op's result, with work before it (a break at a frame's first op makes no graph)."""
    return {"int": lambda op: (lambda x: (x + 1) * op(x + 1)),
            "size": lambda op: (lambda x: op(x + 1).sum() + x.sum())}[result_kind]


def _settings_hold(finding, fn, qualname):
    """Every capture setting the finding mentions, turned on: the op in the graph with no break under
    fullgraph=False, and compiled in one graph under fullgraph=True."""
    named = _named_settings(finding)
    assert named, f"the finding names a setting to turn on: {finding.fix}"
    for setting in named:
        assert _captures(fn, torch.linspace(-1, 1, 6), qualname, **{setting: True}) == (0, True), \
            f"{setting} = True, as the doctor says, keeps {qualname} in the graph under fullgraph=False"
        assert _captures(fn, torch.linspace(-1, 1, 6), qualname, fullgraph=True, **{setting: True}) == (0, True), \
            f"{setting} = True and fullgraph=True: {qualname} in one graph"


@pytest.mark.parametrize("result_kind", ["int", "size"])
def test_the_capture_setting_a_graph_break_finding_names_captures_the_op(result_kind):
    """The doctor's fix for a data-dependent -> int op and for a data-dependent output size: the setting it names,
    turned on, keeps the op in the graph (on 2.13, capture_scalar_outputs alone leaves the -> int op out)."""
    qualname = f"t::doc_dd_{result_kind}"
    if result_kind == "int":
        @torch.library.custom_op(qualname, mutates_args=())
        def op(x: torch.Tensor) -> int:
            return int((x > 0).sum())

        op.register_fake(lambda x: torch.library.get_ctx().new_dynamic_size())
    else:
        @torch.library.custom_op(qualname, mutates_args=())
        def op(x: torch.Tensor) -> torch.Tensor:
            return x[x > 0].clone()

        op.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))
    (finding,) = [f for f in doctor.check(op, samples={op: [((torch.randn(6),), {})]}).results[0].findings
                  if f.check == "fullgraph"]
    fn = _use(result_kind)(op)
    assert _captures(fn, torch.linspace(-1, 1, 6), qualname) == (1, False), "by default the op breaks the graph"
    _settings_hold(finding, fn, qualname)
    assert "or use fullgraph=True" in finding.fix, finding.fix
    assert _captures(fn, torch.linspace(-1, 1, 6), qualname, fullgraph=True) == (0, True), \
        "fullgraph=True alone, the other fix it gives: the op in one graph"


@pytest.mark.parametrize("result_kind", ["int", "size"])
def test_the_fix_for_an_op_without_a_fake_kernel_works_as_written(result_kind):
    """A schema-text op with a CPU kernel only: fullgraph=True refuses it and fullgraph=False breaks at it (as the
    finding says); the fix, applied (a fake returning new_dynamic_size(), then the setting it names), captures it."""
    lib = torch.library.Library("t", "FRAGMENT")
    try:
        returns = "SymInt" if result_kind == "int" else "Tensor"
        lib.define(f"doc_nofake_{result_kind}(Tensor x) -> {returns}")
        kernel = (lambda x: int((x > 0).sum())) if result_kind == "int" else (lambda x: x[x > 0].clone())
        lib.impl(f"doc_nofake_{result_kind}", kernel, "CPU")
        qualname, op = f"t::doc_nofake_{result_kind}", getattr(torch.ops.t, f"doc_nofake_{result_kind}").default
        (finding,) = [f for f in doctor.check(op, samples={qualname: [((torch.randn(6),), {})]}).results[0].findings
                      if f.check == "fullgraph"]
        assert "register_fake" in finding.fix and "new_dynamic_size" in finding.fix, finding.fix
        fn = _use(result_kind)(op)
        assert "splits the program at the op" in finding.why, finding.why
        breaks, captured = _captures(fn, torch.linspace(-1, 1, 6), qualname)
        assert breaks >= 1 and not captured, "fullgraph=False breaks at the op and has it in no graph"
        dynamic = (lambda x: torch.library.get_ctx().new_dynamic_size()) if result_kind == "int" else \
            (lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))
        torch.library.register_fake(qualname, dynamic, lib=lib)
        _settings_hold(finding, fn, qualname)
    finally:
        lib._destroy()


def test_capture_scalar_outputs_is_the_setting_for_item_and_not_for_a_data_dependent_op():
    """What docs/doctor.md says of the setting the doctor does not name: it captures Tensor.item() in the compiled
    code, and capture_dynamic_output_shape_ops does not; for a -> int op and for an op with a data-dependent
    output size it is the other way round."""
    @torch.library.custom_op("t::doc_dd_count", mutates_args=())
    def count(x: torch.Tensor) -> int:
        return int((x > 0).sum())

    count.register_fake(lambda x: torch.library.get_ctx().new_dynamic_size())

    @torch.library.custom_op("t::doc_dd_positives", mutates_args=())
    def positives(x: torch.Tensor) -> torch.Tensor:
        return x[x > 0].clone()

    positives.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))
    x = torch.linspace(-1, 1, 6)

    def item(x):
        return (x + 1) * (x + 1).sum().item()

    def breaks(fn, **settings):
        with torch._dynamo.config.patch(**settings):
            return torch._dynamo.explain(fn)(x).graph_break_count

    assert breaks(item) == 1 and breaks(item, capture_scalar_outputs=True) == 0
    assert breaks(item, capture_dynamic_output_shape_ops=True) == 1
    int_op = _use("int")(count)
    assert breaks(int_op, capture_scalar_outputs=True) == 1
    assert breaks(int_op, capture_dynamic_output_shape_ops=True) == 0
    size_op = _use("size")(positives)
    assert breaks(size_op, capture_scalar_outputs=True) == 1
    assert breaks(size_op, capture_dynamic_output_shape_ops=True) == 0


def test_assert_clean_fails_a_test_with_every_finding_in_full():
    lies = labkit.declare(name="t::doc_declared_lie", writes=("x",), returns="none")
    with pytest.raises(AssertionError) as failed:
        doctor.assert_clean(lies, [((torch.randn(3),), {})])
    text = str(failed.value)
    assert text.startswith("labkit doctor found problems in 1 op overload: t::doc_declared_lie.default")
    assert "torch's message:" in text and "Argument x is not defined as mutable" in text


@pytest.mark.parametrize("source,sentence", [
    (None, "there is no module 't_doc_nowhere'"),
    ("def broken(:\n", "a syntax error in"),
    ("import torch\nX = 1\n", "registered no custom operator"),
    ("import t_doc_not_installed\n", "it imports 't_doc_not_installed', which is not installed"),
    ("raise RuntimeError('no GPU here')\n", "raised RuntimeError"),
])
def test_a_module_that_cannot_be_examined_is_exit_2_in_one_sentence(tmp_path, capsys, monkeypatch, source, sentence):
    monkeypatch.syspath_prepend(str(tmp_path))
    if source is not None:
        _module(tmp_path, "t_doc_bad", source)
    status, out, err = _run(capsys, "t_doc_nowhere" if source is None else "t_doc_bad")
    sys.modules.pop("t_doc_bad", None)
    assert status == 2 and not out
    assert sentence in err and "Traceback" not in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv,sentence", [
    ([], "name a module"), (["--no-such-option"], "unrecognized arguments"),
    (["--namespace", "t_doc_empty_ns"], "no operator is registered in namespace"),
    (["--namespace", "aten"], "aten is one of torch's own namespaces"),
])
def test_bad_usage_is_exit_2_in_one_sentence(capsys, argv, sentence):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and sentence in err and "Traceback" not in err, err


def test_the_console_script_and_the_pytest_plugin_are_installed_entry_points():
    scripts = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")}
    plugins = {e.name: e.value for e in importlib.metadata.entry_points(group="pytest11")}
    assert scripts.get("labkit-doctor") == "labkit.__main__:doctor_main", "pip install -e . again (./lab does)"
    assert plugins.get("labkit_doctor") == "labkit_pytest"


def test_the_pytest_plugin_loads_without_importing_torch_or_labkit():
    """Every pytest run in an environment with labkit installed loads the plugin: it must cost nothing there."""
    from fresh_python import run_python

    done = run_python("import sys, labkit_pytest; print(sorted(m for m in ('torch', 'labkit') if m in sys.modules))",
                      timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout


def test_pytest_with_labkit_doctor_makes_one_item_per_overload(pytester):
    pytester.makepyfile(doc_plugin_ops=OPS.replace("doc_", "doc_plugin_"))
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess("--labkit-doctor", "doc_plugin_ops", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*labkit doctor found problems in 1 op overload: t::doc_plugin_lies.default*",
                                 "*fix: add 'out' to mutates_args*", "*add SAMPLES?'t::doc_plugin_listy'?*"])
    sys.modules.pop("doc_plugin_ops", None)


def test_the_report_shortens_torchs_message_on_the_terminal_only():
    finding = doctor.Finding("compile", "x" * 1000, "why", "fix", docs="https://docs.pytorch.org/", detail="y" * 5000)
    result = doctor.OpResult("t::a.default", "t::a(Tensor x) -> Tensor", "m", "fail", [finding],
                             [doctor.Sample((torch.ones(2, dtype=torch.int8), "nf4", None), {"out": torch.ones(1)})],
                             ["compile"], [], 0.1)
    report = doctor.DoctorReport(["m"], doctor.environment(), [result], [], None, 0.1)
    assert len(max(report.table().splitlines(), key=len)) < 300
    assert "y" * 5000 in formats.to_json(report) and "y" * 5000 in formats.junit_xml(report)
    assert "int8[2], 'nf4', None, out=float32[1]" in report.table()


def test_a_triton_op_is_found_and_examined_like_any_custom_op(tmp_path, capsys):
    """torch.library.triton_op registers through custom_op's machinery; it needs no Triton to register, and its
    body here is plain torch, so this CPU machine can show that the doctor finds it by what the import added."""
    path = _module(tmp_path, "doc_triton_ops", '''
        import torch

        @torch.library.triton_op("t::doc_tri", mutates_args=())
        def tri(x: torch.Tensor) -> torch.Tensor:
            return x * 2
    ''')
    status, out, err = _run(capsys, path)
    assert "t::doc_tri.default" in out, out + err
    assert status == 0, out + err


LATE = '''
import torch

lib = torch.library.Library("t", "FRAGMENT")
lib.define("{name}(Tensor x) -> Tensor")
lib.impl("{name}", lambda x: x * 2, "CompositeExplicitAutograd")
torch.library.register_fake("t::{name}", lambda x: torch.empty_like(x), lib=lib)
SAMPLES = {{}}
'''


def test_ops_a_samples_module_imported_first_are_still_found(tmp_path, capsys, monkeypatch):
    """--samples modules are imported before the ops' module: the ops they register on the way are the project's."""
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "doc_late", LATE.format(name="doc_late"))
    _module(tmp_path, "doc_late_samples", "import torch\nimport doc_late\n"
            "SAMPLES = {'t::doc_late': [((torch.randn(3),), {})]}\n")
    try:
        status, out, err = _run(capsys, "doc_late", "--samples", "doc_late_samples", "-q")
        assert status == 0 and "t::doc_late.default" in out, out + err
    finally:
        sys.modules.pop("doc_late_samples", None)
        sys.modules.pop("doc_late").lib._destroy()


def test_a_module_imported_before_the_doctor_looked_is_read_by_the_library_it_holds(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "doc_early", LATE.format(name="doc_early"))
    import doc_early  # noqa: F401 - as a project's test, or conftest, imports it before the doctor runs

    try:
        targets, _ = doctor.discover(["doc_early"])
        assert [t.name for t in targets] == ["t::doc_early.default"]
        _module(tmp_path, "doc_early_empty", "X = 1\n")
        import doc_early_empty  # noqa: F401

        with pytest.raises(doctor.UsageError, match="was imported before the doctor looked"):
            doctor.discover(["doc_early_empty"])
    finally:
        sys.modules.pop("doc_early_empty", None)
        sys.modules.pop("doc_early").lib._destroy()


def test_the_pytest_plugin_finds_ops_that_a_test_file_imports(pytester):
    """Collection imports the project's tests, and they its ops: the plugin looks before that."""
    pytester.makepyfile(doc_plugin_late=LATE.format(name="doc_plugin_late"))   # inputs generated from the schema
    pytester.makepyfile(test_uses="import doc_plugin_late\n\ndef test_it():\n    assert doc_plugin_late.lib\n")
    pytester.syspathinsert()
    try:
        result = pytester.runpytest_inprocess("--labkit-doctor", "doc_plugin_late", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=2)
    finally:
        module = sys.modules.pop("doc_plugin_late", None)
        if module is not None:
            module.lib._destroy()


SKIPPY = '''
import torch

@torch.library.custom_op("t::{p}_listy", mutates_args=())
def listy(xs: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(xs).sum(0)

listy.register_fake(lambda xs: torch.empty_like(xs[0]))
'''


def test_a_samples_key_that_names_no_op_is_exit_2_naming_the_key_and_the_ops(tmp_path, capsys):
    path = _module(tmp_path, "doc_typo", SKIPPY.format(p="doc_typo") + "SAMPLES = {'t::doc_typoo': []}\n")
    status, out, err = _run(capsys, path, "-q")
    assert status == 2 and not out, out + err
    assert "'t::doc_typoo'" in err and "t::doc_typo_listy.default" in err and err.count("\n") == 1, err


def test_a_run_where_every_op_skipped_is_exit_2_and_strict_fails_a_skip(tmp_path, capsys):
    path = _module(tmp_path, "doc_skippy", SKIPPY.format(p="doc_skippy"))
    status, out, err = _run(capsys, path, "-q", "--json", str(tmp_path / "skippy.json"))
    assert status == 2 and "nothing was checked" in err and "t::doc_skippy_listy.default" in err, out + err
    assert json.loads((tmp_path / "skippy.json").read_text())["exit_status"] == 2, "the JSON says what the run did"
    both = _module(tmp_path, "doc_half", SKIPPY.format(p="doc_half") + '''
@torch.library.custom_op("t::doc_half_ok", mutates_args=())
def ok(x: torch.Tensor) -> torch.Tensor:
    return x * 2

ok.register_fake(lambda x: torch.empty_like(x))
''')
    assert _run(capsys, both, "-q")[0] == 0, "a skip beside a checked op is no failure by default"
    status, out, err = _run(capsys, both, "-q", "--strict")
    assert status == 1 and "--strict" in err and "t::doc_half_listy.default" in err, out + err


def test_a_fake_kernel_taking_a_tensor_list_is_tried_on_a_second_dtype():
    @torch.library.custom_op("t::doc_stack_sum", mutates_args=())
    def stack_sum(xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(xs).sum(0)

    stack_sum.register_fake(lambda xs: xs[0].new_empty(xs[0].shape, dtype=torch.float32))   # forgets the dtype
    result = doctor.check(stack_sum, samples={stack_sum: [(([torch.randn(3), torch.randn(3)],), {})]}).results[0]
    assert [f.check for f in result.findings] == ["fake:dtype"], (result.findings, result.notes)
    assert not any("no floating-point input" in n for n in result.notes)


def test_an_op_without_samples_or_a_kernel_for_this_machine_is_skipped_saying_so():
    """A CUDA-only op on a CPU runner: its SAMPLES entry may be [] (or a function returning []), and an eager call
    that finds no kernel for the CPU backend is this machine's limit, not the op's defect."""
    lib = torch.library.Library("t", "FRAGMENT")
    try:
        lib.define("doc_gpu_only(Tensor x) -> Tensor")
        lib.impl("doc_gpu_only", lambda x: x * 2, "CUDA")
        torch.library.register_fake("t::doc_gpu_only", lambda x: torch.empty_like(x), lib=lib)
        op = torch.ops.t.doc_gpu_only
        for entry in ([], lambda: []):
            result = doctor.check(op, samples={op: entry}).results[0]
            assert result.verdict == "skip" and not result.findings, result
            assert "no samples for this machine" in result.notes[0]
        result = doctor.check(op, samples={op: [((torch.ones(2),), {})]}).results[0]
        assert result.verdict == "skip" and not result.findings, result.findings
        assert "no kernel for the CPU backend" in result.notes[0], result.notes
    finally:
        lib._destroy()


def test_fixes_are_said_in_the_terms_the_op_was_declared_in():
    """A schema-text op (Library.define) is fixed in its schema, not in mutates_args; an out= overload returning
    an alias of out gets the fix torch's message asks for; the first finding is never told of findings above."""
    from labkit import auditing

    lib = torch.library.Library("t", "FRAGMENT")
    try:
        lib.define("doc_writes(Tensor x) -> ()")
        lib.impl("doc_writes", lambda x: None if x.mul_(2) is None else None, "CompositeExplicitAutograd")
        torch.library.register_fake("t::doc_writes", lambda x: None, lib=lib)
        lib.define("doc_outy.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
        lib.impl("doc_outy.out", lambda x, *, out: out.copy_(x * 2), "CompositeExplicitAutograd")
        torch.library.register_fake("t::doc_outy.out", lambda x, *, out: out, lib=lib)
        writes = doctor.check(torch.ops.t.doc_writes, samples={"t::doc_writes": [((torch.randn(3),), {})]})
        fixes = {f.check: f.fix for f in writes.results[0].findings}
        assert fixes["declaration"] == fixes["opcheck:test_schema"] == "mark it written in the schema: Tensor(a!) x"
        outy = doctor.check(torch.ops.t.doc_outy.out,
                            samples={"t::doc_outy.out": [((torch.randn(3),), {"out": torch.zeros(3)})]})
        findings = outy.results[0].findings
        assert findings and all(f.fix == "return () from the out= overload, or return a new tensor"
                                for f in findings if "alias annotations" in f.problem), findings
        assert not any("mutates_args" in f.fix or f.fix.startswith("fix the findings above") for f in findings)
    finally:
        lib._destroy()
    first = auditing.Finding("opcheck:test_aot_dispatch_dynamic", "p", "w", auditing.ABOVE_FIRST + "compare them")
    assert [f.fix for f in auditing.advice._first_not_told_of_above([first, first])] == [
        "Compare them", auditing.ABOVE_FIRST + "compare them"]


def test_a_py_path_is_imported_under_a_private_name_so_it_shadows_no_module(tmp_path, capsys):
    """A project's types.py, given as a path, must not become sys.modules['types'] for everything after it."""
    import types

    path = _module(tmp_path, "types", OPS.replace("doc_", "doc_types_"))
    status, out, err = _run(capsys, path, "-q", "--op", "t::doc_types_good")
    assert status == 0 and "t::doc_types_good.default" in out and path in out, out + err
    assert sys.modules["types"] is types, "the standard library's types is still the one imported"
    assert _run(capsys, path, "-q", "--op", "t::doc_types_good")[0] == 0, "a second run reuses the module"


def test_the_readme_says_the_doctor_agrees_with_opcheck_on_its_tests_not_on_every_overload():
    """It flags four overloads opcheck passes: what it agrees on is each opcheck test's verdict."""
    from repo import ROOT

    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "agrees with `opcheck` on every opcheck test" in readme
    assert "agrees with `opcheck` on every overload" not in readme


def test_an_op_past_timeout_per_op_ends_the_run_with_exit_2_naming_it(tmp_path):
    """A hung kernel must not hang CI silently: its name and the stacks, exit status 2 (in a child: it exits)."""
    import subprocess

    from repo import ROOT

    path = _module(tmp_path, "doc_hangs", '''
        import time
        import torch

        @torch.library.custom_op("t::doc_hangs", mutates_args=())
        def hangs(x: torch.Tensor) -> torch.Tensor:
            time.sleep(600)
            return x.clone()

        hangs.register_fake(lambda x: torch.empty_like(x))
    ''')
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", path, "--timeout-per-op", "2", "-q"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "t::doc_hangs.default ran past --timeout-per-op 2 s" in done.stderr, done.stderr[-3000:]
    assert "time.sleep" in done.stderr or "in hangs" in done.stderr, "the stacks show where it hung"


def test_a_module_given_twice_or_by_two_names_is_read_once(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _module(tmp_path, "doc_twice_given", SKIPPY.format(p="doc_twice_given"))
    try:
        targets, imported = doctor.discover(["doc_twice_given", "doc_twice_given", path])
        assert len(imported) == 1 and [t.name for t in targets] == ["t::doc_twice_given_listy.default"]
        report = doctor.run(["doc_twice_given", "doc_twice_given"], say=None)
        assert report.targets == ["doc_twice_given"], report.targets
    finally:
        sys.modules.pop("doc_twice_given", None)


def test_the_pytest_plugin_finds_ops_a_conftest_imports_and_its_module_does_not_hold(pytester):
    """The snapshot is taken before conftest files load: an op defined by torch.library.define, whose module keeps
    no handle on it, is still told apart from what was there before."""
    pytester.makepyfile(doc_plugin_hidden='''
        import torch

        torch.library.define("t::doc_plugin_hidden", "(Tensor x) -> Tensor")
        torch.library.impl("t::doc_plugin_hidden", "CompositeExplicitAutograd")(lambda x: x * 2)
        torch.library.register_fake("t::doc_plugin_hidden")(lambda x: torch.empty_like(x))
    ''')
    pytester.makeconftest("import doc_plugin_hidden  # noqa: F401\n")
    pytester.syspathinsert()
    try:
        # collection only: finding it is the point (pytester's in-process runs unload the torch modules they
        # import, and compiling again in a later run can then trip on torch's re-imported registries)
        result = pytester.runpytest_inprocess("--labkit-doctor", "doc_plugin_hidden", "-p", "no:cacheprovider",
                                              "--collect-only", "-q")
        assert result.ret == 0, result.stdout.str() + result.stderr.str()
        result.stdout.fnmatch_lines(["*labkit-doctor::doc_plugin_hidden::t::doc_plugin_hidden.default*"])
    finally:
        sys.modules.pop("doc_plugin_hidden", None)


def test_the_snapshot_already_holds_the_ops_torchs_compiler_registers_when_first_imported():
    """torch registers ops of its own when its compiler modules are first imported (c10d_functional::* on 2.13.0,
    mempool::begin and inductor::quack_symmetric_mm on 2.15.0): taken after those imports, the snapshot holds them,
    so a project whose import pulls in torch's compiler is not credited with torch's ops. In a fresh Python."""
    from fresh_python import run_python

    code = ("import labkit, sys; from labkit import doctor, _torch as internals\n"
            "assert 'torch._inductor.compile_fx' not in sys.modules, 'labkit alone does not import the compiler'\n"
            "before = doctor.op_snapshot()\n"
            "import torch._dynamo, torch._inductor.compile_fx\n"
            "print(sorted(internals.all_op_names() - before))")
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout[:500]


# --- the doctor never destroys or loses anything: report paths, option values, any console ----------------------

MARKS_ITS_IMPORT = '''
import pathlib, torch
pathlib.Path(__file__).with_suffix(".imported").write_text("imported")

@torch.library.custom_op("t::doc_marked", mutates_args=())
def marked(x: torch.Tensor) -> torch.Tensor:
    return x * 2

marked.register_fake(lambda x: torch.empty_like(x))
SAMPLES = {marked: [((torch.arange(3.0),), {})]}
'''


def _refused_before_import(capsys, tmp_path, *argv) -> str:
    """Run the doctor on a module that marks its import; it must refuse (exit 2) in one line, importing nothing."""
    path = _module(tmp_path, "doc_marked", MARKS_ITS_IMPORT)
    status, out, err = _run(capsys, path, *argv)
    assert status == 2, (status, out, err)
    assert not (tmp_path / "doc_marked.imported").exists(), "the usage error came after the module was imported"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_report_path_never_overwrites_a_module_it_was_meant_to_examine(tmp_path, capsys):
    """--json used to take an optional path: `--json a_ops.py b_ops.py` wrote the report over a_ops.py."""
    first = _module(tmp_path, "doc_a_ops", MARKS_ITS_IMPORT.replace("doc_marked", "doc_a_marked"))
    before = pathlib.Path(first).read_bytes()
    err = _refused_before_import(capsys, tmp_path, "--json", first)
    assert pathlib.Path(first).read_bytes() == before, "a .py file is never a report path"
    assert "never written over a .py file" in err


@pytest.mark.parametrize("option", ["--json", "--junit-xml"])
def test_a_report_path_is_checked_before_anything_runs(tmp_path, capsys, option):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert "not an earlier labkit doctor report" in _refused_before_import(capsys, tmp_path, option, str(notes))
    assert notes.read_text() == "my notes\n", "an existing file that is not a report is left alone"
    missing = tmp_path / "no_such_folder" / "report.out"
    assert "does not exist" in _refused_before_import(capsys, tmp_path, option, str(missing))
    assert "is a folder" in _refused_before_import(capsys, tmp_path, option, str(tmp_path))
    assert "not a regular file" in _refused_before_import(capsys, tmp_path, option, "/dev/null")
    link = tmp_path / "link.json"
    link.symlink_to(notes)
    assert "not an earlier labkit doctor report" in _refused_before_import(capsys, tmp_path, option, str(link))
    assert notes.read_text() == "my notes\n", "a symlink is judged by the file it points to"
    assert "expected one argument" in _refused_before_import(capsys, tmp_path, option)


def test_an_earlier_report_is_recognised_and_anything_else_is_not(tmp_path):
    from labkit.doctor.command import _an_earlier_report

    cases = {"r.json": ('{"tool": "labkit doctor", "results": []}', True), "e.json": ("", True),
             "r.xml": ('<testsuite name="labkit-doctor" tests="0"/>', True), "o.json": ('{"tool": "other"}', False),
             "p.xml": ('<testsuite name="pytest"/>', False), "t.txt": ("hello", False), "l.json": ("[1, 2]", False),
             ".gitkeep": ("", False), "py.typed": ("", False)}
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        assert _an_earlier_report(tmp_path / name) is expected, name


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "-1", "0", "1e300"])
def test_a_time_limit_that_is_not_a_positive_finite_number_is_one_sentence(tmp_path, capsys, value):
    err = _refused_before_import(capsys, tmp_path, "--timeout-per-op", value)
    assert "--timeout-per-op takes a finite number of seconds above 0" in err, err


@pytest.mark.parametrize("argv, said", [
    (["", "--namespace", "t"], "a module was given as ''"),
    (["--op", "doc_marked"], "--op takes a qualified name"),
    (["--namespace", " "], "--namespace was given as ' '"),
    (["--json", "-", "--junit-xml", "-"], "only one report can go to stdout"),
])
def test_usage_errors_come_before_any_import(tmp_path, capsys, argv, said):
    assert said in _refused_before_import(capsys, tmp_path, *argv)


def test_an_ascii_console_gets_the_report_not_a_unicode_error(tmp_path):
    """A Windows CI log or PYTHONIOENCODING=ascii: "✘" is written as "?" and the exit status is the report's."""
    import subprocess

    from repo import ROOT

    path = _module(tmp_path, "doc_ascii", OPS)
    report = tmp_path / "r.json"
    report.write_text('{"tool": "labkit doctor"}')     # an earlier report: overwritten
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", path, "--op", "t::doc_lies", "--json",
                           str(report)], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "UnicodeEncodeError" not in done.stderr and "t::doc_lies" in done.stdout, done.stderr[-3000:]
    assert json.loads(report.read_text(encoding="utf-8"))["counts"]["fail"] == 1, "the earlier report was replaced"


# --- the doctor ends in one sentence ---------------------------------------------------------------------------


def test_samples_given_as_a_list_is_one_sentence_saying_the_shape(tmp_path, capsys):
    path = _module(tmp_path, "doc_listed", SKIPPY.format(p="doc_listed") + "\nSAMPLES = [((torch.ones(2),), {})]\n")
    status, out, err = _run(capsys, path, "-q")
    assert status == 2, (out, err)
    assert "SAMPLES is" in err and "not a dict" in err and "SAMPLES = {my_op: [((x,), {}), ...]}" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_import_error_whose_message_raises_is_still_one_sentence(tmp_path, capsys):
    path = _module(tmp_path, "doc_bad_str", '''
        class Weird(Exception):
            def __str__(self):
                raise ValueError("no message for you")

        raise Weird()
    ''')
    status, out, err = _run(capsys, path, "-q")
    assert status == 2, (out, err)
    assert "raised Weird" in err and "its message could not be read" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_pytest_plugin_fails_a_run_in_which_every_op_was_skipped(pytester):
    """The command line exits 2 when nothing was checked; the plugin must not be green then either."""
    pytester.makepyfile(doc_plugin_skippy=SKIPPY.format(p="doc_plugin_skippy"))
    pytester.syspathinsert()
    try:
        result = pytester.runpytest_inprocess("--labkit-doctor", "doc_plugin_skippy", "-p", "no:cacheprovider")
        result.assert_outcomes(skipped=1)
        assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
        result.stdout.fnmatch_lines(["*labkit doctor: nothing was checked: every op (1) was skipped*"])
    finally:
        sys.modules.pop("doc_plugin_skippy", None)


def test_json_to_stdout_stays_json_when_the_project_prints(tmp_path):
    """fbgemm's kernels print "Time taken ..."; a project prints at import; C code writes to file descriptor 1:
    with --json - all of it goes to stderr, and stdout is the report alone."""
    import subprocess

    from repo import ROOT

    path = _module(tmp_path, "doc_chatty", '''
        import os
        import torch

        print("importing doc_chatty")
        os.write(1, b"raw bytes on fd 1\\n")

        @torch.library.custom_op("t::doc_chatty", mutates_args=())
        def chatty(x: torch.Tensor) -> torch.Tensor:
            print("Time taken: 0.1 ms")
            return x * 2

        chatty.register_fake(lambda x: torch.empty_like(x))
        SAMPLES = {chatty: [((torch.arange(3.0),), {})]}
    ''')
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", path, "--json", "-", "-q"], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["counts"]["pass"] == 1, done.stdout[:500]
    for said in ("importing doc_chatty", "raw bytes on fd 1", "Time taken: 0.1 ms"):
        assert said in done.stderr, said


def _doctor_told_ctrl_c(tmp_path, source: str, *argv: str, env: dict | None = None, wait_for: str = "started",
                        ignored: bool = False):
    """``python -m labkit doctor`` on a module made of ``source``, as a terminal starts it (Ctrl-C at its default
    however the suite was started: tests/ctrl_c_as_in_a_terminal.py, in a session of its own), Ctrl-C sent to its
    process group the moment ``wait_for`` appears (a file the project's code writes, or a phrase on stderr).
    ``ignored``: started as a background job of a script is, with Ctrl-C ignored.
    Returns (exit status, stderr, seconds from Ctrl-C to exit)."""
    import signal
    import subprocess
    import time

    from repo import ROOT

    path = _module(tmp_path, "doc_ctrl_c", source)
    errors = tmp_path / "stderr.txt"
    with open(errors, "w") as err_file:
        child = subprocess.Popen([sys.executable, str(ROOT / "tests" / "ctrl_c_as_in_a_terminal.py"),
                                  *(["--ignored"] if ignored else []), sys.executable, "-m", "labkit", "doctor", path,
                                  *argv], stdout=subprocess.DEVNULL, stderr=err_file,
                                 cwd=ROOT, env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            deadline = time.monotonic() + 280
            def reached():
                if wait_for == "started":
                    return (tmp_path / wait_for).exists()
                return wait_for in errors.read_text(errors="replace")

            while child.poll() is None and time.monotonic() < deadline and not reached():
                time.sleep(0.05)
            assert reached() and child.poll() is None, \
                f"the doctor did not reach {wait_for!r} alive: {errors.read_text(errors='replace')[-3000:]}"
            os.killpg(child.pid, signal.SIGINT)
            sent = time.monotonic()
            child.wait(timeout=60)
            took = time.monotonic() - sent
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
    return child.returncode, errors.read_text(errors="replace"), took


def _two_ops(tmp_path, second_kernel_waits: str) -> str:
    """A module of two ops; the second's kernel writes ``started`` and then waits as ``second_kernel_waits`` says."""
    return f'''
        import pathlib, time
        import torch

        @torch.library.custom_op("t::doc_int_a", mutates_args=())
        def first(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @torch.library.custom_op("t::doc_int_b", mutates_args=())
        def second(x: torch.Tensor) -> torch.Tensor:
            pathlib.Path({str(tmp_path / "started")!r}).write_text("started")
            {second_kernel_waits}
            return x * 3

        first.register_fake(lambda x: torch.empty_like(x))
        second.register_fake(lambda x: torch.empty_like(x))
        SAMPLES = {{first: [((torch.arange(3.0),), {{}})], second: [((torch.arange(3.0),), {{}})]}}
    '''


def _with_a_thread(source: str) -> str:
    """``source`` that also starts a thread of the project's that never ends (not a daemon: Python waits for it)."""
    return source.replace("import pathlib, time", "import pathlib, threading, time\n        threading.Thread("
                          "target=time.sleep, args=(600,), name='poller').start()")


def _kept_first_op_only(report):
    kept = json.loads(report.read_text(encoding="utf-8"))
    assert [r["op"] for r in kept["results"]] == ["t::doc_int_a.default"], kept["results"]
    assert any("stopped by Ctrl-C" in w for w in kept["warnings"]), kept["warnings"]
    assert kept["exit_status"] == 2 and kept["ok"] is False and kept["interrupted"], "the report says it stopped"


def test_ctrl_c_mid_run_is_one_sentence_exit_2_and_the_report_of_what_was_examined(tmp_path):
    """Ctrl-C while the second op's kernel runs Python (the kernel itself says when it has started, so the signal
    lands mid-run however loaded the machine): one sentence, exit 2, and the JSON of the op examined before it.
    It once failed one clean run in three: the suite had been started in the background, so SIGINT was ignored
    in every process it started (issue 71); the doctor is now started as a terminal would."""
    report = tmp_path / "partial.json"
    status, err, took = _doctor_told_ctrl_c(tmp_path, _with_a_thread(_two_ops(tmp_path, "time.sleep(600)")),
                                            "--json", str(report), "-q")
    assert status == 2, err[-3000:]
    assert err.strip() == f"labkit doctor: stopped by Ctrl-C after 1 of 2 op overloads; the report of those is in " \
                          f"{report}.", "one sentence, no traceback, no wait for the project's thread: " + err[-3000:]
    _kept_first_op_only(report)
    assert took < 30, f"{took:.0f} s from Ctrl-C to exit"


def test_ctrl_c_ends_the_run_when_a_kernel_is_blocked_in_c_code(tmp_path):
    """A kernel waiting in C++ (a future that never completes) never runs Python again, so Python's
    KeyboardInterrupt never comes: the run went on forever. The watch ends it GRACE_S after Ctrl-C, in one
    sentence that says why, keeping the report of the op examined before."""
    from labkit.doctor.stopping import GRACE_S

    report = tmp_path / "partial.json"
    status, err, took = _doctor_told_ctrl_c(tmp_path, _two_ops(tmp_path, "torch.futures.Future().wait()"),
                                            "--json", str(report), "-q")
    assert status == 2, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert (f"labkit doctor: stopped by Ctrl-C after 1 of 2 op overloads; t::doc_int_b.default did not stop within "
            f"{GRACE_S:g} s of it (C code that does not return to Python, or code that caught the interrupt), so the "
            "doctor ended without waiting; the report of those is in") in err, err[-3000:]
    _kept_first_op_only(report)
    assert GRACE_S - 0.5 < took < GRACE_S + 20, f"{took:.1f} s from Ctrl-C to exit"


def test_ctrl_c_while_torch_imports_is_one_sentence(tmp_path):
    """The first seconds of every run import torch: Ctrl-C there printed torch's import traceback. An import hook
    (a sitecustomize of this test's) holds the import of torch until Ctrl-C, so the signal lands inside it (in the
    hook, just before torch's own code: the KeyboardInterrupt comes out of the same import statement)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(textwrap.dedent(f'''
        import pathlib, sys, time

        class HoldTorch:
            def find_spec(self, name, path=None, target=None):
                if name == "torch":
                    pathlib.Path({str(tmp_path / "started")!r}).write_text("started")
                    time.sleep(600)
                return None

        sys.meta_path.insert(0, HoldTorch())
    '''))
    status, err, took = _doctor_told_ctrl_c(tmp_path, "", "-q", env={
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))})
    assert status == 2, err[-3000:]
    assert err.strip() == "labkit doctor: stopped by Ctrl-C while starting (importing torch and labkit); nothing " \
                          "was examined.", \
        err[-3000:]


def test_a_project_thread_that_never_ends_is_named_and_ctrl_c_stops_the_wait(tmp_path):
    """Python waits for every non-daemon thread before a process exits: a project's thread that never ends kept the
    doctor alive after its report, saying nothing, and Ctrl-C there printed a traceback from inside threading."""
    status, err, took = _doctor_told_ctrl_c(tmp_path, _with_a_thread(_two_ops(tmp_path, "pass")), "-q",
                                            wait_for="Ctrl-C stops the wait")
    assert err.strip().splitlines() == [
        "labkit doctor: the run is over; waiting for the project's thread(s) 'poller' to end, as Python does before a "
        "process exits; Ctrl-C stops the wait.",
        "labkit doctor: stopped waiting for the project's thread(s) by Ctrl-C; the run was over."], err[-3000:]
    assert status == 0 and "Traceback" not in err, (status, err[-3000:])
    assert took < 10, f"{took:.1f} s from Ctrl-C to exit"


def test_a_doctor_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path):
    """A background job of a script (``labkit doctor ... &``) has Ctrl-C ignored, as the shell asked: the run goes
    on to its end (the second op's kernel sleeps 3 s once, and takes the signal meanwhile)."""
    report = tmp_path / "whole.json"
    once = "if '_slept' not in globals(): globals()['_slept'] = time.sleep(3)"
    status, err, _ = _doctor_told_ctrl_c(tmp_path, _two_ops(tmp_path, once), "--json", str(report), "-q",
                                         ignored=True)
    assert status == 0 and "Ctrl-C" not in err, err[-3000:]
    assert [r["op"] for r in json.loads(report.read_text())["results"]] == ["t::doc_int_a.default",
                                                                            "t::doc_int_b.default"]


def test_the_doctor_called_in_process_leaves_signals_and_threads_as_they_were(tmp_path, capsys):
    """Only the command line's own process watches Ctrl-C: a notebook's or a test's main([...]) changes nothing."""
    import signal
    import threading

    def state():
        wakeup = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(wakeup)
        return signal.getsignal(signal.SIGINT), wakeup, [t.name for t in threading.enumerate() if "labkit" in t.name]

    before = state()
    path = _module(tmp_path, "doc_in_process", _two_ops(tmp_path, "pass").replace("doc_int_", "doc_inproc_"))
    status, _, err = _run(capsys, path, "-q")
    assert status == 0, err
    assert state() == before


@pytest.mark.slow
def test_timeout_per_op_also_bounds_the_wait_for_a_project_thread(tmp_path):
    """In CI nobody presses Ctrl-C: --timeout-per-op bounds the wait at exit too, and the run keeps its status."""
    import subprocess

    from repo import ROOT

    path = _module(tmp_path, "doc_thread", _with_a_thread(_two_ops(tmp_path, "pass")))
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "ctrl_c_as_in_a_terminal.py"), sys.executable, "-m",
                           "labkit", "doctor", path, "--op", "t::doc_int_a", "--timeout-per-op", "30", "-q"],
                          capture_output=True, text=True, cwd=ROOT, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        "labkit doctor: the run is over; waiting for the project's thread(s) 'poller' to end (at most "
        "--timeout-per-op 30 s), as Python does before a process exits; Ctrl-C stops the wait.",
        "labkit doctor: the project's thread(s) 'poller' still run after 30 s: exiting without them."], \
        done.stderr[-3000:]


def test_an_import_that_never_returns_ends_at_timeout_per_op(tmp_path):
    """The limit covered the examine loop only: a module whose import waits forever hung the run."""
    import subprocess

    from repo import ROOT

    path = _module(tmp_path, "doc_hung_import", '''
        import time
        time.sleep(600)
    ''')
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", path, "--timeout-per-op", "3", "-q"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"labkit doctor: importing {path} ran past --timeout-per-op 3 s" in done.stderr, done.stderr[-3000:]
    assert "time.sleep" in done.stderr or "doc_hung_import" in done.stderr, "the stacks show where it waits"


def test_two_reports_never_share_a_file_however_it_is_spelled(tmp_path, capsys):
    report = tmp_path / "r.json"
    err = _refused_before_import(capsys, tmp_path, "--json", str(report), "--junit-xml", f"{tmp_path}/./r.json")
    assert "name one file: give each report its own" in err, err


def test_an_interrupted_report_is_not_green_in_json_or_junit():
    report = doctor.DoctorReport(["m"], doctor.environment(), [], [], None, 0.1, interrupted="stopped by Ctrl-C")
    assert report.exit_status == 2 and not report.ok
    suite = ElementTree.fromstring(formats.junit_xml(report))
    assert suite.get("errors") == "1" and suite.find("testcase/error").get("message") == "stopped by Ctrl-C"
    assert json.loads(formats.to_json(report))["interrupted"] == "stopped by Ctrl-C"
