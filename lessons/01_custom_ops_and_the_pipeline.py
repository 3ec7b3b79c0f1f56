# %% [markdown]
# # 01 · Custom ops and the compile pipeline
#
# Compile a function that calls your op, and count the calls: on torch 2.13, torch calls your *fake kernel* five
# times before the compiled code runs your kernel once — and never hands the fake kernel any data. This notebook is about that stand-in, and the
# three stages of `torch.compile` that ask it.
#
# **What you will learn**
# - to register an operator with `torch.library.custom_op`, and check it with `opcheck`;
# - why the compiler needs a fake kernel, and the error you get without one;
# - the lab's mental model: **Dynamo graph → AOTAutograd graph → Inductor code**, on one small model;
# - to see those stages in your own project: `TORCH_TRACE` and `tlparse`.
#
# **Time:** about 35 minutes. **Before:** 00 · Start here.

# %% tags=["nbval-ignore-output"]
import contextlib
import io

import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb01")  # re-running this notebook starts from a clean namespace

# %% [markdown]
# ## 1. A custom op, by hand
#
# `torch.library.custom_op` turns a Python function into an operator that torch's dispatcher knows by a
# **qualified name**, `namespace::name`. The type hints become the op's *schema*; `mutates_args` says which
# arguments it changes in place (here: none).

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

# %% tags=["check"]
#@title Check: the type hints become the schema; the op answers to its name
assert str(scale._opoverload._schema) == "nb01::scale(Tensor x, float factor) -> Tensor", \
    "the type hints become the op's schema"
assert torch.equal(torch.ops.nb01.scale(torch.ones(2), 3.0), torch.full((2,), 3.0)), \
    "the op, called by its name, scales x"

# %% [markdown]
# The function under `register_fake` is the **fake kernel** (section 2). First, torch's own checker:
# `torch.library.opcheck` runs a set of tests on sample inputs; with `raise_exception=False` it returns each
# test's result instead of raising at the first failure.

# %%
torch.library.opcheck(scale, (torch.randn(3), 2.0), raise_exception=False)

# %% tags=["check"]
#@title Check: every opcheck test passes for scale
assert set(torch.library.opcheck(scale, (torch.randn(3), 2.0), raise_exception=False).values()) == {"SUCCESS"}, \
    "every opcheck test passes for scale"

# %% [markdown]
# ## 2. Who calls your op while `torch.compile` works
#
# `torch.compile` does not run your model to learn what it does: it *traces* it with **fake tensors**, which
# carry a shape, a dtype and a device but no data. A built-in op comes with a rule for its output's shape; a
# `custom_op` is opaque, so the fake kernel is that rule: "what would the output look like?". `peek` records
# every call of its kernel and of its fake kernel, with the stage that made it (`labkit.stages.calling_stage`):

# %%
calls = []   # (who, which stage, the tensor it got), in order


@torch.library.custom_op("nb01::peek", mutates_args=())
def peek(x: torch.Tensor) -> torch.Tensor:
    calls.append(("kernel", labkit.stages.calling_stage(x), x))
    return x.clone()


@peek.register_fake
def _(x):
    calls.append(("fake", labkit.stages.calling_stage(x), x))
    return torch.empty_like(x)


peeked = labkit.compile_and_compare(lambda x: peek(x) + 1, torch.ones(2), backend="inductor")
labkit.pictures.calls_by_stage(calls, "nb01::peek")

# %% tags=["check"]
#@title Check: fake calls get fake tensors from Dynamo (1), AOTAutograd (2), Inductor (2); the kernel only real data
stages = [stage for who, stage, x in calls]
assert all(labkit.stages.is_fake_tensor(x) for who, _, x in calls if who == "fake"), \
    "the fake kernel is only ever called with fake tensors"
assert [who for who, _, _ in calls] == ["kernel"] + ["fake"] * 5 + ["kernel"], \
    "five fake calls, then the compiled code runs the kernel once"
