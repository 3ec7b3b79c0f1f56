# %% [markdown]
# # 10 · Beyond the shape: registration, strides, dtypes, mixed precision and scalars
#
# Your op's fake returns the right shape and its tests pass. Then, compiled, the numbers are off: only after a
# convolution, or only under `torch.autocast`. Each such case, here on torch 2.13, CPU.
#
# **What you will learn**
# - `torch.library.Library` + `define` + `impl` + `register_fake`, and what `custom_op` adds to it;
# - what a fake with the wrong **dtype** or **strides** does, and what `opcheck` and Inductor make of it;
# - how Inductor can hand your kernel other strides than eager does, and which fix holds for which caller;
# - what `torch.autocast` does to a custom op, and what `register_autocast` changes;
# - why a `float` argument recompiles per value, and an op that returns an `int`.
#
# **Time:** about 60 minutes. **Before:** 01, 07 and 08. Collapsed *Check* cells assert every claim, and what
# other releases do ([docs/torch-versions.md](../docs/torch-versions.md#notebook-10-beyond-the-shape)). On a GPU,
# autocast and layouts may differ.

# %% tags=["nbval-ignore-output"]
import gc
import timeit
import warnings

import torch
from torch import Tensor

import labkit

labkit.setup()
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. Two ways to register the same op
#
# `custom_op` is one decorator. Underneath, as in a C++ extension's `TORCH_LIBRARY` block, torch **defines** a
# schema in a namespace, then **implements** it per dispatch key. Projects with many ops (vLLM) write those
# steps with `torch.library.Library`. Create yours once, at module level; `labkit.ops.library` gives a fresh one
# each time this cell runs:

# %%
nb10_lib = labkit.ops.library("nb10")
nb10_lib.define("scale_lib(Tensor x) -> Tensor")
nb10_lib.impl("scale_lib", lambda x: x * 2, "CPU")
torch.library.register_fake("nb10::scale_lib", lambda x: torch.empty_like(x), lib=nb10_lib)


@torch.library.custom_op("nb10::scale_co", mutates_args=())
def scale_co(x: Tensor) -> Tensor:
    return x * 2


scale_co.register_fake(lambda x: torch.empty_like(x))
x = torch.randn(3, 4)
by_lib = labkit.compile_and_compare(lambda x: torch.ops.nb10.scale_lib(x) + 1, x)
by_co = labkit.compile_and_compare(lambda x: scale_co(x) + 1, x)
print(by_lib.aot_graphs[0].code)

# %% tags=["check"]
#@title Check: both ops compile and match eager, in the same graph up to the op's name
assert by_lib.verdict.agree, "the Library op compiles and matches eager"
assert by_co.verdict.agree, "so does the custom_op"
assert by_lib.aot_graphs[0].code.replace("scale_lib", "scale_co") == by_co.aot_graphs[0].code, \
    "the same graph, up to the op's name"

# %% [markdown]
# A `Library` owns its registrations. One made inside a function is garbage-collected when the function
# returns, and takes its ops with it:

# %%
def register_in_a_function():
    lib = torch.library.Library("nb10gc", "FRAGMENT")
    lib.define("short_lived(Tensor x) -> Tensor")
    lib.impl("short_lived", lambda x: x * 2, "CPU")


register_in_a_function()
_ = gc.collect()
print("nb10gc::short_lived still exists:", hasattr(torch.ops.nb10gc, "short_lived"))

# %% tags=["check"]
#@title Check: the op went with its garbage-collected Library
assert not hasattr(torch.ops.nb10gc, "short_lived"), "the op went with its garbage-collected Library"

# %% [markdown]
# ## 2. What `custom_op` adds
#
# Same graph, not the same op. First, a gradient: neither op has an autograd formula, and `x` requires grad.

