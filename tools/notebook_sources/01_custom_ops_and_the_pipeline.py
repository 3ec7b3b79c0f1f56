# %% [markdown]
# # 01 · Custom ops and what `torch.compile` sees
#
# **What you will learn**
# - how to register a custom operator with `torch.library.custom_op`, and check it with `opcheck`;
# - why the compiler needs a *fake kernel*, and the exact error you get without one — including
#   for an op that returns nothing;
# - the mental model the rest of the lab uses: **Dynamo graph → AOTAutograd graph → Inductor code**,
#   shown on one small model whose custom op you can follow through every stage;
# - how to see those stages in your own project: `TORCH_TRACE` and the `tlparse` report.
#
# **Time:** about 30 minutes. **Before:** 00 · Start here.
#
# Every claim below is asserted by the cell that shows it; the outputs were recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import contextlib
import io

import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb01")  # re-running this notebook starts from a clean namespace

# %% [markdown]
# ## 1. A custom op, by hand
#
# `torch.library.custom_op` turns a Python function into an operator that torch's dispatcher knows
# by a **qualified name**, `namespace::name`. The type hints become the op's *schema*;
# `mutates_args` says which arguments it changes in place (here: none).

# %%
@torch.library.custom_op("nb01::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x * factor


@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)


print(scale._opoverload._schema)
print(scale(torch.ones(2), 3.0))
print(torch.ops.nb01.scale(torch.ones(2), 3.0))  # the same op, called by its name

# %%
assert str(scale._opoverload._schema) == "nb01::scale(Tensor x, float factor) -> Tensor", \
    "the type hints become the op's schema"
assert torch.equal(torch.ops.nb01.scale(torch.ones(2), 3.0), torch.full((2,), 3.0)), \
    "the op, called by its name, scales x"

# %% [markdown]
# The function under `register_fake` is the **fake kernel**. We will see in a moment what it is
# for. First, torch's own checker: `torch.library.opcheck` runs a set of tests on sample inputs and
# raises at the first failure; with `raise_exception=False` it returns each test's result instead:

# %%
torch.library.opcheck(scale, (torch.randn(3), 2.0), raise_exception=False)

# %%
assert set(torch.library.opcheck(scale, (torch.randn(3), 2.0), raise_exception=False).values()) == {"SUCCESS"}, \
    "every opcheck test passes for scale"

# %% [markdown]
# The lab's notebooks use `labkit.checks.opcheck`, the same call made once per test, which keeps torch's
# reason for each failure as a short sentence.

# %% [markdown]
# ## 2. Why the compiler needs a fake kernel
#
# `torch.compile` does not run your model to find out what it does: it *traces* it with
# **fake tensors**, which carry a shape, a dtype and a device but no data. A built-in op comes with a
# rule that computes its output's shape from fake inputs. A `custom_op` is opaque **by design**: torch
# never runs your Python body while tracing — not even when the body is plain torch code that would work
# on fake tensors (as `scale`'s `x * factor` would). The fake kernel is the rule you supply: it answers
# "what would the output look like?" Let's watch it being called:

# %%
seen_by_fake = []