assert [who for who, stage, _ in calls if stage == "run"] == ["kernel", "kernel"], \
    "the kernel runs twice, both times with real data: eagerly, then compiled"
assert stages.count("dynamo") == 1, "Dynamo calls the fake kernel once, while it records the graph"
assert stages.count("aot") == 2, "AOTAutograd calls the fake kernel twice (learn the outputs, then trace)"
assert stages.count("inductor") == 2, "Inductor calls the fake kernel twice while it lowers the graph"
assert peeked.verdict.agree, "compiled == eager"

# %% [markdown]
# Dynamo calls the fake kernel while it records the graph; AOTAutograd to learn what the graph outputs, then to
# trace it; Inductor while it writes code. Your kernel runs only when there is data.
#
# ## 3. Without a fake kernel
#
# This op has no fake kernel, and its body would work on fake tensors. Eagerly it runs; compiled, tracing stops
# (`labkit.compile_and_compare` hands back what torch raised as `report.error`):

# %%
ran = []

@torch.library.custom_op("nb01::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    ran.append(labkit.stages.calling_stage(x))
    return x * 2


report = labkit.compile_and_compare(lambda x: no_fake(x) + 1, torch.ones(2), backend="aot_eager")
print(report.error)

# %% tags=["check"]
#@title Check: eager runs; compiled stops for want of a fake kernel, without running the body while tracing
assert report.eager_error is None, "eager: the op without a fake kernel runs fine"
assert report.error.kind == "missing_fake", "compiled: tracing stops, the op has no fake impl"
assert report.error.message.startswith("There was no fake impl registered for <CustomOpDef(nb01::no_fake)>"), \
    "torch's message names the op that has no fake impl"
assert ran == ["run"], "torch did not run the custom_op's body while tracing: only the eager call ran it"

# %% [markdown]
# That holds for `custom_op`. An op defined the low-level way (`torch.library.Library`'s `define` and `impl`) is
# different in a few namespaces torch lists (`aten`, `prims`, `vision`, `torchaudio`, …): there, fake tensors
# run your *real* kernel on zero-filled tensors while tracing. `labkit.ops.library_op` defines such an op, here in
# our namespace and in `vision`:

# %%
def what_the_kernel_saw(namespace):
    seen = []

    def double(x):
        seen.append(x.tolist())          # what the kernel was given
        return x * 2

    op = labkit.ops.library_op(f"{namespace}::nb01_double", double)
    labkit.compile_and_compare(lambda x: op(x) + 1, torch.ones(3), backend="aot_eager")
    return seen


kernel_saw = {namespace: what_the_kernel_saw(namespace) for namespace in ("nb01lib", "vision")}
for namespace, seen in kernel_saw.items():
    print(f"{namespace:8} the kernel saw:", seen)

# %% tags=["check"]
#@title Check: in vision the kernel runs on zeros while tracing; in our namespace it never does
fallback = labkit.stages.fake_fallback_namespaces()
for namespace in ("aten", "prims", "vision", "torchaudio"):
    assert namespace in fallback, f"{namespace} is on torch's fake-tensor fallback list"
assert "nb01lib" not in fallback, "our namespace is not on it"
assert kernel_saw["vision"][0] == kernel_saw["vision"][-1] == [1.0] * 3, "vision: eager and compiled calls get data"
assert len(kernel_saw["vision"]) > 2, "vision: the real kernel also ran while tracing"
assert all(v == [0.0] * 3 for v in kernel_saw["vision"][1:-1]), "vision: while tracing, it got zero-filled tensors"
assert all(v == [1.0] * 3 for v in kernel_saw["nb01lib"]), "nb01lib: the kernel only ever saw the real data"
fullgraph = labkit.compile_and_compare(lambda x: torch.ops.nb01lib.nb01_double(x) + 1, torch.ones(3),
                                       fullgraph=True)
assert fullgraph.error is not None, "nb01lib, fullgraph=True: no fake kernel, no compile"

# %% [markdown]
# Don't rely on it: a kernel that reads its data (a mask, a count) gets the shape wrong from zeros.
#
# **A surprise:** an op that returns *nothing* and mutates nothing needs a fake kernel too. One that returns
# nothing but mutates an argument gets one automatically: no output, and the mutated tensor keeps its shape. (So
# do ops tagged `Tag.inplace` or `Tag.out`, torch ≥ 2.13, notebook 02; one returning an `int` needs yours.)
# (`labkit.declare` is the lab's short spelling of `custom_op`; `fake=False` registers no fake kernel.)

# %%
returns_nothing = labkit.declare(name="nb01::log_only", returns="none", fake=False)
mutates_nothing_returned = labkit.declare(name="nb01::bump", writes=("x",), mutates_args=("x",),
                                          returns="none", fake=False)
pure_none = labkit.compile_and_compare(lambda x: (returns_nothing(x), x + 1)[1], torch.ones(2))
mutating_none = labkit.compile_and_compare(lambda x: (mutates_nothing_returned(x), x + 1)[1], torch.ones(2))
print("pure op returning None, no fake:    ", pure_none.error.kind if pure_none.error else "compiles")
print("mutating op returning None, no fake:", mutating_none.error.kind if mutating_none.error else "compiles")

# %% tags=["check"]
#@title Check: the pure op returning None needs a fake kernel, as does one returning an int; the mutating one, and a
# tagged one, compile without
assert pure_none.error is not None, "a pure op returning None, without a fake kernel, does not compile"
assert pure_none.error.kind == "missing_fake", "the pure op returning None fails for want of a fake impl"
assert mutating_none.error is None, "a mutating op returning None compiles without a fake kernel"
assert mutating_none.verdict.agree, "the mutating op returning None, compiled, agrees with eager"

@torch.library.custom_op("nb01::count_positives", mutates_args=())
def count_positives(x: torch.Tensor) -> int:
    return int((x > 0).sum())

int_error = labkit.compile_and_compare(lambda x: x * count_positives(x), torch.ones(2)).error
assert int_error.kind == "missing_fake", "an op returning an int needs a fake kernel"
if hasattr(torch.Tag, "inplace"):          # torch >= 2.13
    tagged = labkit.declare(name="nb01::bump_tagged", writes=("x",), mutates_args=("x",), returns="input",
                            fake=False, tags=("inplace",))
    assert labkit.compile_and_compare(lambda x: tagged(x) + 1, torch.ones(2)).verdict.agree, \
        "an op tagged Tag.inplace compiles without a fake kernel"

# %% [markdown]
# ## 4. One model, three stages
#
# The model the rest of this notebook follows: a linear layer, our `scale` op, a ReLU.

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

# %% tags=["check"]
#@title Check: compiled TinyBlock agrees with eager
assert report.verdict.agree, "compiled == eager"

# %% [markdown]
# ### Stage 1 — Dynamo: your Python, as a graph
#
# Dynamo runs your Python bytecode and records every tensor operation into an FX graph. It *inlines* the module:
# the graph calls `torch._C._nn.linear` with the layer's weight and bias lifted to graph inputs (the long
# `…_linear_parameters_weight_` names), then our op by its name, then `relu`.

# %%
print(labkit.render.stage_code(report)["dynamo"])

# %% tags=["check"]
#@title Check: Dynamo's graph inlines the module, lifts the weight, and calls the op
dynamo_code = labkit.render.stage_code(report)["dynamo"]
assert report.dynamo_graphs[0].has("nb01::scale"), "the Dynamo graph calls the op"
assert "torch._C._nn.linear(" in dynamo_code, "Dynamo inlines the module: its graph calls linear"
assert "parameters_weight" in dynamo_code, "Dynamo lifts the layer's weight to a graph input"

# %% [markdown]
# ### Stage 2 — AOTAutograd: functional ATen ops
#
# AOTAutograd lowers the graph to ATen, torch's core operator set (`linear` becomes a `permute` — the weight's
# transpose — and an `addmm`), makes it purely functional (no in-place updates: notebook 02), and removes unused
# code. The custom op stays **one opaque node**: AOTAutograd cannot look inside it.

# %%
print(labkit.render.stage_code(report)["aot"])

# %% tags=["check"]
#@title Check: AOTAutograd keeps the op as one node and lowers linear to a transpose and an addmm
aot = report.aot_graphs[0]
assert aot.has("nb01::scale"), "the AOTAutograd graph keeps the op, as one node"
assert any(n.target == "addmm.default" for n in aot.nodes), "AOTAutograd lowers linear to an addmm"
assert any(n.target in ("t.default", "permute.default") for n in aot.nodes), \
    "AOTAutograd transposes the weight (t or permute) for the addmm"

# %% [markdown]
# ### Stage 3 — Inductor: generated code
#
# Inductor turns the graph into code: a call to a matrix-multiply library (`extern_kernels.addmm`), a call to our
# op as a *fallback* (it cannot fuse through code it cannot see), and a generated C++ kernel for the ReLU
# (`cpp_fused_…`; Triton kernels on a GPU). This is the `call()` function of the module Inductor wrote:

# %%
print(labkit.render.stage_code(report)["inductor"])

# %% tags=["check"]
#@title Check: Inductor calls the op as a fallback and generates a kernel for the ReLU
launches = labkit.render.inductor_kernel_calls(report.inductor_code[0])
assert "torch.ops.nb01.scale.default(…)" in launches, "Inductor calls the op as a fallback"
assert any(c.startswith(("cpp_fused_relu", "triton_")) for c in launches), "Inductor generates a kernel for the ReLU"

# %% [markdown]
# The whole path in one picture; the op's node is yellow at each stage:

# %%
labkit.pictures.draw_stages(report, "nb01::scale")

# %% [markdown]
# ## Exercise 1: predict where an op disappears
#
# `shape_only` uses only the **shape** of `scale`'s result. Which stage is the **first** whose output no longer
# contains the op? Answer `"dynamo"`, `"aot"`, `"inductor"`, or `"none"` if it survives and runs. (*Think:* where
# does the compiler get the shape from?)

# %%
first_stage_without_op = ...   # "dynamo", "aot", "inductor" or "none"

# %% tags=["check"]
#@title The exercise's check (it compiles shape_only and reads where nb01::scale is)
STAGE_WORDS = {"dynamo": ["Dynamo", "dynamo graph"], "aot": ["AOTAutograd", "aot_autograd", "AOT autograd"],
               "inductor": ["Inductor", "inductor code"], "none": ["never", "no stage", "survives"]}
FATES = {}

def check_first_stage(answer, fn):
    where = "edit the first_stage_without_op = ... cell (above the collapsed check), run it, then this cell"
    said = labkit.exercises.answered(answer, where) and \
        labkit.exercises.choice(answer, STAGE_WORDS, "first_stage_without_op")
    if not said:
        return None
    if fn not in FATES:                          # compile once per function, however often you check
        FATES[fn] = labkit.compile_and_compare(fn, torch.ones(3), backend="inductor").fate("nb01::scale")
    fates = FATES[fn]
    first = next((stage for stage in ("dynamo", "aot", "inductor") if fates[stage] is False), "none")
    hint = labkit.language.said("an earlier stage already removed it." if said != "none" and fates[said] is False else
                                "its kernel never runs compiled." if said == "none" else
                                "the {stage} stage's output still has the op.", stage=said)
    return labkit.exercises.check(said == first, labkit.language.said(
        "the {stage} stage is the first without nb01::scale.", stage=said), hint)

# %%
def shape_only(x):
    return x.new_zeros(scale(x, 2.0).shape)

first_stage_ok = check_first_stage(first_stage_without_op, shape_only)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# The fake kernel gives the shape at compile time, so the op's data is used by nothing. Dynamo still records the
# call; AOTAutograd's dead-code elimination removes it; the kernel never runs.
with contextlib.redirect_stdout(io.StringIO()):
    assert check_first_stage("aot", shape_only), "AOTAutograd is the first stage without the op"
    assert check_first_stage(" AOTAutograd", shape_only), "another spelling of the right answer is accepted"
    assert not check_first_stage("dynamo", shape_only), "the wrong answer 'dynamo' is rejected"
    assert check_first_stage("dynamic", shape_only) is None, "a word outside the list gets the list, not a verdict"
assert FATES[shape_only] == {"dynamo": True, "aot": False, "inductor": False, "ran": False}, \
    "Dynamo records the call; AOTAutograd removes it; Inductor has none; the kernel never runs"

# %% [markdown]
# ## Exercise 2: write a fake kernel
#
# `nb01::row_sums` sums each row: for `x` of shape `(n, m)`, a result of shape `(n,)`. Complete `my_row_sums_fake`
# to return an *empty* tensor of that shape, with `x`'s dtype and device. The check tries it on a second dtype and
# on the meta device, then runs `opcheck` and a compile.

# %%
@torch.library.custom_op("nb01::row_sums", mutates_args=())
def row_sums(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)

# %%
def my_row_sums_fake(x):
    ...  # return a new empty tensor shaped (x.shape[0],), like x in dtype and device

# %% tags=["check"]
#@title The exercise's check (fake_problems, then opcheck and a compile)
def check_row_sums_fake(fake):
    try:
        probe = fake(torch.empty(3, 5, device="meta"))
    except Exception:                        # a broken fake: fake_problems below says how
        probe = True
    where = "write the body of my_row_sums_fake (two cells up), run it, then this cell"
    if not labkit.exercises.answered(... if probe is None else probe, where):
        return None
    problems = labkit.exercises.fake_problems(fake, row_sums, torch.randn(3, 5))
    if problems:
        return labkit.exercises.check(False, "", labkit.exercises.joined(problems))
    row_sums.register_fake(fake)
    checks = labkit.checks.opcheck(row_sums, (torch.randn(3, 5),))
    compiled = labkit.compile_and_compare(lambda x: row_sums(x) * 2, torch.randn(3, 5))
    return labkit.exercises.check(set(checks.values()) == {"ok"} and compiled.ok and compiled.verdict.agree,
                                  "opcheck passes and the compiled op agrees with eager.",
                                  labkit.language.said("opcheck says {checks}; compile error: {error}",
                                                       checks=checks, error=compiled.error))

# %%
fake_ok = check_row_sums_fake(my_row_sums_fake)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# new_empty makes a tensor like x (dtype, device) with the shape you give.
def solution_row_sums_fake(x):
    return x.new_empty(x.shape[0])


with contextlib.redirect_stdout(io.StringIO()):
    assert not check_row_sums_fake(lambda x: torch.empty(x.shape[0])), \
        "a fake that ignores x's dtype and device is rejected"
    assert check_row_sums_fake(solution_row_sums_fake), "the solution's fake kernel passes opcheck and the compile"

# %% [markdown]
# ## In your own project: `TORCH_TRACE` and `tlparse`
#
# torch records every stage itself. Set `TORCH_TRACE` to a folder and torch writes a log of every compile there;
# `tlparse` (`pip install tlparse`) turns it into an HTML report: per compile, each stage's graph or code, cache
# hits and misses, graph breaks. In a shell:
#
# ```
# TORCH_TRACE=/tmp/trace python program.py
# tlparse /tmp/trace/*.log -o /tmp/report
# ```
#
# `labkit.logs.torch_trace_report` runs that on a small program, in a new process (torch reads `TORCH_TRACE`
# when it starts):

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

# %% tags=["nbval-ignore-output"]
trace_report = labkit.logs.torch_trace_report(program)     # takes a few seconds: a new process compiles
print("open this in a browser:", trace_report / "index.html")

# %% [markdown]
# The report's index lists, per compile (`[0/0]` is frame 0, its first compile), the artifacts torch wrote. Its
# machine-readable twin, `compile_directory.json`, lists the same entries:

# %%
import json
import re

directory = json.loads((trace_report / "compile_directory.json").read_text())
entries = [artifact["name"] for artifact in directory["[0/0]"]["artifacts"]]
print("\n".join(re.sub(r"_[a-z0-9]{40,}_", "_…_", name) for name in entries))   # … a content hash

# %% tags=["check"]
#@title Check: the trace has the three stages and a cache miss, and the report's index lists them
def entry(prefix):
    return next(name for name in entries if name.startswith(prefix))

index = (trace_report / "index.html").read_text()
for prefix in ("dynamo_output_graph", "aot_inference_graph", "inductor_output_code", "fx_graph_cache_miss"):
    assert any(n.startswith(prefix) for n in entries), f"the trace of compile [0/0] has a {prefix} entry"
for prefix in ("dynamo_output_graph", "aot_inference_graph", "inductor_output_code"):
    assert entry(prefix) in index, f"the report's index lists the {prefix} entry"

# %% [markdown]
# Each entry is a file next to the index. The AOTAutograd graph, as torch wrote it — with our op:

# %%
aot_text = next(trace_report.glob(f"*/{entry('aot_inference_graph')}")).read_text()
print(aot_text.replace(str(trace_report.parent), "…"))     # the temporary folder's name changes each run

# %% tags=["check"]
#@title Check: torch's own AOTAutograd graph calls our op and the linear's addmm
assert "torch.ops.traced.scale.default" in aot_text, "torch's own AOTAutograd graph calls our op"
assert "torch.ops.aten.addmm.default" in aot_text, "torch's own AOTAutograd graph has the linear's addmm"

# %% [markdown]
# For a quick look, `TORCH_LOGS="graph_code,aot_graphs,output_code"` prints the same graphs to stderr.
#
# ## What to remember
#
# - `torch.library.custom_op("ns::name", mutates_args=...)` registers an opaque op; `opcheck` tests it.
# - The compiler traces with **fake tensors** and asks your fake kernel, at every stage. An op that returns a
#   tensor or an `int`, or returns nothing and mutates nothing, needs `register_fake`; torch supplies one for an op
#   that declares a write and returns nothing, or (torch ≥ 2.13) is tagged `Tag.inplace` or `Tag.out`.
# - Dynamo records your Python as a graph; AOTAutograd lowers it to functional ATen ops and removes dead code;
#   Inductor generates code and calls your op as a fallback.
# - `TORCH_TRACE` + `tlparse` show every stage of every compile in your own program.
#
# ## Questions
#
# 1. Why does torch need a fake kernel even when the op's body is ordinary torch code?
# 2. Why is the fake kernel called more than once for a single compile?
# 3. Why can Inductor fuse the ReLU into a generated kernel but not into the custom op?
# 4. In Exercise 1, why is an op whose result is used (for its shape) still removed?
# 5. Why would running a kernel on zero-filled tensors give a wrong fake result for an op like `x[x > 0]`?
#
# ## Further reading
#
# - PyTorch tutorial, [Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)
# - [`torch.library` reference](https://docs.pytorch.org/docs/stable/library.html) (`custom_op`, `register_fake`, `opcheck`)
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - [`tlparse`](https://github.com/pytorch/tlparse) and the
#   [`torch.compile` troubleshooting guide](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
#   (`TORCH_TRACE`, `TORCH_LOGS`)
# - Notebook 12 · Which wrapper: one kernel behind a plain function, `torch.autograd.Function`, `custom_op`,
#   `Library.define` and a `ctypes` call, through compile, training and export
#
# **Next:** 02 · `mutates_args`: what the declaration changes in those graphs.
