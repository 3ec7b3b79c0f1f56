"""labkit doctor against what a project's own code does (issue 78): nothing a SAMPLES function, a kernel or an
import does ends the run green, skips a defect unexamined, or makes the doctor write over another file.

Each case is a small module written to a temporary folder, examined as a project's would be: in this process
(``main([...])``, as tests/labkit/test_doctor.py does) where that shows the case, in a child process where only the
command line's own process can (a real Ctrl-C against a KeyboardInterrupt the project raises). The child-process
tests are in this one file: they share a worker.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import labkit
from labkit.doctor.command import main
from repo import ROOT

pytest_plugins = ("pytester",)

# Imported before any test, as in test_doctor.py: pytester puts sys.modules back after an in-process run.
torch._dynamo.list_backends(exclude_tags=())
torch.compile(lambda x: x + 1, backend="inductor")(torch.ones(2))


def _module(folder: pathlib.Path, name: str, source: str) -> str:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def _run(capsys, *argv) -> tuple[int, str, str]:
    status = main(["doctor", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def _report(path: pathlib.Path) -> dict:
    return {r["op"]: r for r in json.loads(path.read_text())["results"]}


# An op that writes its input undeclared: whatever else happens, the doctor must examine it and fail it.
LIES = '''
import sys
import torch

@torch.library.custom_op("{ns}::lies", mutates_args=())
def lies(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x * 2

lies.register_fake(lambda x: torch.empty_like(x))
'''


@pytest.mark.parametrize("ending", ["sys.exit()", "sys.exit(0)", "raise SystemExit(3)", "exit()"])
def test_an_exit_in_a_samples_function_is_a_finding_on_its_op_and_the_run_goes_on(tmp_path, capsys, ending):
    """On c6de650 `sys.exit()` there ended the run with exit 0, no table and no report."""
    ns = f"pc_exit{abs(hash(ending)) % 1000}"
    source = LIES.format(ns=ns) + f'''
@torch.library.custom_op("{ns}::fine", mutates_args=())
def fine(x: torch.Tensor) -> torch.Tensor:
    return x * 2

fine.register_fake(lambda x: torch.empty_like(x))

def leaving():
    {ending}

SAMPLES = {{lies: leaving, fine: [((torch.ones(3),), {{}})]}}
'''
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, _module(tmp_path, f"exits_{ns}", source), "--json", str(report))
    assert status == 1, out + err
    results = _report(report)
    finding, = results[f"{ns}::lies.default"]["findings"]
    assert finding["check"] == "samples" and "SystemExit" in finding["problem"], finding
    assert results[f"{ns}::fine.default"]["verdict"] == "pass", "the run went on to the next op"
    assert f"{ns}::lies.default" in out, "the table was printed"


def test_an_exit_in_a_kernel_is_a_finding_on_its_op(tmp_path, capsys):
    ns = "pc_kernel_exit"
    source = f'''
import sys
import torch

@torch.library.custom_op("{ns}::leaves", mutates_args=())
def leaves(x: torch.Tensor) -> torch.Tensor:
    sys.exit(0)

leaves.register_fake(lambda x: torch.empty_like(x))
SAMPLES = {{leaves: [((torch.ones(3),), {{}})]}}
'''
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, _module(tmp_path, "kernel_exits", source), "--json", str(report))
    assert status == 1, out + err
    result = _report(report)[f"{ns}::leaves.default"]
    assert result["verdict"] == "fail" and any("SystemExit" in f["problem"] for f in result["findings"]), result
    assert not any(f["check"] == "doctor" for f in result["findings"]), "the project's code, not labkit's bug"


def test_pytest_importorskip_in_a_samples_function_is_a_finding_on_the_command_line(tmp_path, capsys):
    """Samples shared with the project's tests may call pytest.importorskip: on c6de650 a raw Skipped traceback,
    exit 1 and no report."""
    ns = "pc_skipcli"
    source = LIES.format(ns=ns) + '''
def samples():
    import pytest
    pytest.importorskip("a_package_nobody_installed_here")
    return [((torch.ones(3),), {})]

SAMPLES = {lies: samples}
'''
    report = tmp_path / "doctor.json"
    try:
        status, out, err = _run(capsys, _module(tmp_path, "skips_cli", source), "--json", str(report))
    except pytest.skip.Exception as escaped:     # or this test would itself be skipped, and pass for nothing
        pytest.fail(f"the project's pytest.importorskip escaped the doctor: {escaped}")
    assert status == 1 and "Traceback" not in err, err
    finding, = _report(report)[f"{ns}::lies.default"]["findings"]
    assert finding["check"] == "samples" and "Skipped" in finding["problem"], finding
    assert "a_package_nobody_installed_here" in finding["problem"], finding


def test_pytest_importorskip_in_a_samples_function_fails_the_plugins_item(pytester):
    """Under the pytest plugin the item became a skip ("1 passed, 1 skipped", exit 0) with the op unexamined."""
    pytester.makepyfile(skippy_ops='''
        import torch

        @torch.library.custom_op("pc_skipplugin::lies", mutates_args=())
        def lies(x: torch.Tensor) -> torch.Tensor:
            x.add_(1)
            return x * 2

        lies.register_fake(lambda x: torch.empty_like(x))

        def samples():
            import pytest
            pytest.importorskip("a_package_nobody_installed_here")
            return [((torch.ones(3),), {})]

        SAMPLES = {lies: samples}
    ''')
    pytester.syspathinsert()
    try:
        result = pytester.runpytest_inprocess("--labkit-doctor", "skippy_ops", "-p", "no:cacheprovider")
        result.assert_outcomes(failed=1)
        assert "Skipped" in result.stdout.str()
    finally:
        sys.modules.pop("skippy_ops", None)


def test_a_module_that_changes_directory_at_import_does_not_move_the_report(tmp_path, capsys, monkeypatch):
    """On c6de650 --json out.json wrote the project's data/out.json (replacing it) and never the out.json asked for."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "out.json").write_text("the project's own file")
    source = LIES.format(ns="pc_chdir") + f'''
import os
os.chdir({str(data)!r})
SAMPLES = {{lies: [((torch.ones(3),), {{}})]}}
'''
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, _module(tmp_path, "moves", source), "--json", "out.json", "--junit-xml",
                            "out.xml")
    assert status == 1, out + err
    assert (data / "out.json").read_text() == "the project's own file", "the project's file is untouched"
    assert "pc_chdir::lies.default" in _report(tmp_path / "out.json")
    assert (tmp_path / "out.xml").is_file() and not (data / "out.xml").exists()


