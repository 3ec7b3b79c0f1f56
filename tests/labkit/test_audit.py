"""labkit.audit(op, *inputs) on a correct op and on each buggy declaration (real torch, CPU)."""

import pytest
import torch

import labkit
from labkit import audit

CASES = {
    "correct": (dict(writes=("x",), mutates_args=("x",), returns="none"), set()),
    "undeclared mutation": (dict(writes=("x",), returns="none"), {"declaration", "opcheck", "compile"}),
    "over-declared": (dict(mutates_args=("x",), returns="none"), {"declaration"}),
    "returns its input": (dict(writes=("x",), mutates_args=("x",), returns="input"), {"eager"}),
    "no fake kernel": (dict(fake=False), {"opcheck", "compile"}),
    "pure and honest": (dict(), set()),
}


@pytest.mark.parametrize("case", list(CASES))
def test_audit_finds_exactly_the_expected_kinds_of_problem(case):
    fields, kinds = CASES[case]
    report = audit(labkit.declare(name="t::audited", **fields), torch.randn(3))
    assert report.kinds() == kinds, str(report)
    assert report.ok is (not kinds)
    for finding in report.findings:
        assert finding.problem and finding.why and finding.fix


def test_findings_name_the_argument_and_the_fix():
    report = audit(labkit.declare(name="t::audited", writes=("x",), returns="none"), torch.randn(3))
    declaration = [f for f in report.findings if f.check == "declaration"][0]
    assert declaration.problem == "the kernel changes 'x' in place but does not declare it"
    assert declaration.fix == "add 'x' to mutates_args"
    compiled = [f for f in report.findings if f.check == "compile"][0]
    assert "x differs afterwards" in compiled.problem and "inductor, dynamic=True" in compiled.problem


def test_a_raw_custom_op_and_a_two_argument_op():
    @torch.library.custom_op("t::raw_fill", mutates_args=("out",))
    def raw_fill(x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x * 2)

    assert audit(raw_fill, torch.randn(3), torch.zeros(3)).ok
    assert audit(torch.ops.t.raw_fill, torch.randn(3), torch.zeros(3)).ok


def test_bad_input_never_raises():
    assert audit("not an op").findings[0].check == "input"
    report = audit(labkit.declare(name="t::audited"), "not a tensor")
    assert not report.ok and all(f.fix for f in report.findings)


def test_the_report_renders_as_text_and_html():
    report = audit(labkit.declare(name="t::audited", writes=("x",), returns="none"), torch.randn(3))
    assert "fix: add 'x' to mutates_args" in str(report)
    assert "<table>" in report._repr_html_() and "not checkable here" in report._repr_html_()


def _reverse_op(name, mutates, guard=False):
    """src reversed into dst, one element at a time (it reads src while it writes dst); ``guard``: copy src first
    when the two share storage."""
    def kernel(src: torch.Tensor, dst: torch.Tensor) -> None:
        if guard and src.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
            src = src.clone()
        n = src.shape[0]
        for k in range(n):
            dst[n - 1 - k] = src[k]

    op = torch.library.custom_op(f"t::{name}", kernel, mutates_args=mutates)
    op.register_fake(lambda src, dst: None)
    return op


def test_audit_calls_an_op_the_way_198031_breaks_it():
    """A correctly declared op, given a clone of the tensor it writes as the tensor it reads: Inductor hands it one
    buffer twice up to torch 2.14 (pytorch #198031), which audit reports; 2.15.0 keeps the clone."""
    report = labkit.audit(_reverse_op("reverse_into", ("dst",)), torch.zeros(8), torch.zeros(8))
    aliasing = [f for f in report.findings if f.check == "aliasing"]
    if labkit.env.torch_version() < (2, 15):
        assert len(aliasing) == 1, report
        assert "op(src=<a clone of dst>, dst=...)" in aliasing[0].problem
        assert "same buffer for both" in aliasing[0].why and "#198031" in aliasing[0].why
        assert "untyped_storage().data_ptr()" in aliasing[0].fix
    else:
        assert aliasing == [], report


def test_a_kernel_that_copies_what_it_reads_when_shared_has_no_aliasing_finding():
    report = labkit.audit(_reverse_op("reverse_guarded", ("dst",), guard=True), torch.zeros(8), torch.zeros(8))
    assert [f for f in report.findings if f.check == "aliasing"] == [], report
