# %% [markdown]
# # 03 · Aliasing and views: a mutating op on a slice, and the no-alias rule
#
# A slice is not a copy: write into `x[1:3]` and `x` changes. The compiler must know exactly which tensors share
# memory; when it gets that wrong, a correctly declared op computes a wrong answer.
#
# **What you will learn**
# - how a mutating op applied to a *view* is compiled: through its base, with a copy back;
# - why a custom op's outputs may not alias its inputs, and where torch checks it;
# - when `x.add_(1); return x` is a valid mutating custom op, and where Inductor still gets it wrong;
# - when Inductor hands a correctly declared op one buffer twice, and the guard that helps.
#
# **Time:** about 25 minutes. **Before:** 02 · `mutates_args`.

# %% tags=["nbval-ignore-output"]
import warnings

import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb03")

# %% [markdown]
# ## 1. A mutating op on a view
#
# `bump` adds 1 in place and says so. Apply it to a slice: the slice shares storage with `x`, so `x` changes.

# %%
bump = labkit.declare(name="nb03::bump", writes=("x",), mutates_args=("x",), returns="none")

def bump_middle(x):
    bump(x[1:3])
    return x * 2

x = torch.zeros(5)
print(bump_middle(x), x)

# %% [markdown]
# AOTAutograd's graph is functional: nothing changes in place. So it records the **base** and how the
# view was cut (`_x_base_index`, `_x_slice_start`, `_x_slice_end`), lets the op make a new base, and copies it
# back into your input:

# %%
report = labkit.compile_and_compare(bump_middle, torch.zeros(5), backend="aot_eager")
print(labkit.render.stage_code(report)["aot"])
labkit.pictures.view_written_back(report, "nb03::bump", torch.zeros(5), x)

# %% tags=["check"]
#@title Check: the call records the base and the slice, and the new base is copied back
aot_code = labkit.render.stage_code(report)["aot"]
assert "_x_base_index = 0, _x_slice_dim = 0, _x_slice_start = 1, _x_slice_end = 3" in aot_code, \
    "the call records the base and how the view x[1:3] was cut from it"
assert "copy_.default(arg0_1" in aot_code, "the new base is copied back into the input"
assert "auto_functionalized" in aot_code, "the graph is functional: the op is wrapped, nothing changes in place"
assert report.verdict.agree, "compiled == eager"
assert x.tolist() == [0.0, 1.0, 1.0, 0.0, 0.0], "eager: the write through the view landed in x"

# %% [markdown]
# Inductor then *re-inplaces* it: the op runs directly on a view of your tensor (`reinterpret_tensor` at
# offset 1), with no copy:

# %%
inductor_report = labkit.compile_and_compare(bump_middle, torch.zeros(5), backend="inductor")
print(labkit.render.stage_code(inductor_report)["inductor"])

# %% tags=["check"]
#@title Check: Inductor runs the op on a view of the input, at offset 1
assert "torch.ops.nb03.bump.default(reinterpret_tensor(arg0_1, (2, ), (1, ), 1))" in \
    labkit.render.stage_code(inductor_report)["inductor"], "Inductor runs the op on a view of the input, at offset 1"
assert inductor_report.verdict.agree, "compiled == eager"

# %% [markdown]
# ## 2. Why an op's outputs may not alias its inputs
#
# That bookkeeping needs to know which tensors share storage. A mutation is in the schema; an output that
# secretly views an input is not, so `custom_op` refuses it in eager, as it refuses returning the input itself:

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

# %% tags=["check"]
#@title Check: custom_op's inferred schema refuses a returned view, in eager
assert alias_error is not None, "custom_op refuses, in eager, an output that is a view of an input"
assert "may not alias any inputs" in alias_error.message, "torch's message: outputs may not alias any inputs"

# %% [markdown]
# You *can* declare it: an explicit schema with an alias annotation, `(Tensor(a) x) -> Tensor(a)`, says "the
# output views `x`". Eager returns it unchecked; AOTAutograd refuses it (`backend="eager"` and `torch.export`
# take it):

# %%
def first_row_view(x):
    return x[:1]

first_row_declared = torch.library.custom_op("nb03::first_row_declared", first_row_view, mutates_args=(),
                                             schema="(Tensor(a) x) -> Tensor(a)")
