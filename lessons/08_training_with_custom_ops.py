# %% [markdown]
# # 08 · Training with custom ops: autograd formulas, the backward graph, and mutation
#
# Your fused kernel works in inference; in a training step, `.backward()` stops at it. A formula with wrong values passes
# `torch.library.opcheck` and trains on wrong gradients, eager and compiled alike. A kernel that writes in place
# into a tensor that requires grad can corrupt gradients without a word. All of it runs below, on torch 2.13
# (CPU), with the patterns that hold.
#
# **What you will learn**
# - to give a custom op a gradient: `register_autograd` + `setup_context`;
# - which checker catches which gradient bug: `opcheck` or `gradcheck`;
# - what a compiled training step runs: the forward graph, what it saves, the backward graph;
# - why Python state read by a formula is frozen, and what a `float` argument costs instead;
# - what mutating ops do to gradients, and the pattern that works.
#
# **Time:** about 45 minutes. **Before:** 01 · Custom ops and the compile pipeline, 02 · `mutates_args`.
# Collapsed *Check* cells assert every claim ([docs/torch-versions.md](../docs/torch-versions.md): what differs
# between releases).

# %% tags=["nbval-ignore-output"]
import re

import torch
import torch.nn.functional as F
from torch import Tensor

import labkit

labkit.setup(warm_inductor=False)   # this notebook compiles with aot_eager only
_ = torch.manual_seed(0)            # the same random inputs on every run

# %% [markdown]
# ## 1. A custom op without a formula
#
# SiLU, `x · sigmoid(x)`, the activation of LLaMA-style MLPs, is a typical first fused kernel. Here its kernel
# is plain torch, but torch treats it as opaque all the same:

# %%
@torch.library.custom_op("nb08::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)      # stands in for your fused kernel


silu.register_fake(lambda x: torch.empty_like(x))     # notebook 01: what the compiler traces instead
x = torch.randn(5, requires_grad=True)
y = silu(x)
no_formula = labkit.stages.raised(lambda: y.sum().backward())
print("requires grad:", y.requires_grad, "|", no_formula.message)

# %% tags=["check"]
#@title Check: the forward runs, and the backward stops at the op
assert y.requires_grad, "torch lets the forward run: the output requires grad"
assert no_formula.message.startswith("Trying to backward through nb08.silu.default but no autograd formula "
                                     "was registered. Please use register_autograd to add one."), \
    "the backward fails when it reaches the op: no autograd formula"

# %% [markdown]
# ## 2. A formula: `register_autograd` + `setup_context`
#
# Two functions, with signatures torch fixes:
#
# - `setup_context(ctx, inputs, output)` runs **during the forward**: it saves what the backward needs
#   (`ctx.save_for_backward` for tensors, plain attributes for the rest);
# - `backward(ctx, *grads)` gets one gradient per output and returns one per input (`None` for a `float`).
#
# SiLU's derivative is `s · (1 + x · (1 − s))`, with `s = sigmoid(x)`:

# %%
def silu_setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)

def silu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    return grad * s * (1 + x * (1 - s))


silu.register_autograd(silu_backward, setup_context=silu_setup_context)

x = torch.randn(5, requires_grad=True)
(ours,) = torch.autograd.grad(silu(x).sum(), x)
(torchs,) = torch.autograd.grad(F.silu(x).sum(), x)
print(ours, torchs, sep="\n")

# %% tags=["check"]
#@title Check: our formula gives torch's own SiLU gradient
assert torch.allclose(ours, torchs), "our formula gives the same gradient as torch's built-in SiLU"

# %% [markdown]
# ## 3. `opcheck` checks the registrations, `gradcheck` the math
#
# `torch.library.opcheck(op, args)` tests the schema, the autograd registration, the fake kernel, and that
# AOTAutograd's traced op gives the same outputs *and gradients* as eager (`test_aot_dispatch_dynamic`).
# `torch.autograd.gradcheck(fn, inputs)` compares your formula with finite differences, in float64. Three
# versions: no formula, the right one, and one that forgets the `x · (1 − s)` term:

# %%
def silu_op(name, backward=None):
    """nb08::<name>: SiLU, with the given formula or none."""
    @torch.library.custom_op(f"nb08::{name}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x * torch.sigmoid(x)

    op.register_fake(lambda x: torch.empty_like(x))
    if backward is not None:
        op.register_autograd(backward, setup_context=silu_setup_context)
    return op

def wrong_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * torch.sigmoid(x)          # d/dx of x·s is NOT s

# %% [markdown]
# Each version through `opcheck`'s four tests and `gradcheck`:

# %%
x64 = torch.randn(4, dtype=torch.float64, requires_grad=True)
checks = {}
for name, backward in {"no formula": None, "right formula": silu_backward, "wrong formula": wrong_backward}.items():
    op = silu_op(name.replace(" ", "_"), backward)
    checks[name] = {**labkit.checks.opcheck(op, (x64,)), "gradcheck": labkit.checks.gradcheck(op, x64)}
for name, row in checks.items():
    print(f"{name:<14}", " · ".join(f"{test}: {'ok' if v == 'ok' else 'FAIL'}" for test, v in row.items()))

# %% tags=["check"]
#@title Check: a formula with wrong values passes opcheck and fails gradcheck; a scalar gradient fails opcheck
assert set(checks["right formula"].values()) == {"ok"}, "the right formula passes opcheck and gradcheck"
assert set(checks["wrong formula"].values()) - {checks["wrong formula"]["gradcheck"]} == {"ok"}, \
    "the wrong formula passes every opcheck test"
assert checks["wrong formula"]["gradcheck"].startswith("FAIL: Jacobian mismatch"), "gradcheck catches the wrong formula"
wrong_shape = silu_op("wrong_shape", lambda ctx, grad: (grad * torch.sigmoid(ctx.saved_tensors[0])).sum())
assert labkit.checks.opcheck(wrong_shape, (x64,))["test_aot_dispatch_dynamic"].startswith("FAIL"), \
    "a formula whose gradient is a scalar for x of shape [4] fails test_aot_dispatch_dynamic"

# %% tags=["check"]
#@title Check: not every wrong shape fails: autograd sums a [2, 4] or [1, 4] gradient to x's [4]
two_rows = silu_op("two_rows", lambda ctx, grad: silu_backward(ctx, grad).expand(2, 4))
assert set(labkit.checks.opcheck(two_rows, (x64,)).values()) == {"ok"}, "a [2, 4] gradient passes every opcheck test"
assert labkit.checks.gradcheck(two_rows, x64).startswith("FAIL: Jacobian mismatch"), "gradcheck fails it: summed, x2"
one_row = silu_op("one_row", lambda ctx, grad: silu_backward(ctx, grad).reshape(1, 4))
assert set(labkit.checks.opcheck(one_row, (x64,)).values()) == {"ok"}, "a [1, 4] gradient passes every opcheck test"
assert labkit.checks.gradcheck(one_row, x64) == "ok", "and gradcheck: summed to [4], its values are right"

# %% tags=["check"]
#@title Check, continued: a missing formula fails test_aot_dispatch_dynamic and gradcheck
assert checks["no formula"]["test_aot_dispatch_dynamic"].startswith("FAIL"), \
    "a missing formula fails opcheck's test_aot_dispatch_dynamic"
assert checks["no formula"]["test_autograd_registration"] == "ok", \
    "a missing formula passes test_autograd_registration"
assert checks["no formula"]["gradcheck"].startswith("FAIL: Trying to backward through"), \
    "gradcheck catches a missing formula"

# %% [markdown]
# A formula with **wrong values passes every `opcheck` test**: `test_aot_dispatch_dynamic` compares eager with
# compiled, and both use *your* formula; only `gradcheck` compares it with the math (a wrong *shape* fails
# `test_aot_dispatch_dynamic` only where autograd cannot sum it to the input's: a scalar fails, a `[2, 4]` gradient
# for `x`'s `[4]` is summed and passes every `opcheck` test, and `[1, 4]` passes `gradcheck` too). A **missing
# formula** fails both.
# (`test_autograd_registration` passes even then: `custom_op` always registers an autograd kernel, the one that
# raised in section 1.) Run both checks on every differentiable op.
#
# ## 4. A compiled training step: a forward graph and a backward graph
#
# An MLP with the op in the middle. `labkit.compile_and_compare(..., backward=loss)` runs a training step eagerly
# and compiled, keeps AOTAutograd's graphs and compares every gradient; the picture is drawn from the two graphs:

# %%
class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.down(silu(self.up(x)))


torch.manual_seed(0)
model, batch, target = MLP(), torch.randn(3, 4), torch.randn(3, 2)
step = labkit.compile_and_compare(model, batch, backward=lambda out: F.mse_loss(out, target))
print(step.verdict)
labkit.pictures.forward_backward(step.aot_graphs[0], step.backward_graphs[0], "nb08::silu")

# %% tags=["check"]
#@title Check: the kernel runs in the forward graph; the backward graph has the formula, in aten ops
forward_graph, backward_graph = step.aot_graphs[0], step.backward_graphs[0]
assert step.verdict.agree, "the compiled step agrees with eager, gradients included"
assert set(step.verdict.gradients) == {"fn.up.weight", "fn.up.bias", "fn.down.weight", "fn.down.bias"}, \
    "the gradients of all four parameters are compared"
assert len(forward_graph.calls("nb08::silu")) == 1, "the kernel runs once, in the forward graph"
assert forward_graph.code.splitlines()[-1].strip() == "return (addmm_1, primals_3, primals_4, addmm, silu)", \
    "the forward graph returns the output and what the backward needs (addmm, silu)"
assert not backward_graph.has("nb08::silu"), "the backward graph does not call the op again"
assert backward_graph.code.splitlines()[0] == "def forward(self, primals_3, primals_4, addmm, silu, tangents_1):", \
    "the backward graph takes what the forward saved (addmm, silu) and the incoming gradient"
assert any(n.target == "sigmoid.default" for n in backward_graph.nodes), "the formula is traced into aten ops"
assert len(step.backward_graphs) == 1, "one backward graph"

# %% [markdown]
# The kernel runs once, in the forward graph, which also returns what the backward needs: `addmm`, the input
# `setup_context` saved, and `silu`, the output the second layer's weight gradient needs. The backward graph
# never calls the op: **the formula is ordinary traced code** (`sigmoid`, `mul`, `rsub`), compiled with the rest.
# That graph is compiled at the first `.backward()`; a step without one leaves none:

# %%
forward_only = labkit.compile_and_compare(model, batch)
print("backward graphs without .backward():", len(forward_only.backward_graphs))

# %% tags=["check"]
#@title Check: without .backward(), no backward graph
assert forward_only.verdict.agree, "the forward-only step agrees with eager"
assert forward_only.backward_graphs == [], "without .backward() no backward graph is compiled"

# %% [markdown]
# ## 5. The formula is traced once: Python state is frozen in
#
# torch's docs say a backward "must not depend on or mutate global state". Here is why: a formula that reads a
# setting the training loop changes, a gradient scale.

# %%
settings = {"grad_scale": 1.0}
scaled = silu_op("scaled", lambda ctx, grad: silu_backward(ctx, grad) * settings["grad_scale"])


def gradients_after_a_change(step, x):
    """Compile step and train once with grad_scale 1.0, set it to 10.0: (eager's gradient, compiled's)."""
    settings["grad_scale"] = 1.0
    compiled = torch.compile(step, backend="aot_eager")
    compiled(x).backward()                    # compiles, with grad_scale = 1.0
    settings["grad_scale"] = 10.0             # the training loop changes it
    return torch.autograd.grad(step(x), x)[0], torch.autograd.grad(compiled(x), x)[0]


x = torch.randn(4, requires_grad=True)
eager_grad, compiled_grad = gradients_after_a_change(lambda x: scaled(x).sum(), x)
print("eager / compiled:", round((eager_grad / compiled_grad).mean().item(), 4))

# %% tags=["check"]
#@title Check: compiled keeps grad_scale 1.0 after the change
assert torch.allclose(eager_grad, 10 * compiled_grad), \
    "compiled still uses grad_scale 1.0: no recompile noticed the change"

# %% [markdown]
# The value read inside the formula became a constant of the traced backward. A formula that *changes* Python
# state breaks the rule the other way; two calls, compared:

# %%
counter = {"calls": 0}


def counting_backward(ctx, grad):
    counter["calls"] += 1                 # "must not mutate global state"
    return silu_backward(ctx, grad) * counter["calls"]


counting = silu_op("counting", counting_backward)
counted = labkit.compile_and_compare(lambda x: counting(x), calls=[(x,), (x,)], backward=True)
print(counted.verdict)

# %% tags=["check"]
#@title Check: the outputs match and both calls' gradients differ
assert counted.verdict.outputs_match, "eager and compiled outputs match"
assert not counted.verdict.grads_match, "eager and compiled gradients differ: the formula changed Python state"
assert counted.verdict.problems == ("the gradient of x@0 differs", "the gradient of x@1 differs"), \
    "the comparison names both calls' gradients"

# %% [markdown]
# Eager scaled each gradient by the counter, 1 then 2; compiled replays what it held at tracing.
#
# The fix for a setting: make it an **input of the op**. `setup_context` gets it from `inputs`, and Dynamo sees
# the read in the function you compile, so a new value recompiles:

# %%
@torch.library.custom_op("nb08::scaled_arg", mutates_args=())
def scaled_arg(x: Tensor, grad_scale: float) -> Tensor:
    return x * torch.sigmoid(x)


def scaled_arg_setup_context(ctx, inputs, output):
    x, ctx.grad_scale = inputs
    ctx.save_for_backward(x)


scaled_arg.register_fake(lambda x, grad_scale: torch.empty_like(x))
scaled_arg.register_autograd(lambda ctx, grad: (silu_backward(ctx, grad) * ctx.grad_scale, None),
                             setup_context=scaled_arg_setup_context)

# %% [markdown]
# The same experiment, with the scale passed to the op:

# %%
eager_grad, compiled_grad = gradients_after_a_change(lambda x: scaled_arg(x, settings["grad_scale"]).sum(), x)
print("eager / compiled:", round((eager_grad / compiled_grad).mean().item(), 4))

# %% tags=["check"]
#@title Check: with the scale an input of the op, compiled follows the change
assert torch.allclose(eager_grad, compiled_grad), "with grad_scale an input of the op, compiled follows the change"

# %% [markdown]
# ## 6. The price of a `float` argument: a graph per value
#
# Dynamo **specializes** a `float` passed to a custom op: it guards on its exact value, so each new value is a
# new graph, with `dynamic=True` too (that makes sizes symbolic, not this float). Past
# `torch._dynamo.config.recompile_limit` (8 by default) new values run **eagerly**. Four calls under a limit of
# 2; `labkit.stages.serving` notes which graph served each:

# %%
calls = [(torch.ones(2), s) for s in (2.5, 3.5, 4.5, 2.5)]
with torch._dynamo.config.patch(recompile_limit=2), labkit.torch_logs(recompiles=True) as log:
    run = labkit.stages.serving(lambda x, s: scaled_arg(x, s), calls, dynamic=True)
for (_, s), graph in zip(calls, run.served):
    print(f"s = {s}: {'ran eagerly' if graph is None else f'graph {graph}'}")

# %% tags=["check"]
#@title Check: a graph per value, then eager; the same with specialize_float=True
def floats_and_log(run, text):
    """The float each graph passes to the op, which graph served each call, what torch logged."""
    baked = [re.search(r"scaled_arg\.default\([^,]+, ([^)]+)\)", g.code).group(1) for g in run.graphs]
    return baked, run.served, {"guard s == 2.5 failed": re.search(r"\bs\b\S* == 2\.5", text) is not None,
                               "limit warnings": text.count("hit config.recompile_limit (2)")}

with torch._dynamo.config.patch(recompile_limit=2, specialize_float=True), \
        labkit.torch_logs(recompiles=True) as baked_log:
    baked_run = labkit.stages.serving(lambda x, s: scaled_arg(x, s), calls, dynamic=True)
LOGGED = {"guard s == 2.5 failed": True, "limit warnings": 1}   # the recompile reason; one fallback warning
assert torch._dynamo.config.recompile_limit == 8, "the default recompile_limit is 8"
assert not torch._dynamo.config.specialize_float, "specialize_float is off by default"
assert all(torch.equal(out, scaled_arg(*args)) for out, args in zip(run.outputs, calls)), "compiled matches eager"
assert floats_and_log(run, log.getvalue()) == (["item", "item"], [0, 1, None, 0], LOGGED), \
    "defaults: each graph reads the float from a tensor; 4.5 runs eagerly, 2.5 is served by graph 0 again"
assert floats_and_log(baked_run, baked_log.getvalue()) == (["2.5", "3.5"], [0, 1, None, 0], LOGGED), \
    "specialize_float=True: the floats are baked in as constants, and the calls go the same way"

# %% [markdown]
# Each graph reads the float from a tensor input (with `specialize_float=True` it would be a constant; the calls
# go the same way). A value that changes every step (a learning-rate schedule, a loss scale) belongs in a
# **tensor** argument, read at run time: one graph then serves all four calls.

# %% tags=["check"]
#@title Check: a scale passed as a tensor: one graph serves every value
@torch.library.custom_op("nb08::scaled_by_tensor", mutates_args=())
def scaled_by_tensor(x: Tensor, scale: Tensor) -> Tensor:
    return x * torch.sigmoid(x) * scale


scaled_by_tensor.register_fake(lambda x, scale: torch.empty_like(x))
tensor_calls = [(torch.ones(2), torch.tensor(s)) for s in (2.5, 3.5, 4.5, 2.5)]
with torch._dynamo.config.patch(recompile_limit=2):
    tensor_run = labkit.stages.serving(lambda x, s: scaled_by_tensor(x, s), tensor_calls, dynamic=True)
assert tensor_run.served == [0, 0, 0, 0], "a tensor argument: graph 0 serves all four values"

# %% [markdown]
# ## 7. Mutating ops: torch refuses the formula
#
# An op that writes its input in place, `x *= 3`:

# %%
@torch.library.custom_op("nb08::scale_", mutates_args={"x"})
def scale_(x: Tensor) -> None:
    x.mul_(3)


refusal = labkit.stages.raised(lambda: scale_.register_autograd(lambda ctx, grad: grad * 3))
print(refusal.message)

# %% tags=["check"]
#@title Check: torch refuses a formula for a mutating op, and for mutates_args="unknown"
@torch.library.custom_op("nb08::maybe_writes", mutates_args="unknown")
def maybe_writes(x: Tensor) -> Tensor:
    return x.clone()


unknown_refusal = labkit.stages.raised(lambda: maybe_writes.register_autograd(lambda ctx, grad: grad))
assert refusal.message.startswith("Cannot register autograd formula for non-functional operator"), \
    "torch refuses a formula for a mutating op"
assert refusal.message.endswith("Please create a functional operator and register an autograd formula for that."), \
    "the refusal points to a functional op"
assert unknown_refusal.message.startswith("Cannot register autograd formula for non-functional operator"), \
    "mutates_args='unknown' gets the same refusal"

# %% [markdown]
# `mutates_args="unknown"` (every argument may be written) gets the same refusal.
#
# ## 8. A write autograd does not see
#
# Nothing stops you *calling* a mutating op on a tensor that requires grad. Compare with aten's in-place `mul_`,
# which autograd knows:

# %%
def with_custom_op(x):
    h = x * 2
    scale_(h)                 # h *= 3, by the custom op
    return h.sum()

def with_aten(x):
    h = x * 2
    h.mul_(3)                 # the same write, by aten
    return h.sum()

# %% [markdown]
# The gradient of `x` through each, and the custom op on a leaf that requires grad:

# %%
grads = {}
for name, fn in {"aten mul_": with_aten, "custom op, eager": with_custom_op,
                 "custom op, compiled": torch.compile(with_custom_op, backend="aot_eager")}.items():
    x = torch.ones(3, requires_grad=True)
    fn(x).backward()
    grads[name] = x.grad[0].item()
print(grads)

leaf = torch.ones(3, requires_grad=True)
scale_(leaf)                          # aten would refuse: "a leaf Variable that requires grad ..."
print("leaf after the op:", leaf)

# %% tags=["check"]
#@title Check: the custom op's write is invisible to autograd, silently; opcheck passes, gradcheck does not
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = torch.ones(3, requires_grad=True)
    with_custom_op(x).backward()
x64 = torch.ones(3, dtype=torch.float64, requires_grad=True)
assert grads == {"aten mul_": 6.0, "custom op, eager": 2.0, "custom op, compiled": 2.0}, \
    "aten's write gives 6; the custom op's is invisible to autograd (2), eager and compiled alike"
assert caught == [], "not even a warning"
assert torch.equal(leaf.detach(), torch.full((3,), 3.0)), "the op overwrote a leaf that requires grad"
assert leaf.grad_fn is None, "the overwritten leaf has no grad_fn: autograd did not see the write"
assert set(labkit.checks.opcheck(scale_, (torch.randn(3, dtype=torch.float64, requires_grad=True),)).values()) \
    == {"ok"}, "opcheck passes every test"
assert labkit.checks.gradcheck(with_custom_op, x64).startswith("FAIL: Jacobian mismatch"), \
    "gradcheck on a function that uses the op catches it"

# %% [markdown]
# The write is **invisible to autograd**: no error, no warning, and the gradient of `2x` (2) instead of `6x` (6),
# eager and compiled alike, so comparing them shows nothing. A leaf that requires grad is even overwritten, where
# aten raises. `opcheck` passes; `gradcheck` on a function that uses the op catches it.
#
# ## 9. ... unless autograd saved the tensor
#
# It is silent only because nothing **saved `h` for the backward**. When autograd saved the tensor the op then
# writes, the tensor's version counter gives the write away: eagerly at `.backward()`, compiled already at the
# forward call, where AOTAutograd traces the backward.

# %%
def saved_then_written(x):
    h = x * 2
    y = h * h                 # autograd saves h for y's backward...
    scale_(h)                 # ...then the custom op overwrites it
    return y.sum()

def first_error(fn):
    """Where fn(x).backward() fails first: ("forward call" or ".backward()", torch's error), or None."""
    x, loss = torch.ones(3, requires_grad=True), []
    error = labkit.stages.raised(lambda: loss.append(fn(x)), "forward call", quiet=True)
    if error is None:
        error = labkit.stages.raised(lambda: loss[0].backward(), ".backward()", quiet=True)
    return None if error is None else (error.stage, error)

# %% [markdown]
# The same function, eagerly and compiled:

# %%
saved_case = {"eager": first_error(saved_then_written),
              "compiled": first_error(torch.compile(saved_then_written, backend="aot_eager"))}
for mode, (stage, error) in saved_case.items():
    print(f"{mode}: {error.full.split(':')[0]} at the {stage}: {error.message[:100]}…")

# %% tags=["check"]
#@title Check: eager raises at .backward(); compiled at the forward call; both say a saved tensor was modified
SAVED_TENSOR_MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace "
                         "operation")
