# %% [markdown]
# # 12 · Which wrapper: one kernel behind five boundaries, and what each costs
#
# You have a kernel and a model you compile. Do you call the kernel from a plain function, wrap it in
# `torch.autograd.Function`, or make it a custom op? Op authors ask this first, and torch answers with graph breaks,
# or with errors under `fullgraph=True`. Here one
# small kernel, `softclip(x) = x / (1 + |x|)`, goes behind each boundary in turn, through `torch.compile` and a
# stopwatch, on torch 2.13 (CPU).
#
# **What you will learn**
# - what `torch.compile` sees through each boundary: the kernel's own ops, one opaque node, or a graph break;
# - what that means for Inductor: fused with the ops around it, or called as a black box;
# - the fix for a graph break at a call torch cannot read, and one that does not work;
# - what one eager call costs through each boundary on your machine, and when that matters;
# - what each needs to train, eager and compiled, and what `torch.export` keeps of it;
# - how to pick a boundary for a kernel you are handed.
#
# **Time:** about 35 minutes. **Before:** 01 · Custom ops and the compile pipeline, 10 · Beyond the shape
# (`Library.define`), 11 (the cost of one call). Collapsed *Check* cells assert every claim, and what other
# releases do ([docs/torch-versions.md](../docs/torch-versions.md)).

# %% tags=["nbval-ignore-output"]
import contextlib
import io
import uuid
import warnings

import torch
from torch import Tensor

import labkit

labkit.setup()
_ = torch.manual_seed(0)

# %% [markdown]
# ## 1. One kernel, five boundaries
#
# Four of the boundaries hold the same three torch ops. The first two are Python that torch can read:

# %%
def softclip(x):
    return x / (1 + x.abs())


class SoftclipFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return softclip(x)

    @staticmethod
    def backward(ctx, grad):                 # d/dx x / (1 + |x|) = 1 / (1 + |x|)²
        (x,) = ctx.saved_tensors
        return grad / (1 + x.abs()) ** 2


# %% [markdown]
# The next two are **custom ops**: a name in torch's operator registry, a kernel behind it, and a fake kernel
# that says what shape the result has. `custom_op` is one decorator; `Library.define` + `impl` + `register_fake`
# are the steps underneath, as a C++ extension writes them (notebook 10). `labkit.ops.library` gives a fresh
# library each time the cell runs:

# %%
@torch.library.custom_op("nb12::softclip_op", mutates_args=())
def softclip_op(x: Tensor) -> Tensor:
    return softclip(x)


softclip_op.register_fake(lambda x: torch.empty_like(x))

nb12_lib = labkit.ops.library("nb12")
nb12_lib.define("softclip_lib(Tensor x) -> Tensor")
nb12_lib.impl("softclip_lib", softclip, "CPU")
torch.library.register_fake("nb12::softclip_lib", lambda x: torch.empty_like(x), lib=nb12_lib)
softclip_lib = torch.ops.nb12.softclip_lib

# %% [markdown]
# The fifth is a kernel from outside torch: C++ compiled into a shared library and called through `ctypes`, as a
# vendor's C library is: torch cannot read it. `labkit.boundaries.c_kernel` compiles the source with the compiler
# Inductor uses and loads the function. It reads raw memory, so the Python around it checks what it hands over:

# %%
SOFTCLIP_CPP = r"""
#include <cmath>
#include <cstdint>
extern "C" void softclip(const float *x, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] / (1.0f + std::fabs(x[i]));
}
"""
c_softclip = labkit.boundaries.c_kernel("softclip", SOFTCLIP_CPP)


def softclip_ctypes(x):
    if x.dtype != torch.float32 or x.device.type != "cpu":
        raise TypeError("softclip_ctypes takes float32 CPU tensors")
    x = x.contiguous()
    out = torch.empty_like(x)
    c_softclip(x.data_ptr(), out.data_ptr(), x.numel())
    return out

# %%
x = torch.randn(6)
BOUNDARIES = {"plain function": softclip, "autograd.Function": SoftclipFunction.apply,
              "custom_op": softclip_op, "Library.define": softclip_lib, "ctypes call": softclip_ctypes}
print({name: [round(v, 3) for v in fn(x).tolist()[:3]] for name, fn in BOUNDARIES.items()})

