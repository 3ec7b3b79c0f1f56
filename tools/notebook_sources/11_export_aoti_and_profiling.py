# %% [markdown]
# # 11 · Shipping custom ops: `torch.export`, AOTInductor and the profiler
#
# **What you will learn**
# - what a `torch.export.ExportedProgram` holds when your model calls a custom op, a mutating one included;
# - why `torch.export` needs the op's fake kernel, and the error you get without one;
# - how to compile an exported program ahead of time with AOTInductor, load the package and run it;
# - what a saved package does when the op's Python kernel changes, or is not registered at all;
# - how a custom op shows up in `torch.profiler`, eagerly and inside a compiled graph, and what a Python
#   custom op costs per call.
#
# **Time:** about 25 minutes. **Before:** 01 · Custom ops and the compile pipeline, 02 · `mutates_args`,
# 04 · Names and caches.
#
# Every claim is asserted by the cell that shows it; outputs recorded on torch 2.13.0 (CPU). On a GPU the
# same steps apply; AOTInductor then writes CUDA/Triton kernels and the profiler shows GPU kernels as well.

# %%
# NBVAL_IGNORE_OUTPUT
import os
import subprocess
import sys
import tempfile
import timeit
import warnings

import torch
from torch import Tensor
from torch.profiler import ProfilerActivity, profile

import labkit

labkit.setup(warm_inductor=False)   # the one AOTInductor compile below is this notebook's slow cell
_ = torch.manual_seed(0)
# Two of torch's own messages that are not about your code: export's warning about a deprecated pytree class
# (torch 2.13), and the profiler's "profiler_start/stop" log lines (Kineto reads this variable as it logs).
warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
_ = os.environ.setdefault("KINETO_LOG_LEVEL", "6")

# %% [markdown]
# ## 1. `torch.export`: the op as one node
#
# `torch.export.export(module, args)` traces a module into one graph, with no Python left in it — the form
# you save, ship, and compile ahead of time. A custom op is traced like in `torch.compile`: its fake kernel
# gives the output's shape, and the graph keeps **one node** for the op. SiLU again, in a small module:

# %%
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)      # stands in for your fused kernel


@silu.register_fake
def _(x):
    return torch.empty_like(x)


class Block(torch.nn.Module):
    def forward(self, x):
        return silu(x) + 1


