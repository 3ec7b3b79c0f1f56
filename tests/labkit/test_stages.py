"""labkit.stages: compile_and_compare, the core experiment, against real torch.compile on the CPU (no mocks).

Each stage's graphs and code; the verdict on outputs, inputs, state and gradients; what learners really pass it
(a function that calls .backward() itself, an optimizer step, rebound globals, module attributes, generators, bf16
outputs, NaN, expanded tensors); the caller's data never changed, no global reset, errors as data or one sentence;
and serving (which graph ran each call).
"""

import functools
import subprocess
import sys

import numpy
import pytest
import torch

import labkit
from labkit import compile_and_compare, declare, ops, stages
from labkit import _torch as internals
from labkit.stages import split_qualname
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
            ops.destroy_custom_op(name)


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


# --- what learners really pass it: a function that calls .backward() itself ---------------------------------
# Each case once made a false "DIFFER" (blamed on torch.compile) or changed the learner's own objects.
# ``torch.compiler.is_compiling()`` (True only while Dynamo traces) makes a genuine difference where a test
# checks that labkit still sees one.


def compiling() -> bool:
    return torch.compiler.is_compiling()


w = torch.ones(3, requires_grad=True)


def backward_through_global(x):
    loss = (x * w).sum() * (3.0 if compiling() else 1.0) if DIFFERENT_GRADS else (x * w).sum()
    loss.backward()
    return x * 2


DIFFERENT_GRADS = False


@pytest.fixture
def fresh_w():
    global DIFFERENT_GRADS
    w.grad = torch.full((3,), 7.0)
    yield w.grad
    DIFFERENT_GRADS = False
    w.grad = None


def test_backward_inside_the_function_leaves_the_callers_grad_untouched(fresh_w):
    report = compile_and_compare(backward_through_global, torch.arange(3.0))
    assert report.verdict.agree, str(report.verdict)
    assert w.grad is fresh_w and torch.equal(w.grad, torch.full((3,), 7.0))  # not 7 + x, nor 7 + 2x


def test_gradients_the_function_makes_itself_are_compared(fresh_w):
    global DIFFERENT_GRADS
    DIFFERENT_GRADS = True
    report = compile_and_compare(backward_through_global, torch.arange(3.0))
    assert report.verdict.outputs_match and not report.verdict.agree
    assert "w.grad differs afterwards: eager changed it, compiled changed it differently" in report.verdict.problems
    assert torch.equal(w.grad, torch.full((3,), 7.0))


def test_backward_on_an_argument_compares_its_grad_and_keeps_the_callers():
    x = torch.arange(3.0, requires_grad=True)
    x.grad = torch.full((3,), 5.0)

    def step(x):
        (x * x * (2.0 if compiling() else 1.0)).sum().backward()
        return x.detach() + 1

    report = compile_and_compare(step, x)
    assert report.verdict.outputs_match and not report.verdict.inputs_match
    assert report.verdict.problems == ("x.grad differs afterwards: eager changed it, compiled changed it differently",)
    assert torch.equal(x.grad, torch.full((3,), 5.0))

    same = compile_and_compare(lambda xs: (xs["a"][0] ** 2).sum().backward(), {"a": [x]})
    assert same.verdict.agree and same.verdict.mutated_eager == ("xs['a'][0].grad",)
    assert torch.equal(x.grad, torch.full((3,), 5.0))


# --- state outside the arguments that both runs change: optimizers, globals, modules, generators ------------


torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def train_step(x):
    optimizer.zero_grad()
    loss = model(x).pow(2).sum()
    loss.backward()
    optimizer.step()
    return loss.detach()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_optimizer_step_inside_the_function_agrees_and_the_model_is_untouched(backend):
    weight, bias = model.weight.detach().clone(), model.bias.detach().clone()
    report = compile_and_compare(train_step, calls=[(torch.ones(4, 3),), (torch.ones(4, 3),)], backend=backend)
    assert report.verdict.agree, str(report.verdict)
    assert torch.equal(model.weight, weight) and torch.equal(model.bias, bias)
    assert len(optimizer.state) == 0 and model.weight.grad is None  # no momentum buffer, no gradient left
    assert not any(key.startswith("_dynamo") for key in vars(model.weight))


counter = 0


def count_calls(x):
    global counter
    counter += 2 if compiling() else 1
    return x * 2


def count_and_scale(x):
    global counter
    counter += 1
    return x * counter


def test_a_rebound_global_starts_each_run_from_the_callers_value():
    report = compile_and_compare(count_and_scale, calls=[(torch.ones(2),), (torch.ones(2),)])
    assert report.verdict.agree, str(report.verdict)
    assert counter == 0