(eager_stage, eager_error), (compiled_stage, compiled_error) = saved_case["eager"], saved_case["compiled"]
assert (eager_stage, eager_error.full.split(":")[0]) == (".backward()", "RuntimeError"), \
    "eager: a RuntimeError at .backward()"
assert (compiled_stage, compiled_error.full.split(":")[0]) == ("forward call", "BackendCompilerFailed"), \
    "compiled: BackendCompilerFailed at the forward call"
assert compiled_error.type_name == "RuntimeError", "compiled: the BackendCompilerFailed wraps a RuntimeError"
assert all(error.message.startswith(SAVED_TENSOR_MODIFIED) for _, error in saved_case.values()), \
    "both say a tensor saved for the backward was modified in place"

# %% [markdown]
# Now the same write **undeclared** (`mutates_args=()`, notebook 02's bug), and the two modes part ways. It runs
# under `no_grad`, as a statistics update might (no formula needed), and returns a value, so the call is kept:

# %%
@torch.library.custom_op("nb08::scale_undeclared", mutates_args=())    # wrong: the kernel writes x
def scale_undeclared(x: Tensor) -> Tensor:
    x.mul_(3)
    return x.new_ones(())

scale_undeclared.register_fake(lambda x: x.new_empty(()))

def saved_then_written_undeclared(x):
    h = x * 2
    y = h * h                              # saves h, as before
    with torch.no_grad():
        done = scale_undeclared(h)
    return y.sum(), done