x = torch.randn(4, 8)
ep = torch.export.export(Block(), (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
print(ep.graph)

# %%
targets = [node.target for node in ep.graph.nodes if node.op == "call_function"]
assert targets == [torch.ops.nb11.silu.default, torch.ops.aten.add.Tensor], "the op is one node, before the add"
batch = ep.graph_signature.user_inputs[0]
shape = next(n for n in ep.graph.nodes if n.name == batch).meta["val"].shape
assert isinstance(shape[0], torch.SymInt), "Dim('batch') made dim 0 symbolic"
assert shape[1] == 8, "dim 1 stays 8"

# %% [markdown]
# The exported program runs as a module (`ep.module()`), for any batch size `Dim("batch")` allows:

# %%
x3 = torch.randn(3, 8)
torch.testing.assert_close(ep.module()(x3), Block()(x3))

# %% [markdown]
# ### A mutating op in an exported program
#
# An op that declares `mutates_args` writes into its argument. The exported graph (the default, non-strict
# export; observed on torch 2.11.0 to 2.15.0) keeps the mutating op itself as a node — no `auto_functionalized`
# wrapper appears in `ep.graph`:

# %%
@torch.library.custom_op("nb11::add_into", mutates_args=("buf",))
def add_into(buf: Tensor, x: Tensor) -> None:
    buf.add_(x)


class Accumulate(torch.nn.Module):
    def forward(self, x):
        buf = torch.zeros_like(x)
        add_into(buf, x)
        return buf * 2


ep_mut = torch.export.export(Accumulate(), (x,))
mut_targets = [node.target for node in ep_mut.graph.nodes if node.op == "call_function"]
print(mut_targets)

# %%
assert torch.ops.nb11.add_into.default in mut_targets, "the mutating op is a node of the exported graph"
assert not any("auto_functionalized" in str(t) for t in mut_targets), "no auto_functionalized wrapper in ep.graph"
torch.testing.assert_close(ep_mut.module()(x), 2 * x)

# %% [markdown]
# That graph is export's *training IR*. `ep.run_decompositions()` lowers it to the functional form that
# backends consume, and there the mutating op gets the wrapper notebook 02 showed under `torch.compile`:

# %%
lowered = [str(node.target) for node in ep_mut.run_decompositions().graph.nodes if node.op == "call_function"]
print(lowered)
assert "auto_functionalized_v2" in lowered, "lowered: the op is wrapped in auto_functionalized_v2"
assert "nb11.add_into.default" not in lowered, "no bare mutating call is left"

# %% [markdown]
# ### Without a fake kernel, export stops
#
# Export traces with fake tensors, like `torch.compile`, and needs the op's fake kernel for the same reason
# (notebook 01 showed the `torch.compile` error): without one, export stops.

# %%
@torch.library.custom_op("nb11::no_fake", mutates_args=())
def no_fake(x: Tensor) -> Tensor:
    return x * 2


class UsesNoFake(torch.nn.Module):
    def forward(self, x):
        return no_fake(x)


try:
    torch.export.export(UsesNoFake(), (x,))
    export_error = None
except RuntimeError as error:
    export_error = str(error)
print(export_error.split("\n")[0])

# %%
assert export_error is not None, "export raised RuntimeError"
assert "There was no fake impl registered for <CustomOpDef(nb11::no_fake)>" in export_error, "it names the op"
assert "register_fake" in export_error, "it names the fix"

# %% [markdown]
# ## 2. AOTInductor: compile once, load a package, run
#
# AOTInductor compiles an `ExportedProgram` **ahead of time** into a shared library, zipped with its weights
# and metadata into one `.pt2` package; `aoti_load_package` loads it and gives you a callable. Inductor
# cannot see inside a custom op, so it emits a call to it — in AOT mode through a *proxy executor*
# (`torch/_inductor/codegen/cpp_wrapper_cpu.py`, `generate_fallback_kernel_with_runtime_lookup_aot`), which
# finds the op by its name in the dispatcher. This is the notebook's one AOTInductor compile (about 25 s on
# this CPU, a C++ compiler run; on a GPU it also compiles Triton kernels):

# %%
# NBVAL_IGNORE_OUTPUT
workdir = tempfile.TemporaryDirectory()          # the package lives here; removed at the end of the section
package = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(workdir.name, "block.pt2"))
runner = torch._inductor.aoti_load_package(package)
print(package)

# %%
for batch_size in (4, 3):                        # Dim("batch") survives into the package
    xb = torch.randn(batch_size, 8)
    torch.testing.assert_close(runner(xb), Block()(xb))

# %% [markdown]
# The package is a zip. Its generated C++ calls the op through the proxy executor, and a JSON file next to it
# describes each such call — the op's name and its arguments by name — which is how the loader finds it:

# %%
import json
import zipfile

with zipfile.ZipFile(package) as archive:
    files = {name: archive.read(name).decode(errors="replace") for name in archive.namelist()
             if name.endswith((".cpp", ".json"))}
cpp = "".join(text for name, text in files.items() if name.endswith(".cpp"))
calls = [node["node"] for name, text in files.items() if name.endswith(".json") and '"nodes"' in text
         for node in json.loads(text)["nodes"]]
print([(call["target"], [arg["name"] for arg in call["inputs"]]) for call in calls])
assert "aoti_torch_proxy_executor_call_function" in cpp, "the generated C++ calls the op via the proxy executor"
assert [call["target"] for call in calls] == ["nb11::silu"], "the JSON names the op, once"
assert [arg["name"] for arg in calls[0]["inputs"]] == ["x"], "and its argument, by name"

# %% [markdown]
# The profiler (section 3) confirms that the loaded package runs the op through the dispatcher, as one
# `nb11::silu` event with the aten ops of its Python kernel beneath it:

# %%
with profile(activities=[ProfilerActivity.CPU]) as prof:
    runner(x)
aoti_events = [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]
assert [name for name, _ in aoti_events].count("nb11::silu") == 1, "the op is an event of its own"
assert ("aten::sigmoid", "nb11::silu") in aoti_events, "its Python kernel's aten ops run beneath it"

# %% [markdown]
# ### What a changed op does to a saved package
#
# The package stores the op's **name** and its arguments, not its kernel: `aoti_load_package` looks the name up
# in the dispatcher **when it loads**. Redefine `nb11::silu` under the same name, with a new kernel and a
# declaration that now **writes into its input**, and load the package again:

# %%
@torch.library.custom_op("nb11::silu", mutates_args=("x",))
def silu(x: Tensor) -> Tensor:
    x.fill_(42.0)                    # a different kernel, which now writes into its input
    return torch.full_like(x, 42.0)


runner = None                        # loaded before the change: never call it again (see below)
reloaded = torch._inductor.aoti_load_package(package)
mine = torch.randn(4, 8)
before = mine.clone()
out = reloaded(mine)
print("package output:", out[0, :3], " caller's tensor afterwards:", mine[0, :3])

# %%
assert torch.equal(out, torch.full_like(mine, 43.0)), "the package runs the NEW kernel (42 + 1)"
assert not torch.equal(mine, before), "and the new kernel wrote into the caller's tensor, unannounced"

# %% [markdown]
# The package checked neither the kernel nor the declaration: it runs whatever is registered under the name
# when it is loaded. Why `runner = None`? A loaded package keeps the C++ handle of the operator it found at load
# time, and `custom_op` **destroyed** that operator when it replaced it: the old `runner` would now call through
# freed memory. Often the new operator lands in the same place and the call seems to work; nothing guarantees
# it (the script below shows a crash). After redefining an op, load its packages again. Put the original op
# back, and load once more:

# %%
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)


