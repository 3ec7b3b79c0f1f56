# %% [markdown]
# # 10 · Beyond the shape: strides, dtypes, mixed precision, C++-style registration
#
# **What you will learn**
# - to register an op the way large projects (vLLM) and C++ extensions do — `torch.library.Library` +
#   `define` + `impl` + `register_fake` — and how it differs from `torch.library.custom_op`;
# - what a fake kernel with the **wrong dtype** or the **wrong strides** does: what `opcheck` catches, and what
#   `torch.compile` does with each;
# - the layout tags Inductor reads for a custom op, and the default on your torch;
# - what `torch.autocast` does to a custom op, eagerly and compiled, and what `register_autocast` changes;
# - why a `float` argument recompiles per value, and the 0-d tensor that does not.
#
# **Time:** about 25 minutes. **Before:** 01 · Custom ops and the compile pipeline, 07 · Data-dependent shapes,
# 08 · Training with custom ops.
#
# Every claim is asserted by the cell that shows it; outputs recorded on torch 2.13.0 (CPU). No GPU here: on
# CUDA, autocast and Inductor's generated code differ; where a cell would differ on a GPU, it says so.

# %%
# NBVAL_IGNORE_OUTPUT
import torch
from torch import Tensor

import labkit

labkit.setup()
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. A C++-style registration
#
# `custom_op` is one decorator. Underneath, torch does what a C++ extension's `TORCH_LIBRARY` block does:
# it **defines** a schema in a namespace, then **implements** it per dispatch key. You can write those steps
# yourself with `torch.library.Library`: vLLM's `direct_register_custom_op` does exactly this.
#
# A `Library` object owns its registrations: keep it alive (a module-level name), or the op disappears when
# it is garbage-collected (pytorch #139444). This cell destroys the library a previous run of it made, so that
# running it again works:

# %%
if "nb10_lib" in globals():
    globals()["nb10_lib"]._destroy()         # only our own library: removes every op it defined
nb10_lib = torch.library.Library("nb10", "FRAGMENT")

nb10_lib.define("scale_lib(Tensor x) -> Tensor")


@torch.library.impl(nb10_lib, "scale_lib", "CPU")
def scale_lib_cpu(x):
    return x * 2


@torch.library.register_fake("nb10::scale_lib", lib=nb10_lib)
def _(x):
    return torch.empty_like(x)


print(torch.ops.nb10.scale_lib.default._schema)

# %% [markdown]
# The same op with `custom_op` (its schema is inferred from the type hints):

# %%
@torch.library.custom_op("nb10::scale_co", mutates_args=())
def scale_co(x: Tensor) -> Tensor:
    return x * 2


@scale_co.register_fake
def _(x):
    return torch.empty_like(x)


print(torch.ops.nb10.scale_co.default._schema)

# %% [markdown]
# To the compiler they are the same thing: an opaque `OpOverload` with a schema and a fake kernel. Their
# AOTAutograd graphs are identical up to the name:

# %%
x = torch.randn(3, 4)
by_lib = labkit.compile_and_compare(lambda x: torch.ops.nb10.scale_lib(x) + 1, x)
by_co = labkit.compile_and_compare(lambda x: scale_co(x) + 1, x)
print(by_lib.aot_graphs[0].code)

# %%
assert by_lib.verdict.agree, "the Library op compiles and matches eager"
assert by_co.verdict.agree, "so does the custom_op"
assert by_lib.aot_graphs[0].code.replace("scale_lib", "scale_co") == by_co.aot_graphs[0].code, \
    "the same graph, up to the op's name"

# %% [markdown]
# The differences are in the registration, not in the graph:
#
# - **Defining a name twice raises** with `Library.define` — `custom_op` silently replaces (notebook 04);
# - **no eager checks**: `custom_op` checks on every eager call that an output does not alias an input
#   (notebook 03); an op defined with `Library` is not checked eagerly at all.

# %%
try:
    nb10_lib.define("scale_lib(Tensor x) -> Tensor")
    twice = None
except RuntimeError as error:
    twice = str(error)
print(twice[:160])

nb10_lib.define("same_lib(Tensor x) -> Tensor")
nb10_lib.impl("same_lib", lambda x: x, "CPU")           # returns its input: an aliasing bug
x = torch.randn(3)
returned_input = torch.ops.nb10.same_lib(x) is x
print("Library op returned its own input, eagerly, without complaint:", returned_input)

# %%
assert twice.startswith("Tried to register an operator (nb10::scale_lib(Tensor x) -> Tensor) with the same "
                        "name and overload name multiple times"), "define twice raises"
