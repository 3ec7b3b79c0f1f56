"""The core experiment against real torch.compile on the CPU (no mocks)."""

import pytest
import torch

import labkit
from labkit import compile_and_compare, declare
from labkit import _torch_internals as internals
from labkit.stages import as_torch_error, compare_runs
from torch.autograd.gradcheck import GradcheckError

BACKENDS = ["aot_eager", "inductor"]


def calls_then_triples(op):
    def f(x):
        op(x)
        return x * 3

    return f


@pytest.mark.parametrize("backend", BACKENDS)
def test_undeclared_mutation_is_silently_wrong(backend):
    op = declare(name="t::bump", writes=("x",), mutates_args=(), returns="none")
    report = compile_and_compare(calls_then_triples(op), torch.ones(3), backend=backend)
    assert report.ok and not report.verdict.agree
    assert not report.verdict.inputs_match
    assert report.verdict.mutated_eager == ("x",) and report.verdict.mutated_compiled == ()
    assert report.eager_calls["t::bump"] == 1 and report.compiled_calls["t::bump"] == 0
    assert report.fate("t::bump")["dynamo"] is True and report.fate("t::bump")["aot"] is False


@pytest.mark.parametrize("backend", BACKENDS)
def test_declared_mutation_agrees_and_is_functionalized(backend):
    op = declare(name="t::bump", writes=("x",), mutates_args=("x",), returns="none")
    report = compile_and_compare(calls_then_triples(op), torch.ones(3), backend=backend)
    assert report.verdict.agree
    assert report.compiled_calls["t::bump"] == 1
    aot = report.aot_graphs[0]
    (node,) = aot.calls("t::bump")
    assert node.wrapper.startswith("auto_functionalized") and node.mutating
    assert any(n.target == "copy_.default" for n in aot.nodes)
    if backend == "inductor":
        assert "torch.ops.t.bump.default(arg0_1)" in labkit.render.inductor_call(report.inductor_code[0])


def test_eager_backend_keeps_every_call():
    op = declare(name="t::pure", returns="none")
    report = compile_and_compare(lambda x: (op(x), x + 1)[1], torch.ones(2), backend="eager")
    assert report.compiled_calls["t::pure"] == 1
    assert report.aot_graphs == [] and report.fate("t::pure")["aot"] is None


def test_missing_fake_comes_back_as_data():
    op = declare(name="t::nofake", fake=False)
    report = compile_and_compare(lambda x: op(x) + 1, torch.ones(2), backend="aot_eager")
    assert report.error is not None and report.error.kind == "missing_fake"
    assert report.error.message.startswith("There was no fake impl registered")
    assert report.verdict is None and not report.ok


def test_returning_an_input_fails_in_eager_with_torchs_message():
    op = declare(name="t::ret", writes=("x",), mutates_args=("x",), returns="input")
    report = compile_and_compare(lambda x: op(x) + 1, torch.ones(2), backend="aot_eager")
    assert report.eager_error.kind == "alias_return"
    assert "must not also be an input to this custom operator" in report.eager_error.message
    assert "<module" not in report.eager_error.message


def test_dynamic_none_recompiles_once_then_goes_symbolic():
    op = declare(name="t::bump", writes=("x",), mutates_args=("x",), returns="none")
    sizes = [(torch.ones(n),) for n in (3, 5, 7)]
    report = compile_and_compare(calls_then_triples(op), calls=sizes, backend="aot_eager", dynamic=None)
    assert report.graphs_per_call == [1, 1, 0] and report.recompiles == 1
    assert report.dynamo_graphs[0].input_shapes == ("[3]",)
    assert report.dynamo_graphs[1].input_shapes[-1].startswith("[s")
    assert report.verdict.agree and report.compiled_calls["t::bump"] == 3
    assert report.verdict.mutated_eager == ("x@0", "x@1", "x@2")


def test_a_multi_call_verdict_names_the_calls_by_their_inputs_shapes():
    """Never a bare call index next to kernel-call counts: the calls are named by their inputs."""
    op = declare(name="t::bump", writes=("x",), returns="none")
    report = compile_and_compare(calls_then_triples(op), calls=[(torch.ones(2),), (torch.ones(3),)])
    assert str(report.verdict) == ("eager and compiled DIFFER: outputs differ for the inputs of shape [2] and [3]; "
                                   "x differs afterwards for the inputs of shape [2] and [3]: eager changed it, "
                                   "compiled left it")