@silu.register_fake
def _(x):
    return torch.empty_like(x)


reloaded = None                      # it, too, holds the operator just destroyed
runner = torch._inductor.aoti_load_package(package)
torch.testing.assert_close(runner(x), Block()(x))

# %% [markdown]
# What if the op is not registered at all, or its **signature** changes? The second can take the process down,
# so we try both in a fresh Python, never in this kernel. The script loads the package before the op exists,
# defines the op and loads again, then redefines it with one more argument (with a default), loads the package
# once more, and runs the one it loaded before that change:

# %%
script = f"""
import torch
try:
    torch._inductor.aoti_load_package({package!r})
except RuntimeError as error:
    print("1 ERROR:", str(error).splitlines()[0], flush=True)
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)
x = torch.randn(2, 8)
runner = torch._inductor.aoti_load_package({package!r})
print("2 OK:", torch.allclose(runner(x), silu(x) + 1), flush=True)
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    return x * torch.sigmoid(x) * alpha
fresh = torch._inductor.aoti_load_package({package!r})
print("3 a package loaded now runs:", torch.allclose(fresh(x), silu(x) + 1), flush=True)
runner(x)
print("4 the package loaded before the change ran", flush=True)
"""

# %%
result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
print(result.stdout + f"killed by a signal: {result.returncode < 0}")
assert "1 ERROR: Could not find schema for nb11::silu." in result.stdout, "loading fails: the op is unknown"
if labkit.env.torch_version() >= (2, 13):    # observed on 2.13.0 to 2.15.0; 2.11.0, 2.12.1: the first line only
    assert "cannot be run via AOTI without Python environment" in result.stdout, "torch says why: a Python op"
assert "2 OK: True" in result.stdout, "defining the op first (no fake kernel needed to run) makes it load and run"
assert "3 a package loaded now runs: True" in result.stdout, "loaded after the change, it fills in the default"
assert "4 the package loaded before" not in result.stdout, "the package loaded before the change never returned"
assert result.returncode != 0, "the process died (a segmentation fault, signal 11, in our runs on 2.11.0-2.15.0)"

# %%
workdir.cleanup()                                # nothing left behind
assert not os.path.exists(package), "the package is gone"

# %% [markdown]
# ## 3. The profiler: where your op shows up
#
# `torch.profiler.profile` records the operators that run, each as an event; an event's `cpu_parent` is the
# event it ran inside. Whether a custom op shows up as an event of its own depends on how it is called, and on
# your torch. A fresh op for this section — SiLU again — profiled eagerly, called as the Python object and as
# `torch.ops.nb11.swish`:

# %%
@torch.library.custom_op("nb11::swish", mutates_args=())
def swish(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)


_ = swish.register_fake(lambda x: torch.empty_like(x))


def events(fn, *args):
    """(name, parent's name) of every event in the profile of one call of fn, after a first call outside it."""
    fn(*args)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    return [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]


by_object, by_name = events(swish, x), events(torch.ops.nb11.swish, x)
print("swish(x):               ", by_object, "\ntorch.ops.nb11.swish(x):", by_name)

