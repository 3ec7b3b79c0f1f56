"""tools/torch_matrix.py's --notebooks: which notebooks it names, what it refuses, that a run of named
notebooks is saved as a partial row beside the full ones, and how the lab's range and each notebook's own
range are computed from full and partial rows. No torch is installed here: the release's run is replaced by a
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


def test_a_partial_run_saves_a_partial_row_beside_the_full_one(tmp_path, monkeypatch, capsys):
    results, table = _results_in(tmp_path, monkeypatch)
    calls = []
    monkeypatch.setattr(torch_matrix, "run_row", _fake_run(calls))
    with pytest.raises(SystemExit) as ended:
        torch_matrix.main(["2.13.0", "--notebooks", "02", "03", "--venv-root", str(tmp_path / "venvs")])
    assert ended.value.code == 0, "every named notebook passed"
    assert [p.stem[:2] for p in calls[0]] == ["02", "03"], "only the named notebooks run"
    rows = torch_matrix.load()
    thirteen = [r for r in rows if r["row"] == "2.13.0"]
    assert not thirteen[0].get("partial"), "the full row stays"
    assert thirteen[-1].get("partial") and sorted(thirteen[-1]["notebooks"]) == ["02_mutates_args",
                                                                                 "03_aliasing_and_views"]
    assert "| partial (02, 03): the named notebooks pass |" in table.read_text()
    printed = capsys.readouterr().out
    assert "2.13.0: the named notebooks pass (a partial run, saved in torch-versions.json)" in printed
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


def _row(torch, notebooks, result="pass", partial=False, colab=False):
    row = {"row": "Colab stack" if colab else torch, "torch": torch, "python": "3.13" if colab else "3.11",
           "colab": colab, "notebooks": {nb: result for nb in notebooks}, "result": "-", "date": "2026-12-07"}
    return {**row, "partial": True} if partial else row


OLD = ["00_a", "01_b"]


def test_a_notebook_added_later_has_its_own_range_and_leaves_the_labs_alone():
    rows = [_row("2.11.0", OLD), _row("2.13.0", OLD), _row("2.13.0", ["12_new"], partial=True)]
    stems = OLD + ["12_new"]
    assert torch_matrix.lab_range(rows, stems) == ["2.11.0", "2.13.0"]
    assert torch_matrix.supported(rows, "12_new") == ["2.13.0"]
    assert torch_matrix.narrower(rows, stems) == {"12_new": ["2.13.0"]}
    assert torch_matrix.range_sentence(rows, stems) == "Every notebook but 12 passes on: 2.11.0, 2.13.0; 12 on: 2.13.0"
    rows.append(_row("2.11.0", ["12_new"], partial=True))
    assert torch_matrix.narrower(rows, stems) == {}, "run on every release, the notebook joins the lab's range"
    assert torch_matrix.range_sentence(rows, stems) == "Every notebook passes on: 2.11.0, 2.13.0"


def test_a_later_run_decides_and_only_full_rows_of_todays_notebooks_make_the_range():
    stems = OLD + ["12_new"]
    failing_again = [_row("2.13.0", OLD), _row("2.13.0", ["01_b"], result="FAIL: cell 3", partial=True)]
    assert torch_matrix.lab_range(failing_again, stems) == [], "a notebook of the full rows failing there"
    assert torch_matrix.lab_range(failing_again + [_row("2.13.0", ["01_b"], partial=True)], stems) == ["2.13.0"]
    gone = [_row("2.10.0", ["00_a", "05_gone"]), _row("2.13.0", OLD)]
    assert torch_matrix.lab_range(gone, stems) == ["2.13.0"], "a row that ran a notebook now gone"
    fewer = [_row("2.10.0", ["00_a"]), _row("2.13.0", OLD)]
    assert torch_matrix.lab_range(fewer, stems) == ["2.13.0"], "a full row of fewer notebooks than the others ran"
    colab = [_row("2.13.0", OLD), _row("2.11.0", OLD + ["12_new"], colab=True)]
    assert torch_matrix.lab_range(colab, stems) == ["2.13.0"] and torch_matrix.supported(colab, "12_new") == []
    assert torch_matrix.lab_range([_row("2.13.0", ["12_new"], partial=True)], stems) == [], "partial rows alone"


def test_a_release_counts_only_where_every_python_it_ran_with_passes():
    fails, passes = {**_row("2.13.0", OLD, result="FAIL: cell 2"), "python": "3.10"}, _row("2.13.0", OLD)
    for rows in ([fails, passes], [passes, fails]):
        assert torch_matrix.lab_range(rows, OLD) == [], "the order the rows were saved in does not matter"
        assert torch_matrix.supported(rows, "00_a") == []


def test_a_partial_row_never_replaces_a_full_one_and_a_full_one_replaces_both(tmp_path, monkeypatch):
    _results_in(tmp_path, monkeypatch)
    torch_matrix.RESULTS.write_text("[]")
    full, first, second = (_row("2.13.0", OLD), _row("2.13.0", OLD, partial=True),
                           _row("2.13.0", ["01_b", "12_new"], partial=True))
    torch_matrix.save(full)
    torch_matrix.save(first)
    rows = torch_matrix.save(second)
    assert rows == [full, {**first, "notebooks": {"00_a": "pass"}, "result": "the named notebooks pass"}, second], \
        "a later partial run replaces 01_b only, and what is left says what it holds"
    assert torch_matrix.save(_row("2.14.1", OLD, partial=True))[:3] == rows, "another release's rows stay"
    assert torch_matrix.save(_row("2.13.0", ["00_a"]))[-2:] == [_row("2.14.1", OLD, partial=True),
                                                                  _row("2.13.0", ["00_a"])]


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