# %% tags=["check"]
#@title Check: the five boundaries compute the same numbers in eager
for name, fn in BOUNDARIES.items():
    torch.testing.assert_close(fn(x), softclip(x), msg=f"{name}: the same numbers as the plain function")

# %% [markdown]
# ## 2. What `torch.compile` sees
#
# Each boundary goes into the same compiled function, `softclip(x) * 2`. For each: what Dynamo captured
# (`torch._dynamo.explain`: its graphs and graph breaks), and what Inductor's generated code launches:

# %%
def seen_by_compile(fn):
    torch.compiler.reset()
    explained = torch._dynamo.explain(lambda x: fn(x) * 2)(x)
    report = labkit.compile_and_compare(lambda x: fn(x) * 2, x, backend="inductor")
    launches = [call for code in report.inductor_code for call in labkit.render.inductor_kernel_calls(code)]
    said = [line.strip().removeprefix("Explanation:").strip() for b in explained.break_reasons[:1]
            for line in b.reason.splitlines()[:2]]           # torch's first words on the first break
    return {"graphs": explained.graph_count, "breaks": explained.graph_break_count, "launches": launches,
            "why": ": ".join(w for w in said if w), "agree": report.verdict.agree}

# %%
def under_fullgraph(fn):
    """The compiled result, or torch's error (its first line) where fullgraph=True refuses a graph break."""
    torch.compiler.reset()
    try:
        return torch.compile(lambda x: fn(x) * 2, fullgraph=True)(x)
    except Exception as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"


seen = {name: seen_by_compile(fn) for name, fn in BOUNDARIES.items()}
for name, s in seen.items():
    print(f"{name:18} {s['graphs']} graph(s), {s['breaks']} break(s); Inductor launches {s['launches']}")
print("ctypes call's break:", seen["ctypes call"]["why"])

# %% tags=["check"]
#@title Check: traced through, an opaque node, or a graph break
for name in ("plain function", "autograd.Function"):
    assert (seen[name]["graphs"], seen[name]["breaks"]) == (1, 0), f"{name}: one graph, no break"
    assert len(seen[name]["launches"]) == 1, f"{name}: one fused kernel, the softclip and the * 2 together"
    assert all(op in seen[name]["launches"][0] for op in ("abs", "add", "div")), f"{name}: the kernel's own ops"
for name, op in (("custom_op", "nb12.softclip_op"), ("Library.define", "nb12.softclip_lib")):
    assert (seen[name]["graphs"], seen[name]["breaks"]) == (1, 0), f"{name}: one graph, no break"
    assert op in seen[name]["launches"][0], f"{name}: Inductor's code calls the op, a black box"
    assert len(seen[name]["launches"]) == 2, f"{name}: then a kernel of its own for the * 2"
assert (seen["ctypes call"]["graphs"], seen["ctypes call"]["breaks"]) == (2, 1), "ctypes: two graphs, one break"
assert all(s["agree"] for s in seen.values()), "every boundary: compiled agrees with eager"

# %% [markdown]
# Three outcomes, all with the right numbers:
#
# - **Traced through** (plain function, `autograd.Function`): Dynamo reads the Python and records
#   `abs`, `add`, `div`; Inductor fuses them with the `* 2` into **one** kernel. An `autograd.Function` is no
#   wall: Dynamo traces its `forward`.
# - **One opaque node** (`custom_op`, `Library.define`): the graph holds `nb12.softclip_op` and Inductor's code
#   calls it, then runs a second kernel for the `* 2`. Nothing fuses across it, and nothing inside it is
#   optimised; in exchange the kernel runs as written, whatever it is.
# - **A graph break** (the `ctypes` call): Dynamo cannot read a C function, so it stops the graph before the call,
#   runs the call in Python, and starts a second graph after it.
#
# An op defined with a CPU kernel and no fake kernel, as older C++ extensions leave it, is a graph break too,
# with torch's own message:

# %%
no_fake = labkit.ops.library_op("nb12::softclip_nofake", softclip)
without_fake = seen_by_compile(no_fake)
print(without_fake["breaks"], "graph break; under fullgraph=True:", under_fullgraph(no_fake))

# %% tags=["check"]
#@title Check: a defined op without a fake kernel breaks the graph
assert without_fake["breaks"] == 1, "no fake kernel: one graph break"
assert "fake tensors" in under_fullgraph(no_fake), "torch's message names fake tensors"