# %%
names = [name for name, _ in by_object]
assert [name for name, _ in by_name].count("nb11::swish") == 1, "by name: one event of the op's own"
assert ("aten::sigmoid", "nb11::swish") in by_name, "by name: the kernel's aten ops run beneath it"
if labkit.env.torch_version() >= (2, 14):    # observed on 2.14.1 and 2.15.0
    assert "nb11::swish" not in names, "from 2.14, the custom_op object records no event of the op's own"
    assert ("aten::sigmoid", None) in by_object, "only the kernel's aten ops, with no parent"
else:                                        # observed on 2.11.0, 2.12.1 and 2.13.0
    assert by_object == by_name, "before 2.14, both spellings profile the same"

# %% [markdown]
# From torch 2.14, calling the `custom_op` object takes a path that records no event of the op's own
# (observed on 2.14.1 and 2.15.0); `torch.ops.nb11.swish(...)` records it on every torch we ran.
#
# ### Under `torch.compile`
#
# Inductor cannot fuse into a custom op: the compiled code calls its kernel. Where does the call show up?

# %%
# NBVAL_IGNORE_OUTPUT
# (the compiled graph's name, printed below, is a hash of the graph and of the compile's settings)
torch.compiler.reset()
compiled_events = events(torch.compile(lambda x: swish(x) + 1, backend="inductor"), x)
print([event for event in compiled_events if event[0] in ("nb11::swish", "aten::sigmoid")])

# %%
names = [name for name, _ in compiled_events]
sigmoid_parent = next(parent for name, parent in compiled_events if name == "aten::sigmoid")
if labkit.env.torch_version() >= (2, 14):    # observed on 2.14.1 and 2.15.0
    assert "nb11::swish" not in names, "from 2.14, no event of the op's own in the compiled call"
    assert sigmoid_parent.startswith("## Call CompiledFxGraph"), "its kernel runs right inside the graph's call"
else:                                        # observed on 2.11.0, 2.12.1 and 2.13.0
    assert names.count("nb11::swish") == 1, "before 2.14, one event of the op's own per compiled call"
    assert sigmoid_parent == "nb11::swish", "and its kernel's aten ops beneath it"
    op_parent = next(parent for name, parent in compiled_events if name == "nb11::swish")
    assert op_parent.startswith("## Call CompiledFxGraph"), "the op is called from the compiled graph"

# %% [markdown]
# On torch 2.11–2.13 the op is an event beneath the compiled graph's call (`## Call CompiledFxGraph … ##`); from
# 2.14 its kernel's aten ops sit right beneath the graph's call, with no event naming your op. To see your
# kernel by name on every torch, wrap its body in `torch.profiler.record_function`:

# %%
@torch.library.custom_op("nb11::swish_named", mutates_args=())
def swish_named(x: Tensor) -> Tensor:
    with torch.profiler.record_function("swish kernel"):
        return x * torch.sigmoid(x)


_ = swish_named.register_fake(lambda x: torch.empty_like(x))
torch.compiler.reset()
named_events = events(torch.compile(lambda x: swish_named(x) + 1, backend="inductor"), x)
assert [name for name, _ in named_events].count("swish kernel") == 1, "the kernel's own event, on every torch"
assert ("aten::sigmoid", "swish kernel") in named_events, "with its aten ops beneath it"

# %% [markdown]
# ### What the wrapper costs
#
# A `custom_op` call does work before your kernel runs — checks, and (on torch 2.11–2.13, or through
# `torch.ops` on any torch) the dispatcher — that calling the same function directly does not. On a tiny tensor,
# where the kernel costs almost nothing, the difference is visible (PyTorch issue #176592). The numbers depend
# on the machine and its load, so they are shown, not asserted:

# %%
# NBVAL_IGNORE_OUTPUT
def plain_swish(x):
    return x * torch.sigmoid(x)


tiny = torch.randn(8)
spellings = {"plain Python function": plain_swish, "custom_op object": swish, "torch.ops": torch.ops.nb11.swish}
per_call_us = {name: min(timeit.repeat(lambda fn=fn: fn(tiny), number=1000, repeat=5)) / 1000 * 1e6
               for name, fn in spellings.items()}
print({name: f"{t:.1f} µs" for name, t in per_call_us.items()})