assert returned_input, "no eager aliasing check for a Library-defined op"

# %%
@torch.library.custom_op("nb10::same_co", mutates_args=())
def same_co(x: Tensor) -> Tensor:
    return x


try:
    same_co(torch.randn(3))
    co_error = None
except RuntimeError as error:
    co_error = str(error)
assert "must not also be an input to this custom operator" in co_error, "custom_op checks aliasing eagerly"
print(co_error[:120])

# %% [markdown]
# ## 2. Fake kernels wrong beyond the shape
#
# A fake kernel promises the output's **shape, dtype and strides**. Notebooks 01 and 05 showed wrong
# shapes. Two subtler mistakes (real reports: pytorch #177115, #160472, #181851):
#
# - a fake that says `bfloat16` for a kernel that returns `float32`;
# - a fake that says column-major (transposed strides) for a kernel that returns a contiguous tensor.

# %%
nb10_lib.define("wrong_dtype(Tensor x) -> Tensor")
nb10_lib.impl("wrong_dtype", lambda x: x * 2, "CPU")
torch.library.register_fake("nb10::wrong_dtype", lambda x: torch.empty_like(x, dtype=torch.bfloat16),
                            lib=nb10_lib)

nb10_lib.define("wrong_strides(Tensor x) -> Tensor")
nb10_lib.impl("wrong_strides", lambda x: (x * 2).contiguous(), "CPU")
torch.library.register_fake("nb10::wrong_strides", lambda x: torch.empty_like(x.t()).t(),  # column-major
                            lib=nb10_lib)

# %%
def opcheck_outcome(op, *args):
    try:
        return torch.library.opcheck(op, args)
    except Exception as error:                      # opcheck raises OpCheckError on the first failing test
        return f"{type(error).__name__}: {error}"


x = torch.arange(12.0).reshape(3, 4)
dtype_check = opcheck_outcome(torch.ops.nb10.wrong_dtype.default, x)
stride_check = opcheck_outcome(torch.ops.nb10.wrong_strides.default, x)
print(dtype_check[:160], stride_check, sep="\n")