@torch.library.custom_op("nb01::peek", mutates_args=())
def peek(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@peek.register_fake
def _(x):
    seen_by_fake.append(type(x).__name__)
    return torch.empty_like(x)


torch.compile(lambda x: peek(x) + 1, backend="aot_eager")(torch.ones(2))
seen_by_fake

# %%
assert seen_by_fake, "compiling called the fake kernel"
assert set(seen_by_fake) == {"FakeTensor"}, "the fake kernel was only ever called with FakeTensors"
assert len(seen_by_fake) == 3, \
    "the fake kernel runs 3 times: Dynamo once; AOTAutograd twice (collect metadata, then trace)"

# %% [markdown]
# Three calls (observed on torch 2.11.0 to 2.15.0): Dynamo calls the fake kernel once while it records the
# graph; AOTAutograd twice — once to learn what the graph outputs and mutates, once to trace the functional
# graph.

# %% [markdown]
# Now an op without a fake kernel, whose body is plain torch code. Eagerly it works; compiled, tracing
# stops — torch does not fall back to running the body on fake tensors.
# `labkit.compile_and_compare` catches what torch raises and hands it back as data (`report.error`),
# with torch's own message:

# %%
@torch.library.custom_op("nb01::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x * 2                     # would work on fake tensors; torch does not try


report = labkit.compile_and_compare(lambda x: no_fake(x) + 1, torch.ones(2), backend="aot_eager")
print(report.error)

# %%
assert report.eager_error is None, "eager: the op without a fake kernel runs fine"
assert report.error.kind == "missing_fake", "compiled: tracing stops, the op has no fake impl"
assert report.error.message.startswith("There was no fake impl registered for <CustomOpDef(nb01::no_fake)>"), \
    "torch's message names the op that has no fake impl"

# %% [markdown]
# **A surprise:** an op that returns *nothing* and mutates nothing needs a fake kernel too
# (observed on torch 2.13). Ops that return nothing but *do* mutate an argument get one
# automatically — their output shape is known: there is none, and the mutated tensor keeps its shape.
# torch's source (`can_generate_trivial_fake_impl` in `torch/_library/utils.py`) explains the first case:
# "It's suspicious if the op is not mutable but returns nothing, so we return False out of an abundance
# of caution." (These two ops use `labkit.declare`, the lab's short spelling of `custom_op`; `fake=False`
# registers no fake kernel.)

# %%
returns_nothing = labkit.declare(name="nb01::log_only", returns="none", fake=False)
mutates_nothing_returned = labkit.declare(name="nb01::bump", writes=("x",), mutates_args=("x",),
                                          returns="none", fake=False)
pure_none = labkit.compile_and_compare(lambda x: (returns_nothing(x), x + 1)[1], torch.ones(2))
mutating_none = labkit.compile_and_compare(lambda x: (mutates_nothing_returned(x), x + 1)[1], torch.ones(2))
print("pure op returning None, no fake:    ", pure_none.error.kind if pure_none.error else "compiles")
print("mutating op returning None, no fake:", mutating_none.error.kind if mutating_none.error else "compiles")

# %%
assert pure_none.error is not None, "a pure op returning None, without a fake kernel, does not compile"
assert pure_none.error.kind == "missing_fake", "the pure op returning None fails for want of a fake impl"
assert mutating_none.error is None, "a mutating op returning None compiles without a fake kernel"
assert mutating_none.verdict.agree, "the mutating op returning None, compiled, agrees with eager"

# %% [markdown]
# ## 3. One model, three stages
#
# Here is the model the rest of this notebook follows: a linear layer, our `scale` op, a ReLU.

# %%
class TinyBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(scale(self.linear(x), 2.0))


torch.manual_seed(0)
model = TinyBlock().eval().requires_grad_(False)   # inference: one forward graph, no backward
report = labkit.compile_and_compare(model, torch.randn(2, 4), backend="inductor")
print(report.verdict)

# %% [markdown]
# ### Stage 1 — Dynamo: your Python, as a graph
#
# Dynamo runs your Python bytecode and records every tensor operation into an FX graph. It *inlines* the
# module: the graph calls `torch._C._nn.linear` with the layer's weight and bias lifted to graph inputs
# (the long `l_self_modules_linear_parameters_…` names), then our op by its name, then `relu`.

# %%
print(labkit.render.stage_code(report)["dynamo"])

# %% [markdown]
# ### Stage 2 — AOTAutograd: functional ATen ops
#
# AOTAutograd lowers the graph to ATen, torch's core operator set (`linear` becomes a `permute` — the
# transpose of the weight — and an `addmm`), makes it purely functional (no in-place updates — more on that in 02), and
# removes unused code. The custom op stays **one opaque node**: AOTAutograd cannot look inside it.

# %%
print(labkit.render.stage_code(report)["aot"])

# %% [markdown]
# ### Stage 3 — Inductor: generated code
#
# Inductor turns the graph into code: a call to a matrix-multiply library (`extern_kernels.addmm`),
# a call to our op as a *fallback* (it cannot fuse through code it cannot see), and a generated C++
# kernel for the ReLU (`cpp_fused_…`; Triton kernels on a GPU). This is the `call()` function of
# the module Inductor wrote:

# %%
print(labkit.render.stage_code(report)["inductor"])

# %%
dynamo, aot = report.dynamo_graphs[0], report.aot_graphs[0]
assert dynamo.has("nb01::scale"), "the Dynamo graph calls the op"
assert aot.has("nb01::scale"), "the AOTAutograd graph keeps the op, as one node"
dynamo_code = labkit.render.stage_code(report)["dynamo"]
assert "torch._C._nn.linear(" in dynamo_code, "Dynamo inlines the module: its graph calls linear"
assert "parameters_weight" in dynamo_code, "Dynamo lifts the layer's weight to a graph input"
assert any(n.target == "addmm.default" for n in aot.nodes), "AOTAutograd lowers linear to an addmm"
assert any(n.target in ("t.default", "permute.default") for n in aot.nodes), \
    "AOTAutograd transposes the weight (t or permute) for the addmm"
calls = labkit.render.inductor_kernel_calls(report.inductor_code[0])
assert "torch.ops.nb01.scale.default(…)" in calls, "Inductor calls the op as a fallback"
assert any(c.startswith(("cpp_fused_relu", "triton_")) for c in calls), "Inductor generates a kernel for the ReLU"
assert report.verdict.agree, "compiled == eager"
print("Inductor launches:", calls)

# %% [markdown]
# The whole path in one picture; the op's node is yellow at each stage:

# %%
fig = labkit.render.draw_stages(report, "nb01::scale")

# %% [markdown]
# ## Exercise 1: predict where an op disappears
#
# `shape_only` calls `scale` and uses its result — but only the result's **shape**, to size a tensor of
# zeros. Predict which stage is the **first** whose output no longer contains the op: `"dynamo"`,
# `"aot"`, `"inductor"`, or `"none"` if the op survives and runs. Replace the `...` and run.
# (*Think:* where does the compiler get the shape from?)

# %%
first_stage_without_op = ...

# %%
def shape_only(x):
    return x.new_zeros(scale(x, 2.0).shape)

fates = labkit.compile_and_compare(shape_only, torch.ones(3), backend="inductor").fate("nb01::scale")
truth = next((stage for stage in ("dynamo", "aot", "inductor") if fates[stage] is False), "none")
if labkit.exercises.answered(first_stage_without_op):
    labkit.exercises.check(first_stage_without_op == truth, f"it is gone from the {truth} stage on.",
                           "Look at the fate of nb01::scale: labkit.draw_fate(report, 'nb01::scale').")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: the fake kernel gives the shape at compile time, so the op's data is used by nothing. Dynamo
# still records the call; AOTAutograd's dead-code elimination removes it; the kernel never runs.
assert truth == "aot", "AOTAutograd is the first stage without the op"
assert fates == {"dynamo": True, "aot": False, "inductor": False, "ran": False}, \
    "Dynamo records the call; AOTAutograd removes it; Inductor has none; the kernel never runs"
print("solution checked")

# %% [markdown]
# ## Exercise 2: write a fake kernel
#
# `nb01::row_sums` returns the sum of each row: for `x` of shape `(n, m)` the result has shape `(n,)`.
# Complete `my_row_sums_fake` so that it returns an *empty* tensor of the right shape, dtype and
# device (without reading `x`'s data). The check runs `opcheck` and a compile.

# %%
def my_row_sums_fake(x):
    ...  # return a new empty tensor shaped (x.shape[0],), like x in dtype and device

# %%
@torch.library.custom_op("nb01::row_sums", mutates_args=())
def row_sums(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)


def check_row_sums_fake(fake):
    probe = fake(torch.empty(3, 5, device="meta"))
    if not labkit.exercises.answered(... if probe is None else probe):
        return False
    row_sums.register_fake(fake)
    checks = labkit.checks.opcheck(row_sums, (torch.randn(3, 5),))
    compiled = labkit.compile_and_compare(lambda x: row_sums(x) * 2, torch.randn(3, 5))
    return labkit.exercises.check(set(checks.values()) == {"ok"} and compiled.ok and compiled.verdict.agree,
                                  "opcheck passes and the compiled op agrees with eager.",
                                  f"opcheck says {checks}; compile error: {compiled.error}")


answer_ok = check_row_sums_fake(my_row_sums_fake)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: new_empty makes a tensor like x (dtype, device) with the shape you give.
def solution_row_sums_fake(x):
    return x.new_empty(x.shape[0])


with contextlib.redirect_stdout(io.StringIO()):
    assert check_row_sums_fake(solution_row_sums_fake), "the solution's fake kernel passes opcheck and the compile"
print("solution checked")

# %% [markdown]
# ## In your own project: `TORCH_TRACE` and `tlparse`
#
# Everything above came from labkit's recording backend. torch records the same stages itself: run your
# program with the environment variable `TORCH_TRACE` set to a folder, and torch writes a structured log
# of every compile there. `tlparse` (a separate tool: `pip install tlparse`) turns that log into an HTML
# report — for each compile, the Dynamo graph, the AOTAutograd graph, Inductor's code, cache hits and
# misses, graph breaks. torch reads `TORCH_TRACE` when it starts, so the cells below run a small program
# in a new process:

# %%
program = """
import torch

@torch.library.custom_op("traced::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x * factor

@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)

linear = torch.nn.Linear(4, 4).eval().requires_grad_(False)
torch.compile(lambda x: torch.relu(scale(linear(x), 2.0)))(torch.randn(2, 4))
"""

# %%
# NBVAL_IGNORE_OUTPUT
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

work = pathlib.Path(tempfile.mkdtemp(prefix="nb01-trace-"))
(work / "program.py").write_text(program)
env = dict(os.environ, TORCH_TRACE=str(work / "trace"), TORCHINDUCTOR_CACHE_DIR=str(work / "cache"))
subprocess.run([sys.executable, str(work / "program.py")], env=env, check=True, capture_output=True)
print("torch wrote its trace log into", work / "trace")

# %% [markdown]
# `tlparse` turns the log torch wrote into the report (where `tlparse` is missing, on Colab say, the cell
# installs it first):

# %%
# NBVAL_IGNORE_OUTPUT
tlparse = shutil.which("tlparse") or str(pathlib.Path(sys.executable).with_name("tlparse"))
if not pathlib.Path(tlparse).exists():   # e.g. Colab, where labkit comes without its requirements
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "tlparse"], check=True)
    tlparse = shutil.which("tlparse") or str(pathlib.Path(sys.executable).with_name("tlparse"))