# %%
x = torch.ones(3, requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.ops.nb10.scale_lib(x).sum().backward()
    eager_grad, x.grad = x.grad, None
    torch.compiler.reset()
    torch.compile(lambda x: torch.ops.nb10.scale_lib(x), backend="aot_eager")(x).sum().backward()
print("Library op: eager grad", eager_grad, " compiled grad", x.grad)
print("  with a warning:", str(caught[0].message).split(". ")[0] + ".")
no_formula = labkit.stages.raised(lambda: scale_co(x).sum().backward())
print("custom_op:", no_formula.message)

# %% tags=["check"]
#@title Check: Library op: eager grad 2, compiled grad None, only a warning; custom_op raises
assert torch.equal(eager_grad, torch.full((3,), 2.0)), "eager: autograd went through the kernel's x * 2"
assert x.grad is None, "compiled (aot_eager): no gradient at all"
assert any("an autograd kernel was not registered" in str(w.message) for w in caught), "only a warning says so"
assert no_formula.type_name == "RuntimeError", "custom_op refuses to backward"
assert "no autograd formula was registered" in no_formula.message, "and says register_autograd is missing"

# %% [markdown]
# Aliasing: an op that returns its own input, and a `custom_op` whose schema declares its output a view of
# `x`, `(Tensor(a) x) -> Tensor(a)` (notebook 03):

# %%
nb10_lib.define("same_lib(Tensor x) -> Tensor")
nb10_lib.impl("same_lib", lambda x: x, "CPU")                       # returns its input: an aliasing bug
same_co = torch.library.custom_op("nb10::same_co", lambda x: x, mutates_args=(), schema="(Tensor x) -> Tensor")


@torch.library.custom_op("nb10::view_co", mutates_args=(), schema="(Tensor(a) x) -> Tensor(a)")
def view_co(x):
    return x.view(-1)


view_co.register_fake(lambda x: x.view(-1))
x = torch.randn(2, 3)
print("Library op returned its input:", torch.ops.nb10.same_lib(x) is x)
print("custom_op:", labkit.stages.raised(lambda: same_co(x)).message[:86], "...")
print("declared view, eager, shares x's memory:", view_co(x).data_ptr() == x.data_ptr())
refused = labkit.stages.raised(lambda: torch.compile(lambda x: view_co(x) + 1)(x), "compiled")
print("declared view, compiled:", refused.message[:84], "...")

# %% tags=["check"]
#@title Check: no eager aliasing check for a Library op; custom_op checks; a declared view is refused compiled only
assert torch.ops.nb10.same_lib(x) is x, "no eager aliasing check for a Library-defined op"
assert "must not also be an input to this custom operator" in labkit.stages.raised(lambda: same_co(x)).message, \
    "custom_op checks eagerly that an output is not an input"
assert view_co(x).data_ptr() == x.data_ptr(), "a custom_op schema may declare a view: eager returns it unchecked"
assert refused is not None, "torch.compile refuses the declared view"
assert "Found a custom (non-ATen) operator whose output has alias annotations" in refused.message, "and says why"

# %% [markdown]
# Last, tags and cost. `custom_op` tags its op `pt2_compliant_tag` (a promise that it works with
# `torch.compile`), and each eager call goes through its Python wrapper. Measured here, per call:

# %% tags=["nbval-ignore-output"]
print("tags: Library op", torch.ops.nb10.scale_lib.default.tags, " custom_op", torch.ops.nb10.scale_co.default.tags)
x = torch.randn(3)
per_call = {name: min(timeit.repeat(lambda op=op: op(x), number=2000, repeat=5)) / 2000 * 1e6
            for name, op in (("Library op", torch.ops.nb10.scale_lib), ("custom_op", scale_co))}
print({name: f"{microseconds:.1f} µs" for name, microseconds in per_call.items()})

# %% tags=["check"]
#@title Check: custom_op adds pt2_compliant_tag, and its eager call costs more than the Library op's
assert torch.Tag.pt2_compliant_tag in torch.ops.nb10.scale_co.default.tags, "custom_op adds pt2_compliant_tag"
assert torch.Tag.pt2_compliant_tag not in torch.ops.nb10.scale_lib.default.tags, "Library.define does not"
assert per_call["custom_op"] > per_call["Library op"], "a custom_op's eager call costs more"

# %% [markdown]
# That cost is why vLLM registers through a `Library` helper; the gradient and aliasing checks are then yours,
# and `opcheck` runs them.
#
# ## 3. A fake kernel promises the dtype and the strides too
#
# Two lies subtler than a wrong shape, both seen on real ops: a fake that says `bfloat16` for a kernel that
# returns `float32`; one that says column-major (strides `(1, 3)` for a `(3, 4)` tensor) for a kernel that returns
# a contiguous `(4, 1)`. `labkit.checks.opcheck` runs `torch.library.opcheck`'s tests, one verdict each:

# %%
nb10_lib.define("wrong_dtype(Tensor x) -> Tensor")
nb10_lib.impl("wrong_dtype", lambda x: x * 2, "CPU")
torch.library.register_fake("nb10::wrong_dtype", lambda x: torch.empty_like(x, dtype=torch.bfloat16), lib=nb10_lib)
nb10_lib.define("wrong_strides(Tensor x) -> Tensor")
nb10_lib.impl("wrong_strides", lambda x: (x * 2).contiguous(), "CPU")
torch.library.register_fake("nb10::wrong_strides", lambda x: x.new_empty(x.shape[1], x.shape[0]).t(), lib=nb10_lib)

x = torch.arange(12.0).reshape(3, 4)
fake_test = {name: labkit.checks.opcheck(getattr(torch.ops.nb10, name), (x,))["test_faketensor"]
             for name in ("wrong_dtype", "wrong_strides")}
for name, verdict in fake_test.items():
    print(f"{name:<14}", verdict.split("metadata: ")[-1])

# %% tags=["check"]
#@title Check: opcheck catches the wrong dtype, and the wrong CPU strides (from 2.13)
assert torch.empty_like(x.t()).t().stride() == (4, 1), "empty_like(x.t()).t() is row-major again"
assert x.new_empty(4, 3).t().stride() == (1, 3), "new_empty(4, 3).t() is column-major"
assert fake_test["wrong_dtype"].startswith("FAIL"), "opcheck catches the wrong dtype"
assert "Dtypes torch.float32 and torch.bfloat16 are not equal" in fake_test["wrong_dtype"], "naming both dtypes"
OPCHECK_CHECKS_CPU_STRIDES = labkit.env.torch_version() >= (2, 13)
if OPCHECK_CHECKS_CPU_STRIDES:                   # observed on 2.13.0, 2.14.1 and 2.15.0
    assert fake_test["wrong_strides"].startswith("FAIL"), "opcheck catches the wrong CPU strides"
    assert "Strides are (4, 1) and (1, 3)" in fake_test["wrong_strides"], "naming both strides"
else:                                            # observed on 2.11.0 and 2.12.1: CPU strides not compared
    assert fake_test["wrong_strides"] == "ok", "before 2.13: opcheck passes wrong CPU strides"

# %% [markdown]
# Without `opcheck`, Inductor trusts the fake. Each op compiled with Inductor, its output summed (Inductor's
# code reads the op's buffer) or returned as is, against eager:

# %%
def with_inductor(fn):
    return labkit.compile_and_compare(fn, x, backend="inductor")


runs = {"wrong_dtype, summed": with_inductor(lambda x: torch.ops.nb10.wrong_dtype(x).sum()),
        "wrong_dtype, returned": with_inductor(lambda x: torch.ops.nb10.wrong_dtype(x)),
        "wrong_strides, summed": with_inductor(lambda x: torch.ops.nb10.wrong_strides(x).sum())}
for label, run in runs.items():
    print(f"{label:<22}", str(run.error or run.verdict)[:110])

# %% tags=["check"]
#@title Check: wrong strides raise; a wrong dtype: silently wrong where Inductor reads it (to 2.13), raises (2.14 on)
for label in ("wrong_dtype, summed", "wrong_dtype, returned"):
    run = runs[label]
    if labkit.env.torch_version() >= (2, 14):    # observed on 2.14.1 and 2.15.0: the compiled code checks it
        assert run.error is not None, f"{label}: from 2.14 the wrong dtype is refused at run time"
        assert "expected dtype torch.bfloat16 but got torch.float32" in run.error.message, "naming both dtypes"
    elif label.endswith("summed"):               # observed on 2.11.0, 2.12.1, 2.13.0: a wrong number, no error
        assert run.error is None, f"{label}: no error"
        assert not run.verdict.agree, "Inductor read float32 bytes as bfloat16: a wrong number"
    else:
        assert run.error is None, f"{label}: no error"
        assert run.verdict.agree, "returned as is, the real tensor: the values are right"
strides = runs["wrong_strides, summed"].error
assert strides.type_name == "AssertionError", "Inductor checks the strides the kernel returned"
assert "expected size 3==3, stride 4==1 at dim=0" in strides.message, "it names the stride that differs"
assert "incorrect fake (aka meta) kernel" in strides.message, "and points at the fake kernel"
assert "opcheck" in strides.message, "and names opcheck"

# %% [markdown]
# - **Wrong strides are refused**: Inductor's code checks the op's output against the fake's promise, and
#   raises an `AssertionError` that names `opcheck`.
# - **On this page's torch, a wrong dtype is silently wrong where Inductor's own code reads the buffer**: the sum
#   reads `float32` bytes as `bfloat16`. Returned as is, the kernel's real tensor comes back, right. The newer
#   releases this lab ran on check the dtype in Inductor's code too, and raise in both programs (the check cell's
#   title says from which).
#
# `opcheck` catches both (the wrong CPU strides from torch 2.13): run it on every op, with inputs like your real ones.
#
# ## 4. When Inductor picks the strides your kernel is handed
#
# Your op's *inputs* are often made inside the compiled graph, where Inductor may choose their layout: on the
# CPU it stores a convolution's output **channels-last** (NHWC); eager gives NCHW. Many real kernels read memory
# as if it were contiguous. This one does, and keeps a copy of the tensor it was handed:

# %%
handed = {}


def reads_as_contiguous(x):
    """What a C++/CUDA kernel that indexes x's memory as NCHW computes: right only if x is contiguous."""
    return x.as_strided(x.shape, x.new_empty(x.shape).stride()).clone()


def blur_op(name, tags=(), copy_first=False):
    @torch.library.custom_op(f"nb10::{name}", mutates_args=(), tags=tags)
    def op(x: Tensor) -> Tensor:
        handed[name] = x.clone()                 # clone keeps x's strides
        return reads_as_contiguous(x.contiguous() if copy_first else x)

    op.register_fake(lambda x: x.new_empty(x.shape))      # a contiguous output, as the kernel returns
    return op

# %% [markdown]
# The op after a convolution, compiled (inference, `torch.no_grad()`), once **untagged** and once tagged
# `torch.Tag.flexible_layout` ("any layout will do"). The picture shows, slot by slot, which element lies where
# in the memory of each tensor the kernel was handed:

# %%
conv = torch.nn.Conv2d(3, 8, kernel_size=1, bias=False)
images = torch.randn(2, 3, 4, 4)
matches, compiled_handed = {}, {}
for name, tags in (("blur_untagged", ()), ("blur_flexible", (torch.Tag.flexible_layout,))):
    op = blur_op(name, tags)
    torch.compiler.reset()
    with torch.no_grad():
        compiled = torch.compile(lambda x, op=op: op(conv(x)))(images)
        compiled_handed[name] = handed[name]     # before the eager call below replaces it
        matches[name] = torch.allclose(compiled, op(conv(images)))
print("compiled matches eager:", matches)
labkit.pictures.memory_order({"untagged, compiled: handed": compiled_handed["blur_untagged"],
                              "flexible_layout, compiled: handed": compiled_handed["blur_flexible"]})

# %% tags=["check"]
#@title Check: untagged gets eager's NCHW strides (right); flexible_layout gets channels-last (wrong), with mkldnn
with torch.no_grad():
    eager_strides = conv(images).stride()
assert compiled_handed["blur_untagged"].stride() == eager_strides, "untagged: the kernel is handed eager's strides"
assert matches["blur_untagged"], "so compiled matches eager"
if torch.backends.mkldnn.is_available():         # Inductor's channels-last convolution on the CPU needs mkldnn
    nhwc_strides = images.new_empty(2, 8, 4, 4).contiguous(memory_format=torch.channels_last).stride()
    assert compiled_handed["blur_flexible"].stride() == nhwc_strides, "flexible_layout: handed channels-last"
    assert not matches["blur_flexible"], "and the stride-ignoring kernel computed a wrong result"

# %% [markdown]
# `opcheck` passes this kernel even on a channels-last input, where it computes garbage: it compares real with
# fake metadata, and has no reference for what your kernel *should* compute.

# %%
nhwc = images.contiguous(memory_format=torch.channels_last)
blur = blur_op("blur")
print(labkit.checks.opcheck(blur, (nhwc,)))
print("same result from an NCHW and an NHWC copy of the images:", torch.equal(blur(nhwc), blur(images)))

# %% tags=["check"]
#@title Check: opcheck passes the stride-ignoring kernel, which computes something else on channels-last input
assert set(labkit.checks.opcheck(blur, (nhwc,)).values()) == {"ok"}, "every opcheck test passes"
assert not torch.equal(blur(nhwc), blur(images)), "yet on a channels-last input it computes something else"

# %% [markdown]
# The untagged op was safe thanks to the **default layout constraint**. Inductor reads each op's tag:
#
# | tag | what the kernel is handed |
# |---|---|
# | `torch.Tag.needs_exact_strides` | exactly the strides eager would produce |
# | `torch.Tag.needs_fixed_stride_order` | strides in the same *order* as eager's |
# | `torch.Tag.needs_contiguous_strides` | a contiguous tensor |
# | `torch.Tag.flexible_layout` | whatever layout Inductor chose |
#
# An untagged op gets the project-wide default:

# %%
import torch._functorch.config   # the config module is not imported by `import torch`

print(torch._functorch.config.custom_op_default_layout_constraint)

# %% tags=["check"]
#@title Check: the default layout constraint for custom ops is needs_exact_strides
assert torch._functorch.config.custom_op_default_layout_constraint == "needs_exact_strides", \
    "the default is needs_exact_strides (observed on 2.11.0 to 2.15.0)"

# %% [markdown]
# The default protects your kernel from Inductor's choices, not from your caller's. Three fixes for a
# stride-ignoring kernel: the default, the tag `needs_contiguous_strides`, or `.contiguous()` inside the
# kernel. Called on a transposed view, `m.t()`, eager and compiled:

# %%
fixes = {"default": blur_op("fix_default"),
         "needs_contiguous_strides": blur_op("fix_tag", (torch.Tag.needs_contiguous_strides,)),
         ".contiguous() inside": blur_op("fix_inside", copy_first=True)}
m = torch.randn(4, 3)
right = {}
for label, op in fixes.items():
    torch.compiler.reset()
    compiled = torch.compile(lambda a, op=op: op(a))(m.t())
    right[label] = {"eager": torch.equal(op(m.t()), m.t()), "compiled": torch.equal(compiled, m.t())}
    print(f"{label:<25} right result: {right[label]}")

# %% tags=["check"]
#@title Check: on a transposed view, only .contiguous() inside is right both eager and compiled
assert right["default"] == {"eager": False, "compiled": False}, "the default: wrong eager and compiled"
assert right["needs_contiguous_strides"] == {"eager": False, "compiled": True}, "the tag: right compiled only"
assert right[".contiguous() inside"] == {"eager": True, "compiled": True}, ".contiguous(): right in both"

# %% [markdown]
# A tag speaks to Inductor only; eagerly, your kernel gets what the caller passes. A kernel that needs
# contiguous memory calls `.contiguous()`. Tag `flexible_layout` only a kernel that reads any layout right.
#
# ## 5. Mixed precision: `torch.autocast` and a custom op
#
# Autocast casts the inputs of the ops it lists (`torch.mm` → bf16 on the CPU); a custom op is not listed. A
# custom matmul under autocast, eager and with three backends, noting what its kernel was handed:

# %%
handed_to_kernel = []                            # (input dtype, autocast on?) at each call of the kernel


@torch.library.custom_op("nb10::mm", mutates_args=())
def nb10_mm(a: Tensor, b: Tensor) -> Tensor:
    handed_to_kernel.append((a.dtype, torch.is_autocast_enabled("cpu")))
    return a @ b                                 # stands in for your kernel


nb10_mm.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))
a, b = torch.randn(4, 4), torch.randn(4, 4)