@pytest.mark.parametrize("dynamic, expected", [(False, [1, 1, 1]), (True, [1, 0, 0])])
def test_static_recompiles_per_shape_dynamic_does_not(dynamic, expected):
    op = declare(name="t::scale")
    report = compile_and_compare(lambda x: op(x) + 1, calls=[(torch.ones(n),) for n in (2, 3, 4)],
                                 backend="aot_eager", dynamic=dynamic)
    assert report.graphs_per_call == expected


def test_unused_pure_result_is_removed_by_aot_but_not_dynamo():
    op = declare(name="t::scale")

    def f(x):
        op(x)
        return x + 1

    report = compile_and_compare(f, torch.ones(2), backend="inductor")
    assert report.fate("t::scale") == {"dynamo": True, "aot": False, "inductor": False, "ran": False}
    assert report.verdict.agree  # removing it is correct: nothing observable changed


def test_each_capture_starts_from_a_clean_compiler():
    op = declare(name="t::scale")
    f = lambda x: op(x) + 1  # noqa: E731
    for _ in range(12):  # more than Dynamo's recompile limit: never falls back to eager
        report = compile_and_compare(f, torch.ones(2), backend="aot_eager")
        assert report.graphs_per_call == [1]


def test_captures_trace_for_real_even_when_the_cache_is_warm():
    op = declare(name="t::scale")
    f = lambda x: op(x) * 2  # noqa: E731
    for _ in range(2):
        report = compile_and_compare(f, torch.ones(2), backend="inductor")
        assert report.aot_graphs and report.inductor_code
        assert report.cache["fxgraph_hit"] == 0 and report.cache["aot_hit"] == 0


def test_bad_arguments_are_refused_before_running():
    with pytest.raises(ValueError, match="backend must be"):
        compile_and_compare(lambda x: x, torch.ones(1), backend="tensorrt")
    with pytest.raises(ValueError, match="dynamic must be"):
        compile_and_compare(lambda x: x, torch.ones(1), dynamic="yes")


def test_compare_runs_reports_output_and_input_differences():
    orig = [(torch.zeros(2), 5)]
    same = [(torch.ones(2), (torch.zeros(2), 5))]
    verdict = compare_runs(orig, same, same)
    assert verdict.agree and str(verdict).startswith("eager and compiled agree")
    other_out = [(torch.full((2,), 2.0), (torch.zeros(2), 5))]
    assert not compare_runs(orig, same, other_out).outputs_match
    mutated = [(torch.ones(2), (torch.ones(2), 5))]
    verdict = compare_runs(orig, mutated, same, ["x", "k"])
    assert verdict.outputs_match and not verdict.inputs_match
    assert verdict.mutated_eager == ("x",)
    assert str(verdict) == "eager and compiled DIFFER: x differs afterwards: eager changed it, compiled left it"


def test_error_chains_are_unwrapped_to_the_innermost_message():
    try:
        try:
            raise RuntimeError("There was no fake impl registered for <CustomOpDef(x::y)>.")
        except RuntimeError as inner:
            raise ValueError("wrapper\n\nfrom user code:\n  File x") from inner
    except ValueError as outer:
        error = as_torch_error(outer, "compiled")
    assert error.kind == "missing_fake" and error.type_name == "RuntimeError"
    assert error.message.startswith("There was no fake impl")


def test_mark_dynamic_survives_the_copies_labkit_makes():
    op = declare(name="t::scale")
    first = torch.ones(4)
    torch._dynamo.mark_dynamic(first, 0)
    report = compile_and_compare(lambda x: op(x) + 1, calls=[(first,), (torch.ones(6),)], dynamic=None)
    assert report.graphs_per_call == [1, 0]


# --- training: backward graphs and gradients ------------------------------------------------------


@pytest.fixture(autouse=True)
def no_training_ops_left():
    """The plain-torch ops these tests define are gone afterwards (labkit's cache tag hashes every live op)."""
    yield
    for name in internals.custom_op_qualnames():
        if name.startswith("tgrad::"):
            internals.destroy_custom_op(name)


def _sin_op(name, backward):
    """A custom op computing sin(x), with the given autograd formula."""

    @torch.library.custom_op(f"tgrad::{name}", mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x)

    @op.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    op.register_autograd(backward, setup_context=setup_context)
    return op


