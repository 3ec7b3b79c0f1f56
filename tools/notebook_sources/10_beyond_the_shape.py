# %% [markdown]
# # 10 · Beyond the shape: registration, strides, dtypes, mixed precision and scalars
#
# **What you will learn**
# - to register an op the way C++ extensions and large projects do — `torch.library.Library` + `define` +
#   `impl` + `register_fake` — and how it differs from `torch.library.custom_op`;
# - what a fake kernel with the **wrong dtype** or the **wrong strides** does: what `opcheck` catches, and
#   what `torch.compile` does with each;
# - how Inductor can hand your kernel **other strides than eager does**, and the layout tag that stops it;
# - what `torch.autocast` does to a custom op, eagerly and compiled, and what `register_autocast` changes;
# - why a `float` argument recompiles per value, the 0-d tensor that does not, and an op that returns an `int`.
#
# **Time:** about 30 minutes. **Before:** 01 · Custom ops and the compile pipeline, 07 · Data-dependent shapes,
# 08 · Training with custom ops.
#
# Every claim is asserted by the cell that shows it; outputs recorded on torch 2.13.0 (CPU). Everything here
# runs on the CPU; on a GPU, autocast's dtype and Inductor's layout choices may differ, and this notebook does
# not show them.

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
# yourself with `torch.library.Library`; projects that register many ops do (pytorch #139444 shows vLLM's
# `direct_register_custom_op` helper).
#
# A `Library` object owns its registrations: keep it alive (a module-level name). One created inside a
# function is garbage-collected when the function returns, and takes its ops with it (#139444):

# %%
import gc


def register_in_a_function():
    lib = torch.library.Library("nb10gc", "FRAGMENT")
    lib.define("short_lived(Tensor x) -> Tensor")
    lib.impl("short_lived", lambda x: x * 2, "CPU")


register_in_a_function()
_ = gc.collect()
assert not hasattr(torch.ops.nb10gc, "short_lived"), "the op went with its garbage-collected Library"

# %% [markdown]
# This notebook's library lives at module level. The cell first destroys the one an earlier run of it made
# (`_destroy()` is private: a notebook convenience, not for your project), so that running it again works:

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
# - **Defining a name twice raises** with `Library.define`, where `custom_op` silently replaces (notebook 04);
# - **no eager aliasing check**: `custom_op` checks on every eager call that an output is not one of its
#   inputs (notebook 03); an op defined with `Library` is not checked that way.

# %%
try:
    nb10_lib.define("scale_lib(Tensor x) -> Tensor")
    twice = None
except RuntimeError as error:
    twice = str(error)
print(twice.split(". ")[0] + ".")

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
print(co_error[co_error.index("The output"):].split(" and (2)")[0] + " ...")
assert "must not also be an input to this custom operator" in co_error, "custom_op checks aliasing eagerly"

# %% [markdown]
# ## 2. Fake kernels wrong beyond the shape
#
# A fake kernel promises the output's **shape, dtype and strides**. Notebooks 01 and 05 showed wrong shapes.
# Two subtler mistakes, both reported on real ops (pytorch #177115, #160472, #181851):
#
# - a fake that says `bfloat16` for a kernel that returns `float32`;
# - a fake that says **column-major** (strides `(1, 3)` for a `(3, 4)` tensor) for a kernel that returns a
#   row-major, contiguous tensor (strides `(4, 1)`).
#
# Careful: `torch.empty_like(x.t()).t()` is *not* column-major — `empty_like` keeps the transposed strides
# and `.t()` flips them back. `x.new_empty(4, 3).t()` is:

# %%
x = torch.arange(12.0).reshape(3, 4)
print("empty_like(x.t()).t():", torch.empty_like(x.t()).t().stride(), "  new_empty(4, 3).t():",
      x.new_empty(4, 3).t().stride())
assert torch.empty_like(x.t()).t().stride() == (4, 1), "empty_like(x.t()).t() is row-major again"
assert x.new_empty(4, 3).t().stride() == (1, 3), "new_empty(4, 3).t() is column-major"