# %%
assert dtype_check.startswith("OpCheckError: opcheck(op, ...): test_faketensor failed"), "dtype: caught"
assert "Dtypes torch.float32 and torch.bfloat16 are not equal" in dtype_check, "it names both dtypes"
assert stride_check == {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                        "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}, \
    "strides: every opcheck test passes on torch 2.13"

# %% [markdown]
# `opcheck`'s `test_faketensor` compares dtypes, but on 2.13 not the strides of this output. Now compile a
# use of each op with Inductor (we sum the output: the sum reads the op's buffer, and writes one value):

# %%
results = {}
for name in ("wrong_dtype", "wrong_strides"):
    op = getattr(torch.ops.nb10, name).default
    torch.compiler.reset()
    try:
        compiled = torch.compile(lambda x, op=op: op(x).sum())(x)
    except RuntimeError as error:                # torch 2.15 checks the kernel's dtype (below)
        compiled = error
    results[name] = (compiled, op(x).sum())
    print(f"{name:<14} compiled {compiled if isinstance(compiled, Exception) else compiled.item():}   "
          f"eager {results[name][1].item():8.2f}")

# %%
compiled, eager = results["wrong_dtype"]
if labkit.env.torch_version() >= (2, 15):        # observed on 2.15.0: the compiled code checks the dtype
    assert "expected dtype torch.bfloat16 but got torch.float32" in str(compiled), "2.15 refuses the lie"
else:                                            # observed on 2.11.0 and 2.13.0: no check, a wrong number
    assert compiled.dtype == torch.bfloat16, "Inductor trusted the fake's dtype"
    assert not torch.allclose(compiled.float(), eager), "silently wrong: float32 bytes read as bfloat16"
compiled, eager = results["wrong_strides"]
torch.testing.assert_close(compiled, eager)      # here the wrong strides did no harm (observed, see below)

# %% [markdown]
# - The **wrong dtype is silently wrong** under Inductor on torch 2.11 and 2.13: the generated kernel reads the
#   real `float32` buffer as `bfloat16` — no error, a wrong number. Torch 2.15.0's generated code checks the
#   dtype the kernel returned and raises `expected dtype torch.bfloat16 but got torch.float32` instead (the
#   cell above asserts whichever your torch does; 2.14 was not run). Worse patterns (a pointwise op writing a buffer sized by
#   the fake's dtype) corrupted memory and crashed the process in our runs, so this notebook does not run them.
#   `opcheck` catches it: run `opcheck`.
# - The **wrong strides** passed `opcheck` and, in the sum above (and in `op(x)`, `op(x)[0] + 1`, which we also
#   ran), compiled results matched eager on torch 2.13 CPU. That is what we observed, not a guarantee:
#   write fake kernels that return the strides your kernel returns (`torch.empty_like(x)` keeps `x`'s).
#
# ## 3. Layouts Inductor gives a custom op
#
# Inductor may choose the strides of the buffers it creates. Before calling a custom op it applies a
# **layout constraint**, chosen by the op's tag (`torch._inductor.lowering.tag_to_layout_constraint`):
#
# - `torch.Tag.needs_exact_strides`: the input gets exactly the strides eager would have produced;
# - `torch.Tag.needs_fixed_stride_order`: the same *order* of strides as in the traced graph;
# - `torch.Tag.flexible_layout`: whatever Inductor chose.
#
# Untagged custom ops get `torch._functorch.config.custom_op_default_layout_constraint`
# (read by `torch._library.utils.get_layout_constraint_tag`):

# %%
import torch._functorch.config

default_layout = torch._functorch.config.custom_op_default_layout_constraint
print(torch.__version__, default_layout)
assert default_layout == "needs_exact_strides", "on torch 2.13 the default is needs_exact_strides"

# %% [markdown]
# A kernel that depends on strides would be broken by a layout eager never produces. We record the strides
# a kernel sees for an input that is a pointwise op on a transposed tensor (`x.t() * 2`, whose eager strides
# are `(1, 6)`), under each tag:

# %%
seen = {}


def stride_recorder(tag):
    name = "strides_" + (tag.name if tag is not None else "untagged")

    @torch.library.custom_op(f"nb10::{name}", mutates_args=(), tags=() if tag is None else (tag,))
    def op(x: Tensor) -> Tensor:
        seen[name] = x.stride()                 # what the kernel is handed
        return x.clone()

    op.register_fake(lambda x: torch.empty_like(x))
    return op


# %%
x = torch.randn(4, 6)
for tag in (None, torch.Tag.needs_exact_strides, torch.Tag.needs_fixed_stride_order, torch.Tag.flexible_layout):
    op = stride_recorder(tag)
    torch.compiler.reset()
    torch.compile(lambda x, op=op: op(x.t() * 2))(x)
print("eager:", (x.t() * 2).stride(), "compiled:", seen)

# %%
assert (x.t() * 2).stride() == (1, 6), "eagerly, the pointwise result keeps the transposed strides"
assert set(seen.values()) == {(1, 6)}, "on 2.13 CPU every tag handed the kernel eager's strides here"

# %% [markdown]
# In this pattern Inductor kept eager's strides under **every** tag, so the tag made no difference we could
# observe; we did not find a small CPU pattern where it does. What the tag buys you is a promise: with
# `needs_exact_strides` (the default on 2.13) a stride-dependent kernel (one that calls `x.view(-1)` or reads
# `x.stride()`) gets eager's strides even when Inductor would prefer others; with `flexible_layout` it must
# cope with any. Tag an op `flexible_layout` only if its kernel handles every layout.
#
# ## 4. Mixed precision: `torch.autocast` and a custom op
#
# Autocast casts the inputs of listed ops (`torch.mm` → bf16). A custom op is not listed. A custom matmul:

# %%
@torch.library.custom_op("nb10::mm", mutates_args=())
def nb10_mm(a: Tensor, b: Tensor) -> Tensor:
    return a @ b                                 # stands in for your kernel


nb10_mm.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))


def both(a, b):
    return nb10_mm(a, b).dtype, torch.mm(a, b).dtype


