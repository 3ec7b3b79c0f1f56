# %% [markdown]
# # 03 · Aliasing and views: a mutating op on a slice, and the no-alias rule
#
# **What you will learn**
# - how a mutating op applied to a *view* of an input is functionalized through its base and written back;
# - how Inductor then runs the op directly on a view of your tensor;
# - why a custom op's outputs may not alias its inputs, and where torch enforces it (eager for
#   `custom_op`, at compile time — warning or error — for lower-level registrations);
# - why the popular `x.add_(1); return x` is not a valid mutating custom op, and the three forms that are.
#
# **Time:** about 20 minutes. **Before:** 02 · `mutates_args`.
#
# Outputs recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import os
import warnings

import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb03")

# %% [markdown]
# ## 1. A mutating op on a view
#
# `bump` adds 1 in place and says so. Apply it to a slice of the input: eagerly, the slice shares
# storage with `x`, so `x` itself changes.

# %%
bump = labkit.declare(name="nb03::bump", writes=("x",), mutates_args=("x",), returns="none")

def bump_middle(x):
    bump(x[1:3])
    return x * 2

x = torch.zeros(5)
print(bump_middle(x), x)

# %% [markdown]
# Functionalization has to reproduce that without in-place writes. It records the **base**
# tensor and how the view was cut from it (`_x_base_index`, `_x_slice_dim/start/end`), lets the op
# produce a new base, and copies the new base back into your input:

# %%
report = labkit.compile_and_compare(bump_middle, torch.zeros(5), backend="aot_eager")
print(labkit.render.stage_code(report)["aot"])

# %%
(node,) = report.aot_graphs[0].calls("nb03::bump")
aot_code = labkit.render.stage_code(report)["aot"]
assert "_x_base_index = 0, _x_slice_dim = 0, _x_slice_start = 1, _x_slice_end = 3" in aot_code, \
    "the call records the base and how the view x[1:3] was cut from it"
assert "copy_.default(arg0_1" in aot_code, "the new base is copied back into the input"
assert report.verdict.agree, "compiled == eager"

# %% [markdown]
# Inductor re-inplaces it: the op runs directly on a view of your tensor (`reinterpret_tensor` with
# offset 1), no copy at all:

# %%
inductor_report = labkit.compile_and_compare(bump_middle, torch.zeros(5), backend="inductor")
print(labkit.render.stage_code(inductor_report)["inductor"])

# %%
inductor_code = labkit.render.stage_code(inductor_report)["inductor"]
assert "torch.ops.nb03.bump.default(reinterpret_tensor(arg0_1, (2, ), (1, ), 1))" in inductor_code, \
    "Inductor runs the op directly on a view of the input, at offset 1"
assert inductor_report.verdict.agree, "compiled == eager"

# %% [markdown]
# ## 2. Why an op's outputs may not alias its inputs
#
# That bookkeeping only works if the compiler knows *exactly* which tensors share storage. A mutation
# is declared in the schema; an output that secretly shares memory with an input is not: the schema of a
# `custom_op` has no way to say "this output is a view of `x`". So torch refuses outputs that are, or
# view, an input. For `custom_op` it checks **in eager**, on every call — returning a view is refused just
# like returning the input itself:

# %%
@torch.library.custom_op("nb03::first_row", mutates_args=())
def first_row(x: torch.Tensor) -> torch.Tensor:
    return x[:1]          # a view of x: shares its memory

try:
    first_row(torch.ones(3))
    alias_error = None
except RuntimeError as error:
    alias_error = labkit.stages.as_torch_error(error, "eager")
print(alias_error.message.split(" The most common")[0])

# %%
assert alias_error is not None, "custom_op refuses, in eager, an output that is a view of an input"
assert "may not alias any inputs" in alias_error.message, "torch's message: outputs may not alias any inputs"

# %% [markdown]
# Ops registered through the lower-level `torch.library.Library.define` (or C++) get no eager check.
# For them AOTAutograd checks the outputs the first time the compiled code runs. Whether it **warns** or
# **raises** depends on the environment: torch reads the `CI` variable when it starts
# (`torch._functorch.config.error_on_custom_op_aliasing`). Here both settings, made explicit:

# %%
lib = torch.library.Library("nb03lib", "FRAGMENT")
lib.define("same(Tensor x) -> Tensor")
lib.impl("same", lambda x: x, "CompositeExplicitAutograd")           # returns its input
torch.library.register_fake("nb03lib::same", lambda x: torch.empty_like(x), lib=lib)

def use_same(x):
    return torch.ops.nb03lib.same(x) + 1

outcomes = {}
for raises in (False, True):
    torch.compiler.reset()
    with labkit.checks.aliasing_check_raises(raises), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.compile(use_same, backend="aot_eager")(torch.ones(2))
            outcomes[raises] = "warned" if any("may not alias" in str(w.message) for w in caught) else "silent"
        except RuntimeError:
            outcomes[raises] = "raised"
    print(f"error_on_custom_op_aliasing={raises}: {outcomes[raises]}")

# %%
assert torch.ops.nb03lib.same(x) is x, "eager: no aliasing check for Library.define ops"
assert outcomes == {False: "warned", True: "raised"}, \
    "compiled: AOTAutograd warns, or raises with error_on_custom_op_aliasing=True"
if "TORCHINDUCTOR_ERROR_ON_CUSTOM_OP_ALIASING" not in os.environ:
    assert torch._functorch.config.error_on_custom_op_aliasing == bool(os.getenv("CI")), \
        "torch's default for error_on_custom_op_aliasing follows the CI variable"