def test_a_global_the_runs_rebind_differently_is_named():
    report = compile_and_compare(count_calls, torch.ones(2))
    assert report.verdict.outputs_match and not report.verdict.state_match
    assert report.verdict.problems == ("counter differs afterwards: eager changed it, compiled changed it differently",)
    assert counter == 0


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.count = 0
        self.total = torch.zeros(1)  # a plain tensor attribute, not a buffer
        self.register_buffer("seen", torch.zeros(1))

    def forward(self, x):
        self.count += 1
        self.total += x.sum()
        self.seen.add_(1)
        return x * self.count + self.total + self.seen


def test_module_attributes_and_buffers_are_restored_between_and_after_the_runs():
    module = Counting()
    total, seen = module.total, module.seen
    report = compile_and_compare(module, torch.ones(2))
    assert report.verdict.agree, str(report.verdict)
    assert module.count == 0 and module.total is total and module.seen is seen
    assert torch.equal(total, torch.zeros(1)) and torch.equal(seen, torch.zeros(1))


class Accumulator:  # a plain object, not a Module: its attributes are found through the global that holds it
    def __init__(self):
        self.count = 0
        self.total = torch.zeros(1)


accumulator = Accumulator()
DOUBLE_WHEN_COMPILING = False


def accumulate(x):
    accumulator.count += 1
    accumulator.total += x.sum() * (2.0 if DOUBLE_WHEN_COMPILING and compiling() else 1.0)
    return x * accumulator.count


def test_a_plain_objects_tensor_attribute_is_restored_and_a_real_difference_in_it_is_named():
    global DOUBLE_WHEN_COMPILING
    total = accumulator.total
    assert compile_and_compare(accumulate, torch.ones(2)).verdict.agree
    assert accumulator.count == 0 and accumulator.total is total and torch.equal(total, torch.zeros(1))
    DOUBLE_WHEN_COMPILING = True
    try:
        report = compile_and_compare(accumulate, torch.ones(2))
    finally:
        DOUBLE_WHEN_COMPILING = False
    assert report.verdict.problems == (
        "accumulator.total differs afterwards: eager changed it, compiled changed it differently",), report.verdict
    assert accumulator.total is total and torch.equal(total, torch.zeros(1))


generator = torch.Generator().manual_seed(0)


def test_a_global_generator_is_replayed_and_left_where_it_was():
    state = generator.get_state()
    report = compile_and_compare(lambda x: x + torch.rand(3, generator=generator), torch.zeros(3))
    assert report.verdict.agree, str(report.verdict)
    assert torch.equal(generator.get_state(), state)


def test_a_generator_argument_is_copied_for_each_run():
    own = torch.Generator().manual_seed(1)
    state = own.get_state()
    report = compile_and_compare(lambda x, g: x + torch.rand(3, generator=g), torch.zeros(3), own)
    assert report.verdict.agree and torch.equal(own.get_state(), state)


# --- dtypes' own tolerances, NaN equal to NaN ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_outputs_get_their_own_tolerance(dtype):
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(dtype)
    fn = lambda x: torch.nn.functional.gelu(x) * 2 + 1  # noqa: E731 - inductor computes this in fp32, eager rounds each op
    assert compile_and_compare(fn, x, backend="inductor").verdict.agree
    off = compile_and_compare(lambda x: fn(x) * (1.05 if compiling() else 1.0), x, backend="inductor")
    assert off.verdict.problems == ("outputs differ",)


def test_the_same_nan_counts_as_equal_in_python_numpy_and_tensors():
    x = torch.tensor([1.0, float("nan")])
    report = compile_and_compare(lambda x: (x.sum().item(), x.numpy() * 2, x * 2), x, backend="eager")
    assert report.verdict.agree, str(report.verdict)


# --- an expanded tensor keeps its footprint; nested inputs, nonlocals, objects that cannot be looked at -----


def test_an_expanded_argument_is_copied_and_compared_without_materialising():
    report = compile_and_compare(lambda x, big: x + big[:2], torch.ones(2), torch.zeros(1).expand(2 ** 40))
    assert report.ok and report.verdict.agree, str(report.verdict)


def test_nested_inputs_still_work():
    inputs = {"xs": [torch.ones(2), torch.zeros(2)], "k": 3}
    report = compile_and_compare(lambda d: [t.add_(d["k"]) for t in d["xs"]], inputs)
    assert report.verdict.agree and report.verdict.mutated_eager == ("d['xs'][0]", "d['xs'][1]")
    assert torch.equal(inputs["xs"][0], torch.ones(2)) and inputs["k"] == 3


