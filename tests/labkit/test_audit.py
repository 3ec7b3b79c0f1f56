"""labkit.audit(op, *inputs) on a correct op and on each buggy declaration (real torch, CPU); on stale, raw and
hostile handles a finding, never a crash."""

import pytest
import torch

import labkit
from fresh_python import assert_survived, run_python
from labkit import audit, auditing

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


def _clone_passed_as_src(op, intermediate):
    """The program of #198031: ``y = x.clone(); op(y, x)``, with ``x`` the graph input or ``-(-inp)``, the
    intermediate audit computes."""
    def program(inp):
        x = torch.neg(torch.neg(inp)) if intermediate else inp
        y = x.clone()
        op(y, x)
        return x.clone()
    return program


@pytest.mark.parametrize("intermediate", [False, True], ids=["graph input", "intermediate"])
def test_198031_on_this_torch_graph_input_and_intermediate(intermediate):
    """The ground truth audit's check stands on, in plain torch.compile: with x an intermediate Inductor gets it
    wrong on 2.13 and 2.15.0 (the issue's report; run here on 2.13.0); with x a graph input up to 2.14 only (2.15.0
    keeps that clone)."""
    op = _reverse_op("reverse_truth", ("dst",))
    program = _clone_passed_as_src(op, intermediate)
    torch.compiler.reset()
    compiled = torch.compile(program, backend="inductor")(torch.arange(8.0))
    wrong = not torch.equal(compiled, program(torch.arange(8.0)))
    expected = intermediate or labkit.env.torch_version() < (2, 15)
    assert wrong is expected, f"{'intermediate' if intermediate else 'graph input'}: compiled {compiled}"


def test_audit_s_intermediate_is_a_computed_tensor_of_the_same_values():
    """audit's intermediate is ``-(-x)`` (``~(~x)`` for integers and bool): the same values and dtype, and a tensor
    the compiled function computes, so the #198031 program stays wrong with it (x * 1 would not do: torch 2.15.0
    folds it into x, a graph input again)."""
    op = _reverse_op("reverse_folded", ("dst",))
    for dtype in (torch.float32, torch.int32, torch.uint8):
        def program(inp):
            x = auditing.clones._computed_copy(inp)
            y = x.clone()
            op(y, x)
            return x.clone()
        torch.compiler.reset()
        given = torch.arange(8).to(dtype)
        assert torch.equal(auditing.clones._computed_copy(given), given), "the same values, same dtype"
        compiled = torch.compile(program, backend="inductor")(given.clone())
        assert not torch.equal(compiled, program(given.clone())), f"{dtype}: Inductor got it right: {compiled}"
    flags = torch.tensor([True, False])
    assert torch.equal(auditing.clones._computed_copy(flags), flags), "bool: ~(~x)"
    odd = [torch.tensor([-0.0, float("nan"), 1.5]), torch.tensor([1 + 2j, -0.0j]), torch.arange(4).to(torch.uint16)]
    odd += [torch.tensor([0.5, -2.0]).to(torch.float8_e4m3fn)] if hasattr(torch, "float8_e4m3fn") else []
    for tensor in odd:
        copy = auditing.clones._computed_copy(tensor)
        assert copy.dtype == tensor.dtype, tensor.dtype
        assert torch.equal(_bits(copy), _bits(tensor)), f"{tensor.dtype}: the same bits"


def _bits(tensor):
    """The tensor's bits as integers (complex: its real and imaginary parts'), so -0.0 and NaN compare exactly."""
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    return tensor.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()])