def under_autocast(fn, backend=None):
    """fn(a, b)'s dtype under CPU autocast to bf16, eager (backend None) or compiled, and what the kernel saw."""
    handed_to_kernel.clear()
    torch.compiler.reset()
    run = fn if backend is None else torch.compile(fn, backend=backend)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return run(a, b).dtype, handed_to_kernel[-1] if handed_to_kernel else None

# %%
autocast_runs = {backend or "not compiled": under_autocast(nb10_mm, backend)
                 for backend in (None, "inductor", "aot_eager", "eager")}
for label, (dtype, kernel_saw) in autocast_runs.items():
    print(f"{label:<13} returns {dtype};  the kernel was handed (input dtype, autocast on): {kernel_saw}")

# %% tags=["check"]
#@title Check: eager and backend="eager" return bf16 (autocast on inside the kernel); with AOTAutograd, float32
for label in ("not compiled", "eager"):
    assert autocast_runs[label] == (torch.bfloat16, (torch.float32, True)), f"{label}: float32 in, autocast on"
for label in ("inductor", "aot_eager"):
    assert autocast_runs[label] == (torch.float32, (torch.float32, False)), f"{label}: autocast off, float32"
assert under_autocast(torch.mm, "inductor")[0] == torch.bfloat16, "compiled, torch.mm itself is still autocast"