# %% [markdown]
# Eagerly, then compiled, with the gradient compared to the true one:

# %%
undeclared_eager = first_error(lambda x: saved_then_written_undeclared(x)[0])
compiled_undeclared = torch.compile(saved_then_written_undeclared, backend="aot_eager")
x = torch.ones(3, requires_grad=True)
compiled_undeclared(x)[0].backward()
(true_grad,) = torch.autograd.grad(((x * 2) * (x * 2)).sum(), x)     # y = (2x)², without the op
print("eager:", undeclared_eager[1].type_name, "at", undeclared_eager[0],
      "| compiled gradient:", x.grad.tolist(), "| true:", true_grad.tolist())

# %% tags=["check"]
#@title Check: undeclared, eager still raises; compiled is silently wrong (24 instead of 8)
assert (undeclared_eager[0], undeclared_eager[1].type_name) == (".backward()", "RuntimeError"), \
    "undeclared, eager: a RuntimeError at .backward()"
assert undeclared_eager[1].message.startswith(SAVED_TENSOR_MODIFIED), "eager: the saved tensor was modified in place"
assert x.grad.tolist() == [24.0] * 3, "compiled: no error, and the gradient 2·h·2 uses the overwritten h = 6"
assert true_grad.tolist() == [8.0] * 3, "the true gradient uses h = 2"