def test_a_nonlocal_the_function_rebinds_is_restored():
    def make():
        n = 0

        def bump(x):
            nonlocal n
            n += 1
            return x * n

        return bump, lambda: n

    bump, current = make()
    report = compile_and_compare(bump, calls=[(torch.ones(2),), (torch.ones(2),)])
    assert report.verdict.agree, str(report.verdict)
    assert current() == 0


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_a_nested_tensor_input_gets_one_sentence(layout):
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=layout)
    with pytest.raises(labkit.stages.InputError, match="is a nested tensor.*to_padded_tensor"):
        labkit.compile_and_compare(lambda t: t * 2, nested)


# --- one label per name, learning-rate schedulers, small views of big bases ---------------------------------


shared_name = torch.zeros(2)


def _make_helper():
    shared_name = torch.zeros(2)  # noqa: F811 - a closure cell with the global's name, on purpose

    def helper(x):
        shared_name.add_(1)
        return x + shared_name
    return helper, shared_name


def test_a_closure_cell_and_a_global_of_the_same_name_are_both_put_back():
    helper, cell_tensor = _make_helper()

    def fn(x):
        shared_name.add_(1)
        return helper(x)

    report = compile_and_compare(fn, torch.ones(2))
    assert report.verdict.agree, str(report.verdict)
    assert torch.equal(shared_name, torch.zeros(2)) and torch.equal(cell_tensor, torch.zeros(2))


