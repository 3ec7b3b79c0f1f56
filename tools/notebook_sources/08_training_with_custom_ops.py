# %% [markdown]
# # 08 · Training with custom ops: autograd formulas, the backward graph, and mutation
#
# **What you will learn**
# - to give a custom op a gradient with `register_autograd` + `setup_context`, in torch's own signatures;
# - which checker catches which gradient bug: `torch.library.opcheck` (incl. `test_autograd_registration`)
#   or `torch.autograd.gradcheck`;
# - what a compiled training step looks like: AOTAutograd's **forward and backward graphs**, where your op's
#   kernel runs and where its formula goes;
# - why a `float` argument of a custom op costs a graph per value, and what happens past `recompile_limit`;
# - why torch refuses an autograd formula for a mutating op, and the functional + mutating pattern that works;
# - what a mutating op does to the gradient of an input that requires grad;
# - what two register_autograd snippets in circulation get wrong — each one run.
#
# **Time:** about 30 minutes. **Before:** 01 · Custom ops and the compile pipeline, 02 · `mutates_args`.
#
# Every claim is asserted by the cell that shows it; outputs recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import contextlib
import io
import re
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor

import labkit

labkit.setup(warm_inductor=False)   # this notebook compiles with aot_eager only
_ = torch.manual_seed(0)            # the same random inputs on every run

# %% [markdown]
# ## 1. A realistic op, and what happens without a formula
#
# SiLU, `x · sigmoid(x)`, is the activation of LLaMA-style MLPs, and a typical first custom kernel: fused,
# memory-bound, written in C++/CUDA/Triton. Here its kernel is plain torch, but torch treats it as opaque
# all the same. The op is written with torch's API only, as you would in your project:

# %%
@torch.library.custom_op("nb08::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)      # stands in for your fused kernel


@silu.register_fake
def _(x):
    return torch.empty_like(x)


x = torch.randn(5, requires_grad=True)
y = silu(x)
try:
    y.sum().backward()
    no_formula_error = None
except RuntimeError as error:
    no_formula_error = str(error)
print("requires grad:", y.requires_grad, "|", no_formula_error)

# %%
assert y.requires_grad, "torch lets the forward run: the output requires grad"
assert no_formula_error.startswith("Trying to backward through nb08.silu.default but no autograd formula "
                                   "was registered. Please use register_autograd to add one."), \
    "the backward fails when it reaches the op: no autograd formula"

# %% [markdown]
# ## 2. `register_autograd` + `setup_context`
#
# Two functions, with signatures torch fixes:
#
# - `setup_context(ctx, inputs, output)` runs **during the forward**: save what the backward needs
#   (`ctx.save_for_backward` for tensors, plain attributes for the rest);
# - `backward(ctx, *grads)` runs **during the backward**: one incoming gradient per output, and it returns one
#   gradient per input (`None` for an input that has none, such as a `float`).
#
# SiLU's derivative is `s · (1 + x · (1 − s))` with `s = sigmoid(x)`:

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

# %%
assert torch.allclose(ours, torchs), "our formula gives the same gradient as torch's built-in SiLU"

# %% [markdown]
# ## 3. Checking a formula: `opcheck` and `gradcheck`
#
# Two tools, two questions:
#
# - `torch.library.opcheck(op, args)` checks the **registrations**: the schema, that autograd is registered
#   at the right dispatch key (`test_autograd_registration`), the fake kernel, and that AOTAutograd's
#   traced version gives the same outputs *and gradients* as eager (`test_aot_dispatch_dynamic`).
# - `torch.autograd.gradcheck(fn, inputs)` checks the **math**: it compares your formula with finite
#   differences (in float64).
#
# Three versions of the op — no formula, the right one, and a wrong one that forgets the `x · (1 − s)` term:

# %%
def silu_op(name, backward=None):
    """nb08::<name>: SiLU with the given formula (or none)."""
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
# Each version goes through `opcheck`'s tests, one by one, and `gradcheck`:

# %%
def gradcheck_verdict(fn, x):
    try:
        torch.autograd.gradcheck(fn, (x,))
        return "ok"
    except Exception as error:              # GradcheckError, or the backward's own error
        return "FAIL: " + str(error).splitlines()[0][:60]


x64 = torch.randn(4, dtype=torch.float64, requires_grad=True)
checks = {}
for name, backward in {"no formula": None, "right formula": silu_backward, "wrong formula": wrong_backward}.items():
    op = silu_op(name.replace(" ", "_"), backward)
    checks[name] = {**labkit.checks.opcheck(op, (x64,)), "gradcheck": gradcheck_verdict(op, x64)}
for name, row in checks.items():
    print(f"{name:<14}", " · ".join(f"{test}: {'ok' if v == 'ok' else 'FAIL'}" for test, v in row.items()))

# %%
assert set(checks["right formula"].values()) == {"ok"}, "the right formula passes opcheck and gradcheck"
assert set(checks["wrong formula"].values()) - {checks["wrong formula"]["gradcheck"]} == {"ok"}, \
    "the wrong formula passes every opcheck test"
assert checks["wrong formula"]["gradcheck"].startswith("FAIL: Jacobian mismatch"), "gradcheck catches the wrong formula"
assert checks["no formula"]["test_aot_dispatch_dynamic"].startswith("FAIL"), \
    "a missing formula fails opcheck's test_aot_dispatch_dynamic"
assert checks["no formula"]["test_autograd_registration"] == "ok", \
    "a missing formula passes test_autograd_registration"
assert checks["no formula"]["gradcheck"].startswith("FAIL: Trying to backward through"), \
    "gradcheck catches a missing formula"

# %% [markdown]
# - A **wrong formula passes every `opcheck` test**: `test_aot_dispatch_dynamic` compares eager with the
#   compiled version, and both use *your* formula. Only `gradcheck` compares it with the math.
# - A **missing formula** is caught by `test_aot_dispatch_dynamic` (it runs a backward) and by `gradcheck`.
#   `test_autograd_registration` passes: `custom_op` always registers an autograd kernel — the one that raises
#   the error of section 1. That test is for ops whose autograd support sits at the wrong dispatch key (see its
#   docstring in `torch/testing/_internal/optests/autograd_registration.py`).
#
# Run both on every differentiable op you write.
#
# ## 4. A compiled training step: the forward and the backward graph
#
# A small MLP with our op in the middle, trained with a squared-error loss. `compile_and_compare` with
# `backward=` runs the step eagerly and compiled, calls `.backward()` in each, keeps AOTAutograd's graphs
# and compares the gradients of every parameter (the model's own `.grad` is left as it was):

# %%
torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.down(silu(self.up(x)))


model, batch, target = MLP(), torch.randn(3, 4), torch.randn(3, 2)
step = labkit.compile_and_compare(model, batch, backward=lambda out: F.mse_loss(out, target))
print(step.verdict)
print("--- forward graph ---", step.aot_graphs[0].code, sep="\n")

# %%
assert step.verdict.agree, "the compiled step agrees with eager, gradients included"
assert set(step.verdict.gradients) == {"fn.up.weight", "fn.up.bias", "fn.down.weight", "fn.down.bias"}, \
    "the gradients of all four parameters are compared"
assert len(step.aot_graphs[0].calls("nb08::silu")) == 1, "the kernel runs once, in the forward graph"
assert step.aot_graphs[0].code.splitlines()[-1].strip() == "return (addmm_1, primals_3, primals_4, addmm, silu)", \
    "the forward graph returns the output and what the backward needs (addmm, silu)"

# %% [markdown]
# The forward graph calls `nb08.silu` and returns more than the model's output (`addmm_1`): it also returns what
# the backward needs — `addmm`, the op's input that `setup_context` saved, and `silu`, the op's output, which the
# second layer's weight gradient needs. Now the backward:

# %%
print(step.backward_graphs[0].code)

# %%
backward_graph = step.backward_graphs[0]
assert not backward_graph.has("nb08::silu"), "the backward graph does not call the op again"
assert backward_graph.code.splitlines()[0] == "def forward(self, primals_3, primals_4, addmm, silu, tangents_1):", \
    "the backward graph takes what the forward saved (addmm, silu) and the incoming gradient"
assert any(n.target == "sigmoid.default" for n in backward_graph.nodes), "the formula is traced into aten ops"
assert len(step.backward_graphs) == 1, "one backward graph"

# %% [markdown]
# AOTAutograd traced `silu_backward` into aten ops (`sigmoid`, `mul`, `rsub`, …). The kernel stays opaque, but
# **the formula is ordinary traced code**, compiled with the rest of the backward. That is why torch requires
# formulas to be traceable — more on that in section 5.
#
# The backward graph exists because the step called `.backward()`: the backend compiles it lazily, at the first
# `.backward()`. The same step without it leaves none:

# %%
forward_only = labkit.compile_and_compare(model, batch)
assert forward_only.verdict.agree, "the forward-only step agrees with eager"
assert forward_only.backward_graphs == [], "without .backward() no backward graph is compiled"
print("backward graphs without .backward():", len(forward_only.backward_graphs))

# %% [markdown]
#
# ## 5. The formula is traced once: Python state is baked in
#
# torch's docs for `register_autograd` say the backward "must not depend on or mutate global state". Here is
# why. A formula that reads a Python setting (a gradient scale a training loop changes, say):

# %%
settings = {"grad_scale": 1.0}


def scaled_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return silu_backward(ctx, grad) * settings["grad_scale"]


scaled = silu_op("scaled", scaled_backward)
compiled = torch.compile(lambda x: scaled(x).sum(), backend="aot_eager")
x = torch.randn(4, requires_grad=True)
compiled(x).backward()                        # compiles, with grad_scale = 1.0
settings["grad_scale"] = 10.0                 # the training loop changes it
eager_grad = torch.autograd.grad(scaled(x).sum(), x)[0]
compiled_grad = torch.autograd.grad(compiled(x), x)[0]
print("eager / compiled:", round((eager_grad / compiled_grad).mean().item(), 4))

# %%
assert torch.allclose(eager_grad, 10 * compiled_grad), \
    "compiled still uses grad_scale 1.0: no recompile noticed the change"

# %% [markdown]
# The value read inside the formula became a constant of the traced backward. The fix: make it an **input of
# the op**, read by the function you compile. Then `setup_context` gets it from `inputs`, and Dynamo sees the
# read and recompiles when it changes:

# %%
@torch.library.custom_op("nb08::scaled_arg", mutates_args=())
def scaled_arg(x: Tensor, grad_scale: float) -> Tensor:
    return x * torch.sigmoid(x)


scaled_arg.register_fake(lambda x, grad_scale: torch.empty_like(x))


def scaled_arg_setup_context(ctx, inputs, output):
    x, ctx.grad_scale = inputs
    ctx.save_for_backward(x)


scaled_arg.register_autograd(lambda ctx, grad: (silu_backward(ctx, grad) * ctx.grad_scale, None),
                             setup_context=scaled_arg_setup_context)

# %% [markdown]
# The same experiment, with the scale passed to the op:

# %%
settings["grad_scale"] = 1.0
compiled = torch.compile(lambda x: scaled_arg(x, settings["grad_scale"]).sum(), backend="aot_eager")
compiled(x).backward()
settings["grad_scale"] = 10.0
eager_grad = torch.autograd.grad(scaled_arg(x, 10.0).sum(), x)[0]
compiled_grad = torch.autograd.grad(compiled(x), x)[0]
print("eager / compiled:", round((eager_grad / compiled_grad).mean().item(), 4))

# %%
assert torch.allclose(eager_grad, compiled_grad), "with grad_scale an input of the op, compiled follows the change"

# %% [markdown]
# The price: a `float` argument of a custom op is **specialized**: Dynamo guards on its exact value, as on a
# constant, so every new value is a guard failure (`s == 2.5` in the `recompiles` log on torch 2.13;
# `___as_tensor(s).item() == 2.5` on 2.11) and a new graph — with
# `dynamic=True` too, which makes sizes symbolic, not this float — and past `torch._dynamo.config.recompile_limit` (8 by default) the frame runs **eagerly** for each
# new value, with one warning in the log. The graphs already compiled keep serving the values they were
# compiled for. Below: four calls under a limit of 2, a backend that records each graph and which graph served
# each call, once with the defaults and once with `specialize_float=True` (the Dynamo setting that bakes Python
# floats into the graph; torch 2.13.0's default is `False`: trace them as inputs):

# %%
def serving_backend():
    """(graphs, served, backend): the backend keeps each graph, and for each call the index of the graph that ran it."""
    graphs, served = [], []

    def recording(gm, example_inputs):
        index = len(graphs)
        graphs.append(gm)
        return lambda *args: served.append(index) or gm.forward(*args)

    return graphs, served, recording

# %%
def float_arg_calls(**dynamo_config):
    """scaled_arg(x, s) compiled with dynamic=True, called for s = 2.5, 3.5, 4.5, 2.5 under recompile_limit=2:
    the float each graph passes to the op, the graph that served each call (None: eager), what torch logged."""
    graphs, served, recording = serving_backend()
    torch.compiler.reset()
    f = torch.compile(lambda x, s: scaled_arg(x, s), backend=recording, dynamic=True)
    per_call = []
    with torch._dynamo.config.patch(recompile_limit=2, **dynamo_config), \
            labkit.logs.torch_logs(recompiles=True) as log:
        for s in (2.5, 3.5, 4.5, 2.5):
            before = len(served)
            assert torch.equal(f(torch.ones(2), s), scaled_arg(torch.ones(2), s)), f"s = {s}: compiled matches eager"
            per_call.append(served[before] if len(served) > before else None)
    baked = [re.search(r"scaled_arg\.default\([^,]+, ([^)]+)\)", gm.code).group(1) for gm in graphs]
    text = log.getvalue()
    guard_failed = re.search(r"\bs\b\S* == 2\.5", text) is not None     # 2.13: s == 2.5; 2.11: ...(s).item() == 2.5
    logged = {"guard s == 2.5 failed": guard_failed, "limit warnings": text.count("hit config.recompile_limit (2)")}
    return baked, per_call, logged

# %% [markdown]
# The two runs, with the defaults and with `specialize_float=True`:

# %%
float_calls = {"defaults": float_arg_calls(), "specialize_float=True": float_arg_calls(specialize_float=True)}
for config, (baked, per_call, warned) in float_calls.items():
    print(f"{config:<22} graphs pass: {baked}  served by graph: {per_call}  logged: {warned}")

# %%
assert torch._dynamo.config.recompile_limit == 8, "the default recompile_limit is 8"
assert not torch._dynamo.config.specialize_float, "specialize_float is off by default"
LOGGED = {"guard s == 2.5 failed": True, "limit warnings": 1}   # the recompile reason; one fallback warning
assert float_calls["defaults"] == (["item", "item"], [0, 1, None, 0], LOGGED), \
    "defaults: each graph reads the float from a tensor; 4.5 runs eagerly, 2.5 is served by graph 0 again"
assert float_calls["specialize_float=True"] == (["2.5", "3.5"], [0, 1, None, 0], LOGGED), \
    "specialize_float=True: the floats are baked in as constants, and the calls go the same way"

# %% [markdown]
# On torch 2.13.0 the default traces the float as a graph input (`item` above: the graph reads it from a
# tensor), and `specialize_float=True` writes it into the graph as `2.5`, `3.5` — but the calls go the same way:
# Dynamo guards on the float's value where it is passed to the custom op, so each value gets its own graph
# either way. A value that changes every step (a learning-rate schedule, a
# loss scale) belongs in a **tensor** argument, which the graph reads at run time.
#
# `compile_and_compare` compiles a fresh copy each time, so a setting changed *between* experiments never shows
# there. Its gradient comparison catches gradients that differ *within* one experiment — here, a formula that
# breaks the rule the other way, by changing Python state on each call, run twice:

# %%
counter = {"calls": 0}


def counting_backward(ctx, grad):
    counter["calls"] += 1                 # "must not mutate global state"
    return silu_backward(ctx, grad) * counter["calls"]


counting = silu_op("counting", counting_backward)
counted = labkit.compile_and_compare(lambda x: counting(x), calls=[(x,), (x,)], backward=True)
print(counted.verdict)

# %%
assert counted.verdict.outputs_match, "eager and compiled outputs match"
assert not counted.verdict.grads_match, "eager and compiled gradients differ: the formula changed Python state"
assert counted.verdict.problems == ("the gradient of x@0 differs", "the gradient of x@1 differs"), \
    "the comparison names both calls' gradients"

# %% [markdown]
# Eager scaled the two gradients by 1 and 2, the counter's values at each backward; compiled replays, as a
# constant, whatever the counter held when AOTAutograd traced the formula. What no eager-vs-compiled comparison can catch is a wrong formula — both runs use it.
# For that, `gradcheck`.
#
# ## 6. Mutating ops: torch refuses the formula
#
# An op that writes its input in place — `x *= 3`:

# %%
@torch.library.custom_op("nb08::scale_", mutates_args={"x"})
def scale_(x: Tensor) -> None:
    x.mul_(3)


try:
    scale_.register_autograd(lambda ctx, grad: grad * 3)
    refusal = None
except RuntimeError as error:
    refusal = str(error)
print(refusal)

# %%
assert refusal.startswith("Cannot register autograd formula for non-functional operator"), \
    "torch refuses a formula for a mutating op"
assert refusal.endswith("Please create a functional operator and register an autograd formula for that."), \
    "the refusal points to a functional op"

# %% [markdown]
# `torch.library.register_autograd("nb08::scale_", ...)` gives the same refusal (section 9 runs it), and so does
# an op declared with `mutates_args="unknown"` — every argument is then mutable:

# %%
@torch.library.custom_op("nb08::maybe_writes", mutates_args="unknown")
def maybe_writes(x: Tensor) -> Tensor:
    return x.clone()


try:
    maybe_writes.register_autograd(lambda ctx, grad: grad)
    unknown_refusal = None
except RuntimeError as error:
    unknown_refusal = str(error)
assert unknown_refusal.startswith("Cannot register autograd formula for non-functional operator"), \
    "mutates_args='unknown' gets the same refusal"
print(unknown_refusal.split(" Please")[0])

# %% [markdown]
#
# ## 7. What a mutated input that requires grad does
#
# The refusal does not stop you *calling* a mutating op on a tensor that requires grad. What happens? Compare
# with aten's own in-place `mul_`, which autograd knows:

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
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = torch.ones(3, requires_grad=True)
    with_custom_op(x).backward()
for name, fn in {"aten mul_": with_aten, "custom op, eager": with_custom_op,
                 "custom op, compiled": torch.compile(with_custom_op, backend="aot_eager")}.items():
    x = torch.ones(3, requires_grad=True)
    fn(x).backward()
    grads[name] = x.grad[0].item()
print(grads)

leaf = torch.ones(3, requires_grad=True)
scale_(leaf)                          # aten would refuse: "a leaf Variable that requires grad ..."
print("leaf after the op:", leaf)

# %%
assert grads == {"aten mul_": 6.0, "custom op, eager": 2.0, "custom op, compiled": 2.0}, \
    "aten's write gives 6; the custom op's is invisible to autograd (2), eager and compiled alike"
assert caught == [], "not even a warning"
assert torch.equal(leaf.detach(), torch.full((3,), 3.0)), "the op overwrote a leaf that requires grad"
assert leaf.grad_fn is None, "the overwritten leaf has no grad_fn: autograd did not see the write"
assert set(labkit.checks.opcheck(scale_, (torch.randn(3, dtype=torch.float64, requires_grad=True),)).values()) \
    == {"ok"}, "opcheck passes every test"
assert gradcheck_verdict(lambda x: with_custom_op(x), torch.ones(3, dtype=torch.float64, requires_grad=True)) \
    .startswith("FAIL: Jacobian mismatch"), "gradcheck on a function that uses the op catches it"

# %% [markdown]
# Here, on torch 2.13, the write is **invisible to autograd**: no error, no warning, and the gradient is that of
# `2x` (2) instead of `6x` (6) — in eager and compiled alike, so comparing them shows nothing. A leaf that
# requires grad is even overwritten, where aten raises. `opcheck` passes every test; `gradcheck` on a function
# that uses the op catches it.
#
# That silence holds only because nothing had **saved `h` for the backward** (`x * 2` and `sum` need no saved
# input). When autograd has saved the tensor the op then writes, torch notices the write (each tensor has a
# version counter, and autograd checks it) — eagerly at `.backward()`, and under `torch.compile` already at the
# forward call, where AOTAutograd traces the backward:

# %%
def saved_then_written(x):
    h = x * 2
    y = h * h                 # autograd saves h for y's backward...
    scale_(h)                 # ...then the custom op overwrites it
    return y.sum()


def where_it_fails(fn):
    """(stage, exception type, torch's message) of the first error in fn(x).backward(), or None."""
    x, stage = torch.ones(3, requires_grad=True), "forward call"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # AOTAutograd's anomaly mode adds "Error detected in MulBackward0"
            loss = fn(x)
            stage = ".backward()"
            loss.backward()
    except RuntimeError as error:
        return stage, type(error).__name__, labkit.stages.as_torch_error(error, stage).message
    return None

# %% [markdown]
# The same function, eagerly and compiled:

# %%
saved_case = {"eager": where_it_fails(saved_then_written),
              "compiled": where_it_fails(torch.compile(saved_then_written, backend="aot_eager"))}
for mode, (stage, kind, message) in saved_case.items():
    print(f"{mode}: {kind} at the {stage}: {message[:115]}…")

# %%
SAVED_TENSOR_MODIFIED = ("one of the variables needed for gradient computation has been modified by an inplace "
                         "operation")
assert saved_case["eager"][:2] == (".backward()", "RuntimeError"), "eager: a RuntimeError at .backward()"
assert saved_case["compiled"][:2] == ("forward call", "BackendCompilerFailed"), \
    "compiled: BackendCompilerFailed, wrapping the same RuntimeError, at the forward call"
assert all(message.startswith(SAVED_TENSOR_MODIFIED) for _, _, message in saved_case.values()), \
    "both say a tensor saved for the backward was modified in place"

# %% [markdown]
# The same write **undeclared** — the kernel writes `x` but the op says `mutates_args=()`, notebook 02's bug —
# and the two modes part ways. Eager still raises at `.backward()`: the kernel's own `mul_` bumps the tensor's
# version counter. Compiled, the op is pure to the graph, nothing checks the counter, and the backward silently
# uses the overwritten `h`. (The call runs under `no_grad`, as a statistics update might, so the op needs no
# formula; it returns a value the function returns, so the compiler keeps the call.)

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
undeclared_eager = where_it_fails(lambda x: saved_then_written_undeclared(x)[0])
compiled_undeclared = torch.compile(saved_then_written_undeclared, backend="aot_eager")
x = torch.ones(3, requires_grad=True)
compiled_undeclared(x)[0].backward()
(true_grad,) = torch.autograd.grad(((x * 2) * (x * 2)).sum(), x)     # y = (2x)², without the op
print("eager:", undeclared_eager[:2], "| compiled gradient:", x.grad.tolist(), "| true:", true_grad.tolist())

# %%
assert undeclared_eager[:2] == (".backward()", "RuntimeError"), "undeclared, eager: a RuntimeError at .backward()"
assert undeclared_eager[2].startswith(SAVED_TENSOR_MODIFIED), "eager: the saved tensor was modified in place"
assert x.grad.tolist() == [24.0] * 3, "compiled: no error, and the gradient 2·h·2 uses the overwritten h = 6"
assert true_grad.tolist() == [8.0] * 3, "the true gradient uses h = 2"

# %% [markdown]
# So on torch 2.13 a custom op that writes a tensor that requires grad gives a loud error only when that tensor
# was saved for the backward *and* either the mode is eager or the write is declared; otherwise a silently
# wrong gradient. Nothing tells you which you have. **Never let a custom op write a tensor that requires grad.**
#
# ## 8. The pattern that works: a functional op with the formula, around a mutating kernel
#
# Real kernels often write into a buffer you give them (an `out=` kernel). Keep that kernel as a mutating op,
# and put a **functional** op on top of it, which allocates the output, calls the kernel, and carries the
# formula. Training uses the functional op; inference may call the kernel on its own buffers.

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
with torch.no_grad():                              # inference: the kernel, on a buffer you own
    buffer = torch.empty(4)
    silu_into(torch.ones(4), buffer)

# %%
assert pattern.verdict.agree, "the functional op compiles and agrees with eager"
assert pattern.verdict.gradients == ("x",), "the gradient of x is compared"
assert pattern.aot_graphs[0].has("nb08::silu2"), "the compiled graph calls the functional op"
assert not pattern.aot_graphs[0].has("nb08::silu_into"), "the graph does not see the mutating kernel"
assert torch.autograd.gradcheck(silu2, (torch.randn(4, dtype=torch.float64, requires_grad=True),)), \
    "gradcheck passes on the functional op"
assert torch.allclose(buffer, F.silu(torch.ones(4))), "the kernel alone fills a buffer you own"

# %% [markdown]
# The compiled graph only sees `nb08::silu2`: the write into `out` happens inside its kernel, on a tensor
# the op allocated, so nothing outside can observe it.
#
# ## 9. Two snippets in circulation, run
#
# Two blog posts about custom ops and `torch.compile` (the ones this lab's lessons grew from) each suggest
# adding an autograd formula. Reduced to their API use:
#
# **Snippet A** — give the *mutating* op a formula, with a `setup_context(ctx, x)` signature:

# %%
@torch.library.custom_op("nb08::add_one_", mutates_args={"x"})
def add_one_(x: Tensor) -> None:
    x.add_(1)


def post_setup_context(ctx, x):            # torch calls setup_context(ctx=..., inputs=..., output=...)
    ctx.save_for_backward(x)


try:
    torch.library.register_autograd("nb08::add_one_", lambda ctx, grad: grad, setup_context=post_setup_context)
    snippet_a = None
except RuntimeError as error:
    snippet_a = str(error)
print(snippet_a.split(" Please")[0])

# %% [markdown]
# Refused (section 6). And on a functional op, the signature fails at the first forward that needs a gradient:

# %%
signature_op = silu_op("signature")
signature_op.register_autograd(silu_backward, setup_context=post_setup_context)
try:
    signature_op(torch.randn(3, requires_grad=True))
    snippet_a_signature = None
except TypeError as error:
    snippet_a_signature = str(error)
print(snippet_a_signature)

# %%
assert snippet_a.startswith("Cannot register autograd formula for non-functional operator"), \
    "snippet A: torch refuses the mutating op's formula"
assert snippet_a_signature == "post_setup_context() got an unexpected keyword argument 'inputs'", \
    "snippet A's setup_context signature fails at the first forward that needs a gradient"

# %% [markdown]
# **Snippet B** — `register_autograd` given a function `(ctx, x, needs_grad)` that *returns* a backward:

# %%
def post_autograd(ctx, x, needs_grad):
    def backward(grad):
        return grad * 2
    return backward


snippet_b_op = silu_op("snippet_b")
snippet_b_op.register_autograd(post_autograd)      # accepted: torch does not check the signature here
x = torch.randn(3, requires_grad=True)
y = snippet_b_op(x)                                 # the eager forward runs
try:
    y.sum().backward()
    eager_b = None
except TypeError as error:
    eager_b = str(error)
print("eager, at .backward():", eager_b)

# %% [markdown]
# The same op under `torch.compile`:

# %%
try:
    with warnings.catch_warnings():     # autograd also warns "Error detected in ...Backward": the same error
        warnings.simplefilter("ignore")
        torch.compile(lambda x: snippet_b_op(x).sum(), backend="aot_eager")(x)
    compiled_b = None
except Exception as error:
    compiled_b = labkit.stages.as_torch_error(error, "compiled")
print("compiled, at the forward call:", compiled_b.type_name, "—", compiled_b.message)

# %%
assert eager_b == "post_autograd() missing 1 required positional argument: 'needs_grad'", \
    "snippet B, eager: .backward() fails, post_autograd misses its needs_grad argument"
assert compiled_b.message == eager_b, "compiled: the same mistake, found earlier: AOTAutograd traces the backward"
assert compiled_b.type_name == "TypeError", "compiled: a TypeError while compiling the forward"

# %% [markdown]
# The backward *is* the function you register: `backward(ctx, *grads)`, returning the gradients. To skip work
# for inputs that need none, read `ctx.needs_input_grad` inside it — there is no `needs_grad` argument.
#
# ## In your own project
#
# Everything above with torch's own tools. Check an op with `opcheck` (pass inputs that require grad, so the
# autograd tests run) and `gradcheck` (float64):

# %%
sample = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
torch.library.opcheck(silu, (sample,))          # raises if any of its four tests fails
assert torch.autograd.gradcheck(silu, (sample,)), "gradcheck passes on silu"

# %% [markdown]
# See AOTAutograd's forward and backward graphs with `TORCH_LOGS="aot_graphs"` (in a script:
# `TORCH_LOGS=aot_graphs python train.py`). In a notebook, `torch._logging.set_logs(aot_graphs=True)` does the
# same; torch's log handler writes to `sys.stderr` as it is when `set_logs` runs, so redirecting stderr around
# the call keeps the log for the cell to read:

# %%
def train_step(x, w):
    return silu(x @ w).sum()


captured = io.StringIO()
try:
    with contextlib.redirect_stderr(captured):
        torch._logging.set_logs(aot_graphs=True)
        torch.compile(train_step, backend="aot_eager")(torch.randn(4, 3), torch.randn(3, 2, requires_grad=True))
finally:
    torch._logging.set_logs()          # back to the defaults, writing to the real stderr
log_lines = [line.split("[__aot_graphs]")[-1] for line in captured.getvalue().splitlines()]
shown = [re.sub(r"graph \d+", "graph", line) for line in log_lines if "=====" in line or "nb08" in line
         or "sigmoid" in line]
print(*shown, sep="\n")

# %%
log = "\n".join(log_lines)
forward_log, backward_log = log.split("===== Backward graph")
assert "===== Forward graph" in forward_log, "the log shows the forward graph"
assert "torch.ops.nb08.silu.default" in forward_log, "the forward graph calls the op"
assert "nb08" not in backward_log, "the backward graph does not call the op"
assert "torch.ops.aten.sigmoid.default" in backward_log, "the backward graph has the formula, in aten ops"

# %% [markdown]
# Both graphs are logged while the *forward* call compiles: AOTAutograd traces forward and backward together
# (the backend compiles the backward later, at the first `.backward()`).
#
# ## Exercise 1: write a formula
#
# `nb08::softclip(x, limit)` computes `limit · tanh(x / limit)` — a smooth clamp. Write its `setup_context` and
# `backward` (the derivative of `tanh(u)` is `1 − tanh(u)²`; `limit` is a `float`, so its gradient is `None`).
# The check registers them and runs `opcheck` and `gradcheck`.

# %%
def my_softclip_setup_context(ctx, inputs, output):
    ...


my_softclip_backward = ...

# %%
def softclip_op(setup_context, backward, name="softclip"):
    @torch.library.custom_op(f"nb08::{name}", mutates_args=())
    def op(x: Tensor, limit: float) -> Tensor:
        return limit * torch.tanh(x / limit)

    op.register_fake(lambda x, limit: torch.empty_like(x))
    op.register_autograd(backward, setup_context=setup_context)
    return op


def softclip_problem(setup_context, backward, name="softclip"):
    """None when the formula passes opcheck and gradcheck, else what failed."""
    op = softclip_op(setup_context, backward, name)
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    try:
        torch.library.opcheck(op, (x, 2.0))
        torch.autograd.gradcheck(lambda x: op(x, 2.0), (x,))
    except Exception as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return None

# %%
if labkit.exercises.answered(my_softclip_backward):
    problem = softclip_problem(my_softclip_setup_context, my_softclip_backward)
    labkit.exercises.check(problem is None, "opcheck and gradcheck both pass.", str(problem))

# %% jupyter={"source_hidden": true} tags=["solution"]
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
print("solution checked")

# %% [markdown]
# ## Exercise 2: predict, then run — how often does the kernel run?
#
# Count the real kernel calls of a SiLU op in **one training step** (forward + `.backward()`), eagerly and
# compiled, for two formulas:
#
# - `"aten formula"`: `silu_backward` from section 2;
# - `"formula calls the op"`: the same derivative written with the op itself,
#   `s · (1 + x − silu(x))`, where `silu(x)` is a call to the custom op.
#
# Predict the four numbers, then run the check. (Hint: the op is declared pure.)

# %%
my_kernel_calls = {
    ("aten formula", "eager"): ...,
    ("aten formula", "compiled"): ...,
    ("formula calls the op", "eager"): ...,
    ("formula calls the op", "compiled"): ...,
}

# %%
def counted_silu(formula, calls):
    """A SiLU op whose kernel appends to calls, its formula "aten formula" or "formula calls the op"."""
    @torch.library.custom_op(f"nb08::counted_{formula.split()[1]}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        calls.append(1)                   # counts real kernel runs (a hidden side effect, for counting only)
        return x * torch.sigmoid(x)

    op.register_fake(lambda x: torch.empty_like(x))

    def backward_calling_the_op(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * s * (1 + x - op(x))   # s·(1 + x·(1−s)) = s·(1 + x − silu(x))

    op.register_autograd(silu_backward if formula == "aten formula" else backward_calling_the_op,
                         setup_context=silu_setup_context)
    return op

# %%
def kernel_calls_per_step(formula, mode):
    calls = []
    op = counted_silu(formula, calls)

    def step(x):
        return op(x).sum()

    if mode == "compiled":
        step = torch.compile(step, backend="aot_eager")
    x = torch.randn(4, requires_grad=True)
    step(x).backward()                    # a first step (compiled: traced with fake tensors, then run)
    calls.clear()
    step(x).backward()                    # the step we count
    return len(calls)

# %%
actual_calls = {key: kernel_calls_per_step(*key) for key in my_kernel_calls}
if all(labkit.exercises.answered(v) for v in my_kernel_calls.values()):
    wrong = [key for key in actual_calls if my_kernel_calls[key] != actual_calls[key]]
    labkit.exercises.check(not wrong, "all four counts hold.",
                           f"re-think {wrong}: which graph calls the op (section 4), and what may the compiler do "
                           f"with two calls of a pure op on the same input?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution. Eager runs every call: the formula that calls the op runs the kernel a second time in the backward.
# Compiled, AOTAutograd traces forward and backward as ONE joint graph, where op(x) appears twice on the same
# input; the op is pure, so common-subexpression elimination keeps one call and the backward reuses the
# forward's result. With AOTAutograd's CSE switched off (a private config), the second call comes back:
# That is what torch 2.11-2.13 do; on torch 2.14.1 and 2.15.0 the compiled step ran the kernel twice, as eager does.
merged = 1 if labkit.env.torch_version()[:2] < (2, 14) else 2
assert actual_calls == {("aten formula", "eager"): 1, ("aten formula", "compiled"): 1,
                        ("formula calls the op", "eager"): 2, ("formula calls the op", "compiled"): merged}, \
    f"one kernel run per step, except the formula that calls the op: 2 eager, {merged} compiled"
import torch._functorch.config
with torch._functorch.config.patch(cse=False):
    assert kernel_calls_per_step("formula calls the op", "compiled") == 2, "without CSE the second call comes back"
print("solution checked")

# %% [markdown]
# ## What to remember
#
# - A custom op gets a gradient from `register_autograd(backward, setup_context=...)`:
#   `setup_context(ctx, inputs, output)` saves, `backward(ctx, *grads)` returns one gradient per input.
# - `opcheck` checks the registrations and that compiled matches eager; only `gradcheck` checks your math.
# - In a compiled step, the kernel runs in the forward graph; the formula is traced into the backward graph, once —
#   Python state it reads becomes a constant.
# - A `float` argument of a custom op is specialized to its value: each new value recompiles (also with
#   `dynamic=True`), and past `recompile_limit` new values run eagerly. Pass values that change as tensors.
# - Mutating ops cannot have formulas. On torch 2.13 a mutating op's write to a tensor that requires grad is
#   invisible to autograd (silently wrong gradients) when nothing saved that tensor for the backward, and an
#   error when something did — except compiled with the write undeclared, which is silently wrong again. Put the
#   formula on a functional op around the mutating kernel.
#
# ## Questions
#
# 1. Why can `opcheck` pass for an op whose gradient is wrong? What does `gradcheck` compare instead?
# 2. Why does the backward graph of section 4 not call `nb08.silu`? Why does even a formula that calls the op
#    not add a kernel run once compiled on torch 2.11–2.13 (Exercise 2) — and why would that be wrong for an op with a hidden side effect?
# 3. Why does a setting read inside `backward` not trigger a recompile when it changes, while the same read inside
#    the function you compile would?
# 4. Why does torch refuse a formula for a mutating op, and what goes wrong if you call one on a tensor that
#    requires grad anyway?
# 5. In the functional + mutating pattern, why is the write into `out` safe for the compiler?
#
# ## Further reading
#
# - PyTorch custom operators landing page: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - Python custom operators tutorial (`register_autograd`, `opcheck`):
#   https://pytorch.org/tutorials/advanced/python_custom_ops.html
# - `torch.library` reference (`register_autograd`, `opcheck`): https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual: https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - Numerical gradient checking (`gradcheck`): https://docs.pytorch.org/docs/stable/autograd.html#numerical-gradient-checking
# - Compiled autograd and custom-op DCE: https://github.com/pytorch/pytorch/issues/149181
#
# **Next:** 09 · Custom ops for GPU kernels.