# %%
nb10_lib.define("wrong_dtype(Tensor x) -> Tensor")
nb10_lib.impl("wrong_dtype", lambda x: x * 2, "CPU")
torch.library.register_fake("nb10::wrong_dtype", lambda x: torch.empty_like(x, dtype=torch.bfloat16),
                            lib=nb10_lib)

nb10_lib.define("wrong_strides(Tensor x) -> Tensor")
nb10_lib.impl("wrong_strides", lambda x: (x * 2).contiguous(), "CPU")
_ = torch.library.register_fake("nb10::wrong_strides", lambda x: x.new_empty(x.shape[1], x.shape[0]).t(),
                                lib=nb10_lib)

# %% [markdown]
# `opcheck` runs the op on real tensors and on fake ones, and compares what comes out:

# %%
def opcheck_outcome(op, *args):
    """opcheck's report, or its error as one string (it raises OpCheckError on the first failing test)."""
    try:
        return torch.library.opcheck(op, args)
    except Exception as error:                   # we show whichever error it is
        return f"{type(error).__name__}: {error}"


dtype_check = opcheck_outcome(torch.ops.nb10.wrong_dtype.default, x)
stride_check = opcheck_outcome(torch.ops.nb10.wrong_strides.default, x)
for check in (dtype_check, stride_check):                 # the sentence that says what differs
    print(str(check).split("metadata: ")[-1].split(" (scroll")[0].split(" (mismatched")[0])

# %%
assert dtype_check.startswith("OpCheckError: opcheck(op, ...): test_faketensor failed"), "dtype: caught"
assert "Dtypes torch.float32 and torch.bfloat16 are not equal" in dtype_check, "it names both dtypes"
OPCHECK_CHECKS_CPU_STRIDES = labkit.env.torch_version() >= (2, 13)    # pytorch PR #177115
if OPCHECK_CHECKS_CPU_STRIDES:                   # observed on 2.13.0, 2.14.1 and 2.15.0
    assert str(stride_check).startswith("OpCheckError: opcheck(op, ...): test_faketensor failed"), "caught"
    assert "Strides are (4, 1) and (1, 3)" in stride_check, "it names both strides"
else:                                            # observed on 2.11.0 and 2.12.1: CPU strides not compared
    assert stride_check["test_faketensor"] == "SUCCESS", "before 2.13: opcheck passes wrong CPU strides"

# %% [markdown]
# `opcheck` catches the wrong dtype on every torch of the lab's range. It catches wrong strides of a CPU
# output only from torch 2.13 on: before, it compared strides on CUDA only (pytorch PR #177115 changed that).
# Without `opcheck`, what does `torch.compile` with Inductor do? We sum each op's output
# (the sum reads the op's buffer) and compare with eager:

# %%
def compiled_or_error(fn, *args):
    torch.compiler.reset()
    try:
        return torch.compile(fn)(*args)
    except Exception as error:                   # the error is the outcome we look at
        return error


def compiled_and_eager_sums(name):
    op = getattr(torch.ops.nb10, name)
    return compiled_or_error(lambda x: op(x).sum(), x), op(x).sum()


results = {name: compiled_and_eager_sums(name) for name in ("wrong_dtype", "wrong_strides")}
for name, (compiled, eager) in results.items():
    shown = f"{type(compiled).__name__}: {str(compiled).splitlines()[0][:90]}" \
        if isinstance(compiled, Exception) else compiled.item()
    print(f"{name:<14} compiled {shown}   eager {eager.item()}")

# %%
compiled, eager = results["wrong_dtype"]
if labkit.env.torch_version() >= (2, 14):        # observed on 2.14.1, 2.15.0: the compiled code checks it
    assert isinstance(compiled, Exception), "from 2.14 the wrong dtype is refused at run time"
    assert "expected dtype torch.bfloat16 but got torch.float32" in str(compiled), "and names both dtypes"
else:                                            # observed on 2.11.0, 2.12.1, 2.13.0: a wrong number
    assert compiled.dtype == torch.bfloat16, "Inductor trusted the fake's dtype"
    assert not torch.allclose(compiled.float(), eager), "silently wrong: float32 bytes read as bfloat16"