# %% [markdown]
# ## 3. The fix for a graph break, and one that does not work
#
# A graph break costs a second graph and a trip through Python per call; under `fullgraph=True` it is an error.
# Wrapping the `ctypes` call in an `autograd.Function` does not hide it: Dynamo traces into `forward` and meets
# the same call. What works: make the call an **opaque custom op**, whose fake kernel tells the compiler the
# output's shape without running C:

# %%
@torch.library.custom_op("nb12::softclip_c", mutates_args=())
def softclip_c(x: Tensor) -> Tensor:
    return softclip_ctypes(x)


softclip_c.register_fake(lambda x: torch.empty_like(x))


class CtypesFunction(SoftclipFunction):      # the same backward; the forward calls C
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return softclip_ctypes(x)


for name, fn in {"ctypes call": softclip_ctypes, "autograd.Function around it": CtypesFunction.apply,
                 "custom_op around it": softclip_c}.items():
    result = under_fullgraph(fn)
    print(f"{name:28} fullgraph=True ->", result if isinstance(result, str) else "compiles, one graph")

# %% tags=["check"]
#@title Check: under fullgraph=True only the custom op compiles, with eager's numbers
assert isinstance(under_fullgraph(softclip_ctypes), str), "the bare ctypes call: an error under fullgraph=True"
assert under_fullgraph(CtypesFunction.apply) == under_fullgraph(softclip_ctypes), "an autograd.Function: the same"
torch.testing.assert_close(under_fullgraph(softclip_c), softclip(x) * 2, msg="the custom op compiles, right")

# %% [markdown]
# ## 4. What one call costs
#
# Each boundary does work before the kernel runs. A `custom_op` call checks its arguments and goes through the
# dispatcher; an `autograd.Function` builds autograd's bookkeeping; a `ctypes` call converts its arguments. On a
# tiny tensor the kernel costs almost nothing, so the boundary is what you measure. Your machine's figures:

# %% tags=["nbval-ignore-output"]
tiny = torch.randn(8)
costs = labkit.boundaries.per_call_us({**BOUNDARIES, "custom_op around ctypes": softclip_c}, tiny)
labkit.charts.per_call(costs)

# %% tags=["check"]
#@title Check: a custom_op costs more per call than the function it wraps (wide margins)
for op, wrapped in (("custom_op around ctypes", "ctypes call"), ("custom_op", "plain function")):
    ratio = costs[op] / costs[wrapped]
    assert ratio > 1.2, f"{op}: a cost per call of its own over {wrapped} (ratio {ratio:.1f})"

# %% [markdown]
# Read the bars as microseconds, not as a ranking: bars a few µs apart can swap on another machine or another
# torch, so nothing here asserts their order. What the check asserts, with a wide margin: a `custom_op` costs more
# per call than the function it wraps. That cost is paid per call; the kernel's own work grows with the tensor.
# On a million elements:

# %% tags=["nbval-ignore-output"]
large = torch.randn(1_000_000)
large_costs = labkit.boundaries.per_call_us({"plain function": softclip, "custom_op": softclip_op}, large,
                                            number=20, repeat=3)
print({name: f"{us:,.0f} µs" for name, us in large_costs.items()})
boundary_us = costs["custom_op"] - costs["plain function"]
print(f"the custom_op boundary's own cost: about {boundary_us:.0f} µs")

# %% tags=["check"]
#@title Check: on a million elements the kernel's work dwarfs the boundary's cost (a wide margin)
assert large_costs["custom_op"] > 10 * boundary_us, "the boundary is a small part of a large call"

# %% [markdown]
# Under `torch.compile` the question changes: a traced boundary leaves no call of its own in Inductor's code
# (section 2), an opaque op is called from it, and a graph break returns to Python between two graphs.
#
# ## 5. Training: what each boundary needs
#
# A backward pass asks each boundary for a gradient. Traced boundaries have one: autograd differentiates the ops
# that ran (eager) or that Dynamo recorded (compiled), or calls the `autograd.Function`'s `backward`. A custom op
# has no formula until you give it one: `register_autograd`, or an `autograd.Function` around the op. One
# training step, `(softclip(x) * 2).sum().backward()`, eager and compiled, through each:

# %%
softclip_trained = torch.library.custom_op("nb12::softclip_trained", softclip, mutates_args=(),
                                           schema="(Tensor x) -> Tensor")
softclip_trained.register_fake(lambda x: torch.empty_like(x))
softclip_trained.register_autograd(SoftclipFunction.backward,
                                   setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs))


class LibraryFunction(SoftclipFunction):     # autograd outside, the defined op inside
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return softclip_lib(x)

# %%
def torch_says(error):
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return next((line for line in lines if "Error" in line or "formula" in line), lines[0] if lines else "")


def short(words):
    """An outcome in a few words, for a cell of the picture."""
    if words.startswith(("raises", "fails")):
        why = " (no formula)" if "formula" in words else " (data pointer)" if "data pointer" in words else ""
        return words.split(":")[0] + why
    return words


# %%
def one_step(fn, compiled):
    """'right', 'no gradient' or torch's error, then '(a warning)' if torch warned of silently incorrect results."""
    torch.compiler.reset()
    leaf = x.clone().requires_grad_()
    step = torch.compile(lambda t: fn(t) * 2) if compiled else (lambda t: fn(t) * 2)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            step(leaf).sum().backward()
        except Exception as error:
            return f"raises: {torch_says(error)}"
    right = leaf.grad is not None and torch.allclose(leaf.grad, 2 / (1 + x.abs()) ** 2)
    said = " (a warning)" if any("silently incorrect" in str(w.message) for w in warned) else ""
    return ("right" if right else "no gradient" if leaf.grad is None else "wrong") + said

# %%
TRAINING = {"plain function": softclip, "autograd.Function": SoftclipFunction.apply, "custom_op": softclip_op,
            "custom_op + register_autograd": softclip_trained, "Library.define": softclip_lib,
            "autograd.Function around define": LibraryFunction.apply}
trained = {name: {"eager": one_step(fn, False), "compiled": one_step(fn, True)} for name, fn in TRAINING.items()}
for name, outcome in trained.items():
    print(f"{name:32} eager: {short(outcome['eager']):24} compiled: {short(outcome['compiled'])}")
print("custom_op, torch says:", trained["custom_op"]["eager"].removeprefix("raises: "))

# %% tags=["check"]
#@title Check: which boundaries train, eager and compiled, and the one that loses its gradient silently
for name in ("plain function", "autograd.Function", "custom_op + register_autograd", "autograd.Function around define"):
    assert trained[name] == {"eager": "right", "compiled": "right"}, f"{name}: right, eager and compiled"
for mode in ("eager", "compiled"):
    assert "no autograd formula" in trained["custom_op"][mode], f"custom_op without a formula: {mode} raises"
    assert "register_autograd" in trained["custom_op"][mode], f"{mode}: torch's message names the fix"
assert trained["Library.define"]["eager"] == "right (a warning)", "a defined op, no formula: eager right, warned"
assert trained["Library.define"]["compiled"] == "no gradient (a warning)", "compiled: no gradient, only a warning"

# %% [markdown]
# A `custom_op` without a formula refuses to train, eager and compiled, with a message that names the fix. The
# `Library.define` op is worse: eagerly, autograd records the torch ops of its Python kernel (torch warns that
# this "may lead to silently incorrect behavior"); compiled, the op is one node without a formula, and `x.grad`
# stays `None`, with only that warning. A training loop that does not check goes on, and the op's input never
# learns. Eager got it right only because the kernel is made of torch ops: the `ctypes` kernel behind
# `Library.define` leaves no gradient eagerly either (checked below). `opcheck` with an input that requires grad
# catches the missing formula:

# %%
nb12_lib.define("softclip_lib_c(Tensor x) -> Tensor")
nb12_lib.impl("softclip_lib_c", softclip_ctypes, "CPU")
torch.library.register_fake("nb12::softclip_lib_c", lambda x: torch.empty_like(x), lib=nb12_lib)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")              # the same warning, once more
    opchecked = torch.library.opcheck(softclip_lib, (x.clone().requires_grad_(),), raise_exception=False)
print("opcheck's autograd test:", str(opchecked["test_autograd_registration"]).splitlines()[0][:110])