# %% [markdown]
# The **backend decides**. The inputs arrive as float32 every time. Eagerly, and with `backend="eager"` (Dynamo
# only), autocast is still on inside the kernel, so the aten ops it calls are autocast (`a @ b` becomes bf16).
# With AOTAutograd (`inductor`, `aot_eager`), autocast is applied while tracing; the op is opaque, and its
# kernel runs with autocast off.
#
# `torch.library.register_autocast` makes the op itself an autocast op, its inputs cast before it runs. The same
# kernel as a new op, registered before any compile of it:

# %%
@torch.library.custom_op("nb10::mm_cast", mutates_args=())
def nb10_mm_cast(a: Tensor, b: Tensor) -> Tensor:
    handed_to_kernel.append((a.dtype, torch.is_autocast_enabled("cpu")))
    return a @ b


nb10_mm_cast.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))
torch.library.register_autocast("nb10::mm_cast", "cpu", torch.bfloat16)
registered = {backend or "not compiled": under_autocast(nb10_mm_cast, backend) for backend in (None, "inductor")}
print(registered)
float64_in = under_autocast(lambda a, b: nb10_mm_cast(a.double(), b.double()))
print("float64 inputs:", float64_in)

# %% tags=["check"]
#@title Check: with register_autocast, eager and compiled cast float32 inputs to bf16; float64 is not cast
for label in ("not compiled", "inductor"):
    assert registered[label][0] == torch.bfloat16, f"{label}: bf16 out"
    assert registered[label][1][0] == torch.bfloat16, f"{label}: the kernel is handed bf16 inputs"