# %%
compiled, eager = results["wrong_strides"]
assert isinstance(compiled, AssertionError), "Inductor checks the strides the kernel returned"
assert "expected size 3==3, stride 4==1 at dim=0" in str(compiled), "it names the stride that differs"
assert "incorrect fake (aka meta) kernel" in str(compiled), "and points at the fake kernel"
assert "opcheck" in str(compiled), "and names opcheck"

# %% [markdown]
# - The **wrong dtype is silently wrong** under Inductor on torch 2.11 to 2.13: the generated kernel reads
#   the real `float32` buffer as `bfloat16` — no error, a wrong number. From torch 2.14 the generated code checks
#   the dtype the kernel returned and raises instead (the cell asserts whichever your torch does).
# - The **wrong strides are refused**: after calling a custom op, Inductor's code checks its output with
#   `assert_size_stride` against the fake's promise, and raises an `AssertionError` that names `opcheck`.
#
# `opcheck` would have caught both in one call (wrong CPU strides from torch 2.13 on): run it on every op,
# with inputs like your real ones. And if you fix a fake kernel and compile again, torch's on-disk compile
# cache may still hand you the artifact built with the old one (pytorch #160472): notebook 04 shows it, and
# the `torch.compiler.config.cache_key_tag` that prevents it.
#
# ## 3. When Inductor picks the strides your kernel sees
#
# A fake kernel is about *outputs*. Your op's *inputs* are often made inside the compiled graph, and there
# Inductor is free to choose their layout. On the CPU, for example, Inductor stores a convolution's output
# **channels-last** (NHWC) for speed; eagerly it is NCHW. Real kernels often ignore strides and read memory as
# if it were contiguous. The kernel below does exactly that (`as_strided` with contiguous strides re-reads the
# memory in NCHW order), and records the strides it was handed:

# %%
seen = {}


def reads_as_contiguous(x):
    """What a C++/CUDA kernel that indexes x's memory as NCHW computes: right only if x is contiguous."""
    return x.as_strided(x.shape, x.new_empty(x.shape).stride()).clone()


def blur_op(name, tags=()):
    @torch.library.custom_op(f"nb10::{name}", mutates_args=(), tags=tags)
    def op(x: Tensor) -> Tensor:
        seen[name] = x.stride()
        return reads_as_contiguous(x)

    op.register_fake(lambda x: x.new_empty(x.shape))      # a contiguous output, as the kernel returns
    return op

# %% [markdown]
# `torch.library.opcheck` passes it, even given a channels-last input on which it computes garbage:
# `opcheck` compares real with fake metadata and checks the registrations; it has no reference to know what
# your kernel *should* compute.

# %%
images = torch.randn(2, 3, 4, 4)
nhwc = images.contiguous(memory_format=torch.channels_last)
blur = blur_op("blur")
report = opcheck_outcome(torch.ops.nb10.blur.default, nhwc)
print(report)
assert isinstance(report, dict), "opcheck passes the stride-ignoring kernel"
assert set(report.values()) == {"SUCCESS"}, "every opcheck test succeeds"
assert not torch.equal(blur(nhwc), blur(images)), "yet on a channels-last input it computes something else"

# %% [markdown]
# Now the op after a convolution, compiled (inference, `torch.no_grad()`), once **untagged** and once tagged
# `torch.Tag.flexible_layout`, which tells Inductor "any layout will do":

# %%
conv = torch.nn.Conv2d(3, 8, kernel_size=1, bias=False)
outcome = {}
for name, tags in (("blur_untagged", ()), ("blur_flexible", (torch.Tag.flexible_layout,))):
    op = blur_op(name, tags)
    torch.compiler.reset()
    with torch.no_grad():
        compiled = torch.compile(lambda x, op=op: op(conv(x)))(images)
        handed = seen[name]                     # the strides the compiled call handed the kernel
        outcome[name] = (handed, torch.allclose(compiled, op(conv(images))))
with torch.no_grad():
    print("eager conv output strides:", conv(images).stride())
print(outcome)

# %%
with torch.no_grad():
    nchw = conv(images).stride()