(trace_log,) = (work / "trace").glob("*.log")
subprocess.run([tlparse, str(trace_log), "-o", str(work / "report"), "--no-browser", "--overwrite"],
               check=True, capture_output=True)
print("open this in a browser:", work / "report" / "index.html")

# %% [markdown]
# The report's index lists, per compile (`[0/0]` is frame 0, its first compile), the artifacts torch wrote.
# Its machine-readable twin, `compile_directory.json`, lists the same entries:

# %%
import json
import re

directory = json.loads((work / "report" / "compile_directory.json").read_text())
entries = [artifact["name"] for artifact in directory["[0/0]"]["artifacts"]]
print("\n".join(re.sub(r"_[a-z0-9]{40,}_", "_…_", name) for name in entries))   # … a content hash

# %%
def entry(prefix):
    return next(name for name in entries if name.startswith(prefix))

index = (work / "report" / "index.html").read_text()
for prefix in ("dynamo_output_graph", "aot_inference_graph", "inductor_output_code", "fx_graph_cache_miss"):
    assert any(n.startswith(prefix) for n in entries), f"the trace of compile [0/0] has a {prefix} entry"
for prefix in ("dynamo_output_graph", "aot_inference_graph", "inductor_output_code"):
    assert entry(prefix) in index, f"the report's index lists the {prefix} entry"