assert float64_in[0] == torch.float64, "float64 inputs are not cast: the op returns float64"
assert float64_in[1][0] == torch.float64, "the kernel is handed float64"

# %% [markdown]
# So `register_autocast` cast the op's float32 inputs, and left float64 ones alone. One more limit: an op with a keyword-only argument, called with that keyword under autocast:

# %%
@torch.library.custom_op("nb10::scaled", mutates_args=())
def scaled(x: Tensor, *, factor: float = 1.0) -> Tensor:
    return x * factor


scaled.register_fake(lambda x, *, factor=1.0: torch.empty_like(x))
torch.library.register_autocast("nb10::scaled", "cpu", torch.bfloat16)
with torch.autocast("cpu", dtype=torch.bfloat16):
    with_keyword = labkit.stages.raised(lambda: scaled(a, factor=2.0))
    without_keyword = scaled(a).dtype
print("scaled(a, factor=2.0):", with_keyword, "   scaled(a):", without_keyword)

# %% tags=["check"]
#@title Check: under autocast, a registered op called with a keyword argument raises; without it, it is cast
assert with_keyword is not None, "a call with a keyword argument raises under autocast"
assert with_keyword.type_name == "AssertionError", "an AssertionError"
assert "Custom ops do not support kwargs yet" in with_keyword.message, "saying kwargs are not supported"
assert without_keyword == torch.bfloat16, "the same op, keyword left at its default: cast to bf16"
assert scaled(a, factor=2.0).dtype == torch.float32, "outside autocast the keyword works"

# %% [markdown]
# ## 6. Scalars in and out
#
# Notebook 08 showed that a `float` argument is baked into the graph: each new value compiles a new graph, even
# with `dynamic=True`. A 0-d tensor does not:

# %%
@torch.library.custom_op("nb10::scale_by", mutates_args=())
def scale_by(x: Tensor, factor: float) -> Tensor:
    return x * factor


@torch.library.custom_op("nb10::scale_by_tensor", mutates_args=())
def scale_by_tensor(x: Tensor, factor: Tensor) -> Tensor:
    return x * factor


scale_by.register_fake(lambda x, factor: torch.empty_like(x))
scale_by_tensor.register_fake(lambda x, factor: torch.empty_like(x))
x = torch.randn(4)
as_float = labkit.compile_and_compare(scale_by, calls=[(x, f) for f in (1.0, 2.0, 3.0)], dynamic=True)
as_tensor = labkit.compile_and_compare(scale_by_tensor, calls=[(x, torch.tensor(f)) for f in (1.0, 2.0, 3.0)],
                                       dynamic=True)
print("recompiles after the first call: float", as_float.recompiles, " 0-d tensor", as_tensor.recompiles)

# %% tags=["check"]
#@title Check: a float recompiles per new value, even with dynamic=True; a 0-d tensor does not
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


count_positive.register_fake(lambda x: torch.library.get_ctx().new_dynamic_size())
torch.compiler.reset()
counted = torch.compile(lambda x: count_positive(x) + 1, fullgraph=True)(torch.tensor([1.0, -2.0, 3.0, 4.0]))
print(counted, type(counted).__name__)

# %% tags=["check"]
#@title Check: an int output compiles with fullgraph=True and comes back a Python int
assert counted == 4, "an int output compiles (fullgraph) and gives the count, plus one"
assert isinstance(counted, int), "and comes back a Python int"