# %% [markdown]
# Eager still raises: the kernel's `mul_` bumps the version counter. Compiled, the op is pure to the graph, and
# the backward uses the overwritten `h`.
#
# So the error is loud only when autograd saved the tensor *and* the mode is eager or the write declared;
# otherwise the gradient is silently wrong. **Never let a custom op write a tensor that requires grad.**
#
# ## 10. The pattern that works: a functional op with the formula, around a mutating kernel
#
# Keep an `out=` kernel as a mutating op, and put a **functional** op on top: it allocates the output, calls the
# kernel, and carries the formula. Training uses the functional op; inference may call the kernel on its own
# buffers.

# %%
@torch.library.custom_op("nb08::silu_into", mutates_args={"out"})
def silu_into(x: Tensor, out: Tensor) -> None:
    torch.mul(x, torch.sigmoid(x), out=out)        # your out= kernel

@torch.library.custom_op("nb08::silu2", mutates_args=())
def silu2(x: Tensor) -> Tensor:
    out = torch.empty_like(x)
    silu_into(x, out)
    return out


silu2.register_fake(lambda x: torch.empty_like(x))
silu2.register_autograd(silu_backward, setup_context=silu_setup_context)

pattern = labkit.compile_and_compare(lambda x: silu2(x) * 2, torch.randn(4, requires_grad=True), backward=True)
print(pattern.verdict)

# %% tags=["check"]
#@title Check: the functional op compiles, agrees with eager and passes gradcheck; the graph sees only it
with torch.no_grad():                              # inference: the kernel, on a buffer you own
    buffer = torch.empty(4)
    silu_into(torch.ones(4), buffer)