def test_audit_calls_an_op_the_way_198031_breaks_it():
    """A correctly declared op, given a clone of the tensor it writes as the tensor it reads: Inductor hands it one
    buffer twice (pytorch #198031). audit calls it with dst a graph input (wrong up to 2.14) and with dst an
    intermediate (wrong on 2.15.0 too), and says which call went wrong."""
    report = labkit.audit(_reverse_op("reverse_into", ("dst",)), torch.zeros(8), torch.zeros(8))
    aliasing = [f for f in report.findings if f.check == "aliasing"]
    assert len(aliasing) == 1, report
    problem = aliasing[0].problem
    assert "op(src=<a clone of dst>, dst=...)" in problem
    intermediate = ("'dst' an intermediate (-(-dst), or ~(~dst) for integers and bool, computed inside the compiled "
                    "function)")
    graph_input = "'dst' a graph input (an argument of the compiled function)"
    assert intermediate in problem, problem
    if labkit.env.torch_version() < (2, 15):
        assert f"with {graph_input} and with {intermediate}" in problem, problem
        assert "right with" not in problem, problem
    else:
        assert f"(right with {graph_input})" in problem, problem
    assert "same buffer for both" in aliasing[0].why and "#198031" in aliasing[0].why
    assert "2.15.0 gets the call with a graph input right" in aliasing[0].why
    assert "mutated too" not in aliasing[0].fix, "no advice to claim a write that never happens (02 §4)"
    assert "untyped_storage().data_ptr()" in aliasing[0].fix


def test_a_kernel_that_copies_what_it_reads_when_shared_has_no_aliasing_finding():
    report = labkit.audit(_reverse_op("reverse_guarded", ("dst",), guard=True), torch.zeros(8), torch.zeros(8))
    assert [f for f in report.findings if f.check == "aliasing"] == [], report


# --- stale, raw and hostile handles: a finding, never a crash (the stale ones in a fresh Python) ------------


def test_auditing_a_dropped_handle_refuses_instead_of_crashing():
    lines = assert_survived(run_python("""
        import torch, labkit
        lie = labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        labkit.drop("p5c::bump")
        report = labkit.audit(lie, torch.ones(3))
        print(report.ok, report.findings[0].check)
        print(report.findings[0].problem)
    """))
    assert lines[0] == "False input"
    assert "stale" in lines[1] and "Run again the cell that declares it" in lines[1]


def test_auditing_a_redeclared_handle_is_not_a_clean_bill_of_health():
    lines = assert_survived(run_python("""
        import torch, labkit
        lie = labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        report = labkit.audit(lie, torch.ones(3))
        print(report.ok, [f.check for f in report.findings])
    """))
    assert lines[-1] == "False ['input']"


def test_raw_handles_that_dangle_are_refused_too():
    """A learner's own stale CustomOpDef, packet or overload: torch would run freed state."""
    lines = assert_survived(run_python("""
        import torch, labkit

        @torch.library.custom_op("mylab::op", mutates_args=())
        def first(x: torch.Tensor) -> torch.Tensor:
            return x + 100

        packet, overload = torch.ops.mylab.op, torch.ops.mylab.op.default

        @torch.library.custom_op("mylab::op", mutates_args=("x",))
        def second(x: torch.Tensor) -> None:
            x.add_(1)

        for handle in (first, packet, overload):
            report = labkit.audit(handle, torch.ones(3))
            print([f.check for f in report.findings], "stale" in report.findings[0].problem)
        print(labkit.audit(second, torch.ones(3)).ok, labkit.audit(torch.ops.mylab.op, torch.ones(3)).ok)
    """))
    assert lines == ["['input'] True"] * 3 + ["True True"]


def test_audit_survives_hostile_objects():
    class Hostile:
        def __repr__(self):
            raise RuntimeError("no repr for you")

        def __getattr__(self, name):
            raise RuntimeError("no attributes either")

    for thing in (Hostile(), None, 42, "x" * 10_000, torch.ones(2), torch.add, torch.ops.aten):
        report = audit(thing)
        assert report.findings[0].check == "input" and len(report.op) <= 80


def test_labkit_audit_is_callable_as_documented():
    report = labkit.audit(labkit.declare("t_adv::audited"), torch.ones(2))
    assert report.ok, str(report)
    from labkit.auditing import audit as same

    assert same is labkit.audit


# --- correct ops whose write leaves the values as they were: no advice to drop the declaration --------------


def _prefilled_add_out():
    x, y = torch.randn(3), torch.randn(3)
    return torch.ops.aten.add.out, (x, y), {"out": x + y}