# %% [markdown]
# Each entry is a file next to the index. The AOTAutograd graph, as torch wrote it — with our op:

# %%
aot_file = next((work / "report").glob(f"*/{entry('aot_inference_graph')}"))
aot_text = aot_file.read_text()
print(aot_text.replace(str(work), "…"))     # the temporary folder's name changes each run

# %%
assert "torch.ops.traced.scale.default" in aot_text, "torch's own AOTAutograd graph calls our op"
assert "torch.ops.aten.addmm.default" in aot_text, "torch's own AOTAutograd graph has the linear's addmm"

# %% [markdown]
# For a quick look without a report, `TORCH_LOGS="graph_code,aot_graphs,output_code"` prints the same
# graphs to stderr (notebooks 00 and 02 use it).
#
# ## What to remember
#
# - `torch.library.custom_op("ns::name", mutates_args=...)` registers an op the compiler treats as one
#   opaque step; `torch.library.opcheck` tests the registration.
# - The compiler traces with **fake tensors** and never runs a custom op's body while tracing. An op that
#   returns a tensor — or returns nothing without mutating anything — needs `register_fake`; without it,
#   compiling fails with "There was no fake impl registered…".
# - Dynamo records your Python as a graph (inlining modules); AOTAutograd lowers it to functional ATen ops
#   and removes dead code; Inductor generates code and calls your op as a fallback. A custom op stays
#   opaque throughout (a mutating one is wrapped in `auto_functionalized_v2`: 02).
# - `TORCH_TRACE` + `tlparse` show every stage of every compile in your own program.
#
# ## Questions
#
# 1. Why does torch need a fake kernel even when the op's body is ordinary torch code?
# 2. Why is the fake kernel called more than once for a single compile?
# 3. Why can Inductor fuse the ReLU into a generated kernel but not into the custom op?
# 4. In Exercise 1, why is an op whose result is used (for its shape) still removed?
#
# ## Further reading
#
# - PyTorch tutorial, [Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)
# - [`torch.library` reference](https://docs.pytorch.org/docs/stable/library.html) (`custom_op`, `register_fake`, `opcheck`)
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - [`tlparse`](https://github.com/pytorch/tlparse) and the
#   [`torch.compile` troubleshooting guide](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
#   (`TORCH_TRACE`, `TORCH_LOGS`)
#
# **Next:** 02 · `mutates_args`: what the declaration changes in those graphs.