a, b = torch.randn(4, 4), torch.randn(4, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    eager_dtypes = both(a, b)
    torch.compiler.reset()
    compiled_out = torch.compile(lambda a, b: (nb10_mm(a, b), torch.mm(a, b)))(a, b)
print("eager:", eager_dtypes, " compiled:", [t.dtype for t in compiled_out])

# %%
assert eager_dtypes == (torch.bfloat16, torch.bfloat16), "eager: autocast is still on inside the kernel"
assert compiled_out[0].dtype == torch.float32, "compiled: the op gets float32 and returns float32"
assert compiled_out[1].dtype == torch.bfloat16, "compiled: torch.mm still runs in bf16"

# %% [markdown]
# Eager and compiled **disagree**: eagerly the op's Python kernel runs inside the autocast region, so its
# `a @ b` is autocast too; compiled, autocast is applied while tracing, the op is opaque, and its kernel runs
# on the float32 inputs it was given. (A C++/CUDA kernel would see float32 in both — autocast does not reach
# inside it. The CUDA behaviour needs a GPU, not run here.) `register_autocast` makes the op itself an
# autocast op: its floating inputs are cast to bf16 before it runs, eager and compiled alike:

# %%
torch.library.register_autocast("nb10::mm", "cpu", torch.bfloat16)
with torch.autocast("cpu", dtype=torch.bfloat16):
    eager_dtype = nb10_mm(a, b).dtype
    torch.compiler.reset()
    compiled_dtype = torch.compile(nb10_mm)(a, b).dtype
print("eager:", eager_dtype, " compiled:", compiled_dtype)
assert eager_dtype == compiled_dtype == torch.bfloat16, "with register_autocast both run in bf16"

# %% [markdown]
# ## 5. Scalars in and out
#
# Notebook 08 showed that a `float` argument is baked into the graph; notebook 07 covered `int` vs `SymInt`.
# In short: each new float value compiles a new graph, even with `dynamic=True`. A 0-d tensor does not:

# %%
@torch.library.custom_op("nb10::scale_by", mutates_args=())
def scale_by(x: Tensor, factor: float) -> Tensor:
    return x * factor


scale_by.register_fake(lambda x, factor: torch.empty_like(x))


@torch.library.custom_op("nb10::scale_by_tensor", mutates_args=())
def scale_by_tensor(x: Tensor, factor: Tensor) -> Tensor:
    return x * factor


scale_by_tensor.register_fake(lambda x, factor: torch.empty_like(x))

x = torch.randn(4)
as_float = labkit.compile_and_compare(scale_by, calls=[(x, f) for f in (1.0, 2.0, 3.0)], dynamic=True)
as_tensor = labkit.compile_and_compare(scale_by_tensor, calls=[(x, torch.tensor(f)) for f in (1.0, 2.0, 3.0)],
                                       dynamic=True)
print("graphs per call — float:", as_float.graphs_per_call, " 0-d tensor:", as_tensor.graphs_per_call)

# %%
assert as_float.verdict.agree, "the float version matches eager"
assert as_tensor.verdict.agree, "so does the 0-d tensor version"
assert as_float.recompiles == 2, "a float argument: one new graph per new value, even with dynamic=True"
assert as_tensor.recompiles == 0, "a 0-d tensor argument: no recompile"

# %% [markdown]
# Out: `custom_op` accepts `-> int` on 2.13. The fake kernel cannot know the value, so it returns a new
# unbacked symbol (`new_dynamic_size`, notebook 07) and the op compiles with `fullgraph=True`:

# %%
@torch.library.custom_op("nb10::count_positive", mutates_args=())
def count_positive(x: Tensor) -> int:
    return int((x > 0).sum())


@count_positive.register_fake
def _(x):
    return torch.library.get_ctx().new_dynamic_size()


x = torch.tensor([1.0, -2.0, 3.0, 4.0])
torch.compiler.reset()
counted = torch.compile(lambda x: count_positive(x) + 1, fullgraph=True)(x)
print(counted, type(counted).__name__)
assert counted == 4, "an int output compiles (fullgraph) and gives the count"
assert isinstance(counted, int), "and comes back a Python int"

# %% [markdown]
# ## Exercise 1: what does `opcheck` catch?
#
# For each wrong fake kernel, predict `"caught"` or `"passes"` (on torch 2.13): a fake that returns
# `float64` for a `float32` kernel, and a fake that returns a tensor with strides `(1, 3)` for a kernel that
# returns a contiguous `(3, 4)` tensor.

# %%
my_opcheck = {"float64 fake": ..., "(1, 3) strides fake": ...}

# %%
def opcheck_verdict(fake, tag):
    name = f"ex_{tag}"
    if not hasattr(torch.ops.nb10, name):
        nb10_lib.define(f"{name}(Tensor x) -> Tensor")
        nb10_lib.impl(name, lambda x: (x * 2).contiguous(), "CPU")
        torch.library.register_fake(f"nb10::{name}", fake, lib=nb10_lib)
    outcome = opcheck_outcome(getattr(torch.ops.nb10, name).default, torch.randn(3, 4))
    return "passes" if isinstance(outcome, dict) else "caught"


actual_opcheck = {"float64 fake": opcheck_verdict(lambda x: torch.empty_like(x, dtype=torch.float64), "f64"),
                  "(1, 3) strides fake": opcheck_verdict(lambda x: torch.empty_like(x.t()).t(), "strides")}
if all(labkit.exercises.answered(v) for v in my_opcheck.values()):
    wrong = [k for k in actual_opcheck if my_opcheck[k] != actual_opcheck[k]]
    labkit.exercises.check(not wrong, "both predictions hold.",
                           f"re-think {wrong}: which metadata did test_faketensor compare in section 2?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: test_faketensor compares the dtype (caught), but on torch 2.13 not these strides (passes).
assert actual_opcheck == {"float64 fake": "caught", "(1, 3) strides fake": "passes"}, "opcheck's verdicts"
assert {"float64 fake": "passes", "(1, 3) strides fake": "passes"} != actual_opcheck, "a wrong answer fails"
print("solution checked")

# %% [markdown]
# ## Exercise 2: autocast without `register_autocast`
#
# A new op `nb10::mm2`, like section 4's `nb10::mm` but **without** `register_autocast`, is compiled and called
# under `torch.autocast("cpu", dtype=torch.bfloat16)` with float32 inputs. Which dtype does it return?

# %%
my_compiled_dtype = ...

# %%
@torch.library.custom_op("nb10::mm2", mutates_args=())
def nb10_mm2(a: Tensor, b: Tensor) -> Tensor:
    return a @ b


nb10_mm2.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))
with torch.autocast("cpu", dtype=torch.bfloat16):
    torch.compiler.reset()
    actual_compiled_dtype = torch.compile(nb10_mm2)(a, b).dtype