first_row_declared.register_fake(first_row_view)
view = first_row_declared(torch.ones(3))
compiled = labkit.compile_and_compare(lambda x: first_row_declared(x) + 1, torch.ones(3))
print("eager returns a view:", view._base is not None, "| compiled:", compiled.error.message[:115])

# %% tags=["check"]
#@title Check: an alias-annotated schema passes eagerly; torch.compile refuses it
assert view._base is not None, "eager: the declared view comes back unchecked"
assert compiled.error is not None, "torch.compile refuses an op whose output has alias annotations"
assert "Found a custom (non-ATen) operator whose output has alias annotations" in compiled.error.message, \
    "torch's message names the alias annotation"
refused = labkit.compile_and_compare(lambda x: first_row_declared(x) + 1, torch.ones(3), backend="aot_eager")
assert refused.error is not None, "aot_eager refuses it too: the refusal is AOTAutograd's"
taken = labkit.compile_and_compare(lambda x: first_row_declared(x) + 1, torch.ones(3), backend="eager")
assert taken.error is None, "backend='eager' (no AOTAutograd) compiles and runs it"
assert taken.verdict.agree, "and agrees with eager"


class FirstRow(torch.nn.Module):
    def forward(self, x):
        return first_row_declared(x) + 1


assert torch.export.export(FirstRow(), (torch.ones(3),)).module()(torch.ones(3)).tolist() == [2.0], \
    "torch.export exports it, and the exported program runs"

# %% [markdown]
# Ops registered with `torch.library.Library.define` get no eager check: AOTAutograd checks
# their outputs when its compiled code first runs (`aot_eager` here; `backend="eager"` skips it), and **warns** or
# **raises**,
# depending on
# `torch._functorch.config.error_on_custom_op_aliasing` (its default follows the `CI` variable):

# %%
lib = torch.library.Library("nb03lib", "FRAGMENT")
lib.define("same(Tensor x) -> Tensor")
lib.impl("same", lambda x: x, "CompositeExplicitAutograd")           # returns its input
torch.library.register_fake("nb03lib::same", lambda x: torch.empty_like(x), lib=lib)

outcomes = {}
for raises in (False, True):
    with labkit.checks.aliasing_check_raises(raises), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = labkit.compile_and_compare(lambda x: torch.ops.nb03lib.same(x) + 1, torch.ones(2))
        outcomes[raises] = "raised" if compiled.error else "warned" if any(
            "may not alias" in str(w.message) for w in caught) else "silent"
print(outcomes)

# %% tags=["check"]
#@title Check: no eager check for Library.define; compiled, a warning or an error
import os

assert torch.ops.nb03lib.same(x) is x, "eager: no aliasing check for Library.define ops"
assert outcomes == {False: "warned", True: "raised"}, \
    "compiled: AOTAutograd warns, or raises with error_on_custom_op_aliasing=True"
if "TORCHINDUCTOR_ERROR_ON_CUSTOM_OP_ALIASING" not in os.environ:
    assert torch._functorch.config.error_on_custom_op_aliasing == bool(os.getenv("CI")), \
        "torch's default for error_on_custom_op_aliasing follows the CI variable"
with labkit.checks.aliasing_check_raises(True), warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    no_aot = labkit.compile_and_compare(lambda x: torch.ops.nb03lib.same(x) + 1, torch.ones(2), backend="eager")
assert no_aot.error is None, "backend='eager' skips AOTAutograd, and its check: no error even set to raise"
assert not any("may not alias" in str(w.message) for w in caught), "nor a warning"
del lib     # the Library is freed

# %% [markdown]
# torch's checks, eager and at the compiled code's first run, compare **storages**, not memory: `x`'s memory in
# a new storage (`torch.from_numpy(x.numpy())`, DLPack) passes both, and AOTAutograd takes it for new memory:
# under `aot_eager` a write to it misses `x` (Inductor's reuse, §3, writes it through). `labkit.audit` compares
# bytes. The fix: `x.numpy().copy()`.