mkldnn = torch.backends.mkldnn.is_available()   # Inductor's channels-last choice for CPU convolutions needs it
assert outcome["blur_untagged"] == (nchw, True), "untagged: eager's strides, the right result"
if mkldnn:                                       # x86 Linux, Colab, Binder: observed on 2.11.0 to 2.15.0
    nhwc_strides = conv(images).contiguous(memory_format=torch.channels_last).stride()
    assert outcome["blur_flexible"][0] == nhwc_strides, "flexible_layout: Inductor passed channels-last"
    assert outcome["blur_flexible"][1] is False, "and the stride-ignoring kernel computed a wrong result"
else:
    print("This torch has no mkldnn: Inductor keeps NCHW here, and the tag changes nothing on this machine.")

# %% [markdown]
# The untagged op was safe because of torch's **default layout constraint** for custom ops. Inductor reads
# each op's tag (`torch._inductor.lowering.tag_to_layout_constraint`):
#
# | tag | what the kernel is handed |
# |---|---|
# | `torch.Tag.needs_exact_strides` | exactly the strides eager would produce |
# | `torch.Tag.needs_fixed_stride_order` | strides in the same *order* as eager's (not always the same strides) |
# | `torch.Tag.needs_contiguous_strides` | a contiguous tensor |
# | `torch.Tag.flexible_layout` | whatever layout Inductor chose |
#
# An untagged custom op gets `torch._functorch.config.custom_op_default_layout_constraint`:

# %%
import torch._functorch.config   # the config module is not imported by `import torch`

default_layout = torch._functorch.config.custom_op_default_layout_constraint
print(torch.__version__, default_layout)
assert default_layout == "needs_exact_strides", "the default (2.11.0 to 2.15.0) is needs_exact_strides"

# %% [markdown]
# So: leave the default unless your kernel handles every layout, and only then tag it `flexible_layout`.
# If a project changed the default, tag stride-sensitive ops explicitly (exercise 3). Inside the kernel,
# `x.contiguous()` is the other fix: it copies when needed, eager and compiled alike, whatever the tag:

# %%
@torch.library.custom_op("nb10::blur_contiguous_inside", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def blur_contiguous_inside(x: Tensor) -> Tensor:
    return reads_as_contiguous(x.contiguous())


_ = blur_contiguous_inside.register_fake(lambda x: x.new_empty(x.shape))
torch.compiler.reset()
with torch.no_grad():
    compiled = torch.compile(lambda x: blur_contiguous_inside(conv(x)))(images)
    torch.testing.assert_close(compiled, blur_contiguous_inside(conv(images)))

# %% [markdown]
# ## 4. Mixed precision: `torch.autocast` and a custom op
#
# Autocast casts the inputs of the ops it lists (`torch.mm` → bf16 on the CPU). A custom op is not listed.
# A custom matmul, called under autocast eagerly and compiled:

# %%
handed_to_kernel = []                            # (input dtype, autocast on?) at each call of the kernel


@torch.library.custom_op("nb10::mm", mutates_args=())
def nb10_mm(a: Tensor, b: Tensor) -> Tensor:
    handed_to_kernel.append((a.dtype, torch.is_autocast_enabled("cpu")))
    return a @ b                                 # stands in for your kernel


_ = nb10_mm.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))