if labkit.exercises.answered(my_compiled_dtype):
    labkit.exercises.check(my_compiled_dtype == actual_compiled_dtype, "right: the op is opaque to autocast.",
                           "re-read section 4: what does autocast cast while tracing, and what not?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: compiled, autocast casts only the ops it lists; the opaque op gets (and returns) float32.
assert actual_compiled_dtype == torch.float32, "compiled, the opaque op stays float32"
assert torch.bfloat16 != actual_compiled_dtype, "the eager-minded answer is rejected"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# ```python
# lib = torch.library.Library("mylib", "FRAGMENT")          # keep it alive: module level
# lib.define("my_op(Tensor x) -> Tensor")
# torch.library.impl(lib, "my_op", "CPU")(my_op_cpu)        # or "CUDA", or C++ TORCH_LIBRARY_IMPL
# torch.library.register_fake("mylib::my_op", lambda x: torch.empty_like(x), lib=lib)
# torch.library.register_autocast("mylib::my_op", "cuda", torch.float16)   # if it should run in half
# torch.library.opcheck(torch.ops.mylib.my_op.default, (torch.randn(3, 4),))
# ```
#
# - Make the fake return the kernel's dtype **and** strides; `opcheck` checks the dtype, not (on 2.13) these
#   strides.
# - A kernel that reads strides or calls `.view(-1)`: keep the default `needs_exact_strides`, or call
#   `.contiguous()` inside the kernel.
# - Values that change every step: pass them as 0-d tensors, not `float`s.
#
# ## Questions
#
# 1. Why do a `Library`-defined op and a `custom_op` give the same graph, yet behave differently when you
#    define them twice?
# 2. Why can a wrong dtype in a fake kernel give a wrong number under Inductor, with no error (torch 2.13)?
# 3. What does `needs_exact_strides` promise a kernel, and what would `flexible_layout` allow Inductor to do?
# 4. Why did eager and compiled disagree on the dtype of section 4's op, and how does `register_autocast` fix it?
# 5. Why does a `float` argument recompile when a 0-d tensor does not?
#
# ## What to remember
#
# - `Library.define` + `impl` + `register_fake` is what `custom_op` does for you, minus the eager checks and the
#   silent overwrite: defining a name twice raises.
# - A fake kernel promises shape, dtype **and** strides. A wrong dtype is caught by `opcheck`; under Inductor it is
#   silently wrong (or worse) on torch 2.11–2.13, and an error on 2.15.
# - Inductor constrains a custom op's input layouts by tag; the default on 2.13 is `needs_exact_strides`.
# - Under autocast a custom op is not cast: compiled it runs in float32; `register_autocast` casts it.
# - `float` arguments recompile per value; 0-d tensors do not. `custom_op` can return an `int` (an unbacked
#   symbol in the fake kernel).
#
# ## Further reading
#
# - Custom operators landing page: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - Python custom operators tutorial: https://pytorch.org/tutorials/advanced/python_custom_ops.html
# - `torch.library` reference (`Library`, `register_fake`, `register_autocast`, `opcheck`):
#   https://docs.pytorch.org/docs/stable/library.html
# - Automatic mixed precision (`torch.autocast`): https://docs.pytorch.org/docs/stable/amp.html
# - Operator tags (`needs_exact_strides`, `flexible_layout`): https://docs.pytorch.org/docs/stable/torch.html#torch.Tag