@pytest.mark.parametrize("case", [
    _prefilled_add_out,
    lambda: (torch.ops.aten.zero_.default, (torch.zeros(3),), {}),
    lambda: (torch.ops.aten.relu_.default, (torch.rand(3),), {}),
    lambda: (torch.ops.aten.clamp_.default, (torch.rand(3), 0.0, 1.0), {}),
    lambda: (torch.ops.aten.detach_.default, (torch.randn(3),), {}),
], ids=["add.out pre-filled", "zero_ of zeros", "relu_ of non-negatives", "clamp_ in range", "detach_"])
def test_a_write_of_equal_values_is_not_called_undeclared_advice(case):
    """Advising to drop 'out' from mutates_args here would create the silent bug the lab teaches."""
    op, args, kwargs = case()
    report = labkit.audit(op, *args, **kwargs)
    assert "drop" not in str(report) and "remove" not in str(report), str(report)
    assert not [f for f in report.findings if f.check == "declaration"], str(report)


# --- an output that shares an input's memory (issue 61): torch's eager check compares storages -----------------

def _returns_shared_memory(name, make):
    """A custom_op whose kernel returns its input's memory in a new storage, ``make(x)``."""
    op = torch.library.custom_op(f"t::{name}", lambda x: make(x), mutates_args=(),
                                 schema="(Tensor x) -> Tensor")
    op.register_fake(lambda x: torch.empty_like(x))
    return op


SHARED_MEMORY = {
    "from_numpy": lambda x: torch.from_numpy(x.numpy()),
    "dlpack": lambda x: torch.from_dlpack(torch.utils.dlpack.to_dlpack(x)),
    "from_numpy_of_a_slice": lambda x: torch.from_numpy(x.numpy()[1:]),
}


@pytest.mark.parametrize("how", list(SHARED_MEMORY))
def test_an_output_in_a_new_storage_over_an_inputs_memory_is_found(how):
    op = _returns_shared_memory(f"shared_{how}", SHARED_MEMORY[how])
    x = torch.zeros(3)
    out = op(x)
    assert out.untyped_storage() is not x.untyped_storage() and out.data_ptr() >= x.data_ptr(), \
        "torch's eager check passed it: a storage of its own over x's memory"
    report = audit(op, torch.zeros(3))
    memory = [f for f in report.findings if f.check == "memory"]
    assert len(memory) == 1, str(report)
    assert memory[0].problem == ("its output shares memory with 'x', and the schema does not say so: in a new "
                                 "storage over the same memory, which torch's own check lets through (it compares "
                                 "storages)")
    assert "notebook 03" in memory[0].why and "clone()" in memory[0].fix


def test_a_copy_a_declared_view_and_disjoint_memory_are_not_found():
    copy = torch.library.custom_op("t::copies", lambda x: torch.from_numpy(x.numpy().copy()), mutates_args=(),
                                   schema="(Tensor x) -> Tensor")
    copy.register_fake(lambda x: torch.empty_like(x))
    assert "memory" not in audit(copy, torch.zeros(3)).kinds()
    lib = torch.library.Library("t", "FRAGMENT")
    lib.define("declared_view(Tensor(a) x) -> Tensor(a)")
    lib.impl("declared_view", lambda x: x[1:], "CompositeExplicitAutograd")
    lib.impl("declared_view", lambda x: x[1:], "Meta")
    try:
        assert "memory" not in audit(torch.ops.t.declared_view.default, torch.zeros(3)).kinds()
    finally:
        labkit.op_names._destroy_library(lib)
    assert not auditing.declaration._overlap(torch.zeros(2), torch.zeros(2))
    base = torch.zeros(6)
    assert auditing.declaration._overlap(base.view(2, 3).t()[2:], base[5:]), "a transposed view reaches its last byte"
    assert auditing.declaration._overlap(base[1:2].expand(4), base[1:3]), "a stride of 0 reaches one element"
    assert not auditing.declaration._overlap(base[:3], base[3:]), "neighbours share no byte"
    assert auditing.declaration._overlap(base[::2], base[1::2]) is True, "interleaved strided views: their spans meet"


# --- audit's words match what happened (issue 62) ------------------------------------------------------------