# %% tags=["check"]
#@title Check: a C kernel behind Library.define loses the gradient eagerly too; opcheck catches the missing formula
assert one_step(torch.ops.nb12.softclip_lib_c, False) == "no gradient (a warning)", "eager: no gradient"
assert opchecked["test_autograd_registration"] != "SUCCESS", "opcheck: no autograd registration"

# %% [markdown]
#
# ## 6. `torch.export`: what survives
#
# An exported program is the graph you ship (notebook 11). Which boundary is still there, under
# `torch.export.export`'s default (non-strict) tracing?

# %%
def exported(fn):
    class Model(torch.nn.Module):
        def forward(self, t):
            return fn(t) * 2
    try:
        program = torch.export.export(Model(), (x,))
    except Exception as error:
        return f"fails: {torch_says(error)}"
    return [str(node.target) for node in program.graph.nodes if node.op == "call_function"]


exports = {name: exported(fn) for name, fn in {**BOUNDARIES, **TRAINING, "custom_op around ctypes": softclip_c}.items()}
for name, nodes in exports.items():
    print(f"{name:32}", nodes)

# %% tags=["check"]
#@title Check: traced boundaries leave aten ops, custom ops one node, and the bare ctypes call fails
aten = ["aten.abs.default", "aten.add.Tensor", "aten.div.Tensor", "aten.mul.Tensor"]
assert exports["plain function"] == aten, "a plain function: its aten ops"
assert exports["autograd.Function"] == aten, "an autograd.Function: its forward's aten ops, the boundary gone"
for name, op in (("custom_op", "nb12.softclip_op.default"), ("Library.define", "nb12.softclip_lib.default"),
                 ("custom_op around ctypes", "nb12.softclip_c.default")):
    assert exports[name] == [op, "aten.mul.Tensor"], f"{name}: one node"
assert "opaque custom op" in exports["ctypes call"], "the bare ctypes call: export fails, naming the fix"

# %% [markdown]
# The traced boundaries dissolve into aten ops: an `autograd.Function` leaves no trace of itself, and its
# `backward` is not in the program. A custom op stays one named node, which the loading side must register
# (notebook 11). The bare `ctypes` call fails, and torch's message names the fix this notebook applied in
# section 3: wrap the kernel into an opaque custom op. (Strict export, `strict=True`, stops at the call as
# Dynamo does in section 3, with Dynamo's message.)
#
# ## 7. When each is right
#
# What sections 2, 5 and 6 measured, in one picture (green: works; yellow: works at a cost, a graph break, or
# training refuses with an error that names the fix; red: export fails, or a gradient is lost with only a
# warning; grey: not run here):

# %%
def tone(words):
    if words == "not run":
        return "muted"
    if words.startswith(("right", "traced", "one node")) and "warning" not in words:
        return "ok"
    return "bad" if words.startswith(("no gradient", "fails", "wrong")) else "warn"

# %%
def compile_words(fn):
    s = seen_by_compile(fn)
    return "graph break" if s["breaks"] else "traced, fused" if len(s["launches"]) == 1 else "one node"


def export_words(nodes):
    return short(nodes) if isinstance(nodes, str) else \
        "one node" if any(n.startswith("nb12.") for n in nodes) else "traced to aten ops"


everything = {**TRAINING, "ctypes call": softclip_ctypes, "custom_op around ctypes": softclip_c}
grid = {name: {"torch.compile": compile_words(fn),
               "training, compiled": short(trained[name]["compiled"]) if name in trained else "not run",
               "torch.export": export_words(exports[name])} for name, fn in everything.items()}
labkit.charts.outcome_grid({name: {q: (w, tone(w)) for q, w in row.items()} for name, row in grid.items()})

# %% tags=["check"]
#@title Check: the picture says what the sections measured
assert grid["Library.define"]["training, compiled"] == "no gradient (a warning)", "the lost gradient"
assert tone(grid["Library.define"]["training, compiled"]) == "bad", "in red"
assert tone(grid["custom_op"]["training, compiled"]) == "warn", "a refusal naming the fix: yellow"
assert tone(grid["ctypes call"]["torch.compile"]) == "warn", "a graph break: yellow"
assert grid["ctypes call"] == {"torch.compile": "graph break", "training, compiled": "not run",
                               "torch.export": "fails (data pointer)"}, "the bare call: a break, and export fails"
assert {grid[n]["torch.export"] for n in ("custom_op", "Library.define", "custom_op around ctypes")} == {"one node"}, \
    "custom ops: one node in the exported program"

