"""labkit.audit on real ops: aten ops, tensor lists, keyword-only arguments, packets, NaN, torch's logs,
and every custom op of PyTorch's own opcheck tests (``custom_op_db``), against ``torch.library.opcheck``."""

import io
import logging

import pytest
import torch

import labkit
from labkit import audit, checks


@torch.library.custom_op("t_real::add_one_to_all", mutates_args=("xs",))
def add_one_to_all(xs: list[torch.Tensor]) -> None:
    for x in xs:
        x.add_(1)


@torch.library.custom_op("t_real::add_one_quietly", mutates_args=())
def add_one_quietly(xs: list[torch.Tensor]) -> None:
    for x in xs:
        x.add_(1)


@torch.library.custom_op("t_real::reads_all", mutates_args=("xs",))
def reads_all(xs: list[torch.Tensor]) -> None:
    pass


HAS_TAG_OUT = hasattr(torch.Tag, "out")  # torch >= 2.13: custom_op takes a keyword-only out only with it
if HAS_TAG_OUT:
    @torch.library.custom_op("t_real::double_into", mutates_args={"out"}, tags=(torch.Tag.out,))
    def double_into(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:  # notebook 09's Tag.out op
        out.copy_(x * 2)
        return out

_LIB = torch.library.Library("t_real", "FRAGMENT")
_LIB.define("double_into_quietly(Tensor x, *, Tensor out) -> ()")  # writes out, declares nothing


def _double_into_quietly(x, *, out):
    out.copy_(x * 2)


_LIB.impl("double_into_quietly", _double_into_quietly, "CompositeExplicitAutograd")
torch.library.register_fake("t_real::double_into_quietly", lambda x, *, out: None, lib=_LIB)


@torch.library.custom_op("t_real::sine", mutates_args=())
def sine(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


sine.register_fake(lambda x: torch.empty_like(x))


def declaration_fixes(report):
    return [f.fix for f in report.findings if f.check == "declaration"]


# --- 1. Tensor(a!)[]: a list of written tensors ----------------------------------------------------

def test_a_correctly_declared_tensor_list_is_not_called_over_declared():
    report = audit(torch.ops.aten._foreach_add_.Scalar, [torch.randn(3), torch.randn(2)], 1.0)
    assert report.ok, str(report)
    assert audit(add_one_to_all, [torch.randn(3), torch.randn(3)]).ok


def test_a_tensor_list_written_but_not_declared_or_declared_but_not_written_is_found():
    assert declaration_fixes(audit(add_one_quietly, [torch.randn(3)])) == ["add 'xs' to mutates_args"]
    unwritten = declaration_fixes(audit(reads_all, [torch.randn(3)]))
    assert len(unwritten) == 1 and unwritten[0].startswith("keep 'xs' declared if any input makes")


# --- 2. keyword-only arguments --------------------------------------------------------------------

def test_keyword_arguments_reach_the_op():
    out = torch.zeros(3)
    assert audit(torch.ops.aten.add.out, torch.randn(3), torch.randn(3), out=out).ok
    assert torch.equal(out, torch.zeros(3)), "audit ran on copies: the caller's out is untouched"


@pytest.mark.skipif(not HAS_TAG_OUT, reason="torch.Tag.out arrived in torch 2.13")
def test_a_keyword_only_out_op_like_notebook_09s():
    """Observed on torch 2.13.0, 2.14.1 and 2.15.0: Inductor reuses the buffer a Tag.out op wrote for a later
    clone while the op's result still aliases it, so a program returning out.clone() gets the wrong out
    (tests/torch/test_torch_findings.py::test_tag_out_result_buffer_is_reused_too_early). audit reports it."""
    report = audit(double_into, torch.randn(3), out=torch.zeros(3))
    assert report.kinds() == {"compile"} and "out differs afterwards" in str(report), str(report)


def test_an_undeclared_keyword_only_write_is_named():
    report = audit(torch.ops.t_real.double_into_quietly.default, torch.randn(3), out=torch.zeros(3))
    assert "mark it written in the schema: Tensor(a!) out" in declaration_fixes(report), str(report)  # Library.define


def test_a_keyword_named_op_does_not_collide_with_audits_own_parameter():
    report = audit(torch.ops.aten.add.out, torch.randn(3), torch.randn(3), out=torch.zeros(3), op=torch.zeros(3))
    assert [f.check for f in report.findings] == ["eager"], "torch refuses the unknown keyword: one finding"


# --- 3. OpOverloadPacket -------------------------------------------------------------------------

def test_a_packet_with_several_overloads_is_refused_naming_them():
    report = audit(torch.ops.aten.add, torch.randn(3), torch.randn(3))
    (finding,) = report.findings
    assert finding.check == "input" and "Tensor, Scalar, out" in finding.problem
    assert "torch.ops.aten.add.Tensor" in finding.fix


_LIB.define("negate.Tensor(Tensor x) -> Tensor")  # a packet whose only overload is not .default
_LIB.impl("negate.Tensor", lambda x: -x, "CompositeExplicitAutograd")
torch.library.register_fake("t_real::negate.Tensor", lambda x: torch.empty_like(x), lib=_LIB)


def test_a_packet_with_one_overload_uses_it():
    report = audit(torch.ops.t_real.negate, torch.randn(3))
    assert report.ok and report.schema.startswith("t_real::negate.Tensor"), str(report)


# --- 4. messages keep their diagnosis -------------------------------------------------------------

def test_opchecks_reason_starts_with_the_diagnosis_and_is_not_cut_inside_it():
    nan = torch.tensor([float("nan"), 1.0])
    (finding,) = [f for f in audit(sine, nan).findings if f.check.startswith("opcheck")]
    assert finding.problem.startswith("Outputs of the operator are different in eager-mode PyTorch vs "
                                      "AOTDispatcher tracing."), finding.problem
    assert "scroll up" not in finding.problem and finding.problem.endswith(".")


# --- 5. NaN ---------------------------------------------------------------------------------------

def test_nan_inputs_are_not_taken_for_a_write():
    nan = torch.tensor([float("nan"), 1.0])
    assert "declaration" not in audit(sine, nan).kinds()
    assert "declaration" not in audit(torch.ops.aten.sin.default, nan).kinds()
    assert "declaration" not in audit(torch.ops.aten.add_.Tensor, nan.clone(), torch.ones(2)).kinds()


def test_opchecks_nan_false_alarm_is_flagged_as_such():
    (finding,) = audit(sine, torch.tensor([float("nan"), 1.0])).findings
    assert "NaN" in finding.fix and "without NaN" in finding.fix


# --- 6. torch's log --------------------------------------------------------------------------------

def _filters_of_torch_handlers():
    loggers = [logging.getLogger()] + [logger for name, logger in logging.Logger.manager.loggerDict.items()
                                       if isinstance(logger, logging.Logger) and name.split(".")[0] == "torch"]
    return {id(h): list(h.filters) for logger in loggers for h in logger.handlers}


def test_torchs_log_prints_no_traceback_during_audit_and_is_restored_after():
    fake_tensor_log, printed = logging.getLogger("torch._subclasses.fake_tensor"), io.StringIO()
    handler = logging.StreamHandler(printed)  # where a notebook would show torch's log
    fake_tensor_log.addHandler(handler)
    try:
        filters = _filters_of_torch_handlers()
        report = audit(torch.ops.aten.resize_.default, torch.randn(3), [5])
        assert printed.getvalue() == "", "torch's log reached a handler during the audit"
        assert not report.ok and all("scroll up" not in f.problem for f in report.findings), str(report)
        assert _filters_of_torch_handlers() == filters
        fake_tensor_log.error("still logged after the audit")
        assert printed.getvalue() == "still logged after the audit\n"
    finally:
        fake_tensor_log.removeHandler(handler)


# --- the compiled consequence ------------------------------------------------------------------------

def test_a_declaration_finding_says_what_torch_compile_did_because_of_it():
    report = audit(labkit.declare(name="t_real::writes_quietly", writes=("x",), returns="none"), torch.randn(3))
    (declaration,) = [f for f in report.findings if f.check == "declaration"]
    assert "x differs afterwards" in declaration.compiled and "under torch.compile" in str(declaration)
    over = audit(reads_all, [torch.randn(3)])
    assert over.findings[0].compiled.startswith("not on this program")


# --- 7. PyTorch's own custom ops, audit against opcheck ----------------------------------------------

def _custom_op_db():
    pytest.importorskip("expecttest", reason="torch.testing._internal needs expecttest (tests/requirements.txt)")
    from torch.testing._internal.custom_op_db import custom_op_db

    return custom_op_db


@pytest.mark.slow
def test_audit_agrees_with_opcheck_on_pytorchs_own_custom_ops():
    disagreements = []
    for info in _custom_op_db():
        sample = next(iter(info.sample_inputs("cpu", torch.float32, requires_grad=info.supports_autograd)))
        args, kwargs = (sample.input, *sample.args), dict(sample.kwargs)
        failed = {test for test, outcome in checks.opcheck(info.op, args, kwargs=kwargs).items() if outcome != "ok"}
        report = audit(info.op, *args, **kwargs)
        found = {f.check.removeprefix("opcheck:") for f in report.findings}
        if found != failed:
            disagreements.append(f"{info.name}: opcheck failed {sorted(failed)}, audit found {sorted(found)}\n{report}")
    assert not disagreements, "\n".join(disagreements)


# --- 8. Broken ops: the failing cases of PyTorch's own opcheck tests --------------------------------
# custom_op_db's ops all pass opcheck, so agreeing on them shows only that audit raises no false alarm.
# These are the broken registrations of TestCustomOpTesting in PyTorch's test/test_custom_ops.py (a kernel
# that writes or views undeclared, no or a wrong fake kernel, an aliased mutable return, autograd registered
# at the backend key, a kernel with global state), written with Library.define as that test writes them.

_BROKEN = torch.library.Library("t_broken", "FRAGMENT")


def _below_autograd(op):
    """Autograd for ``op`` as C++ kernels register it: the forward calls ``op`` below Autograd and ADInplaceOrView."""
    below = torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)

    class Call(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with torch._C._AutoDispatchBelowAutograd(), torch._C._ExcludeDispatchKeyGuard(below):
                return op(x)

        @staticmethod
        def backward(ctx, grad):
            return grad

    return Call.apply


def _broken(name, schema, kernel, fake=None, key="CPU", autograd=True):
    _BROKEN.define(f"{name}{schema}")
    op = getattr(torch.ops.t_broken, name).default
    if autograd:
        _BROKEN.impl(name, _below_autograd(op), "Autograd")
    _BROKEN.impl(name, kernel, key)
    if fake is not None:
        _BROKEN.impl(name, fake, "Meta")
    return op


class _CloneAtBackend(torch.autograd.Function):  # its autograd runs below the Autograd key
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.5


class _CountsCalls(torch.autograd.Function):  # each call returns a different result
    calls = 0

    @staticmethod
    def forward(ctx, x):
        _CountsCalls.calls += 1
        return x.clone() * _CountsCalls.calls

    @staticmethod
    def backward(ctx, grad):
        return grad


def _writes(x):
    x.sin_()
    return x.clone()


BROKEN = {
    "writes undeclared": lambda: _broken("writes", "(Tensor x) -> Tensor", _writes, fake=lambda x: x.clone()),
    "views undeclared": lambda: _broken("views", "(Tensor x) -> Tensor", lambda x: x.view_as(x),
                                        fake=lambda x: x.view_as(x)),
    "no fake kernel": lambda: _broken("squares_numpy", "(Tensor x) -> Tensor",
                                      lambda x: torch.tensor(x.detach().numpy() ** 2)),
    "fake kernel of the wrong shape": lambda: _broken("squares", "(Tensor x) -> Tensor", lambda x: x ** 2,
                                                      fake=lambda x: x.unsqueeze(1) ** 2),
    "returns its mutated input": lambda: _broken("sin_", "(Tensor(a!) x) -> Tensor(a!)", lambda x: x.sin_(),
                                                 fake=lambda x: x),
    "autograd at the backend key": lambda: _broken("clone_at_cpu", "(Tensor x) -> Tensor", _CloneAtBackend.apply,
                                                   fake=lambda x: x.clone(), autograd=False),
    "global state": lambda: _broken("counts_calls", "(Tensor x) -> Tensor", _CountsCalls.apply,
                                    key="CompositeImplicitAutograd", autograd=False),
}


def _sample():
    return torch.tensor([0.5, 1.0], requires_grad=True)


@pytest.mark.parametrize("case", list(BROKEN))
def test_audit_agrees_with_opcheck_on_the_broken_ops_of_pytorchs_opcheck_tests(case):
    op = BROKEN[case]()
    failed = {test for test, outcome in checks.opcheck(op, (_sample(),), kwargs={}).items() if outcome != "ok"}
    report = audit(op, _sample())  # a fresh input: some of these kernels write into theirs
    found = {f.check.removeprefix("opcheck:") for f in report.findings if f.check.startswith("opcheck:")}
    assert failed, f"{case}: opcheck passes this broken op on torch {torch.__version__}"
    assert found == failed, f"{case}: opcheck failed {sorted(failed)}, audit found {sorted(found)}\n{report}"
    assert not report.ok and all(f.fix for f in report.findings), str(report)


def test_opchecks_own_limit_on_float8_is_a_note():
    """opcheck's test_schema cannot run on float8 CPU inputs, whatever the op (tests/torch/test_torch_findings.py):
    audit says so under 'not checkable here', never 'declare every written argument' for a correct op."""
    from tests.torch.test_torch_findings import widen

    report = audit(widen, torch.randn(4).to(torch.float8_e4m3fn))
    assert report.ok, str(report)
    assert "opcheck's test_schema cannot run on Float8_e4m3fn inputs" in report.cannot_see, report.cannot_see


def test_a_clone_as_another_written_argument_is_torchs_not_the_declarations():
    """Both places declared and written: audit must not tell the author to change the declaration or the kernel
    (tests/torch/test_torch_findings.py pins the torch behaviour, wrong before 2.15.0)."""
    from labkit.env import torch_version
    from tests.torch.test_torch_findings import two_states

    report = audit(two_states, torch.randn(4), torch.randn(4))
    aliasing = [f for f in report.findings if f.check == "aliasing"]
    if torch_version() >= (2, 15, 0):
        assert not aliasing, str(report)
        return
    assert len(aliasing) == 1 and "the declaration is not what is wrong" in aliasing[0].why, str(report)
    assert "copy" not in aliasing[0].fix.split(";")[0] and "mutates_args" not in aliasing[0].fix, str(report)