# %%
a, b = torch.randn(4, 4), torch.randn(4, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    eager_dtypes = (nb10_mm(a, b).dtype, torch.mm(a, b).dtype)
    torch.compiler.reset()
    compiled_out = torch.compile(lambda a, b: (nb10_mm(a, b), torch.mm(a, b)))(a, b)
print("eager:", eager_dtypes, " compiled:", [t.dtype for t in compiled_out])
print("the kernel was handed (input dtype, autocast on): eager", handed_to_kernel[0], " compiled",
      handed_to_kernel[-1])

# %%
assert eager_dtypes[0] == torch.bfloat16, "eager: the op's kernel ran under autocast, so its a @ b is bf16"
assert eager_dtypes[1] == torch.bfloat16, "eager: torch.mm is autocast"
assert compiled_out[0].dtype == torch.float32, "compiled: the op gets float32 and returns float32"
assert compiled_out[1].dtype == torch.bfloat16, "compiled: torch.mm is still autocast"
assert handed_to_kernel[0] == (torch.float32, True), "eager: float32 inputs, autocast on inside the kernel"
assert handed_to_kernel[-1] == (torch.float32, False), "compiled: float32 inputs, autocast off"

# %% [markdown]
# Eager and compiled **disagree**. Either way the op's *inputs* arrive as float32: autocast does not cast them.
# Eagerly, autocast is still on inside the kernel, so the aten ops its Python code calls are autocast one by one
# (`a @ b` becomes bf16), like any code in the region. Compiled, autocast was applied while tracing, the op is
# opaque, and its kernel is called with autocast off: `a @ b` stays float32.
#
# `torch.library.register_autocast` makes the op itself an autocast op: its floating-point inputs are cast to
# bf16 before it runs, eager and compiled alike:

# %%
torch.library.register_autocast("nb10::mm", "cpu", torch.bfloat16)
handed_to_kernel.clear()
with torch.autocast("cpu", dtype=torch.bfloat16):
    eager_dtype = nb10_mm(a, b).dtype
    torch.compiler.reset()
    compiled_dtype = torch.compile(nb10_mm)(a, b).dtype
print("eager:", eager_dtype, " compiled:", compiled_dtype, " inputs the kernel got:", handed_to_kernel)
assert eager_dtype == torch.bfloat16, "with register_autocast, eager runs in bf16"
assert compiled_dtype == torch.bfloat16, "and so does compiled"
assert {dtype for dtype, _ in handed_to_kernel} == {torch.bfloat16}, "the kernel is handed bf16 inputs"

# %% [markdown]
# ## 5. Scalars in and out
#
# Notebook 08 showed that a `float` argument is baked into the graph, and notebook 07 covered `int` vs
# `SymInt`. In short: each new float value compiles a new graph, even with `dynamic=True`. A 0-d tensor does
# not:

# %%
@torch.library.custom_op("nb10::scale_by", mutates_args=())
def scale_by(x: Tensor, factor: float) -> Tensor:
    return x * factor


scale_by.register_fake(lambda x, factor: torch.empty_like(x))


@torch.library.custom_op("nb10::scale_by_tensor", mutates_args=())
def scale_by_tensor(x: Tensor, factor: Tensor) -> Tensor:
    return x * factor


_ = scale_by_tensor.register_fake(lambda x, factor: torch.empty_like(x))

# %%
x = torch.randn(4)
as_float = labkit.compile_and_compare(scale_by, calls=[(x, f) for f in (1.0, 2.0, 3.0)], dynamic=True)
as_tensor = labkit.compile_and_compare(scale_by_tensor, calls=[(x, torch.tensor(f)) for f in (1.0, 2.0, 3.0)],
                                       dynamic=True)
print("recompiles after the first call — float:", as_float.recompiles, " 0-d tensor:", as_tensor.recompiles)

# %%
assert as_float.verdict.agree, "the float version matches eager"
assert as_tensor.verdict.agree, "so does the 0-d tensor version"
assert as_float.recompiles == 2, "a float argument: one new graph per new value, even with dynamic=True"
assert as_tensor.recompiles == 0, "a 0-d tensor argument: no recompile"

# %% [markdown]
# Out: `custom_op` accepts `-> int`. The fake kernel cannot know the value, so it returns a new unbacked
# symbol (`new_dynamic_size`, notebook 07), and the op compiles with `fullgraph=True`:

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
# ## Exercise 1: replace or raise?
#
# Predict what each re-registration does, `"replaces"` (no error) or `"raises"`:
#
# - `"custom_op twice"`: `torch.library.custom_op` on a name it already created;
# - `"define twice"`: `Library.define` of a name that library already defined;
# - `"custom_op over define"`: `torch.library.custom_op` on a name first defined with `Library.define`.

# %%
my_registrations = {"custom_op twice": ..., "define twice": ..., "custom_op over define": ...}

# %%
import uuid


def identity(x: Tensor) -> Tensor:
    return x.clone()


def register_twice(first, second):
    """'replaces' or 'raises': what the second registration of a fresh name does."""
    name = f"ex_reg_{uuid.uuid4().hex[:8]}"      # a new name each time the check runs
    first(name)
    try:
        second(name)
        return "replaces"
    except RuntimeError:
        return "raises"

# %%
def by_custom_op(name):
    torch.library.custom_op(f"nb10::{name}", identity, mutates_args=())


def by_define(name):
    nb10_lib.define(f"{name}(Tensor x) -> Tensor")


actual_registrations = {"custom_op twice": register_twice(by_custom_op, by_custom_op),
                        "define twice": register_twice(by_define, by_define),
                        "custom_op over define": register_twice(by_define, by_custom_op)}
if all(labkit.exercises.answered(v) for v in my_registrations.values()):
    wrong = [k for k in actual_registrations if my_registrations[k] != actual_registrations[k]]
    labkit.exercises.check(not wrong, "all three hold.",
                           f"re-think {wrong}: which of the two APIs replaces, and whose registrations may it "
                           "replace (section 1)?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: custom_op replaces only what custom_op itself created; Library.define never replaces (observed on
# torch 2.11.0 to 2.15.0).
assert actual_registrations == {"custom_op twice": "replaces", "define twice": "raises",
                                "custom_op over define": "raises"}, "only custom_op over its own name replaces"
assert actual_registrations["custom_op over define"] != "replaces", "'custom_op always replaces' is rejected"
print("solution checked")

# %% [markdown]
# ## Exercise 2: what catches which lie?
#
# For each wrong fake kernel of section 2, predict what `opcheck` says (`"caught"` or `"passes"`) and what a
# compiled call with Inductor does on **your** torch (`"error"`, `"wrong result"` or `"right result"`). The
# check runs both on fresh ops, on this notebook's torch.

# %%
my_predictions = {"wrong dtype": {"opcheck": ..., "compiled": ...},
                  "wrong strides": {"opcheck": ..., "compiled": ...}}

# %%
def observed(fake, name):
    """What opcheck and an Inductor-compiled sum say about a fresh op whose kernel returns x * 2."""
    if not hasattr(torch.ops.nb10, name):
        nb10_lib.define(f"{name}(Tensor x) -> Tensor")
        nb10_lib.impl(name, lambda x: (x * 2).contiguous(), "CPU")
        torch.library.register_fake(f"nb10::{name}", fake, lib=nb10_lib)
    op, x = getattr(torch.ops.nb10, name).default, torch.randn(3, 4)
    compiled = compiled_or_error(lambda x: op(x).sum(), x)
    return {"opcheck": "passes" if isinstance(opcheck_outcome(op, x), dict) else "caught",
            "compiled": "error" if isinstance(compiled, Exception) else
            "right result" if torch.allclose(compiled.float(), op(x).sum()) else "wrong result"}

# %%
actual_predictions = {
    "wrong dtype": observed(lambda x: torch.empty_like(x, dtype=torch.float16), "ex_dtype"),
    "wrong strides": observed(lambda x: x.new_empty(x.shape[1], x.shape[0]).t(), "ex_strides")}
answers = [v for row in my_predictions.values() for v in row.values()]
if all(labkit.exercises.answered(v) for v in answers):
    wrong = [f"{op} / {tool}" for op, row in actual_predictions.items() for tool in row
             if my_predictions[op][tool] != actual_predictions[op][tool]]
    labkit.exercises.check(not wrong, "all four predictions hold.",
                           f"re-think {wrong}: which metadata does test_faketensor compare, and which does "
                           "Inductor's code check after calling the op (section 2)?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: opcheck compares the dtype, and the strides of CPU outputs from torch 2.13 on. Inductor checks the
# strides of the op's output (assert_size_stride), the dtype only from torch 2.14 (observed on 2.11.0, 2.12.1, 2.13.0,
# 2.14.1 and 2.15.0).
dtype_compiled = "error" if labkit.env.torch_version() >= (2, 14) else "wrong result"
strides_opcheck = "caught" if OPCHECK_CHECKS_CPU_STRIDES else "passes"
assert actual_predictions == {"wrong dtype": {"opcheck": "caught", "compiled": dtype_compiled},
                              "wrong strides": {"opcheck": strides_opcheck, "compiled": "error"}}, "the outcomes"
assert actual_predictions["wrong strides"]["compiled"] != "right result", "'the strides do no harm' is rejected"
print("solution checked")

# %% [markdown]
# ## Exercise 3: a project that changed the default
#
# Your project sets `torch._functorch.config.custom_op_default_layout_constraint = "flexible_layout"` (for
# speed). Which tags must section 3's stride-ignoring kernel declare so that, after the convolution, compiled
# still matches eager? Give a tuple of `torch.Tag`s (`()` for none); the check compiles your op under that
# setting and compares with eager.

# %%
my_tags = ...

# %%
def compiled_matches_eager(tags, name):
    """Section 3's kernel, tagged `tags`, compiled after the convolution with flexible_layout as the default."""
    op = blur_op(name, tuple(tags))
    torch.compiler.reset()
    with torch._functorch.config.patch(custom_op_default_layout_constraint="flexible_layout"), torch.no_grad():
        return torch.allclose(torch.compile(lambda x: op(conv(x)))(images), op(conv(images)))


# %%
def check_tags(tags):
    if not (isinstance(tags, tuple) and all(isinstance(tag, torch.Tag) for tag in tags)):
        return labkit.exercises.check(False, "", f"give a tuple of torch.Tag, e.g. (torch.Tag.pointwise,), "
                                                 f"not {tags!r}")
    return labkit.exercises.check(compiled_matches_eager(tags, f"blur_{uuid.uuid4().hex[:8]}"),
                                  "compiled matches eager: Inductor hands your kernel a layout it can read.",
                                  "compiled differs from eager: re-read the table in section 3 — which tags fix "
                                  "the layout, and which let Inductor choose?")


if labkit.exercises.answered(my_tags):
    check_tags(my_tags)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: (torch.Tag.needs_contiguous_strides,) says what the kernel needs. needs_exact_strides also works here
# because eager's strides are contiguous; needs_fixed_stride_order did here too (same order, no padding), but
# promises less. Untagged, the project's default lets Inductor pass channels-last (where mkldnn is available).
import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()):
    assert check_tags((torch.Tag.needs_contiguous_strides,)), "needs_contiguous_strides is right"
    assert check_tags((torch.Tag.needs_exact_strides,)), "needs_exact_strides is right for this kernel"
    if torch.backends.mkldnn.is_available():
        assert not check_tags(()), "no tag is rejected: the project's default applies"
        assert not check_tags((torch.Tag.flexible_layout,)), "flexible_layout is rejected"
    assert not check_tags(("needs_contiguous_strides",)), "a string is rejected in one sentence"
print("solution checked")

# %% [markdown]
# ## Exercise 4: which of the kernel's ops does autocast reach?
#
# A new op `nb10::scale_mul` computes `a * b` in its Python kernel (no `register_autocast`). Called **eagerly**
# under `torch.autocast("cpu", dtype=torch.bfloat16)` with float32 inputs, which dtype does it return? Give a
# `torch.dtype`. (Hint: section 4 says what autocast does inside an eager kernel; does it cast *every* op?)

# %%
my_eager_dtype = ...

# %%
@torch.library.custom_op("nb10::scale_mul", mutates_args=())
def scale_mul(a: Tensor, b: Tensor) -> Tensor:
    return a * b


_ = scale_mul.register_fake(lambda a, b: torch.empty_like(a))
with torch.autocast("cpu", dtype=torch.bfloat16):
    actual_eager_dtype = scale_mul(a, b).dtype
if labkit.exercises.answered(my_eager_dtype):
    labkit.exercises.check(my_eager_dtype == actual_eager_dtype,
                           "right: autocast casts only the ops on its list, and mul is not one of them.",
                           "not that: give a torch.dtype (e.g. torch.float16), and ask whether autocast's CPU "
                           "list has mul (torch.amp's docs list the ops it casts)."
                           if isinstance(my_eager_dtype, torch.dtype) else
                           f"give a torch.dtype such as torch.float32, not {my_eager_dtype!r}")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: autocast is on inside the eager kernel, but it casts only the ops it lists (mm, not mul): float32.
assert actual_eager_dtype == torch.float32, "eager, a * b under autocast stays float32"
assert torch.bfloat16 != actual_eager_dtype, "'autocast casts everything to bf16' is rejected"
print("solution checked")

# %% [markdown]
# ## Exercise 5: a learning rate that changes every step
#
# A training loop calls an op with a new learning rate at each of 5 steps, compiled with `dynamic=True`. How
# many times does torch **recompile** after the first step if the rate is a `float` argument (`nb10::scale_by`),
# and how many if it is a 0-d tensor (`nb10::scale_by_tensor`)?

# %%
my_recompiles = {"float": ..., "0-d tensor": ...}

# %%
rates = (0.1, 0.05, 0.025, 0.0125, 0.00625)
x = torch.randn(4)
actual_recompiles = {
    "float": labkit.compile_and_compare(scale_by, calls=[(x, r) for r in rates], dynamic=True).recompiles,
    "0-d tensor": labkit.compile_and_compare(scale_by_tensor, calls=[(x, torch.tensor(r)) for r in rates],
                                             dynamic=True).recompiles}
if all(labkit.exercises.answered(v) for v in my_recompiles.values()):
    labkit.exercises.check(my_recompiles == actual_recompiles, f"right: {actual_recompiles}.",
                           "re-read section 5: which argument's value does torch bake into the graph?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: a float is a constant of the graph (a recompile per new value); a tensor's value is data.
assert actual_recompiles == {"float": 4, "0-d tensor": 0}, "4 recompiles for floats, none for a 0-d tensor"
assert actual_recompiles != {"float": 0, "0-d tensor": 0}, "'dynamic=True makes floats symbolic' is rejected"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# ```python
# lib = torch.library.Library("mylib", "FRAGMENT")          # keep it alive: module level
# lib.define("my_op(Tensor x) -> Tensor", tags=(torch.Tag.needs_contiguous_strides,))  # if it reads raw memory
# torch.library.impl(lib, "my_op", "CPU")(my_op_cpu)        # or "CUDA", or C++ TORCH_LIBRARY_IMPL
# torch.library.register_fake("mylib::my_op", lambda x: x.new_empty(x.shape), lib=lib)
# torch.library.register_autocast("mylib::my_op", "cuda", torch.float16)   # if it should run in half
# torch.library.opcheck(torch.ops.mylib.my_op.default, (torch.randn(3, 4),))
# ```
#
# - Make the fake return the kernel's shape, dtype **and** strides, and run `opcheck` on inputs like your real
#   ones: it catches a wrong dtype or wrong strides (on a CPU, from torch 2.13); it cannot tell you that the
#   kernel's numbers are wrong.
# - A kernel that ignores strides: keep the default layout constraint (`needs_exact_strides`), or tag it
#   `needs_contiguous_strides`, or call `.contiguous()` inside it. Never `flexible_layout`.
# - Under autocast a custom op is not cast unless you `register_autocast` it.
# - Values that change every step: pass them as 0-d tensors, not `float`s.
#
# ## Questions
#
# 1. Why do a `Library`-defined op and a `custom_op` give the same graph, yet behave differently when you
#    define them twice?
# 2. Why can a wrong dtype in a fake kernel give a wrong number under Inductor with no error (torch 2.13),
#    while wrong strides give an error?
# 3. Why did `opcheck` pass section 3's kernel, and what would have caught its bug?
# 4. Why did eager and compiled disagree on the dtype of section 4's op, and how does `register_autocast` fix it?
# 5. Why does a `float` argument recompile when a 0-d tensor does not?
#
# ## What to remember
#
# - `Library.define` + `impl` + `register_fake` is what `custom_op` does for you, minus the eager aliasing check
#   and the silent overwrite: defining a name twice raises.
# - A fake kernel promises shape, dtype **and** strides. `opcheck` checks all three (CPU strides from torch
#   2.13 on). Under Inductor, wrong strides raise after the call (`assert_size_stride`); a wrong dtype is
#   silently wrong on torch 2.11–2.13 and raises from 2.14.
# - Inductor may choose the layout of your op's inputs. The default constraint for custom ops
#   (`needs_exact_strides`, on 2.11–2.15) hands it eager's strides; `flexible_layout` does not.
# - Under autocast a custom op is not cast: compiled, it runs in float32; `register_autocast` casts it.
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