# %% [markdown]
# - **A kernel of torch ops**: leave it traced, a plain function, or an `autograd.Function` for a hand-written
#   backward; Inductor fuses it, and export keeps its aten ops.
# - **A kernel torch cannot read, or must not change**: a custom op with a fake kernel and an autograd formula;
#   one node in compile and export, right in training, at a cost per eager call (section 4).
# - **Many ops, or C++ registration** (`Library.define`): give each op its formula, with `register_autograd` or an
#   `autograd.Function` around it; without one, compiled training dropped the gradient here.
# - **A raw call through a pointer** (`ctypes`): not bare under `fullgraph=True` or `torch.export`; inside a
#   custom op (with a formula, to train it).
#
# ## Exercise 1: pick a boundary
#
# Two kernels are handed to you. Pick a boundary for each from `"plain function"`, `"autograd.Function"`,
# `"custom_op"` and `"Library.define"`; the check builds it and compiles it.
#
# - `"fuse"`: a kernel of torch ops (`softclip`), in a hot loop you compile; you want Inductor to fuse it with
#   the `* 2` after it into one kernel.
# - `"vendor"`: a routine of a vendor's C library called through `ctypes` (`softclip_ctypes`), in a model
#   compiled with `fullgraph=True`.

# %%
my_boundaries = {"fuse": ..., "vendor": ...}

# %% tags=["check"]
#@title The exercise's check (builds each kernel behind your boundary, then compiles it)
def behind(boundary, kernel):
    """``kernel`` behind ``boundary``; a custom op gets a fresh name each time, so the check can run again."""
    name = f"ex_{uuid.uuid4().hex[:8]}"
    if boundary == "autograd.Function":
        wrapped = type("Wrapped", (torch.autograd.Function,), {
            "forward": staticmethod(lambda ctx, x: kernel(x)), "backward": staticmethod(lambda ctx, g: g)})
        return wrapped.apply
    if boundary == "custom_op":
        op = torch.library.custom_op(f"nb12::{name}", kernel, mutates_args=(), schema="(Tensor x) -> Tensor")
        op.register_fake(lambda x: torch.empty_like(x))
        return op
    if boundary == "Library.define":
        nb12_lib.define(f"{name}(Tensor x) -> Tensor")
        nb12_lib.impl(name, kernel, "CPU")
        torch.library.register_fake(f"nb12::{name}", lambda x: torch.empty_like(x), lib=nb12_lib)
        return getattr(torch.ops.nb12, name)
    return kernel


# %% tags=["check"]
#@title The exercise's check, continued (compiles each kernel behind your boundary)
def behind_a(boundary):
    return f"behind {'an' if boundary[0] in 'aeiou' else 'a'} {boundary}"


def fuse_problem(boundary):
    launches = seen_by_compile(behind(boundary, softclip))["launches"]
    return None if len(launches) == 1 else (
        f"{behind_a(boundary)}, Inductor launches {len(launches)} things, your op and then a kernel for the * 2: "
        "an opaque node is a black box, nothing fuses across it (section 2)")


def vendor_problem(boundary):
    result = under_fullgraph(behind(boundary, softclip_ctypes))
    return None if not isinstance(result, str) else (
        f"{behind_a(boundary)}, fullgraph=True stops ({result[:60]}…): Dynamo reads the Python and meets the "
        "ctypes call (section 3)")


# %% tags=["check"]
#@title The exercise's check, continued (your answer against what compiling it did)
CHOICES = {"plain function": ["plain"], "autograd.Function": ["autograd function", "torch.autograd.Function"],
           "custom_op": ["torch.library.custom_op"], "Library.define": ["define", "library define"]}


def check_boundaries(mine):
    if not labkit.exercises.answered(mine, "replace each ... after my_boundaries = with a boundary, run that "
                                           "cell, then this one"):
        return None
    if not isinstance(mine, dict):
        return labkit.exercises.check(False, "", f"my_boundaries is {labkit.describe.brief(mine)}: keep the dict, "
                                      "{'fuse': ..., 'vendor': ...}, and put a boundary in each.")
    picked = {case: labkit.exercises.choice(mine.get(case), CHOICES, repr(case)) for case in ("fuse", "vendor")}
    if None in picked.values():
        return None
    problems = [p for p in (fuse_problem(picked["fuse"]), vendor_problem(picked["vendor"])) if p]
    return labkit.exercises.check(not problems, "both compile as you wanted: one fused kernel, and no graph break.",
                                  "; ".join(problems))