def _count_positives(name, writes):
    @torch.library.custom_op(f"t::{name}", mutates_args=("x",))
    def op(x: torch.Tensor) -> int:
        if writes:
            x.add_(1)
        return int((x > 0).sum())

    op.register_fake(lambda x: torch.library.get_ctx().new_dynamic_size())
    return op


def test_a_verdict_on_compiled_runs_never_says_agreed_when_the_op_ran_eagerly_at_a_graph_break():
    report = audit(_count_positives("count_over_declared", writes=False), torch.randn(4))
    assert auditing.GRAPH_BREAK_NOTE in report.cannot_see
    told = [f.compiled for f in report.findings if f.compiled]
    assert told and all("agreed" not in said and "none of them compiled it" in said for said in told), str(report)


def test_a_hint_never_contradicts_the_error_it_explains():
    op = labkit.declare(name="t::needs_grad", returns="fresh")
    grad = [f for f in audit(op, torch.randn(3, requires_grad=True)).findings if "register_autograd" in f.problem]
    assert grad and all("register_autograd" in f.fix and "fake kernel" not in f.fix for f in grad), grad
    writes_int = audit(_count_positives("count_and_bump", writes=True), torch.randn(4))
    alias = [f for f in writes_int.findings if "output has alias annotations" in f.problem]
    assert alias, str(writes_int)
    assert all("in its returns" not in f.why and "returns SymInt (not a plain tensor)" in f.why for f in alias), alias


@pytest.mark.skipif(not hasattr(torch.Tag, "out"), reason="Tag.inplace and Tag.out are new in torch 2.13")
def test_tagged_ops_outs_and_torchs_own_ops_are_not_found_even_with_one_tensor_passed_twice():
    """Declared aliases are not findings: an in-place op returning its input (called as f(x, x) too), an out= op
    returning out, torch's own views; the memory check judges only what the schema does not say."""
    inplace = torch.library.custom_op("t::add_into", lambda x, y: x.add_(y), mutates_args=("x",),
                                      schema="(Tensor(a!) x, Tensor y) -> Tensor(a!)", tags=(torch.Tag.inplace,))
    x = torch.ones(3)
    for args in ((torch.ones(3), torch.ones(3)), (x, x)):
        assert "memory" not in audit(inplace, *args).kinds()

    @torch.library.custom_op("t::scale_out", mutates_args={"out"}, tags=(torch.Tag.out,))
    def scale_out(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        return torch.mul(x, 2, out=out)

    assert "memory" not in audit(scale_out, torch.ones(3), out=torch.empty(3)).kinds()
    assert "memory" not in audit(torch.ops.aten.split.Tensor, torch.ones(4), 2).kinds()


def test_after_an_eager_failure_opcheck_still_runs():
    """The memory check needs the op's output: after an eager error it says nothing, and the audit goes on."""
    op = labkit.declare(name="t::returns_input_no_fake", writes=("x",), mutates_args=("x",), returns="input",
                        fake=False)
    report = audit(op, torch.randn(3))
    assert "opcheck" in report.kinds() and "memory" not in report.kinds(), str(report)
    assert "opcheck" in report.checks_run


def test_a_list_output_sharing_an_inputs_memory_is_one_finding():
    """A Tensor[] return whose tensors all share x's memory is one finding for that return and x, not one per
    tensor: the sentence would repeat word for word."""
    lib = torch.library.Library("t", "FRAGMENT")
    lib.define("split_shared(Tensor x) -> Tensor[]")
    lib.impl("split_shared", lambda x: [torch.from_numpy(x.numpy()[:1]), torch.from_numpy(x.numpy()[1:])], "CPU")
    lib.impl("split_shared", lambda x: [x.new_empty(1), x.new_empty(x.shape[0] - 1)], "Meta")
    try:
        report = audit(torch.ops.t.split_shared.default, torch.zeros(3))
        memory = [f for f in report.findings if f.check == "memory"]
        assert len(memory) == 1, str(report)
        assert memory[0].problem.startswith("its output shares memory with 'x'"), memory[0].problem
    finally:
        labkit.op_names._destroy_library(lib)