SPARSE = '''
import torch

lib = torch.library.Library("{ns}", "FRAGMENT")
lib.define("lies(Tensor x) -> Tensor")


def kernel(x):
    x.add_(1)          # undeclared: the schema says x is only read
    return x * 2


lib.impl("lies", kernel, "CPU")                      # no SparseCPU kernel: a sparse input finds none
torch.library.register_fake("{ns}::lies", lambda x: torch.empty_like(x), lib=lib)
dense = torch.ones(3)
sparse = torch.ones(3).to_sparse()
SAMPLES = {{"{ns}::lies": {samples}}}
'''


def test_a_sample_without_a_kernel_here_skips_that_sample_only(tmp_path, capsys):
    """On c6de650 one sparse sample turned the op into a skip and dropped the dense sample's finding (exit 0)."""
    ns = "pc_sparse"
    path = _module(tmp_path, "sparse_ops", SPARSE.format(ns=ns, samples="[((dense,), {}), ((sparse,), {})]"))
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, path, "--json", str(report))
    assert status == 1, out + err
    result = _report(report)[f"{ns}::lies.default"]
    assert result["verdict"] == "fail" and any(f["check"] == "declaration" for f in result["findings"]), result
    assert any("sample 1" in note and "SparseCPU" in note for note in result["notes"]), result["notes"]


def test_an_op_with_no_kernel_here_for_any_sample_is_still_a_skip(tmp_path, capsys):
    ns = "pc_sparse_only"
    path = _module(tmp_path, "sparse_only", SPARSE.format(ns=ns, samples="[((sparse,), {})]"))
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, path, "--json", str(report))
    assert status == 2, out + err      # every op skipped: nothing was checked
    result = _report(report)[f"{ns}::lies.default"]
    assert result["verdict"] == "skip" and "no kernel for the SparseCPU backend" in result["notes"][0], result


TWICE = '''
import torch

@torch.library.custom_op("pc_twice::op", mutates_args=())
def op(x: torch.Tensor) -> torch.Tensor:
    return x * {factor}

op.register_fake(lambda x: torch.empty_like(x))
SAMPLES = {{"pc_twice::op": [((torch.ones(3),), {{}})]}}
'''


def test_an_op_defined_by_two_of_the_projects_modules_is_examined_as_defined_last_with_a_note(tmp_path, capsys):
    """A fallback and a fast implementation of one op: on c6de650 a FAIL as a "stale handle" of a call never made."""
    fallback = _module(tmp_path, "fallback", TWICE.format(factor="2"))
    fast = _module(tmp_path, "fast", TWICE.format(factor="2.0"))
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, fallback, fast, "--json", str(report))
    assert status == 0, out + err
    result = _report(report)["pc_twice::op.default"]
    assert result["verdict"] == "pass" and not result["findings"], result
    assert any("defined again by" in note and "fast" in note for note in result["notes"]), result["notes"]