# %% [markdown]
# ## Exercise 1: replace or raise?
#
# What does each second registration of a name do: `"replaces"` (no error) or `"raises"`?
#
# - `"custom_op twice"`: `torch.library.custom_op` on a name it already created;
# - `"define twice"`: `Library.define` of a name that library already defined;
# - `"custom_op over define"`: `torch.library.custom_op` on a name first defined with `Library.define`.

# %%
my_registrations = {"custom_op twice": ..., "define twice": ..., "custom_op over define": ...}

# %% tags=["check"]
#@title The exercise's check (each case registers a fresh name twice and notes what the second one does)
import contextlib
import io
import uuid


def register_twice(first, second):
    """'replaces' or 'raises': what the second registration of a fresh name does."""
    name = f"ex_reg_{uuid.uuid4().hex[:8]}"      # a new name each time the check runs
    first(name)
    return "raises" if labkit.stages.raised(lambda: second(name)) else "replaces"


by_custom_op = lambda name: torch.library.custom_op(  # noqa: E731 - short
    f"nb10::{name}", lambda x: x.clone(), mutates_args=(), schema="(Tensor x) -> Tensor")
by_define = lambda name: nb10_lib.define(f"{name}(Tensor x) -> Tensor")  # noqa: E731 - one line
actual_registrations = {"custom_op twice": register_twice(by_custom_op, by_custom_op),
                        "define twice": register_twice(by_define, by_define),
                        "custom_op over define": register_twice(by_define, by_custom_op)}

# %% tags=["check"]
#@title The exercise's check, continued (your three words against what torch did)
def check_registrations(mine):
    if not labkit.exercises.answered(mine, "fill in the three answers in the cell with my_registrations = ..., "
                                           "run it, then run this one"):
        return None
    words = {case: labkit.exercises.choice(word, ["replaces", "raises"], repr(case)) for case, word in mine.items()}
    if None in words.values():
        return None
    wrong = [case for case in actual_registrations if words.get(case) != actual_registrations[case]]
    return labkit.exercises.check(not wrong, "all three hold.", f"re-think {', '.join(map(repr, wrong))}: which of the two APIs "
                                  "replaces, and whose registrations may it replace (section 1)?")

# %%
registrations_ok = check_registrations(my_registrations)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# custom_op replaces only what custom_op itself created; Library.define never replaces.
solution = {"custom_op twice": "replaces", "define twice": "raises", "custom_op over define": "raises"}
with contextlib.redirect_stdout(io.StringIO()):
    assert check_registrations(solution), "only custom_op over its own name replaces"
    assert check_registrations({**solution, "custom_op twice": "Replace"}), "a spelling variant is accepted"
    assert not check_registrations({**solution, "custom_op over define": "replaces"}), \
        "'custom_op always replaces' is rejected"
    assert check_registrations({**solution, "define twice": "fails"}) is None, "another word is refused"

# %% tags=["check"]
#@title Check: a hint names what to re-think in words, not as a Python list
with contextlib.redirect_stdout(io.StringIO()) as said:
    check_registrations({**solution, "custom_op over define": "replaces", "define twice": "replaces"})
assert "re-think 'define twice', 'custom_op over define':" in said.getvalue(), said.getvalue()

# %% [markdown]
# ## Exercise 2: what catches which lie?
#
# For each wrong fake kernel of section 3, predict what `opcheck` says (`"caught"` or `"passes"`) and what an
# Inductor-compiled sum of the op's output does on **your** torch (`"error"`, `"wrong result"` or
# `"right result"`). The check runs both on fresh ops.

# %%
my_predictions = {"wrong dtype": {"opcheck": ..., "compiled": ...},
                  "wrong strides": {"opcheck": ..., "compiled": ...}}

# %% tags=["check"]
#@title The exercise's check (it defines two fresh ops with wrong fakes, and runs opcheck and a compiled sum)
def observed(fake, name):
    """What opcheck and an Inductor-compiled sum say about a fresh op whose kernel returns x * 2."""
    if not hasattr(torch.ops.nb10, name):
        nb10_lib.define(f"{name}(Tensor x) -> Tensor")
        nb10_lib.impl(name, lambda x: (x * 2).contiguous(), "CPU")
        torch.library.register_fake(f"nb10::{name}", fake, lib=nb10_lib)
    op, x = getattr(torch.ops.nb10, name).default, torch.randn(3, 4)
    run = labkit.compile_and_compare(lambda x: op(x).sum(), x, backend="inductor")
    return {"opcheck": "passes" if labkit.checks.opcheck(op, (x,))["test_faketensor"] == "ok" else "caught",
            "compiled": "error" if run.error else "right result" if run.verdict.agree else "wrong result"}


actual_predictions = {
    "wrong dtype": observed(lambda x: torch.empty_like(x, dtype=torch.float16), "ex_dtype"),
    "wrong strides": observed(lambda x: x.new_empty(x.shape[1], x.shape[0]).t(), "ex_strides")}

# %% tags=["check"]
#@title The exercise's check, continued (your four words against what torch did)
def check_predictions(mine):
    if not all(labkit.exercises.answered(row, "fill in the four answers in the cell with my_predictions = ..., "
                                              "run it, then run this one") for row in mine.values()):
        return None
    allowed = {"opcheck": ["caught", "passes"], "compiled": ["error", "wrong result", "right result"]}
    words = {(op, tool): labkit.exercises.choice(word, allowed[tool], f"{op} / {tool}")
             for op, row in mine.items() for tool, word in row.items()}
    if None in words.values():
        return None
    wrong = [f"{op} / {tool}" for op, row in actual_predictions.items() for tool in row
             if words.get((op, tool)) != actual_predictions[op][tool]]
    return labkit.exercises.check(not wrong, "all four predictions hold.", f"re-think {', '.join(map(repr, wrong))}: which metadata "
                                  "does opcheck compare, and which does Inductor's code check (section 3)?")

