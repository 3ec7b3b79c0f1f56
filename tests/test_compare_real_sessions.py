"""compile_and_compare on what learners really pass it (issue 21), against real torch.compile.

Each case once made a false "DIFFER" (blamed on torch.compile) or changed the learner's own
objects: a function that calls ``.backward()`` itself, an optimizer step, rebound globals,
module attributes, generators, bf16 outputs, NaN, and an expanded global. ``torch.compiler.
is_compiling()`` (True only while Dynamo traces) makes a genuine difference where a test
checks that labkit still sees one.
"""

import pytest
import torch

import labkit

from labkit import compile_and_compare
from labkit.stages import FunctionState, snapshot_tensor


def compiling() -> bool:
    return torch.compiler.is_compiling()


# --- 1. a function that calls .backward() itself ------------------------------------------------

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


# --- 2. state outside the arguments that both runs change ----------------------------------------

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


# --- 3. and 4. dtypes' own tolerances, NaN equal to NaN -------------------------------------------


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


# --- 5. an expanded tensor keeps its footprint ---------------------------------------------------

huge = torch.zeros(1).expand(2 ** 40)  # 4 TiB if materialised: any element-wise copy fails


def test_an_expanded_global_is_saved_as_its_storage_not_its_elements():
    report = compile_and_compare(lambda x: x + huge[:2], torch.ones(2))
    assert report.ok and report.verdict.agree, str(report.verdict)
    saved = FunctionState(lambda x: x + huge[:2]).saved["huge"]
    assert saved.untyped_storage().nbytes() == 4 and saved.stride() == (0,)


def test_an_expanded_argument_is_copied_and_compared_without_materialising():
    report = compile_and_compare(lambda x, big: x + big[:2], torch.ones(2), torch.zeros(1).expand(2 ** 40))
    assert report.ok and report.verdict.agree, str(report.verdict)


def test_snapshot_keeps_values_and_layout():
    base = torch.arange(12.0).reshape(3, 4)
    for t in (base, base.t(), base[1:, ::2], torch.ones(1, dtype=torch.bfloat16).expand(5, 2)):
        copy = snapshot_tensor(t)
        assert torch.equal(copy, t)
        if t.untyped_storage().nbytes() <= t.numel() * t.element_size():  # else: its elements, cloned
            assert copy.stride() == t.stride()
        assert copy.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    sparse = torch.eye(2).to_sparse()
    assert torch.equal(snapshot_tensor(sparse).to_dense(), torch.eye(2))


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


class Hostile:
    def __getattribute__(self, name):
        raise RuntimeError("do not look at me")


hostile, weight = Hostile(), torch.ones(1)


def test_an_object_that_cannot_be_looked_at_is_skipped_not_a_crash():
    state = FunctionState(lambda x: x + weight if hostile else x)
    assert list(state.tensors) == ["weight"] and "hostile" in state.slots


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_a_nested_tensor_input_gets_one_sentence(layout):
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=layout)
    with pytest.raises(labkit.stages.InputError, match="is a nested tensor.*to_padded_tensor"):
        labkit.compile_and_compare(lambda t: t * 2, nested)


# --- review mends: one label per name, schedulers and scalers, small views of big bases ---------

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


def test_a_small_view_of_a_big_base_is_snapshotted_at_its_own_size():
    base = torch.zeros(2 ** 20)
    view = base[:4]
    copy = snapshot_tensor(view)
    assert copy.untyped_storage().nbytes() == 16 and torch.equal(copy, view)
