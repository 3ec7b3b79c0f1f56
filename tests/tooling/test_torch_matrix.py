"""tools/torch_matrix.py's --notebooks: which notebooks it names, what it refuses, and that a run of named
notebooks prints its result and leaves docs/torch-versions.json and .md alone (the lab's supported range is
computed from rows that ran every notebook). No torch is installed here: the release's run is replaced by a
function that returns the row a run would, so only the tool's own bookkeeping is under test."""

import pytest
import torch_matrix

from repo import ROOT


def test_notebooks_are_named_by_number_or_name_in_the_labs_order():
    chosen = torch_matrix.named_notebooks(["03", "02_mutates_args", "notebooks/03_aliasing_and_views.ipynb"])
    assert [p.name for p in chosen] == ["02_mutates_args.ipynb", "03_aliasing_and_views.ipynb"]
    assert all(p.parent == ROOT / "notebooks" for p in chosen)


@pytest.mark.parametrize("argv, said", [
    (["2.15.0", "--notebooks", "99"], "'99' is not one of the lab's notebooks"),
    (["2.15.0", "--notebooks", "2"], "'2' is not one of the lab's notebooks"),
    (["2.15.0", "--notebooks"], "expected at least one argument"),
    (["--table-only", "--notebooks", "02"], "does not go with --doctor, --table-only or --probes-only"),
    (["2.15.0", "--doctor", "m", "--notebooks", "02"], "does not go with"),
])
def test_a_wrong_notebooks_option_is_one_sentence(argv, said, capsys):
    with pytest.raises(SystemExit) as stopped:
        torch_matrix.main(argv)
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err


def _fake_run(calls):
    def run_row(label, version, python, colab, venv_root, keep, notebooks=None):
        calls.append(notebooks)
        names = [p.stem for p in notebooks] if notebooks else torch_matrix.current_notebooks()
        row = {"row": label, "torch": version, "python": "3.11", "colab": colab, "date": "2026-12-06",
               "commit": "test", "notebooks": {n: "pass" for n in names}, "behaviours": {}}
        row["result"] = "the named notebooks pass" if notebooks else "all notebooks pass"
        return {**row, "partial": True} if notebooks else row
    return run_row


def _results_in(tmp_path, monkeypatch):
    results, table = tmp_path / "torch-versions.json", tmp_path / "torch-versions.md"
    results.write_text((ROOT / "docs" / "torch-versions.json").read_text())
    table.write_text("the table before\n\n" + torch_matrix.FINDINGS_HEADING + "\n\nwritten by hand\n")
    monkeypatch.setattr(torch_matrix, "RESULTS", results)
    monkeypatch.setattr(torch_matrix, "TABLE", table)
    return results, table


def test_a_partial_run_prints_its_result_and_writes_nothing(tmp_path, monkeypatch, capsys):
    results, table = _results_in(tmp_path, monkeypatch)
    before = results.read_text()
    calls = []
    monkeypatch.setattr(torch_matrix, "run_row", _fake_run(calls))
    with pytest.raises(SystemExit) as ended:
        torch_matrix.main(["9.9.0", "--notebooks", "02", "03", "--venv-root", str(tmp_path / "venvs")])
    assert ended.value.code == 0, "every named notebook passed"
    assert [p.stem[:2] for p in calls[0]] == ["02", "03"], "only the named notebooks run"
    assert results.read_text() == before and table.read_text().startswith("the table before")
    printed = capsys.readouterr().out
    assert "9.9.0: the named notebooks pass (a partial run: nothing written under docs/)" in printed
    assert "02_mutates_args: pass" in printed


def test_a_full_run_writes_its_row(tmp_path, monkeypatch):
    """The same bookkeeping without --notebooks writes the row: the test above can fail."""
    results, table = _results_in(tmp_path, monkeypatch)
    monkeypatch.setattr(torch_matrix, "run_row", _fake_run([]))
    torch_matrix.main(["9.9.0", "--venv-root", str(tmp_path / "venvs")])
    assert '"torch": "9.9.0"' in results.read_text() and "9.9.0" in table.read_text()
    assert table.read_text().endswith(torch_matrix.FINDINGS_HEADING + "\n\nwritten by hand\n"), "findings kept"
    table.write_text("a table whose findings were lost")
    with pytest.raises(SystemExit, match="has no line '## What the behaviour columns mean"):
        torch_matrix.write_table(torch_matrix.load())


def test_a_partial_row_is_never_saved():
    with pytest.raises(ValueError, match="ran named notebooks only"):
        torch_matrix.save({"row": "2.15.0", "python": "3.11", "partial": True})


def test_a_partial_run_with_a_failing_notebook_exits_1(tmp_path, monkeypatch):
    _results_in(tmp_path, monkeypatch)
    fake = _fake_run([])

    def failing(*args, **kwargs):
        row = fake(*args, **kwargs)
        return {**row, "notebooks": {"02_mutates_args": "FAIL: Cell 3 (AssertionError)"}, "result": "notebooks fail"}
    monkeypatch.setattr(torch_matrix, "run_row", failing)
    with pytest.raises(SystemExit) as ended:
        torch_matrix.main(["9.9.0", "--notebooks", "02", "--venv-root", str(tmp_path / "venvs")])
    assert ended.value.code == 1


def test_the_tool_holds_no_findings_or_probe_program_as_strings():
    """Issue 77: the findings live in docs/torch-versions.md (written by hand, kept under the table) and the probe in
    tools/torch_matrix_probe.py, a program ruff reads; the tool itself stays under 600 lines."""
    source = (ROOT / "tools" / "torch_matrix.py").read_text()
    assert len(source.splitlines()) <= 600
    assert torch_matrix.FINDINGS_HEADING in (ROOT / "docs" / "torch-versions.md").read_text()
    assert torch_matrix.PROBE.is_file() and "@probe(" in torch_matrix.PROBE.read_text()
    assert "@probe(" not in source and "## Notebook" not in source