# %%
predictions_ok = check_predictions(my_predictions)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# opcheck compares the dtype, and the strides of CPU outputs (from torch 2.13). Inductor checks the strides of
# the op's output; a wrong dtype read by Inductor's own code is a wrong number (to 2.13), an error from 2.14.
dtype_compiled = "error" if labkit.env.torch_version() >= (2, 14) else "wrong result"
strides_opcheck = "caught" if OPCHECK_CHECKS_CPU_STRIDES else "passes"
solution = {"wrong dtype": {"opcheck": "caught", "compiled": dtype_compiled},
            "wrong strides": {"opcheck": strides_opcheck, "compiled": "error"}}
with contextlib.redirect_stdout(io.StringIO()):
    assert check_predictions(solution), "the outcomes on this torch"
    assert not check_predictions({**solution, "wrong strides": {"opcheck": strides_opcheck,
                                                                "compiled": "right result"}}), \
        "'the strides do no harm' is rejected"
    assert check_predictions({**solution, "wrong dtype": {"opcheck": "Caught", "compiled": "crash"}}) is None, \
        "a word outside the list is refused"

# %% [markdown]
# ## Exercise 3: a project that changed the default
#
# Your project sets `torch._functorch.config.custom_op_default_layout_constraint = "flexible_layout"` (for
# speed). Which tags must section 4's stride-ignoring kernel declare so that, after the convolution, compiled
# still matches eager? Give a tuple of `torch.Tag`s (`()` for none).

# %%
my_tags = ...

# %% tags=["check"]
#@title The exercise's check (it compiles section 4's kernel, with your tags, under that project default)
def compiled_matches_eager(tags):
    """Section 4's kernel, tagged `tags`, compiled after the convolution with flexible_layout as the default."""
    op = blur_op(f"blur_{uuid.uuid4().hex[:8]}", tuple(tags))
    torch.compiler.reset()
    with torch._functorch.config.patch(custom_op_default_layout_constraint="flexible_layout"), torch.no_grad():
        return torch.allclose(torch.compile(lambda x: op(conv(x)))(images), op(conv(images)))


def check_tags(tags):
    if not labkit.exercises.answered(tags, "put your tuple in the cell with my_tags = ..., run it, then this one"):
        return None
    if not (isinstance(tags, tuple) and all(isinstance(tag, torch.Tag) for tag in tags)):
        return labkit.exercises.check(False, "", f"give a tuple of torch.Tag, e.g. (torch.Tag.pointwise,), "
                                                 f"not {tags!r}")
    return labkit.exercises.check(compiled_matches_eager(tags),
                                  "compiled matches eager: Inductor hands your kernel a layout it can read.",
                                  "compiled differs from eager: re-read the table in section 4: which tags fix "
                                  "the layout, and which let Inductor choose?")

# %%
tags_ok = check_tags(my_tags)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# (torch.Tag.needs_contiguous_strides,) says what the kernel needs. needs_exact_strides and needs_fixed_stride_order
# also work here, because eager's strides are contiguous and their order is kept. Untagged, the project's default
# lets Inductor pass channels-last (where mkldnn is available).
with contextlib.redirect_stdout(io.StringIO()):
    assert check_tags((torch.Tag.needs_contiguous_strides,)), "needs_contiguous_strides is right"
    assert check_tags((torch.Tag.needs_exact_strides,)), "needs_exact_strides is right for this kernel"
    assert check_tags((torch.Tag.needs_fixed_stride_order,)), "needs_fixed_stride_order keeps NCHW here too"
    if torch.backends.mkldnn.is_available():
        assert not check_tags(()), "no tag is rejected: the project's default applies"
        assert not check_tags((torch.Tag.flexible_layout,)), "flexible_layout is rejected"
    assert not check_tags(("needs_contiguous_strides",)), "a string is rejected in one sentence"

# %% [markdown]
# ## Exercise 4: which of the kernel's ops does autocast reach?
#
# A new op `nb10::scale_mul` computes `a * b` in its Python kernel (no `register_autocast`). Called **eagerly**
# under `torch.autocast("cpu", dtype=torch.bfloat16)` with float32 inputs, which dtype does it return? Give a
# `torch.dtype`, e.g. `torch.float16`. (Does autocast cast *every* op?)

# %%
my_eager_dtype = ...

# %% tags=["check"]
#@title The exercise's check (it runs a * b inside a fresh op, eagerly, under CPU autocast)
@torch.library.custom_op("nb10::scale_mul", mutates_args=())
def scale_mul(a: Tensor, b: Tensor) -> Tensor:
    return a * b


scale_mul.register_fake(lambda a, b: torch.empty_like(a))
with torch.autocast("cpu", dtype=torch.bfloat16):
    actual_eager_dtype = scale_mul(a, b).dtype


def check_eager_dtype(dtype):
    if not labkit.exercises.answered(dtype, "put a dtype in the cell with my_eager_dtype = ..., run it, then this"):
        return None
    if not isinstance(dtype, torch.dtype):
        return labkit.exercises.check(False, "", f"give a torch.dtype such as torch.float16, not {dtype!r}")
    return labkit.exercises.check(dtype == actual_eager_dtype, "right: autocast casts only the ops on its list, "
                                  "and mul is not one of them.", "not that: does autocast's CPU list have mul? "
                                  "(torch.amp's docs list the ops it casts.)")