# %%
@torch.library.custom_op("nb03::via_numpy", mutates_args=())
def via_numpy(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(x.numpy())         # x's memory, in a storage of its own

via_numpy.register_fake(lambda x: torch.empty_like(x))
eager_x, compiled_x = torch.zeros(3), torch.zeros(3)
via_numpy(eager_x).add_(1)
torch.compile(lambda x: via_numpy(x).add_(1), backend="aot_eager")(compiled_x)
print("eager:", eager_x.tolist(), "| compiled:", compiled_x.tolist())

# %% tags=["check"]
#@title Check: a new storage over x's memory passes torch's checks; compiled, the write is lost; audit finds it
out = via_numpy(x)
assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(), "the output is x's memory"
assert eager_x.tolist() == [1.0, 1.0, 1.0], "eager: the write reaches x"
assert compiled_x.tolist() == [0.0, 0.0, 0.0], "aot_eager: it does not"
torch.compiler.reset()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.compile(lambda x: via_numpy(x).add_(1), backend="aot_eager")(torch.zeros(3))
assert not any("alias" in str(w.message) for w in caught), "compiled: no aliasing warning either"
inductor_x = torch.zeros(3)
torch.compile(lambda x: via_numpy(x).add_(1), backend="inductor")(inductor_x)
assert inductor_x.tolist() == [1.0, 1.0, 1.0], "Inductor: the add runs in the op's output, x's memory: it reaches x"
shared = labkit.audit(via_numpy, torch.zeros(3))
assert [f.check for f in shared.findings] == ["memory"], "labkit.audit compares memory: it finds the shared bytes"

# %% tags=["check"]
#@title Check, continued: a DLPack round trip is missed the same way; a copy shares nothing
via_dlpack = torch.library.custom_op("nb03::via_dlpack", lambda x: torch.from_dlpack(torch.utils.dlpack.to_dlpack(x)),
                                     mutates_args=(), schema="(Tensor x) -> Tensor")
via_dlpack.register_fake(lambda x: torch.empty_like(x))
assert via_dlpack(x).data_ptr() == x.data_ptr(), "a DLPack round trip: x's memory, and custom_op's check passes it"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dlpack_x = torch.zeros(3)
    torch.compile(lambda x: via_dlpack(x).add_(1), backend="aot_eager")(dlpack_x)
assert dlpack_x.tolist() == [0.0, 0.0, 0.0], "compiled, its write misses x too"
assert not any("alias" in str(w.message) for w in caught), "with no warning"
copied = torch.from_numpy(x.numpy().copy())
assert copied.data_ptr() != x.data_ptr(), "the fix, a copy: other memory"
assert torch.equal(copied, x), "and x's values"

# %% [markdown]
# ## 3. "`x.add_(1); return x` is a valid mutating custom op"
#
# Blog posts show this pattern. Run it:

# %%
@torch.library.custom_op("nb03::seed", mutates_args={"x"})
def seed(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x

seed.register_fake(lambda x: torch.empty_like(x))
try:
    seed(torch.ones(2))
    seed_error = None
except RuntimeError as error:
    seed_error = labkit.stages.as_torch_error(error, "eager")
print(seed_error.message.split(" The most common way")[0])

# %% tags=["check"]
#@title Check: x.add_(1); return x fails in eager
assert seed_error is not None, "x.add_(1); return x fails in eager"
assert "must not also be an input to this custom operator" in seed_error.message, \
    "torch's message: a returned tensor must not also be an input"

# %% [markdown]
# It fails **in eager**. Legal: return nothing (02), a new tensor such as `x.clone()`, or `x` itself from
# an op tagged `Tag.inplace`.

# %%
@torch.library.custom_op("nb03::seed_fixed", mutates_args={"x"})
def seed_fixed(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x.clone()

seed_fixed.register_fake(lambda x: torch.empty_like(x))
fixed_report = labkit.compile_and_compare(lambda x: seed_fixed(x) * 2, torch.ones(2), backend="inductor")
print(fixed_report.verdict)

# %% tags=["check"]
#@title Check: returning a clone compiles and agrees with eager
assert fixed_report.verdict.agree, "form 2, returning a clone: compiled == eager"

# %% [markdown]
# Tagged, `seed`'s body is legal, and compiled it agrees with eager on a whole input. But **Inductor reuses an op's
# returned buffer** for the `* 2`: on a slice cut inside, it lands in `x` (in a tensor also returned, there):

# %%
if hasattr(torch.Tag, "inplace"):
    @torch.library.custom_op("nb03::seed_tagged", mutates_args={"x"}, tags=(torch.Tag.inplace,))
    def seed_tagged(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x
    tagged = {"x": labkit.compile_and_compare(lambda x: seed_tagged(x) * 2, torch.ones(3), backend="inductor"),
              "x[1:]": labkit.compile_and_compare(lambda x: seed_tagged(x[1:]) * 2, torch.ones(3), backend="inductor")}
    print("\n".join(f"seed_tagged({where}) * 2: {report.verdict}" for where, report in tagged.items()))
    print(*labkit.logs.buffer_reuse(labkit.render.stage_code(tagged["x[1:]"])["inductor"]), sep="\n")
else:
    print("This torch has no torch.Tag.inplace (docs/torch-versions.md).")

# %% tags=["check"]
#@title Check: tagged, the body is legal; Inductor agrees on x and (a canary) writes x wrongly through a slice
import re

if hasattr(torch.Tag, "inplace"):
    assert tagged["x"].verdict.agree, "Tag.inplace, x.add_(1); return x on a whole tensor: compiled == eager"
    sliced = tagged["x[1:]"].verdict                   # observed on 2.13, 2.14.1 and 2.15.0
    assert sliced.outputs_match, "the Tag.inplace op on a slice: the returned values are right"
    assert not sliced.inputs_match, "torch fixed the Tag.inplace op on a slice (x is right now): update §3"
    torch.compiler.reset()
    x_eager, x_compiled = torch.ones(3), torch.ones(3)
    seed_tagged(x_eager[1:]) * 2
    torch.compile(lambda x: seed_tagged(x[1:]) * 2, backend="inductor")(x_compiled)
    assert x_eager.tolist() == [1.0, 2.0, 2.0], "eager: the slice of x bumped once"
    assert x_compiled.tolist() == [1.0, 4.0, 4.0], "compiled (plain torch.compile): the * 2 written into x"
    if labkit.env.torch_version()[:2] == (2, 13):      # the generated code, as read on 2.13
        assert re.search(r"(buf\d+) = (buf\d+); del \2  # reuse\n\s+cpp_fused_mul_\d+\(\1\)",
                         labkit.render.stage_code(tagged["x[1:]"])["inductor"]), \
            "Inductor reuses the op's returned buffer (a view of x) for the * 2"
else:
    assert labkit.env.torch_version() < (2, 13), "torch.Tag.inplace exists from 2.13 on"

# %% tags=["check"]
#@title Check: not only slices: a whole tensor computed inside and also returned gets the * 2 too
if hasattr(torch.Tag, "inplace"):
    def returned_too(x):
        y = x + 1
        return y, seed_tagged(y) * 2

    returned = labkit.compile_and_compare(returned_too, torch.ones(3), backend="inductor").verdict
    assert not returned.outputs_match, "Inductor writes the * 2 into y, which the function also returns"

# %% [markdown]
# ## 4. When the compiler gets sharing wrong: a clone that vanishes
#
# `reverse_into(src, dst)` writes `src` reversed into `dst`, one element at a time, and declares exactly what it
# writes. The caller passes it a **clone** of `x` as `src` and `x` itself as `dst`:

# %%
@torch.library.custom_op("nb03::reverse_into", mutates_args=("dst",))
def reverse_into(src: torch.Tensor, dst: torch.Tensor) -> None:
    n = src.shape[0]
    for k in range(n):
        dst[n - 1 - k] = src[k]

reverse_into.register_fake(lambda src, dst: None)

def reverse_in_place(x):
    y = x.clone()
    reverse_into(y, x)
    return x

runs = {"x an input": reverse_in_place, "x computed inside": lambda inp: reverse_in_place(inp * 2)}
reports = {where: labkit.compile_and_compare(f, torch.arange(8.0), backend="inductor") for where, f in runs.items()}
print("\n".join(f"{where:<18} {report.verdict}" for where, report in reports.items()))
print(labkit.render.stage_code(reports["x an input"])["inductor"])

# %% [markdown]
# On the torch these outputs come from (2.13), compiled and eager **differ**, both ways. The code shows why:
# `reverse_into.default(arg0_1, arg0_1)`, one buffer twice. Inductor removed the clone as a no-op, so the op
# writes the tensor it reads and, halfway through, reads values it has already overwritten. No error, no
# warning. On torch 2.15 the first line agrees and the second, with `x` computed inside, still differs.

# %% tags=["check"]
#@title Check: the clone is gone and the result is wrong (a canary: it fails the day torch fixes this)
clone_report, computed_report = reports["x an input"], reports["x computed inside"]
inductor_code = labkit.render.stage_code(clone_report)["inductor"]
if labkit.env.torch_version() < (2, 15):    # observed on 2.11, 2.13 and 2.14.1
    assert "torch.ops.nb03.reverse_into.default(arg0_1, arg0_1)" in inductor_code, \
        "torch fixed #198031 (the op no longer gets one buffer twice): update this lesson"
    assert "clone" not in labkit.render.inductor_call(inductor_code), "the mechanism: no clone left in the code"
    assert not clone_report.verdict.agree, "torch fixed #198031 (compiled == eager now): update this lesson"
else:                                        # 2.15.0 keeps a clone of a graph input the graph writes
    assert clone_report.verdict.agree, "2.15.0: compiled == eager"
assert not computed_report.verdict.agree, "x computed inside the compiled function: wrong (2.13 and 2.15.0)"
torch.compiler.reset()
computed = torch.compile(runs["x computed inside"], backend="inductor")(torch.arange(8.0))
assert not torch.equal(computed, runs["x computed inside"](torch.arange(8.0))), "plain torch.compile: wrong too"

# %% [markdown]
# Two ways out: in the kernel, copy `src` when it shares storage with `dst` (free when it does not); or declare
# `src` written too, so Inductor keeps a copy, which fixes this program, not every one (`docs/torch-versions.md`):

# %%
@torch.library.custom_op("nb03::reverse_guarded", mutates_args=("dst",))
def reverse_guarded(src: torch.Tensor, dst: torch.Tensor) -> None:
    if src.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
        src = src.clone()            # the two share memory: read from a copy
    n = src.shape[0]
    for k in range(n):
        dst[n - 1 - k] = src[k]

@torch.library.custom_op("nb03::reverse_both", mutates_args=("src", "dst"))
def reverse_both(src: torch.Tensor, dst: torch.Tensor) -> None:
    n = src.shape[0]
    for k in range(n):
        dst[n - 1 - k] = src[k]

# %%
def reversing_program(op):
    def program(x):
        op(x.clone(), x)          # y = x.clone(); op(y, x); return x
        return x * 1.0
    return program

safe = {}
for label, op in {"the guarded kernel": reverse_guarded, "src declared too": reverse_both}.items():
    op.register_fake(lambda src, dst: None)
    safe[label] = labkit.compile_and_compare(reversing_program(op), torch.arange(8.0), backend="inductor")
    print(f"{label:<20}", safe[label].verdict)

# %% tags=["check"]
#@title Check: the guarded kernel agrees with eager; declaring src too fixes this program
assert safe["the guarded kernel"].verdict.agree, "the kernel that copies shared memory first: compiled == eager"
assert safe["src declared too"].verdict.agree, "declaring src as mutated too: compiled == eager on this program"

# %% [markdown]
# `labkit.audit` makes this call on purpose, with the written argument an input and computed inside. On
# `reverse_into`:

# %%
audited = labkit.audit(reverse_into, torch.zeros(8), torch.zeros(8))
print(next((str(f) for f in audited.findings if f.check == "aliasing"), "no aliasing finding"))

# %% tags=["check"]
#@title Check: audit reports the hazard on every release (an intermediate on 2.15), and not on the guarded kernel
aliasing = [f for f in audited.findings if f.check == "aliasing"]
assert len(aliasing) == 1, "audit reports the hazard (a graph input up to 2.14, an intermediate everywhere)"
assert "'dst' an intermediate" in aliasing[0].problem, "audit names the intermediate call"
assert ("right with 'dst' a graph input" in aliasing[0].problem) == (labkit.env.torch_version() >= (2, 15)), \
    "audit says the graph-input call is right exactly where torch keeps that clone"
assert not [f for f in labkit.audit(reverse_guarded, torch.zeros(8), torch.zeros(8)).findings
            if f.check == "aliasing"], "the guarded kernel: no aliasing finding"

# %% [markdown]
# ## Exercise: two overlapping views
#
# `two_bumps` applies `bump` to `x[1:3]` and then to `x[2:4]`; the two views share `x[2]`. Predict `x` after the
# **compiled** function runs on `torch.zeros(5)`: a list of five numbers, e.g. `[0, 0, 0, 0, 0]`.

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
if labkit.exercises.answered(my_x_after, "edit my_x_after in the cell above, run it, then this cell"):
    as_eager = "as in eager" if x_compiled.tolist() == x_eager.tolist() else f"yet eager left {x_eager.tolist()}"
    labkit.exercises.check_list(my_x_after, x_compiled.tolist(),
                                f"right: both writes land in x, the shared element twice, {as_eager}.",
                                "each view shares storage with x: which elements does each bump touch?", "my_x_after")

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# x[1:3] and x[2:4] overlap at index 2, so it is bumped twice: [0, 1, 2, 1, 0]. Functionalization tracks both
# views through the same base, so compiled equals eager.
assert x_eager.tolist() == [0.0, 1.0, 2.0, 1.0, 0.0], "eager: both writes land in x, x[2] twice"
assert x_compiled.tolist() == x_eager.tolist(), "compiled equals eager"
assert labkit.exercises.number_list(torch.tensor([0, 1, 2, 1, 0])) == x_eager.tolist(), "a tensor answer is read too"

# %% [markdown]
# ## In your own project
#
# `TORCH_LOGS="aot_graphs,output_code" python my_script.py` prints §1's base and slice and §4's buffers
# (`labkit.torch_logs` in a notebook). To test an op against §4's hazard, do what `labkit.audit` does, on values
# not all equal.

# %% tags=["check"]
#@title Check: torch's own log shows the op on the view of its base, and the copy back
with labkit.torch_logs(aot_graphs=True) as log:
    torch.compiler.reset()
    torch.compile(bump_middle, backend="aot_eager")(torch.zeros(5))
aot_lines = [line.strip() for line in log.artifact("aot_graphs") if "torch.ops." in line]
assert any("nb03.bump.default" in line and "_x_slice_start = 1, _x_slice_end = 3" in line for line in aot_lines), \
    "torch's AOTAutograd log shows the op on the view x[1:3] of its base"
assert any("torch.ops.aten.copy_.default(arg0_1" in line for line in aot_lines), \
    "torch's AOTAutograd log shows the copy_ back into the input"

# %% [markdown]
# ## What to remember
#
# - A mutating op on a view is compiled through its **base** and written back with `copy_`; Inductor then runs it
#   on a view of your tensor.
# - Outputs may not secretly alias inputs. `custom_op` refuses in eager with its inferred schema; an explicit
#   alias annotation passes eagerly and is refused by AOTAutograd (`aot_eager`, `inductor`); `Library.define` ops
#   are checked when code compiled through AOTAutograd first runs. Those checks compare storages: `x`'s memory in a
#   new storage passes (§2).
# - Return nothing, a clone, or, tagged `Tag.inplace`, the input itself (untagged, `x.add_(1); return x` fails
#   in eager). Inductor reuses a returned buffer: on a tagged op's slice it wrote into `x` (§3).
# - A correct declaration is not always enough: a kernel that reads one input while it writes another should
#   guard against the two sharing memory.
#
# ## Questions
#
# 1. Why does functionalization record the base and the slice of a view, instead of just the view?
# 2. What does the alias annotation `Tensor(a)` promise, and why does AOTAutograd refuse it for a custom op?
# 3. When is a `Library.define` op's output checked for aliasing its input, and what checks a `custom_op` eagerly?
# 4. In §4, why does removing the clone make `reverse_into` wrong, and what kind of kernel would not notice?
# 5. In the exercise, why is the shared element bumped twice, compiled as in eager?
#
# ## Further reading
#
# - [`torch.library.custom_op`](https://docs.pytorch.org/docs/stable/library.html) — the rules on mutated
#   arguments and returned tensors
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - pytorch [#198031](https://github.com/pytorch/pytorch/issues/198031): `y = x.clone(); op(y, x)` becomes
#   `op(x, x)` (same root cause: [#197829](https://github.com/pytorch/pytorch/issues/197829),
#   [#156786](https://github.com/pytorch/pytorch/issues/156786))
# - pytorch [#131192](https://github.com/pytorch/pytorch/issues/131192): re-inplacing a custom op on a view
#
# **Next:** 04 · Names and compile caches.