def test_a_module_path_that_is_not_utf8_is_examined(tmp_path, capsys):
    """On c6de650 a raw UnicodeEncodeError and exit 1 (which CI reads as a finding)."""
    name = os.fsdecode(b"ops_\xff")
    path = _module(tmp_path, name, LIES.format(ns="pc_bytes") + "\nSAMPLES = {lies: [((torch.ones(3),), {})]}\n")
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, path, "--json", str(report))
    assert status == 1 and "UnicodeEncodeError" not in out + err, out + err
    assert _report(report)["pc_bytes::lies.default"]["verdict"] == "fail"


def test_version_says_labkits_and_torchs(capsys):
    status, out, err = _run(capsys, "--version")
    assert status == 0 and out.strip() == f"labkit doctor {labkit.__version__} (torch {torch.__version__})", out


def test_a_keyboard_interrupt_a_samples_function_raises_is_a_finding_not_a_ctrl_c(tmp_path):
    """Only the command line's process can tell a real Ctrl-C (a signal) from the project's own `raise
    KeyboardInterrupt`: on c6de650 the run ended as "stopped by Ctrl-C"."""
    ns = "pc_keyboard"
    source = LIES.format(ns=ns) + '''
def samples():
    raise KeyboardInterrupt("the project's own")

SAMPLES = {lies: samples}
'''
    path = _module(tmp_path, "interrupts", source)
    report = tmp_path / "doctor.json"
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", path, "--json", str(report)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,   # this checkout's labkit
                          env=dict(os.environ, TORCHINDUCTOR_VEC_ISA_OK="1"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stopped by Ctrl-C" not in done.stdout + done.stderr, done.stderr
    finding, = _report(report)[f"{ns}::lies.default"]["findings"]
    assert finding["check"] == "samples" and "KeyboardInterrupt" in finding["problem"], finding


def test_an_exit_in_a_kernel_on_generated_inputs_is_a_finding_not_a_skip(tmp_path, capsys):
    """With no SAMPLES the doctor tries inputs generated from the schema: an exit there is no misfit."""
    source = '''
import sys
import torch

@torch.library.custom_op("pc_generated::leaves", mutates_args=())
def leaves(x: torch.Tensor) -> torch.Tensor:
    sys.exit(0)

leaves.register_fake(lambda x: torch.empty_like(x))
'''
    report = tmp_path / "doctor.json"
    status, out, err = _run(capsys, _module(tmp_path, "generated_exits", source), "--json", str(report))
    assert status == 1, out + err
    result = _report(report)["pc_generated::leaves.default"]
    assert result["verdict"] == "fail" and result["findings"][0]["check"] == "project-code", result


def test_a_finding_that_quotes_a_non_utf8_path_is_still_written(tmp_path, capsys):
    """A kernel whose error message holds the module's own path (__file__, bytes that are no UTF-8)."""
    name = os.fsdecode(b"quotes_\xfe")
    source = '''
import torch

@torch.library.custom_op("pc_quotes::fails", mutates_args=())
def fails(x: torch.Tensor) -> torch.Tensor:
    raise ValueError(__file__)

fails.register_fake(lambda x: torch.empty_like(x))
SAMPLES = {fails: [((torch.ones(3),), {})]}
'''
    report, junit = tmp_path / "doctor.json", tmp_path / "doctor.xml"
    status, out, err = _run(capsys, _module(tmp_path, name, source), "--json", str(report), "--junit-xml", str(junit))
    assert status == 1 and "UnicodeEncodeError" not in out + err, out + err
    assert _report(report)["pc_quotes::fails.default"]["verdict"] == "fail" and junit.is_file()


def test_a_second_module_is_found_after_the_first_changed_directory(tmp_path, capsys, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = LIES.format(ns="pc_moves_first") + f'''
import os
os.chdir({str(elsewhere)!r})
SAMPLES = {{lies: [((torch.ones(3),), {{}})]}}
'''
    _module(tmp_path, "moves_first", first)
    second = LIES.format(ns="pc_found_second") + "\nSAMPLES = {lies: [((torch.ones(3),), {})]}\n"
    _module(tmp_path, "found_second", second)
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, "moves_first.py", "found_second.py")
    assert status == 1 and "pc_found_second::lies.default" in out, out + err


def test_a_keyboard_interrupt_an_import_raises_is_one_sentence_not_a_ctrl_c(tmp_path):
    path = _module(tmp_path, "interrupts_on_import", 'raise KeyboardInterrupt("the project\'s own")\n')
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", path], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=dict(os.environ, TORCHINDUCTOR_VEC_ISA_OK="1"))
    assert done.returncode == 2 and "stopped by Ctrl-C" not in done.stderr, done.stderr
    assert "raised KeyboardInterrupt (raised by the code, not by a Ctrl-C)" in done.stderr, done.stderr