# %%
boundaries_ok = check_boundaries(my_boundaries)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# "fuse": anything Dynamo traces through (plain function or autograd.Function); an opaque op cannot be fused.
# "vendor": an opaque op with a fake kernel (custom_op or Library.define); Dynamo cannot read a C call.
solution = {"fuse": "plain function", "vendor": "custom_op"}
with contextlib.redirect_stdout(io.StringIO()) as said:
    assert check_boundaries(solution), "a traced kernel fuses; an opaque op hides the ctypes call"
    assert check_boundaries({"fuse": "autograd.Function", "vendor": "Library.define"}), "the other two work too"
    assert not check_boundaries({"fuse": "custom_op", "vendor": "custom_op"}), "an opaque op does not fuse"
    assert not check_boundaries({"fuse": "plain function", "vendor": "autograd.Function"}), \
        "autograd.Function does not hide the ctypes call"
    assert check_boundaries({"fuse": "a lambda", "vendor": "custom_op"}) is None, "another word is refused"
    assert check_boundaries({"fuse": "Plain", "vendor": "custom op"}), "a spelling variant is accepted"
    assert not check_boundaries("custom_op"), "an answer that is not the dict is refused"
assert "nothing fuses across it" in said.getvalue(), "the fuse hint says why"
assert "meets the ctypes call" in said.getvalue(), "the vendor hint says why"

# %% [markdown]
# ## In your own project
#
# ```python
# print(torch._dynamo.explain(model)(example))      # graphs, graph breaks and each break's reason
# print(labkit.render.inductor_kernel_calls(code))  # what Inductor's code launches: fused kernels, opaque ops
# ```
#
# - After one compiled training step, check that every input you train has a `.grad`: section 5's op lost its
#   gradient with nothing but a warning.
# - `torch.library.opcheck(op, (example.requires_grad_(),))` fails an op with no autograd formula (section 5);
#   it does not check that a formula's values are right (notebook 08).
# - Measure the boundary's cost where it matters: small tensors, many calls, eager mode.
#
# ## What to remember
#
# - Dynamo traces through a plain function and an `autograd.Function`; Inductor fuses their ops with their
#   neighbours.
# - A custom op with a CPU kernel (`custom_op`, or `Library.define` with a fake kernel) is one opaque node,
#   called as written, not fused with its neighbours. Defined without a fake kernel, it was a graph break.
# - A call torch cannot read (`ctypes`) is a graph break; an `autograd.Function` around it does not help, a custom
#   op does.
# - Each boundary has a cost per eager call, a few µs here; it matters for small tensors and many calls.
# - Training: a custom op needs a formula (`register_autograd`, or an `autograd.Function` around it). Without one,
#   `custom_op` refused; a `Library.define` op with a Python kernel of torch ops trained eagerly and lost its
#   gradient compiled, with only a warning.
# - Export (non-strict, the default) keeps a custom op as one node; a plain function and an `autograd.Function`
#   become aten ops; a bare `ctypes` call fails.
#
# ## Questions
#
# 1. Why does Inductor fuse `softclip` with the `* 2` behind a plain function, but not behind a `custom_op`?
# 2. Why does an `autograd.Function` around the `ctypes` call still break the graph?
# 3. What does a custom op need so that `torch.compile` keeps it as one node instead of breaking the graph?
# 4. When is a `custom_op`'s cost per call worth paying for a kernel written in torch ops?
# 5. Why did the `Library.define` op train eagerly but leave `x.grad` as `None` compiled?
# 6. What is left of an `autograd.Function` in an exported program, and of a custom op?
#
# ## Further reading
#
# - Custom operators, Python: https://docs.pytorch.org/tutorials/advanced/python_custom_ops.html
# - Extending `torch.func` and `torch.compile` with `autograd.Function`: https://docs.pytorch.org/docs/stable/notes/extending.func.html
# - Graph breaks, explained: https://docs.pytorch.org/docs/stable/compile/programming_model.graph_breaks_index.html
# - Custom-op call overhead: https://github.com/pytorch/pytorch/issues/176592