def _cos_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos()


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_graph_is_captured_and_gradients_compared(backend):
    op = _sin_op(f"sin_{backend}", _cos_backward)
    x = torch.randn(5, requires_grad=True)
    report = compile_and_compare(lambda x: op(x) * 2, x, backend=backend, backward=True)
    assert report.verdict.agree and report.verdict.gradients == ("x",)
    assert str(report.verdict) == "eager and compiled agree (outputs, inputs and gradients)"
    (forward,) = report.aot_graphs
    (backward,) = report.backward_graphs
    assert forward.has(f"tgrad::sin_{backend}")
    assert "cos" in backward.code and not backward.has(f"tgrad::sin_{backend}")  # the formula, traced into aten
    assert labkit.render.stage_code(report)["backward"] == backward.code
    assert "--- AOTAutograd backward graph ---" in labkit.render.text(report)
    assert "AOTAutograd backward graph</summary>" in labkit.render.to_html(report)
    assert x.grad is None  # the caller's tensor got no gradient


def test_without_backward_no_backward_graph_and_no_gradients():
    op = _sin_op("sin_fw", _cos_backward)
    report = compile_and_compare(lambda x: op(x) * 2, torch.randn(3, requires_grad=True))
    assert report.verdict.agree and report.verdict.gradients == ()
    assert report.backward_graphs == []  # AOTAutograd compiles the backward lazily: nothing ran it
    assert str(report.verdict) == "eager and compiled agree (outputs and inputs)"


def test_a_wrong_formula_agrees_eager_vs_compiled_and_only_gradcheck_catches_it():
    wrong = _sin_op("sin_wrong", lambda ctx, grad: grad * ctx.saved_tensors[0].sin())  # should be cos
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    report = compile_and_compare(lambda x: wrong(x), x, backward=True)
    assert report.verdict.agree  # both runs use the same (wrong) formula
    with pytest.raises(GradcheckError):
        torch.autograd.gradcheck(wrong, (x,))
    right = _sin_op("sin_right", _cos_backward)
    assert torch.autograd.gradcheck(right, (x,))


def test_a_backward_that_reads_python_state_is_baked_in_by_compile():
    """torch: backward formulas "must not depend on or mutate global state"; compile traces them once."""
    seen = {"calls": 0}

    def counting_backward(ctx, grad):
        seen["calls"] += 1
        return grad * seen["calls"]

    op = _sin_op("sin_counter", counting_backward)
    x = torch.randn(3, requires_grad=True)
    report = compile_and_compare(lambda x: op(x), calls=[(x,), (x,)], backward=True)
    assert report.ok and not report.verdict.grads_match and not report.verdict.agree
    assert report.verdict.outputs_match and report.verdict.inputs_match
    assert "the gradient of x@0 differs" in report.verdict.problems
    assert "the gradient of x@1 differs" in report.verdict.problems


def test_module_parameter_gradients_are_compared_and_the_callers_grad_is_untouched():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh())
    weight, bias = model[0].weight, model[0].bias
    sentinel = torch.full_like(weight, 7.0)
    weight.grad = sentinel
    before = weight.detach().clone()
    report = compile_and_compare(model, torch.randn(2, 4), backward=True, backend="inductor")
    assert report.verdict.agree
    assert set(report.verdict.gradients) == {"fn.0.weight", "fn.0.bias"}
    assert len(report.backward_graphs) == 1
    assert weight.grad is sentinel and torch.equal(sentinel, torch.full_like(weight, 7.0))
    assert bias.grad is None and torch.equal(weight.detach(), before)


def test_backward_with_a_loss_function():
    op = _sin_op("sin_loss", _cos_backward)
    target = torch.randn(3)
    report = compile_and_compare(lambda x: op(x), torch.randn(3, requires_grad=True),
                                 backward=lambda out: ((out - target) ** 2).mean())
    assert report.verdict.agree and report.verdict.gradients == ("x",)


def test_backward_without_anything_that_requires_grad_says_so():
    report = compile_and_compare(lambda x: x.sin(), torch.randn(3), backward=True)
    assert not report.verdict.agree and report.verdict.gradients == ()
    assert "no output requires grad" in str(report.verdict)


def test_a_bad_backward_argument_is_refused_in_one_sentence():
    with pytest.raises(ValueError, match="backward must be True, False, or a function"):
        compile_and_compare(lambda x: x, torch.ones(2), backward="yes")


def test_a_loss_function_that_returns_no_scalar_gets_one_sentence():
    report = compile_and_compare(lambda x: x * 2, torch.ones(3, requires_grad=True), backward=lambda out: out)
    assert report.eager_error is not None and report.verdict is None
    assert report.eager_error.message == ("backward=loss_fn must return a one-element tensor to call .backward() "
                                          "on (e.g. lambda out: out.sum()), not Tensor[3].")
