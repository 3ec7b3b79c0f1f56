"""What audit and the doctor report on a fixed set of ops is what tests/labkit/findings_record.json recorded
(tools/findings_record.py): a change to how findings are made or carried (issue 73's one finding type) changes
none of their words, links or verdicts. A change meant to change a finding rewrites the record
(`python tools/findings_record.py --write`) and shows the difference in its commit."""

import json
import os
import subprocess
import sys

import pytest
import torch

from repo import ROOT

RECORD = ROOT / "tests" / "labkit" / "findings_record.json"


@pytest.mark.slow  # a fresh Python auditing 32 ops and running the doctor on 8: about 40 s
def test_audit_and_the_doctor_report_what_the_record_holds():
    recorded = json.loads(RECORD.read_text())["torch"]
    if torch.__version__.split("+")[0] != recorded:
        pytest.skip(f"the record is torch {recorded}'s; torch's words differ between releases")
    env = dict(os.environ, TORCHINDUCTOR_VEC_ISA_OK="1")
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "findings_record.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "every finding as recorded" in done.stdout


def test_the_record_covers_every_kind_of_finding_and_verdict():
    """The record is worth comparing only if it holds each kind of outcome: every audit kind, each
    doctor verdict, the doctor's own steps, a graph break and a machine without the op's kernel."""
    record = json.loads(RECORD.read_text())
    kinds = {f["kind"] for entry in record["audit"] for f in entry["findings"]}
    assert {"declaration", "opcheck", "compile", "eager", "memory", "aliasing", "input"} <= kinds, kinds
    assert any("graph break" in entry["not_checkable"] for entry in record["audit"])
    results = record["doctor"]["json"]["results"]
    assert {r["verdict"] for r in results} == {"pass", "fail", "skip"}
    checks = {f["check"] for r in results for f in r["findings"]}
    assert {"fullgraph", "fake:dtype", "declaration", "eager", "memory"} <= checks, checks
    assert any("no kernel for the CPU backend" in note for r in results for note in r["notes"])