scheduled_model = torch.nn.Linear(2, 2)
scheduled_optimizer = torch.optim.SGD(scheduled_model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(scheduled_optimizer, step_size=1, gamma=0.5)


def test_a_learning_rate_scheduler_is_put_back_after_the_runs():
    def step(x):
        scheduled_optimizer.zero_grad()
        scheduled_model(x).sum().backward()
        scheduled_optimizer.step()
        scheduler.step()
        return scheduled_optimizer.param_groups[0]["lr"] * x

    before = (scheduler.last_epoch, scheduler.get_last_lr())
    report = compile_and_compare(step, torch.ones(2))
    assert report.verdict.agree, str(report.verdict)
    assert (scheduler.last_epoch, scheduler.get_last_lr()) == before


# --- the caller's data is never changed; each run starts from the caller's state ----------------------------


def test_tensors_inside_lists_are_copied_and_compared():
    xs = [torch.zeros(3), torch.zeros(3)]
    report = compile_and_compare(lambda ts: [t.add_(1) for t in ts], xs)
    assert all(torch.equal(t, torch.zeros(3)) for t in xs)  # the caller's list is untouched
    assert report.verdict.agree and report.verdict.mutated_eager == ("ts[0]", "ts[1]")


def test_a_mutation_inside_a_dict_is_seen():
    bump = labkit.declare(name="t_adv::bump", writes=("x",), mutates_args=(), returns="none")
    report = compile_and_compare(lambda d: (bump(d["x"]), d["x"] * 3)[1], {"x": torch.ones(2)})
    assert not report.verdict.agree and "d['x'] differs afterwards" in str(report.verdict)


def test_closure_tensors_start_each_run_from_the_callers_value_and_are_restored():
    counter = torch.zeros(1)

    def count(x):
        counter.add_(1)
        return x + counter

    report = compile_and_compare(count, torch.zeros(2))
    assert report.verdict.agree  # both runs saw counter == 0, so both return 1
    assert torch.equal(counter, torch.zeros(1))


def test_module_buffers_are_restored_and_compared():
    bn = torch.nn.BatchNorm1d(3)
    report = compile_and_compare(bn, torch.randn(4, 3))
    assert report.verdict.agree
    assert int(bn.num_batches_tracked) == 0 and torch.equal(bn.running_mean, torch.zeros(3))


def test_shared_storage_stays_shared_in_each_runs_copy():
    def f(a, b):
        a.add_(1)
        return b * 10

    x = torch.zeros(2)
    report = compile_and_compare(f, x, x)
    assert report.verdict.agree and report.verdict.mutated_eager == ("a", "b")  # b saw a's write
    assert torch.equal(x, torch.zeros(2))


def test_mark_dynamic_survives_the_copy():
    x = torch.ones(5)
    torch._dynamo.mark_dynamic(x, 0)
    report = compile_and_compare(lambda t: t * 2, x, dynamic=False)
    assert report.dynamo_graphs[0].input_shapes[-1].startswith("[s")


GROWS = torch.zeros(4)


def _resizes_then_raises(x):
    GROWS.resize_(8)
    GROWS.fill_(1.0)
    raise ValueError("boom")


def test_a_global_resized_before_a_raise_is_given_back():
    report = labkit.compile_and_compare(_resizes_then_raises, torch.ones(3))
    assert report.eager_error is not None and "boom" in report.eager_error.message
    assert GROWS.shape == (4,) and torch.equal(GROWS, torch.zeros(4))


class _Box:
    pass


def test_an_object_passed_through_is_the_same_object_both_ways():
    box = _Box()
    report = labkit.compile_and_compare(lambda x, o: (x + 1, o), torch.ones(3), box)
    assert report.verdict is not None and report.verdict.outputs_match, report.verdict


def test_an_experiment_leaves_every_lab_ops_call_count_as_it_was():
    op = labkit.declare(name="t_fire::twice")
    try:
        op(torch.ones(2))
        op(torch.ones(2))
        counts = ops.call_counts()
        labkit.compile_and_compare(lambda x: op(x) + 1, torch.ones(2))
        labkit.audit(op, torch.ones(2))
        assert ops.call_counts() == counts
    finally:
        labkit.drop("t_fire::twice")


# --- verdicts reflect the program ---------------------------------------------------------------------------


def test_random_numbers_are_the_same_in_both_runs_and_the_callers_generator_does_not_move():
    state = torch.get_rng_state()
    report = compile_and_compare(lambda t: t + torch.rand(3), torch.zeros(3))
    assert report.verdict.agree
    assert torch.equal(torch.get_rng_state(), state)


def test_inductor_randomness_is_explained_not_an_unexplained_differ():
    report = compile_and_compare(lambda t: t + torch.rand(3), torch.zeros(3), backend="inductor")
    assert not report.verdict.agree and "fallback_random = True" in str(report.verdict)
    with internals.config_patches(inductor={"fallback_random": True}):
        assert compile_and_compare(lambda t: t + torch.rand(3), torch.zeros(3), backend="inductor").verdict.agree


def test_in_place_on_a_leaf_that_requires_grad_fails_as_in_eager():
    leaf = torch.zeros(2, requires_grad=True)
    report = compile_and_compare(lambda t: t.add_(1), leaf)
    assert report.eager_error is not None and "leaf Variable" in report.eager_error.message
    assert report.verdict is None


def test_an_output_labkit_cannot_compare_is_never_called_agree():
    class Opaque:
        def __eq__(self, other):
            raise TypeError("no")

    report = compile_and_compare(lambda t: (t + 1, Opaque()), torch.ones(2), backend="eager")
    assert not report.verdict.agree and "cannot compare output[1] (Opaque)" in str(report.verdict)


# --- no global reset: the caller's compiled functions survive, and every experiment compiles afresh ---------


def _counting_backend(graphs):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend


def test_the_callers_compiled_functions_and_compile_callbacks_survive():
    graphs, starts = [], []
    mine = torch.compile(lambda t: t - 1, backend=_counting_backend(graphs))
    mine(torch.ones(3))
    callback = lambda: starts.append(1)  # noqa: E731
    internals.on_dynamo_compile_start(callback)
    compile_and_compare(lambda t: t * 2, torch.ones(3))
    assert starts, "the callback ran during the experiment's compile"
    mine(torch.ones(3))
    assert len(graphs) == 1  # not recompiled: labkit did not reset torch.compile
    before = len(starts)
    compile_and_compare(lambda t: t * 3, torch.ones(3))
    assert len(starts) > before  # still registered


class Affine(torch.nn.Module):
    def forward(self, x):
        return x * 2 + 1


def _plain(x):
    return x.sin()


k = torch.ones(1)


def _closure():
    def inner(x):
        return x + k
    return inner


@pytest.mark.parametrize("make", [lambda: _plain, lambda: (lambda x: x.cos()), _closure, lambda: Affine(),
                                  lambda: Affine().forward, lambda: functools.partial(torch.add, other=1.0)],
                         ids=["function", "lambda", "closure", "module", "method", "partial"])
def test_every_experiment_compiles_afresh_without_a_reset(make):
    fn = make()
    for _ in range(2):
        report = compile_and_compare(fn, calls=[(torch.ones(3),), (torch.ones(5),), (torch.ones(7),)], dynamic=None)
        assert report.graphs_per_call == [1, 1, 0], report.graphs_per_call
        assert report.verdict.agree


# --- errors as data, or one sentence naming the fix ---------------------------------------------------------


def test_numpy_and_mixed_key_dict_outputs_are_compared():
    report = compile_and_compare(lambda t: {1: t + 1, "a": t.numpy() * 0 + 1}, torch.ones(2), backend="eager")
    assert report.verdict.agree
    report = compile_and_compare(lambda t: numpy.ones(2), torch.ones(2), backend="eager")
    assert report.ok


@pytest.mark.parametrize("kwargs, words", [
    (dict(calls=[]), "calls must be a non-empty list"),
    (dict(calls=[(torch.ones(1),)], extra=True), "not both"),
    (dict(dynamic=0), "dynamic must be one of"),
    (dict(dynamic=1), "dynamic must be one of"),
    (dict(backend="nope"), "backend must be one of"),
    (dict(fullgraph="yes"), "fullgraph must be True or False"),
    (dict(meta=True), "meta tensor"),
])
def test_bad_arguments_get_one_sentence(kwargs, words):
    args = (torch.ones(2),) if not kwargs.pop("meta", False) else (torch.ones(2, device="meta"),)
    if kwargs.pop("extra", False):
        args = (torch.ones(2),)
    elif "calls" in kwargs:
        args = ()
    with pytest.raises(ValueError, match=words):
        compile_and_compare(lambda t: t + 1, *args, **kwargs)


def test_use_caches_is_gone():
    with pytest.raises(TypeError, match="use_caches"):
        compile_and_compare(lambda t: t + 1, torch.ones(1), use_caches="no")


def test_inputs_that_cannot_be_copied_get_one_sentence():
    x = torch.ones(2, requires_grad=True) * 2
    with pytest.raises(ValueError, match=r"pass t.detach\(\)"):
        compile_and_compare(lambda t: t + 1, x)
    import threading
    with pytest.raises(ValueError, match="cannot be copied"):
        compile_and_compare(lambda t, lock: t + 1, torch.ones(1), threading.Lock())


def test_sparse_inputs_come_back_as_data():
    """A sparse input is copied and compared (densely): t * 2 compiles and agrees (checked on torch 2.11.0,
    2.13.0 and 2.15.0), and the caller's input is untouched."""
    x = torch.eye(2).to_sparse()
    report = compile_and_compare(lambda t: t * 2, x)
    assert torch.equal(x.to_dense(), torch.eye(2))  # the caller's input untouched
    assert report.eager_error is None and report.ok, report
    assert report.verdict.agree and report.eager_calls == report.compiled_calls, report


@pytest.mark.parametrize("name", ["nocolons", "a::b::c", "re(gex::x", "ns::na.me", "", None])
def test_op_names_are_checked_by_fate_and_render(name):
    report = compile_and_compare(lambda t: t + 1, torch.ones(1))
    with pytest.raises(ValueError, match="namespace::name"):
        report.fate(name)
    with pytest.raises(ValueError, match="namespace::name"):
        labkit.render.to_html(report, [name])
    with pytest.raises(ValueError, match="namespace::name"):
        split_qualname(name)


# --- programs that once crashed the process, each in a fresh one --------------------------------------------


HOSTILE = r"""
import torch, labkit
cases = [
    lambda: labkit.compile_and_compare(lambda t: t.to_dense() * 2, torch.eye(3).to_sparse(), backend="inductor"),
    lambda: labkit.compile_and_compare(lambda t: t[0].item(), torch.ones(2), backend="inductor", fullgraph=True),
    lambda: labkit.compile_and_compare(lambda t: t.resize_(0), torch.ones(4)),
    lambda: labkit.compile_and_compare(lambda t: t.set_(torch.ones(9)), torch.ones(4)),
    lambda: labkit.compile_and_compare(lambda t: torch.empty(2 ** 62), torch.ones(1)),
    lambda: labkit.compile_and_compare(lambda l: l.append(torch.ones(1)), []),
]
for case in cases:
    try:
        report = case()
        print("report", report.ok)
    except ValueError as error:
        print("sentence", str(error).count("\n") == 0)
print("alive")
"""


def test_hostile_programs_do_not_crash_the_process():
    done = subprocess.run([sys.executable, "-c", HOSTILE], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("alive"), done.stderr[-2000:]
    assert "Traceback" not in done.stdout


# --- serving, the helper notebook 09 calls -----------------------------------------------


def test_serving_tells_which_graph_ran_each_call_and_none_for_eager():
    def f(x, n):
        return x * n

    calls = [(torch.ones(2), n) for n in (2, 3, 4, 2)]
    with torch._dynamo.config.patch(recompile_limit=2):
        run = stages.serving(f, calls, dynamic=False)
    assert run.served == [0, 1, None, 0], run.served
    assert len(run.graphs) == 2
    assert all(torch.equal(out, f(*args)) for out, args in zip(run.outputs, calls))