# %% [markdown]
# The stored output above was recorded on a shared 2-core CPU with torch 2.13.0; run the cell to see your
# machine's figures. The difference is a fixed cost per call: on a large tensor, or on a GPU where the
# kernel's time dominates, it matters less. The next cell asserts only what holds on any machine, with a
# wide margin: either spelling of the custom op costs more per call than the plain function.

# %%
for spelling in ("custom_op object", "torch.ops"):
    ratio = per_call_us[spelling] / per_call_us["plain Python function"]
    assert ratio > 1.2, f"{spelling}: a call costs more than calling the function directly (ratio {ratio:.1f})"

# %% [markdown]
# ## Exercise 1: a fake kernel that export accepts
#
# `nb11::halve_pairs` sums neighbouring columns: an `(n, 2k)` input gives an `(n, k)` output. Write its fake
# kernel so that `torch.export` records the right output. (A fake kernel promises the shape, dtype, device and
# strides of what the real kernel returns — notebook 10; `empty_like` would be wrong here.)

# %%
def my_halve_pairs_fake(x):
    ...  # your fake kernel


# %%
@torch.library.custom_op("nb11::halve_pairs", mutates_args=())
def halve_pairs(x: Tensor) -> Tensor:
    return x[:, 0::2] + x[:, 1::2]


class Pairs(torch.nn.Module):
    def forward(self, x):
        return halve_pairs(x)

# %%
def fake_problem(fake):
    """Why `fake` is wrong for halve_pairs (one sentence), or None."""
    for rows, cols in ((3, 8), (5, 6)):
        real, promised = halve_pairs(torch.randn(rows, cols)), fake(torch.empty(rows, cols, device="meta"))
        if not isinstance(promised, torch.Tensor):
            return f"for a ({rows}, {cols}) input your fake returned {promised!r}, not a tensor"
        if (promised.shape, promised.dtype, promised.stride()) != (real.shape, real.dtype, real.stride()):
            return (f"for a ({rows}, {cols}) input the kernel returns shape {tuple(real.shape)}, strides "
                    f"{real.stride()}; your fake promises {tuple(promised.shape)}, {promised.stride()}")
    halve_pairs.register_fake(fake)
    program = torch.export.export(Pairs(), (torch.randn(3, 8),))
    got = tuple(next(n for n in program.graph.nodes if n.op == "output").args[0][0].meta["val"].shape)
    return None if got == (3, 4) else f"export recorded {got} for a (3, 8) input"

# %%
def check_halve_pairs_fake(fake):
    try:
        if not labkit.exercises.answered(... if fake(torch.empty(3, 8, device="meta")) is None else fake):
            return False                         # the body is still `...`, so the fake returns None
        problem = fake_problem(fake)
    except Exception as error:                   # the learner's fake raised: one sentence, no traceback
        problem = f"your fake raised {type(error).__name__}: {error}"
    return labkit.exercises.check(problem is None, "export records (3, 4), and the fake matches the kernel.",
                                  f"{problem}.")