lib._destroy()

# %% [markdown]
# ## 3. A claim in circulation: "`x.add_(1); return x` is a valid mutating custom op"
#
# Blog posts show this pattern. Run it:

# %%
@torch.library.custom_op("nb03::seed", mutates_args={"x"})
def seed(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x

@seed.register_fake
def _(x):
    return torch.empty_like(x)

try:
    seed(torch.ones(2))
    seed_error = None
except RuntimeError as error:
    seed_error = labkit.stages.as_torch_error(error, "eager")   # torch's message, as data
print(seed_error.message.split(" The most common way")[0])

# %%
assert seed_error is not None, "x.add_(1); return x fails in eager"
assert "must not also be an input to this custom operator" in seed_error.message, \
    "torch's message: a returned tensor must not also be an input"

# %% [markdown]
# It fails **in eager**, before any compiler is involved. The legal ways to write it:
#
# 1. return nothing: `-> None` with `mutates_args={"x"}` (02);
# 2. return a *new* tensor, e.g. `x.clone()` after the update;
# 3. on torch ≥ 2.13, return `x` itself with `tags=torch.Tag.inplace` (02).
#
# Form 2, run and compared:

# %%
@torch.library.custom_op("nb03::seed_fixed", mutates_args={"x"})
def seed_fixed(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x.clone()

@seed_fixed.register_fake
def _(x):
    return torch.empty_like(x)

fixed_report = labkit.compile_and_compare(lambda x: seed_fixed(x) * 2, torch.ones(2), backend="inductor")
print(fixed_report.verdict)
assert fixed_report.verdict.agree, "form 2, returning a clone: compiled == eager"

# %% [markdown]
# ## Exercise: two overlapping views
#
# `two_bumps` applies `bump` to `x[1:3]` and then to `x[2:4]`; the two views share `x[2]`. Predict `x`
# after calling the **compiled** function on `torch.zeros(5)`, as a list of five floats, then run.

# %%
my_x_after = ...

# %%
def two_bumps(x):
    bump(x[1:3])
    bump(x[2:4])
    return x.sum()

x_eager, x_compiled = torch.zeros(5), torch.zeros(5)
two_bumps(x_eager)
torch.compile(two_bumps)(x_compiled)
if labkit.exercises.answered(my_x_after):
    labkit.exercises.check([float(v) for v in my_x_after] == x_compiled.tolist() == x_eager.tolist(),
                           "right: both writes land in x, the shared element twice, as in eager.",
                           "Each view shares storage with x; which elements does each bump touch?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: x[1:3] and x[2:4] overlap at index 2, so it is bumped twice. Functionalization tracks both
# views through the same base, so compiled equals eager.
assert x_eager.tolist() == [0.0, 1.0, 2.0, 1.0, 0.0], "eager: both writes land in x, x[2] twice"
assert x_compiled.tolist() == x_eager.tolist(), "compiled equals eager"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# The AOTAutograd graph above came from labkit's recording backend. torch prints it itself:
# `TORCH_LOGS="aot_graphs" python my_script.py` from a shell, or `torch._logging.set_logs(aot_graphs=True)`
# in a notebook (`labkit.torch_logs` is notebook 00's recipe for catching what it writes, so a cell can
# assert on it). Here with a plain `custom_op`:

# %%
@torch.library.custom_op("nb03::raw_bump", mutates_args={"x"})
def raw_bump(x: torch.Tensor) -> None:
    x.add_(1)


def raw_bump_middle(x):
    raw_bump(x[1:3])
    return x * 2


torch.compiler.reset()
with labkit.torch_logs(aot_graphs=True) as log:          # torch._logging.set_logs(aot_graphs=True), caught
    torch.compile(raw_bump_middle, backend="aot_eager")(torch.zeros(5))
aot_lines = [line.strip() for line in log.artifact("aot_graphs") if "torch.ops." in line]
print("\n".join(aot_lines))

# %%
assert any("nb03.raw_bump.default" in line and "_x_slice_start = 1, _x_slice_end = 3" in line for line in aot_lines), \
    "torch's AOTAutograd log shows the op on the view x[1:3] of its base"
assert any("torch.ops.aten.copy_.default(arg0_1" in line for line in aot_lines), \
    "torch's AOTAutograd log shows the copy_ back into the input"

# %% [markdown]
# ## What to remember
#
# - A mutating op on a view is functionalized through its **base** (`_x_base_index`, `_x_slice_…`) and
#   written back with `copy_`; Inductor re-inplaces it onto a view of your tensor.
# - Custom-op outputs may not alias inputs: `custom_op` refuses in eager; for `Library.define` ops
#   AOTAutograd warns, or raises when `CI` is set (`torch._functorch.config.error_on_custom_op_aliasing`).
# - If an op must return its mutated input, torch ≥ 2.13 has `tags=torch.Tag.inplace` (02); otherwise return
#   a clone, or nothing.
#
# ## Questions
#
# 1. Why does functionalization record the base and the slice of a view, instead of just the view?
# 2. Why can a `custom_op` schema not express "this output is a view of `x`", and what does torch do about it?
# 3. Why does the aliasing check for `Library.define` ops happen at compile time, not on every eager call?
# 4. In the exercise, why is the shared element bumped twice, compiled as in eager?
#
# ## Further reading
#
# - [`torch.library.custom_op`](https://docs.pytorch.org/docs/stable/library.html) — the rules on mutated
#   arguments and returned tensors
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - PyTorch tutorial, [Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)
#
# **Next:** 04 · Names and compile caches.