assert pattern.verdict.agree, "the functional op compiles and agrees with eager"
assert pattern.verdict.gradients == ("x",), "the gradient of x is compared"
assert pattern.aot_graphs[0].has("nb08::silu2"), "the compiled graph calls the functional op"
assert not pattern.aot_graphs[0].has("nb08::silu_into"), "the graph does not see the mutating kernel"
assert torch.autograd.gradcheck(silu2, (torch.randn(4, dtype=torch.float64, requires_grad=True),)), \
    "gradcheck passes on the functional op"
assert torch.allclose(buffer, F.silu(torch.ones(4))), "the kernel alone fills a buffer you own"

# %% [markdown]
# The graph only sees `nb08::silu2`: the write into `out` happens inside it, on a tensor it allocated.
#
# ## 11. Two snippets in circulation, run
#
# Two blog posts about custom ops and `torch.compile` each suggest an autograd formula. Reduced to their API use,
# **snippet A** gives the *mutating* op a formula, with a `setup_context(ctx, x)` signature:

# %%
@torch.library.custom_op("nb08::add_one_", mutates_args={"x"})
def add_one_(x: Tensor) -> None:
    x.add_(1)

def post_setup_context(ctx, x):            # torch calls setup_context(ctx=..., inputs=..., output=...)
    ctx.save_for_backward(x)


snippet_a = labkit.stages.raised(
    lambda: torch.library.register_autograd("nb08::add_one_", lambda ctx, grad: grad, setup_context=post_setup_context))
signature_op = silu_op("signature")
signature_op.register_autograd(silu_backward, setup_context=post_setup_context)
snippet_a_signature = labkit.stages.raised(lambda: signature_op(torch.randn(3, requires_grad=True)))
print(snippet_a.message.split(" Please")[0], snippet_a_signature.message, sep="\n")

# %% tags=["check"]
#@title Check: snippet A is refused; its signature fails at the first forward that needs a gradient
assert snippet_a.message.startswith("Cannot register autograd formula for non-functional operator"), \
    "snippet A: torch refuses the mutating op's formula"
assert snippet_a_signature.message == "post_setup_context() got an unexpected keyword argument 'inputs'", \
    "snippet A's setup_context signature fails at the first forward that needs a gradient"

# %% [markdown]
# Refused (section 7); and even on a functional op the signature fails at the first forward that needs a
# gradient. **Snippet B** gives `register_autograd` a function `(ctx, x, needs_grad)` that *returns* a backward:

# %%
def post_autograd(ctx, x, needs_grad):
    def backward(grad):
        return grad * 2
    return backward


snippet_b_op = silu_op("snippet_b")
snippet_b_op.register_autograd(post_autograd)      # accepted: torch does not check the signature here
x = torch.randn(3, requires_grad=True)
y = snippet_b_op(x)                                 # the eager forward runs
eager_b = labkit.stages.raised(lambda: y.sum().backward())
compiled_b = labkit.stages.raised(lambda: torch.compile(lambda x: snippet_b_op(x).sum(), backend="aot_eager")(x),
                                  "compiled", quiet=True)
print("eager, at .backward():", eager_b.message)
print("compiled, at the forward call:", compiled_b.type_name, "—", compiled_b.message)

# %% tags=["check"]
#@title Check: snippet B fails at .backward() eagerly, and compiled already at the forward call
assert eager_b.message == "post_autograd() missing 1 required positional argument: 'needs_grad'", \
    "snippet B, eager: .backward() fails, post_autograd misses its needs_grad argument"
assert compiled_b.message == eager_b.message, "compiled: the same mistake, found earlier: AOTAutograd traces the backward"
assert compiled_b.type_name == "TypeError", "compiled: a TypeError while compiling the forward"

# %% [markdown]
# The backward *is* the function you register, `backward(ctx, *grads)`. To skip inputs that need no gradient,
# read `ctx.needs_input_grad`; there is no `needs_grad` argument.
#
# ## In your own project
#
# Everything above with torch's own tools. Check an op with `opcheck` (inputs that require grad, so the autograd
# tests run) and `gradcheck` (float64):

# %%
sample = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
torch.library.opcheck(silu, (sample,))               # raises if any of its four tests fails
passed = torch.autograd.gradcheck(silu, (sample,))   # raises if the formula disagrees with finite differences

# %% tags=["check"]
#@title Check: silu passes gradcheck
assert passed, "gradcheck passes on silu"

# %% [markdown]
# See AOTAutograd's forward and backward graphs with `TORCH_LOGS="aot_graphs"` (in a script:
# `TORCH_LOGS=aot_graphs python train.py`; in a notebook: `torch._logging.set_logs(aot_graphs=True)`).
# `labkit.torch_logs` does the latter for one block and keeps the text:

# %%
def train_step(x, w):
    return silu(x @ w).sum()


with labkit.torch_logs(aot_graphs=True) as log:
    torch.compile(train_step, backend="aot_eager")(torch.randn(4, 3), torch.randn(3, 2, requires_grad=True))
log_lines = log.artifact("aot_graphs")
print(*[re.sub(r"graph \d+", "graph", line) for line in log_lines
        if "=====" in line or "nb08" in line or "sigmoid" in line], sep="\n")

# %% tags=["check"]
#@title Check: both graphs are logged at the forward call: the op in the forward, the formula in the backward
forward_log, backward_log = "\n".join(log_lines).split("===== Backward graph")
assert "===== Forward graph" in forward_log, "the log shows the forward graph"
assert "torch.ops.nb08.silu.default" in forward_log, "the forward graph calls the op"
assert "nb08" not in backward_log, "the backward graph does not call the op"
assert "torch.ops.aten.sigmoid.default" in backward_log, "the backward graph has the formula, in aten ops"

