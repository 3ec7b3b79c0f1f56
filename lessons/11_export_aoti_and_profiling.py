# %% [markdown]
# # 11 · Shipping custom ops: `torch.export`, AOTInductor and the profiler
#
# You export a model that calls your op, compile it ahead of time into one `.pt2` file, and ship it. The file
# holds your op's **name**, not its kernel: whatever is registered under that name where it loads is what runs.
# This notebook builds such a package and watches it find its op, on torch 2.13 (CPU), then looks for the op
# in a profile.
#
# **What you will learn**
# - what a `torch.export.ExportedProgram` holds when your model calls a custom op (mutating, effectful);
# - when `torch.export` needs the op's fake kernel;
# - how to build an AOTInductor package, load it and run it, and what it does when the op changes or is missing;
# - where a custom op shows up in `torch.profiler`, eager and compiled, and what a Python custom op costs.
#
# **Time:** about 35 minutes. **Before:** 01 · Custom ops and the compile pipeline, 02 · `mutates_args`,
# 04 · Names and caches. Collapsed *Check* cells assert every claim, and what other releases do
# ([docs/torch-versions.md](../docs/torch-versions.md#notebook-11-export-aotinductor-and-the-profiler)).

# %% tags=["nbval-ignore-output"]
import os
import tempfile
import timeit
import warnings

import torch
from torch import Tensor
from torch.profiler import ProfilerActivity, profile

import labkit
import labkit.packages

labkit.setup(warm_inductor=False)   # the one AOTInductor compile below is this notebook's slow cell
_ = torch.manual_seed(0)
# Two of torch's messages not about your code: a deprecated pytree class (export), and Kineto's log lines.
warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
_ = os.environ.setdefault("KINETO_LOG_LEVEL", "6")

# %% [markdown]
# ## 1. `torch.export`: the op as one node
#
# `torch.export.export(module, args)` traces a module into one graph with no Python left in it: the form you
# save, ship and compile ahead of time. As in `torch.compile`, the op's fake kernel gives its output's shape,
# and the graph keeps **one node** for the op. SiLU, in a small module:

# %%
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)      # stands in for your fused kernel


silu.register_fake(lambda x: torch.empty_like(x))


class Block(torch.nn.Module):
    def forward(self, x):
        return silu(x) + 1