# %%
dtype_ok = check_eager_dtype(my_eager_dtype)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# autocast is on inside the eager kernel, but it casts only the ops it lists (mm, not mul): float32.
with contextlib.redirect_stdout(io.StringIO()):
    assert check_eager_dtype(torch.float32), "eager, a * b under autocast stays float32"
    assert not check_eager_dtype(torch.bfloat16), "'autocast casts everything to bf16' is rejected"
    assert not check_eager_dtype("float32"), "a string is refused, naming torch.dtype"

# %% [markdown]
# ## Exercise 5: a learning rate that changes every step
#
# A training loop calls an op with a new learning rate at each of 5 steps, compiled with `dynamic=True`. How
# many times does torch **recompile** after the first step (whole numbers) if the rate is a `float`
# (`nb10::scale_by`), and if it is a 0-d tensor (`nb10::scale_by_tensor`)?

# %%
my_recompiles = {"float": ..., "0-d tensor": ...}

# %% tags=["check"]
#@title The exercise's check (it compiles both ops over five learning rates and counts recompiles)
rates = (0.1, 0.05, 0.025, 0.0125, 0.00625)
x = torch.randn(4)
actual_recompiles = {
    "float": labkit.compile_and_compare(scale_by, calls=[(x, r) for r in rates], dynamic=True).recompiles,
    "0-d tensor": labkit.compile_and_compare(scale_by_tensor, calls=[(x, torch.tensor(r)) for r in rates],
                                             dynamic=True).recompiles}


def check_recompiles(mine):
    if not labkit.exercises.answered(mine, "fill in both numbers in the cell with my_recompiles = ..., run it, "
                                           "then run this one"):
        return None
    return labkit.exercises.check_numbers(mine, actual_recompiles, f"right: {actual_recompiles}.",
                                          "re-read section 6: which argument's value does torch bake into the graph?")

# %%
recompiles_ok = check_recompiles(my_recompiles)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# a float is a constant of the graph (a recompile per new value); a tensor's value is data.
with contextlib.redirect_stdout(io.StringIO()):
    assert check_recompiles({"float": 4, "0-d tensor": 0}), "4 recompiles for floats, none for a 0-d tensor"
    assert not check_recompiles({"float": 0, "0-d tensor": 0}), "'dynamic=True makes floats symbolic' is rejected"
    assert check_recompiles({"float": "four", "0-d tensor": "0"}), "numbers written as words or text are read"
    assert not check_recompiles({"float": "many", "0-d tensor": 0}), "an answer that is not a number is refused"

# %% [markdown]
# ## In your own project
#
# ```python
# lib = torch.library.Library("mylib", "FRAGMENT")          # module level: it owns the registrations
# lib.define("my_op(Tensor x) -> Tensor", tags=(torch.Tag.needs_contiguous_strides,))
# torch.library.impl(lib, "my_op", "CPU")(my_op_cpu)        # my_op_cpu calls x.contiguous() first
# torch.library.register_fake("mylib::my_op", lambda x: x.new_empty(x.shape), lib=lib)
# torch.library.register_autograd("mylib::my_op", backward, setup_context=setup_context, lib=lib)
# torch.library.register_autocast("mylib::my_op", "cuda", torch.float16)   # before the first compile
# torch.library.opcheck(torch.ops.mylib.my_op.default, (torch.randn(3, 4),))
# ```
#
# ## What to remember
#
# - `Library.define` is `custom_op` without its checks (gradient, aliasing, `pt2_compliant_tag`), and cheaper.
# - A fake promises shape, dtype **and** strides; `opcheck` compares shape and dtype, and from torch 2.13 the strides
#   of CPU outputs too (before, it passes wrong CPU strides: §3). Under Inductor wrong strides
#   raise; a wrong dtype can be a silently wrong number (the newer releases measured raise: §3).
# - The default layout constraint hands your kernel eager's strides; `.contiguous()` inside also covers callers.
# - Under autocast a custom op is not cast; `register_autocast` casts its float32 inputs (not float64).
# - `float` arguments recompile per value; 0-d tensors do not. `custom_op` can return an `int`.
#
# ## Questions
#
# 1. A `Library` op and a `custom_op` give the same graph. Name two ways they behave differently.
# 2. Why can a wrong dtype in a fake give a wrong number with no error, while wrong strides raise?
# 3. Why did `opcheck` pass section 4's kernel, and what would have caught its bug?
# 4. Why did the backend decide the dtype of section 5's op under autocast?
# 5. Why does a `float` argument recompile when a 0-d tensor does not?
#
# ## Further reading
#
# - Python custom operators: https://pytorch.org/tutorials/advanced/python_custom_ops.html
# - `torch.library`: https://docs.pytorch.org/docs/stable/library.html
# - Operator tags: https://docs.pytorch.org/docs/stable/torch.html#torch.Tag
# - vLLM's helper; a `Library` collected with its ops: https://github.com/pytorch/pytorch/issues/139444
# - `opcheck` compares CPU strides: https://github.com/pytorch/pytorch/pull/183002
# - A real op's wrong fake strides, caught by it: https://github.com/pytorch/pytorch/issues/183713