# %% [markdown]
# Both graphs are logged at the *forward* call (no `.backward()` ran): AOTAutograd traces them together.
#
# ## Exercise 1: write a formula
#
# `nb08::softclip(x, limit)` computes `limit · tanh(x / limit)`, a smooth clamp. Write its `setup_context` and
# `backward` in the cell below (the derivative of `tanh(u)` is `1 − tanh(u)²`; `limit` is a `float`, so its
# gradient is `None`). The check registers them on the op and runs `opcheck` and `gradcheck`.

# %%
def my_softclip_setup_context(ctx, inputs, output):
    ...


my_softclip_backward = ...

# %% tags=["check"]
#@title The exercise's check (a softclip op of its own name, as each try registers a formula on a new op)
def softclip_op(name):
    @torch.library.custom_op(f"nb08::{name}", mutates_args=())
    def op(x: Tensor, limit: float) -> Tensor:
        return limit * torch.tanh(x / limit)

    op.register_fake(lambda x, limit: torch.empty_like(x))
    return op

# %% tags=["check"]
#@title The exercise's check, continued (how many values your backward returned, in words)
def gradient_count_problem(op, returned):
    """One sentence when torch refused what one backward returned (not one value per input), else None."""
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    refused = labkit.stages.raised(lambda: op(x, 2.0).sum().backward())
    if refused is None or not returned:            # it ran, or raised before returning: opcheck says where
        return None
    got = returned[-1]
    said = ("a list" if isinstance(got, list) else "None" if got is None else
            f"{len(got)} values" if isinstance(got, tuple) else "one value")
    return (f"your backward returns {said}; softclip has two inputs, x and limit: return a tuple with one value "
            "per input, the gradient for x, then None for limit (a float)")

# %% tags=["check"]
#@title The exercise's check, continued (it registers your formula on the op, then runs opcheck and gradcheck)
def softclip_problem(setup_context, backward, name="softclip"):
    """None when the formula passes opcheck and gradcheck, else what failed, in one line."""
    op, returned = softclip_op(name), []
    recorded = lambda ctx, grad: returned.append(backward(ctx, grad)) or returned[-1]   # noqa: E731
    refused = labkit.stages.raised(lambda: op.register_autograd(recorded, setup_context=setup_context))
    counted = None if refused else gradient_count_problem(op, returned)
    if refused or counted:
        return f"torch refuses it: {refused.message}" if refused else counted
    for shape, limit in (((5,), 2.0), ((3, 4), 0.5), ((2,), 3.0)):   # a formula must hold for every limit and shape
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        where = f"(x of shape {list(shape)}, limit={limit})"
        failed = [f"opcheck's {test} {where}: {why[6:]}"
                  for test, why in labkit.checks.opcheck(op, (x, limit)).items() if why != "ok"]
        verdict = "ok" if failed else labkit.checks.gradcheck(lambda x, limit=limit: op(x, limit), x)
        if failed or verdict != "ok":
            return failed[0] if failed else f"gradcheck {where}: {verdict[6:]}"
    return None

# %% tags=["check"]
#@title The exercise's check, continued
def check_softclip(setup_context, backward):
    if labkit.exercises.answered(backward, "write both functions in the cell with my_softclip_backward = ..., run it, then run this one"):
        problem = softclip_problem(setup_context, backward)
        labkit.exercises.check(problem is None, "opcheck and gradcheck both pass.", str(problem))

# %%
check_softclip(my_softclip_setup_context, my_softclip_backward)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
def softclip_setup_context(ctx, inputs, output):
    x, limit = inputs
    ctx.save_for_backward(x)
    ctx.limit = limit                     # a float: an attribute, not save_for_backward

def softclip_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    t = torch.tanh(x / ctx.limit)
    return grad * (1 - t * t), None       # one gradient per input; None for the float

assert softclip_problem(softclip_setup_context, softclip_backward, "softclip_solution") is None, \
    "the solution passes opcheck and gradcheck"
assert softclip_problem(softclip_setup_context, lambda ctx, grad: grad * (1 - torch.tanh(ctx.saved_tensors[0]) ** 2),
                        "softclip_one_gradient").startswith("your backward returns one value"), "one of two: refused"
assert softclip_problem(softclip_setup_context, lambda ctx, grad: (grad * torch.tanh(ctx.saved_tensors[0]), None),
                        "softclip_wrong_math").startswith("gradcheck"), "a formula with the wrong math is refused"
assert softclip_problem(softclip_setup_context, lambda ctx, grad: (grad * (1 - torch.tanh(ctx.saved_tensors[0] / 2.0)
                        ** 2), None), "softclip_hard_coded").startswith("gradcheck (x of shape [3, 4], limit=0.5)"), \
    "a formula right for limit 2.0 only is refused"

# %% tags=["check"]
#@title Check: the grader's sentences are whole: a failed gradcheck is not cut at torch's comma
wrong_math = softclip_problem(softclip_setup_context, lambda ctx, grad: (grad * torch.tanh(ctx.saved_tensors[0]), None),
                              "softclip_wrong_math_said")
assert not wrong_math.endswith(","), wrong_math
assert "differs from the one finite differences measure" in wrong_math, wrong_math

# %% [markdown]
# ## Exercise 2: predict, then run: how often does the kernel run?
#
# Count the kernel runs of a SiLU op in **one training step** (forward + `.backward()`), eager and compiled, for
# two formulas: `"aten formula"` (`silu_backward`, section 2), and `"formula calls the op"`, the same derivative
# written as `s · (1 + x − silu(x))` where `silu(x)` calls the custom op. Predict the four numbers (whole
# numbers: 0, 1, 2, ...), then run the check. (Hint: the op is declared pure.)