x = torch.randn(4, 8)
ep = torch.export.export(Block(), (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
print(ep.graph)

# %% tags=["check"]
#@title Check: the op is one node; Dim("batch") made dim 0 symbolic; the program runs for another batch size
# Ops compared by name: after a redefinition (a second Run All), torch.ops may hand out a new object for the op
targets = [str(node.target) for node in ep.graph.nodes if node.op == "call_function"]
assert targets == ["nb11.silu.default", "aten.add.Tensor"], "the op is one node, before the add"
batch = ep.graph_signature.user_inputs[0]
shape = next(n for n in ep.graph.nodes if n.name == batch).meta["val"].shape
assert isinstance(shape[0], torch.SymInt), "Dim('batch') made dim 0 symbolic"
assert shape[1] == 8, "dim 1 stays 8"
x3 = torch.randn(3, 8)
torch.testing.assert_close(ep.module()(x3), Block()(x3))

# %% [markdown]
# ## 2. Mutating and effectful ops, and when export needs a fake kernel
#
# An op that declares `mutates_args` and returns nothing, with **no fake kernel registered**:

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
print("exported:", [str(node.target) for node in ep_mut.graph.nodes if node.op == "call_function"])
print("lowered: ", [str(node.target) for node in ep_mut.run_decompositions().graph.nodes if node.op == "call_function"])

# %% tags=["check"]
#@title Check: the mutating op is a node of the exported graph; run_decompositions wraps it in auto_functionalized_v2
mut_targets = [str(node.target) for node in ep_mut.graph.nodes if node.op == "call_function"]
assert "nb11.add_into.default" in mut_targets, "the mutating op is a node of the exported graph"
assert not any("auto_functionalized" in t for t in mut_targets), "no auto_functionalized wrapper in ep.graph"
torch.testing.assert_close(ep_mut.module()(x), 2 * x)
lowered = [str(node.target) for node in ep_mut.run_decompositions().graph.nodes if node.op == "call_function"]
assert "auto_functionalized_v2" in lowered, "lowered: the op is wrapped in auto_functionalized_v2"
assert "nb11.add_into.default" not in lowered, "no bare mutating call is left"

# %% [markdown]
# It exported without a fake kernel: an op that returns nothing and mutates an argument gets a trivial one from
# torch, as do ops tagged `Tag.inplace` or `Tag.out` (notebook 01's rule, for export as for `torch.compile`). Any
# other op needs yours, whether it returns a tensor, an `int` or nothing:

# %%
@torch.library.custom_op("nb11::no_fake", mutates_args=())
def no_fake(x: Tensor) -> Tensor:
    return x * 2


class UsesNoFake(torch.nn.Module):
    def forward(self, x):
        return no_fake(x)


export_error = labkit.stages.raised(lambda: torch.export.export(UsesNoFake(), (x,)))
print(export_error.message[:150], "...")

# %% tags=["check"]
#@title Check: an op with no fake kernel, not a mutating one returning nothing: export raises, naming op and fix
assert export_error is not None, "export of an op without a fake kernel raised"
assert export_error.type_name == "RuntimeError", "a RuntimeError"
assert "There was no fake impl registered for <CustomOpDef(nb11::no_fake)>" in export_error.message, "naming the op"
assert "register_fake" in export_error.message, "and the fix"

# %% tags=["check"]
#@title Check: without a fake kernel, an op returning an int or a pure one returning nothing fails export too
def exported(fn) -> bool:
    class Calls(torch.nn.Module):
        def forward(self, x):
            return fn(x)
    return labkit.stages.raised(lambda: torch.export.export(Calls(), (x,))) is None


@torch.library.custom_op("nb11::counts", mutates_args=())
def counts(x: Tensor) -> int:
    return int((x > 0).sum())


@torch.library.custom_op("nb11::does_nothing", mutates_args=())
def does_nothing(x: Tensor) -> None:
    pass


assert not exported(lambda x: x * counts(x)), "an op returning an int needs its fake kernel for export"
assert not exported(lambda x: (does_nothing(x), x * 2)[1]), "so does a pure op returning nothing"

# %% tags=["check"]
#@title Check, continued: ops tagged Tag.inplace or Tag.out export without one (torch 2.13 and later)
if hasattr(torch.Tag, "inplace"):
    @torch.library.custom_op("nb11::bumped", mutates_args=("x",), tags=(torch.Tag.inplace,))
    def bumped(x: Tensor) -> Tensor:
        x.add_(1)
        return x

    @torch.library.custom_op("nb11::doubled_into", mutates_args=("out",), tags=(torch.Tag.out,))
    def doubled_into(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x * 2)
        return out

    assert exported(lambda x: bumped(x.clone()) * 2), "a Tag.inplace op exports without a fake kernel"
    assert exported(lambda x: doubled_into(x, out=torch.empty_like(x)) + 1), "so does a Tag.out op"

# %% [markdown]
# An op with an **ordered effect** (logging, I/O: calls that must keep their order) is lowered differently:
# wrapped in `with_effects`, threaded by a **token** that the program takes in and hands back.
# `labkit.ops.mark_ordered_effect` registers the effect (torch's API for it is private):

# %%
@torch.library.custom_op("nb11::log_value", mutates_args=())
def log_value(x: Tensor) -> Tensor:
    return x.clone()                 # stands in for an op that also writes a log


log_value.register_fake(lambda x: torch.empty_like(x))
labkit.ops.mark_ordered_effect(log_value)


class Logs(torch.nn.Module):
    def forward(self, x):
        return log_value(x) + 1


lowered_fx = torch.export.export(Logs(), (x,)).run_decompositions()
print([str(node.target) for node in lowered_fx.graph.nodes if node.op == "call_function"])
print("inputs:", [spec.kind.name for spec in lowered_fx.graph_signature.input_specs],
      " outputs:", [spec.kind.name for spec in lowered_fx.graph_signature.output_specs])

# %% tags=["check"]
#@title Check: lowered, the effectful op is wrapped in with_effects, with a token in and out
lowered_targets = [str(node.target) for node in lowered_fx.graph.nodes if node.op == "call_function"]
assert "with_effects" in lowered_targets, "lowered: the effectful op is wrapped in with_effects"
assert "nb11.log_value.default" not in lowered_targets, "no bare call of it is left"
assert [s.kind.name for s in lowered_fx.graph_signature.input_specs][0] == "TOKEN", "the program takes a token"
assert [s.kind.name for s in lowered_fx.graph_signature.output_specs][0] == "TOKEN", "and returns one"
torch.testing.assert_close(lowered_fx.module()(x), x + 1)

# %% [markdown]
# ## 3. AOTInductor: compile once, load a package, run
#
# AOTInductor compiles an `ExportedProgram` **ahead of time** into a shared library, zipped with its weights
# and metadata into one `.pt2` package; loading it gives you a callable. Inductor cannot see inside a custom op,
# so the generated code calls it **by name**, through a *proxy executor*, and the name is looked up when the
# package loads. The next cell is the notebook's one slow step (a C++ compile); it says so while it runs, and if
# you stop it, run it again:

# %% tags=["nbval-ignore-output"]
workdir = tempfile.TemporaryDirectory()          # the package lives here; removed at the end of section 4
package = None                                   # until the build below completes
package = labkit.packages.build(ep, os.path.join(workdir.name, "block.pt2"))

# %% tags=["check"]
#@title Check: the package runs like the module, for two batch sizes (Dim("batch") survives into it)
loaded = labkit.packages.load(package)
for batch_size in (4, 3):
    xb = torch.randn(batch_size, 8)
    torch.testing.assert_close(loaded(xb), Block()(xb))

# %% [markdown]
# What does the package hold for the op? Its JSON describes each custom-op call by the op's name and its
# arguments' names; the picture shows that, and what this process registers under the name:

# %%
calls = labkit.packages.op_calls(package)
labkit.pictures.package_lookup("block.pt2", calls, labkit.packages.registered_now(calls))

# %% tags=["check"]
#@title Check: the C++ calls the op through the proxy executor; the JSON names the op once, and its argument
labkit.packages.require(package)                 # one sentence if the build cell did not finish
assert all(call["via proxy executor"] for call in calls), "the generated C++ calls the op via the proxy executor"
assert [call["target"] for call in calls] == ["nb11::silu"], "the JSON names the op, once"
assert [call["inputs"] for call in calls] == [["x"]], "and its argument, by name"
assert labkit.packages.registered_now(calls)["nb11::silu"] == "nb11::silu(Tensor x) -> Tensor", "registered now"

# %% [markdown]
# The profiler (section 5) shows the loaded package running the op through the dispatcher: one `nb11::silu`
# event, with the aten ops of its Python kernel beneath it:

# %%
runner = labkit.packages.load(package)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    runner(x)
aoti_events = [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]
print([event for event in aoti_events if event[0] in ("nb11::silu", "aten::sigmoid")])

# %% tags=["check"]
#@title Check: in the package's run, the op is an event of its own, its kernel's aten ops beneath it
labkit.packages.require(package)                 # one sentence if the build cell did not finish
assert [name for name, _ in aoti_events].count("nb11::silu") == 1, "the op is an event of its own"
assert ("aten::sigmoid", "nb11::silu") in aoti_events, "its Python kernel's aten ops run beneath it"

# %% [markdown]
# ## 4. A package runs whatever is registered under the name
#
# Redefine `nb11::silu` under the same name, with a new kernel and a declaration that now **writes into its
# input**, and load the package again:

# %%
@torch.library.custom_op("nb11::silu", mutates_args=("x",))
def silu(x: Tensor) -> Tensor:
    x.fill_(42.0)                    # a different kernel, which now writes into its input
    return torch.full_like(x, 42.0)


runner = None                        # loaded before the change: never call it again (see below)
reloaded = labkit.packages.load(package)
mine = torch.randn(4, 8)
before = mine.clone()
out = reloaded(mine)
print("package output:", out[0, :3], " caller's tensor afterwards:", mine[0, :3])

# %% tags=["check"]
#@title Check: the reloaded package runs the new kernel, which writes into the caller's tensor, unannounced
labkit.packages.require(package)                 # one sentence if the build cell did not finish
assert torch.equal(out, torch.full_like(mine, 43.0)), "the package runs the NEW kernel (42 + 1)"
assert not torch.equal(mine, before), "and the new kernel wrote into the caller's tensor, unannounced"

# %% [markdown]
# The package checked neither kernel nor declaration. Why `runner = None`? A loaded package keeps a handle to
# the operator it found, and `custom_op` **destroyed** that operator when it replaced it: the old `runner` would
# call through freed memory (a crash below). After redefining an op, load its packages again. The original op
# back:

# %%
@torch.library.custom_op("nb11::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)


silu.register_fake(lambda x: torch.empty_like(x))
loaded = reloaded = None             # they, too, hold the operator just destroyed
runner = labkit.packages.load(package)
restored = runner(x)

# %% tags=["check"]
#@title Check: with the original op back, a package loaded now matches the module
labkit.packages.require(package)                 # one sentence if the build cell did not finish
torch.testing.assert_close(restored, Block()(x))

# %% [markdown]
# What if the op is not registered at all, or its **signature** changes? That can take a process down, so
# `labkit.packages.in_a_fresh_python` tries it in a new Python: load the exported program (saved with
# `torch.export.save`) and the package before `nb11::silu` exists; define it and load both; then redefine it
# with one more argument, load the package again, and call the one loaded before the change:

# %%
saved = os.path.join(workdir.name, "block_ep.pt2")
torch.export.save(ep, saved)
lines, exit_status = labkit.packages.in_a_fresh_python(package, saved, "nb11::silu")
print("\n".join(line[:140] for line in lines), f"\nkilled by a signal: {exit_status < 0}")

# %% tags=["check"]
#@title Check: neither a saved program nor a package loads without its op; with it, both run; a stale package crashed
out = "\n".join(lines)
assert "1 export.load, op not registered: ERROR:" in out, "a saved exported program needs its ops registered first"
assert "2 aoti_load_package, op not registered: ERROR: Could not find schema for nb11::silu." in out, "so does a package"
if labkit.env.torch_version() >= (2, 13):    # observed on 2.13.0 to 2.15.0; 2.11.0, 2.12.1: the first line only
    assert "cannot be run via AOTI without Python environment" in out, "torch says why: a Python op"
assert "3 op defined, export.load runs: True" in out, "defining the op first makes the saved program load and run"
assert "4 op defined, the package runs: True" in out, "and the package (no fake kernel needed to run it)"
assert "5 signature changed, a package loaded now runs: True" in out, "loaded after the change, it fills the default"
assert "6 the package loaded before" not in out, "the package loaded before the change never returned"
assert exit_status != 0, "the process died (a segmentation fault, signal 11, in our runs on 2.11.0-2.15.0)"
workdir.cleanup()                                # nothing left behind
assert not os.path.exists(package), "the package is gone"

# %% [markdown]
# ## 5. The profiler: where your op shows up
#
# `torch.profiler.profile` records the operators that run, each as an event, inside the event it ran in
# (`cpu_parent`). Whether a custom op gets an event of its own depends on how it is called, and on your torch.
# A fresh op, profiled eagerly as the Python object and as `torch.ops.nb11.swish`:

# %%
@torch.library.custom_op("nb11::swish", mutates_args=())
def swish(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)


swish.register_fake(lambda x: torch.empty_like(x))


def events(fn, *args):
    """(name, parent's name) of every event in the profile of one call of fn, after a first call outside it."""
    fn(*args)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    return [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]


by_object, by_name = events(swish, x), events(torch.ops.nb11.swish, x)
print("swish(x):               ", by_object, "\ntorch.ops.nb11.swish(x):", by_name)

# %% tags=["check"]
#@title Check: by name, the op is an event with its kernel's aten ops beneath; the object's call, per release
names = [name for name, _ in by_object]
assert [name for name, _ in by_name].count("nb11::swish") == 1, "by name: one event of the op's own"
assert ("aten::sigmoid", "nb11::swish") in by_name, "by name: the kernel's aten ops run beneath it"
if labkit.env.torch_version() >= (2, 14):    # observed on 2.14.1 and 2.15.0
    assert "nb11::swish" not in names, "from 2.14, the custom_op object records no event of the op's own"
    assert ("aten::sigmoid", None) in by_object, "only the kernel's aten ops, with no parent"
else:                                        # observed on 2.11.0, 2.12.1 and 2.13.0
    assert by_object == by_name, "before 2.14, both spellings profile the same"

# %% [markdown]
# On torch 2.13 both spellings record the op's event; newer releases record none for the object's call.
#
# Under `torch.compile`, Inductor cannot fuse into the op: the compiled code calls its kernel. Where does that
# call show up? The profiler's own table, sorted by time, shows it (timings vary from run to run):

# %% tags=["nbval-ignore-output"]
torch.compiler.reset()
compiled = torch.compile(lambda x: swish(x) + 1, backend="inductor")
compiled_events = events(compiled, x)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    compiled(x)
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=6))

# %% tags=["check"]
#@title Check: compiled, the op is an event under the graph's call (to 2.13); from 2.14, only its aten ops are
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
# On torch 2.13 the op is an event beneath the compiled graph's call (`## Call CompiledFxGraph … ##`); newer
# releases show only its kernel's aten ops there. To see your kernel by name on every torch, wrap its body in
# `torch.profiler.record_function`:

# %%
@torch.library.custom_op("nb11::swish_named", mutates_args=())
def swish_named(x: Tensor) -> Tensor:
    with torch.profiler.record_function("swish kernel"):
        return x * torch.sigmoid(x)


swish_named.register_fake(lambda x: torch.empty_like(x))
torch.compiler.reset()
named_events = events(torch.compile(lambda x: swish_named(x) + 1, backend="inductor"), x)
print([event for event in named_events if event[0] in ("swish kernel", "aten::sigmoid")])

# %% tags=["check"]
#@title Check: record_function names the kernel in a compiled profile, with its aten ops beneath
assert [name for name, _ in named_events].count("swish kernel") == 1, "the kernel's own event, on every torch"
assert ("aten::sigmoid", "swish kernel") in named_events, "with its aten ops beneath it"

# %% [markdown]
# Last, the cost. A `custom_op` call does work before your kernel runs (checks, and the dispatcher) that
# calling the same function directly does not. On a tiny tensor the difference shows; measured here:

# %% tags=["nbval-ignore-output"]
def plain_swish(x):
    return x * torch.sigmoid(x)


tiny = torch.randn(8)
spellings = {"plain Python function": plain_swish, "custom_op object": swish, "torch.ops": torch.ops.nb11.swish}
per_call_us = {name: min(timeit.repeat(lambda fn=fn: fn(tiny), number=1000, repeat=5)) / 1000 * 1e6
               for name, fn in spellings.items()}
print({name: f"{t:.1f} µs" for name, t in per_call_us.items()})

# %% tags=["check"]
#@title Check: either spelling of the custom op costs more per call than the plain function (a wide margin)
for spelling in ("custom_op object", "torch.ops"):
    ratio = per_call_us[spelling] / per_call_us["plain Python function"]
    assert ratio > 1.2, f"{spelling}: a call costs more than calling the function directly (ratio {ratio:.1f})"

# %% [markdown]
# A fixed cost per call: on a large tensor, or a GPU kernel, it matters less. Notebook 12
# measures it beside four other boundaries around one kernel, and what compile and export make of each.
#
# ## Exercise 1: a fake kernel that export accepts
#
# `nb11::halve_pairs` sums neighbouring columns: an `(n, 2k)` input gives an `(n, k)` output. Write its fake
# kernel. It must promise the shape, dtype, device and strides the kernel returns; `empty_like` would be wrong.
# The check runs `labkit.exercises.fake_problems` on it, then exports a model that calls the op.

# %%
def my_halve_pairs_fake(x):
    ...  # your fake kernel

# %% tags=["check"]
#@title The exercise's check (it compares your fake with the kernel, registers it and exports)
@torch.library.custom_op("nb11::halve_pairs", mutates_args=())
def halve_pairs(x: Tensor) -> Tensor:
    return x[:, 0::2] + x[:, 1::2]


def fake_problem(fake):
    """Why `fake` is wrong for halve_pairs (one sentence), or None after export recorded the right shape."""
    found = labkit.exercises.fake_problems(fake, halve_pairs, torch.randn(3, 8)) or \
        labkit.exercises.fake_problems(fake, halve_pairs, torch.randn(5, 6))
    if found:
        return found[0]
    halve_pairs.register_fake(fake)
    program = torch.export.export(type("Pairs", (torch.nn.Module,), {"forward": lambda self, x: halve_pairs(x)})(),
                                  (torch.randn(3, 8),))
    got = tuple(next(n for n in program.graph.nodes if n.op == "output").args[0][0].meta["val"].shape)
    return None if got == (3, 4) else f"export recorded {got} for a (3, 8) input"

# %% tags=["check"]
#@title The exercise's check, continued
def check_halve_pairs_fake(fake):
    body_left = labkit.stages.raised(lambda: fake(torch.empty(3, 8))) is None and fake(torch.empty(3, 8)) is None
    if not labkit.exercises.answered(... if body_left else fake, "write the fake in the cell with "
                                     "def my_halve_pairs_fake, run it, then run this one"):
        return None
    problem = fake_problem(fake)
    return labkit.exercises.check(problem is None, "export records (3, 4), and the fake matches the kernel.",
                                  f"{problem}.")

# %%
fake_ok = check_halve_pairs_fake(my_halve_pairs_fake)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# new_empty makes a tensor like x (dtype, device), contiguous, with the shape you give.
import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()):
    assert not check_halve_pairs_fake(lambda x: torch.empty_like(x)), "empty_like is rejected"
    assert not check_halve_pairs_fake(lambda x: x.new_empty(3, 4)), "a hard-coded shape is rejected"
    assert not check_halve_pairs_fake(lambda x: torch.empty(x.shape[0], x.shape[1] // 2)), "no device=: rejected"
    assert not check_halve_pairs_fake(lambda x: x.new_empty(x.shape[0], x.shape[1] / 2)), "a raising fake: rejected"
    assert check_halve_pairs_fake(lambda x: x.new_empty(x.shape[0], x.shape[1] // 2)), "new_empty passes"

# %% [markdown]
# ## Exercise 2: predict the profile of a compiled function
#
# `f(x) = swish(x) + swish(x * 2)`, compiled with Inductor. In the profile of one compiled call **on your
# torch**, how many events are named `nb11::swish`, `aten::sigmoid` and `aten::add` (the `+` in `f`)? Whole
# numbers. (What does Inductor do with the ops it can see?)

# %%
my_counts = {"nb11::swish": ..., "aten::sigmoid": ..., "aten::add": ...}

# %% tags=["check"]
#@title The exercise's check (it profiles one compiled call of f and counts the events)
torch.compiler.reset()
f_events = events(torch.compile(lambda x: swish(x) + swish(x * 2), backend="inductor"), x)
actual_counts = {name: [n for n, _ in f_events].count(name) for name in my_counts}


def check_counts(mine):
    if not labkit.exercises.answered(mine, "fill in the three numbers in the cell with my_counts = ..., run it, "
                                           "then run this one"):
        return None
    return labkit.exercises.check_numbers(mine, actual_counts, "all three counts hold.", "the custom op runs "
                                          "its Python kernel; the + and the * 2 around it are Inductor's to compile.")

# %%
counts_ok = check_counts(my_counts)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# Two calls of the op, each running its kernel's sigmoid; the op's own event only up to torch 2.13. The + and
# the * 2 are Inductor's: compiled into its own C++ kernel, not shown as aten::add or aten::mul.
own_events = 0 if labkit.env.torch_version() >= (2, 14) else 2
solution = {"nb11::swish": own_events, "aten::sigmoid": 2, "aten::add": 0}
with contextlib.redirect_stdout(io.StringIO()):
    assert check_counts(solution), "one compiled call's counts"
    assert not check_counts({**solution, "aten::add": 1}), "'the + runs as aten::add' is rejected"
    assert not check_counts({**solution, "aten::add": "none"}), "a word is refused"

# %% [markdown]
# ## In your own project
#
# ```python
# ep = torch.export.export(model, (example,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
# path = torch._inductor.aoti_compile_and_package(ep, package_path="model.pt2")
# import my_ops                                        # in the serving process: register your ops FIRST
# runner = torch._inductor.aoti_load_package(path)
# with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
#     runner(example)
# print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
# ```
#
# - A package or a saved exported program made from a Python custom op needs the op registered where it loads,
#   and runs whatever kernel is registered under that name. For a package that runs without Python, write the
#   op in C++ with `TORCH_LIBRARY` (see the landing page below).
# - After redefining an op, load its packages again.
# - Name your kernel with `torch.profiler.record_function` to find it in any profile.
#
# ## What to remember
#
# - In an `ExportedProgram` a custom op is one node; lowered (`run_decompositions()`), a mutating op is wrapped in
#   `auto_functionalized_v2`, an effectful one in `with_effects` with a token.
# - Export needs an op's fake kernel, whatever it returns; one that returns nothing and mutates an argument, or is
#   tagged `Tag.inplace` or `Tag.out`, gets one free.
# - A package calls a custom op by name, looked up when it loads: it runs the kernel registered then, unchecked;
#   without the op it cannot load; a changed signature crashed a process holding a package loaded before.
# - `torch.ops.ns.name(...)` shows in the profiler as its own event; `record_function` names your kernel always.
#
# ## Questions
#
# 1. Why do `torch.export` and `torch.compile` both need most ops' fake kernels, and which op gets one free?
# 2. A `.pt2` package stores the op's name and arguments. What does that mean for a kernel bug you fix after
#    shipping, and for a fix that changes the op's signature?
# 3. Why does a compiled profile show `aten::sigmoid` but no `aten::add` for the `+` next to it?
# 4. Why does a `custom_op` call cost more than calling its kernel function directly, and when does it matter?
#
# ## Further reading
#
# - `torch.export`: https://docs.pytorch.org/docs/stable/export.html
# - AOTInductor: https://docs.pytorch.org/docs/stable/torch.compiler_aot_inductor.html
# - Profiler recipe: https://docs.pytorch.org/tutorials/recipes/recipes/profiler_recipe.html
# - Custom operators (C++ ops for Python-free packages): https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - Custom-op call overhead: https://github.com/pytorch/pytorch/issues/176592