answer_ok = check_halve_pairs_fake(my_halve_pairs_fake)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: new_empty makes a tensor like x (dtype, device), contiguous, with the shape you give.
import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()):
    assert not check_halve_pairs_fake(lambda x: torch.empty_like(x)), "empty_like is rejected"
    assert not check_halve_pairs_fake(lambda x: x.new_empty(3, 4)), "a hard-coded shape is rejected"
    assert not check_halve_pairs_fake(lambda x: x.new_empty(x.shape[0], x.shape[1] / 2)), "a raising fake: rejected"
    assert check_halve_pairs_fake(lambda x: x.new_empty(x.shape[0], x.shape[1] // 2)), "new_empty passes"
print("solution checked")

# %% [markdown]
# ## Exercise 2: predict the profile of a compiled function
#
# `f(x) = swish(x) + swish(x * 2)`, compiled with Inductor. In the profile of one compiled call **on your
# torch**, how many events are named `nb11::swish`, how many `aten::sigmoid`, and how many `aten::add` (the `+`
# in `f`)? (Section 3 says what differs between torch versions; what does Inductor do with the ops it can see?)

# %%
my_counts = {"nb11::swish": ..., "aten::sigmoid": ..., "aten::add": ...}

# %%
torch.compiler.reset()
f_events = events(torch.compile(lambda x: swish(x) + swish(x * 2), backend="inductor"), x)
actual_counts = {name: [n for n, _ in f_events].count(name) for name in my_counts}
if all(labkit.exercises.answered(v) for v in my_counts.values()):
    wrong = [name for name in actual_counts if my_counts[name] != actual_counts[name]]
    labkit.exercises.check(not wrong, "all three counts hold.",
                           f"re-think {wrong}: the custom op runs its Python kernel; the + and the * 2 around it "
                           "are Inductor's to compile.")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution. Two calls of the op (two inputs), each running its kernel's sigmoid; the op's own event only before
# torch 2.14. The + and the * 2 are ops Inductor sees: it compiles them into its own C++ kernel, which the
# profiler does not show as aten::add or aten::mul. (Observed on torch 2.11.0 to 2.15.0, CPU.)
own_events = 0 if labkit.env.torch_version() >= (2, 14) else 2
assert actual_counts == {"nb11::swish": own_events, "aten::sigmoid": 2, "aten::add": 0}, "one compiled call's counts"
assert actual_counts["aten::add"] != 1, "'the + runs as aten::add' is rejected"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# Export, compile ahead of time and profile with torch's own API:
#
# ```python
# ep = torch.export.export(model, (example,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
# path = torch._inductor.aoti_compile_and_package(ep, package_path="model.pt2")
# runner = torch._inductor.aoti_load_package(path)   # in the serving process: register your ops FIRST
# with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
#     runner(example)
# print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
# ```
#
# - A package made from a Python custom op needs the op registered in the process that loads it (import the
#   module that defines it before `aoti_load_package`), and runs whatever kernel is registered under that
#   name. For a package that runs without Python, write the op in C++ with `TORCH_LIBRARY` (see the landing page
#   below).
# - After redefining an op, load the packages that call it again: a package loaded before holds a handle to the
#   destroyed operator (with a changed signature, its next call crashed the process in section 2). A package
#   loaded after the change runs the new kernel, unchecked, whatever its declaration now says.
# - To find your kernel in a profile on every torch, name it with `torch.profiler.record_function`. On a GPU,
#   `ProfilerActivity.CUDA` adds the GPU kernels to the profile (not run in this notebook).
# - labkit has no wrapper for export or AOTInductor; this notebook uses torch only.
#
# ## Questions
#
# 1. Why do `torch.export` and `torch.compile` both need the op's fake kernel?
# 2. A `.pt2` package stores the op's name and arguments. What does that mean for a model you ship and then fix a
#    kernel bug in — and for a fix that changes the op's signature?
# 3. Why does the profiler show `aten::sigmoid` inside a compiled function, but no `aten::add` for the `+` next
#    to it? Where does the op's own event go from torch 2.14?
# 4. Why does a `custom_op` call cost more than calling its kernel function directly, and when does that matter?
#
# ## What to remember
#
# - In an `ExportedProgram` a custom op is one node, `torch.ops.nb11.<name>.default`; a mutating op stays itself
#   in `ep.graph`, and `run_decompositions()` wraps it in `auto_functionalized_v2` (torch 2.11–2.15).
# - Export needs a fake kernel: without one it raises `RuntimeError` ("There was no fake impl registered").
# - AOTInductor calls a custom op through the proxy executor, looked up by name when the package loads: it
#   runs the kernel registered then, unchecked; a process without the op cannot load it ("Could not find
#   schema"); a changed signature crashed a process that had loaded the package before the change.
# - In the profiler, `torch.ops.ns.name(...)` records the op as its own event with its kernel's aten ops
#   beneath it, eagerly and in an AOTI package. The `custom_op` object does too up to torch 2.13; from 2.14 it
#   and compiled code record only the kernel's aten ops. `record_function` names your kernel on every torch.
#
# ## Further reading
#
# - `torch.export`: https://docs.pytorch.org/docs/stable/export.html
# - AOTInductor: https://docs.pytorch.org/docs/stable/torch.compiler_aot_inductor.html
# - Profiler recipe: https://docs.pytorch.org/tutorials/recipes/recipes/profiler_recipe.html
# - Python custom operators tutorial: https://pytorch.org/tutorials/advanced/python_custom_ops.html
# - Custom operators landing page (C++ ops for Python-free packages):
#   https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - Custom-op call overhead: https://github.com/pytorch/pytorch/issues/176592