# %%
my_kernel_calls = {
    ("aten formula", "eager"): ...,
    ("aten formula", "compiled"): ...,
    ("formula calls the op", "eager"): ...,
    ("formula calls the op", "compiled"): ...,
}

# %% tags=["check"]
#@title The exercise's check (it runs one training step of each op, eager and compiled, counting kernel runs)
def kernel_calls_per_step(formula, mode):
    """Kernel runs of a SiLU op in the second of two steps; its formula "aten formula" or "formula calls the op"."""
    calls = []
    @torch.library.custom_op(f"nb08::counted_{formula.split()[1]}_{mode}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        calls.append(1)                   # counts real kernel runs (a hidden side effect, for counting only)
        return x * torch.sigmoid(x)

    def backward_calling_the_op(ctx, grad):       # s·(1 + x·(1−s)) = s·(1 + x − silu(x))
        x = ctx.saved_tensors[0]
        return grad * torch.sigmoid(x) * (1 + x - op(x))
    op.register_fake(lambda x: torch.empty_like(x))
    op.register_autograd(silu_backward if formula == "aten formula" else backward_calling_the_op,
                         setup_context=silu_setup_context)
    step = (lambda x: op(x).sum()) if mode == "eager" else torch.compile(lambda x: op(x).sum(), backend="aot_eager")
    x = torch.randn(4, requires_grad=True)
    step(x).backward()                    # a first step (compiled: traced with fake tensors, then run)
    calls.clear()                         # then the step we count:
    return step(x).backward() or len(calls)

# %% tags=["check"]
#@title The exercise's check, continued (your four numbers against the four runs)
actual_calls = {key: kernel_calls_per_step(*key) for key in my_kernel_calls}


def check_kernel_calls(predicted):
    if all(labkit.exercises.answered(v, "replace each ... in the my_kernel_calls cell by a whole number "
                                        "(0, 1, 2, ...), run it, then run this one") for v in predicted.values()):
        return labkit.exercises.check_numbers(predicted, actual_calls, "all four counts hold.",
                                       "which graph calls the op (section 4), and what may the compiler do with "
                                       "two calls of a pure op on the same input?")

# %%
calls_ok = check_kernel_calls(my_kernel_calls)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# Eager runs every call: the formula that calls the op runs the kernel again in the backward. Compiled, AOTAutograd
# traces forward and backward as ONE joint graph, where op(x) appears twice on the same input; the op is pure, so
# common-subexpression elimination keeps one call (torch 2.11-2.13). On torch 2.14.1 and 2.15.0 the compiled step
# ran the kernel twice, as eager does. With AOTAutograd's CSE switched off (a private config), the second call is back.
import torch._functorch.config

merged = 1 if labkit.env.torch_version()[:2] < (2, 14) else 2
assert actual_calls == {("aten formula", "eager"): 1, ("aten formula", "compiled"): 1,
                        ("formula calls the op", "eager"): 2, ("formula calls the op", "compiled"): merged}, \
    f"one kernel run per step, except the formula that calls the op: 2 eager, {merged} compiled"
with torch._functorch.config.patch(cse=False):
    assert kernel_calls_per_step("formula calls the op", "compiled") == 2, "without CSE the second call comes back"
import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()):     # the grader's sentences are for the learner, not for this check
    assert check_kernel_calls({key: str(n) for key, n in actual_calls.items()}), "the counts, even as text, pass"
    assert not check_kernel_calls({key: 1 for key in actual_calls}), "a guess of 1 everywhere is refused"

# %% [markdown]
# ## What to remember
#
# - `register_autograd(backward, setup_context=...)`: `setup_context(ctx, inputs, output)` saves,
#   `backward(ctx, *grads)` returns one gradient per input.
# - `opcheck` checks the registrations; only `gradcheck` checks your math.
# - Compiled, the kernel runs in the forward graph; the formula is traced into the backward graph, once: Python
#   state it reads becomes a constant.
# - A `float` argument of a custom op costs a graph per value (with `dynamic=True` too), and eager past
#   `recompile_limit`. Pass values that change as tensors.
# - Mutating ops cannot have formulas, and their writes to tensors that require grad can silently corrupt
#   gradients. Put the formula on a functional op around the mutating kernel.
#
# ## Questions
#
# 1. Why can `opcheck` pass for an op whose gradient is wrong? What does `gradcheck` compare instead?
# 2. Why does the backward graph of section 4 not call `nb08.silu`? Why may a formula that calls the op add no
#    kernel run once compiled (Exercise 2), and why is that wrong for an op with a hidden side effect?
# 3. Why does a setting read inside `backward` not trigger a recompile, while the same read inside the function
#    you compile does?
# 4. Why does torch refuse a formula for a mutating op, and what goes wrong if you call one on a tensor that
#    requires grad anyway?
# 5. In the functional + mutating pattern, why is the write into `out` safe for the compiler?
#
# ## Further reading
#
# - Custom operators: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - Python custom operators (`register_autograd`, `opcheck`): https://pytorch.org/tutorials/advanced/python_custom_ops.html
# - `torch.library` reference: https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual: https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - Numerical gradient checking (`gradcheck`): https://docs.pytorch.org/docs/stable/autograd.html#numerical-gradient-checking
# - Compiled autograd and custom-op DCE: https://github.com/pytorch/pytorch/issues/149181
#
# **Next:** 09 · Custom ops for GPU kernels.
