# %% [markdown]
# # 04 · Dead-code elimination and dynamic shapes
#
# **What you will learn**
# - *where* `torch.compile` removes unused ops: not in Dynamo, in AOTAutograd, and in Inductor's scheduler;
# - *what* gets removed — including ops with a Python side effect, ops that write to a dead temporary, and
#   random ops — and *what survives*: declared mutations of inputs, `has_side_effect`, effects;
# - static vs dynamic shapes (`dynamic=False/True/None`, `mark_dynamic`), recompiles and symbolic sizes —
#   and that none of it changes the removal decision;
# - that `fullgraph=False` does **not** make custom ops run eagerly.
#
# **Time:** about 30 minutes. **Before:** 01 and 02. Runs on the CPU; on a GPU the same cells also show
# Triton code. Outputs recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb04")
device = labkit.env.pick_device()
result_unused = labkit.scenarios.discards_result   # f(x): op(x); return x + 1 — op's result unused

# %% [markdown]
# ## 1. Where ops get removed
#
# An op whose result nobody uses is *dead code*. Follow one through the stages with each backend:

# %%
pure = labkit.declare(name="nb04::pure", returns="fresh")
reports = {backend: labkit.compile_and_compare(result_unused(pure), torch.ones(4, device=device), backend=backend)
           for backend in ("eager", "aot_eager", "inductor")}
fates = {backend: report.fate("nb04::pure") for backend, report in reports.items()}
for backend, fate in fates.items():
    print(f"{backend:<10} {fate}")

# %%
assert fates["eager"] == {"dynamo": True, "aot": None, "inductor": None, "ran": True}   # Dynamo keeps every call
assert fates["aot_eager"]["aot"] is False and fates["aot_eager"]["ran"] is False        # AOTAutograd removes it
assert fates["inductor"]["inductor"] is False and fates["inductor"]["ran"] is False

# %% [markdown]
# The same, as a picture: one row per backend, the op's fate at each stage.

# %%
import matplotlib.pyplot as plt

fig, axes = plt.subplots(3, 1, figsize=(7.5, 4.8))
for ax, report in zip(axes, reports.values()):
    labkit.draw_fate(report, "nb04::pure", ax=ax)
fig.tight_layout()

# %% [markdown]
# - **Dynamo** records every call: with `backend="eager"` (Dynamo only) the op runs.
# - **AOTAutograd** runs dead-code elimination on its graph: the op is gone before Inductor sees it.
# - **Inductor** has two more places: an FX pass gated by `torch._inductor.config.dce` (off by default) and
#   its scheduler, gated by `use_dce` (on), which drops buffers nobody reads unless the node has side effects.

# %%
import torch._inductor.config as inductor_config
print("inductor config: dce =", inductor_config.dce, "| use_dce =", inductor_config.use_dce)
assert inductor_config.dce is False and inductor_config.use_dce is True

# %% [markdown]
# ## 2. What is removed, what survives
#
# torch decides with one question, asked of the op: *is it impure?* An op is impure if its schema is
# mutable, if it is registered as having side effects, or if it carries an *effect* — not because its
# Python body does something. `op.dce_safe` reports torch's own answer; the table compiles each case:

# %%
CASES = {
    "pure, returns an unused tensor":     dict(returns="fresh"),
    "-> None, logs in Python":            dict(returns="none"),
    "tagged nondeterministic_seeded":     dict(returns="fresh", tags=("nondeterministic_seeded",)),
    "declares a mutation of its input":   dict(writes=("x",), mutates_args=("x",), returns="none"),
    "torch.fx.node.has_side_effect":      dict(returns="none", effect="side_effect"),
    "effect registered (ORDERED)":        dict(returns="none", effect="ordered"),
}
survives, removable = {}, {}
for case, fields in CASES.items():
    op = labkit.declare(name="nb04::case", **fields)
    removable[case] = op.dce_safe
    report = labkit.compile_and_compare(result_unused(op), torch.ones(4, device=device), backend="inductor")
    survives[case] = report.fate("nb04::case")["ran"]
    print(f"{case:<36} removable per torch: {str(op.dce_safe):<6} kernel ran compiled: {survives[case]}")

# %%
assert survives == {
    "pure, returns an unused tensor": False, "-> None, logs in Python": False,
    "tagged nondeterministic_seeded": False, "declares a mutation of its input": True,
    "torch.fx.node.has_side_effect": True, "effect registered (ORDERED)": True}
# the seeded op: impure by torch's default check, yet removed during compilation
assert removable["tagged nondeterministic_seeded"] is False and not survives["tagged nondeterministic_seeded"]

# %% [markdown]
# Three surprises, each checked above:
#
# - **A Python side effect does not count.** The `-> None` op's kernel increments labkit's call counter — a
#   real side effect — yet it is removed. torch cannot see inside Python.
# - **Random ops are removed too** when their result is unused: during compilation, dead-code elimination
#   treats `nondeterministic_seeded` ops as removable (`torch._inductor.config.fallback_random` is off).
# - **Effects** are the supported way to say "this op does something outside its tensors" (I/O, logging,
#   communication). An effectful op is threaded through the graph with a token, in a `with_effects` node:

# %%
effectful = labkit.declare(name="nb04::effectful", returns="none", effect="ordered")
effect_report = labkit.compile_and_compare(result_unused(effectful), torch.ones(4), backend="aot_eager")
print(labkit.render.stage_code(effect_report)["aot"])
assert effect_report.aot_graphs[0].calls("nb04::effectful")[0].wrapper == "with_effects"

# %% [markdown]
# `torch.fx.node.has_side_effect(op)` also keeps it, but torch's source asks new operators to use the effects
# system instead. And a declared mutation does **not** pin an op by itself: it keeps the op because the
# *mutation* is observable. Write into a temporary nobody reads, and the call is dead code again:

# %%
fill = labkit.declare(name="nb04::fill", args=("x", "buf"), writes=("buf",), mutates_args=("buf",), returns="none")

def fills_a_dead_temporary(x):
    buf = torch.empty_like(x)
    fill(x, buf)
    return x + 1

dead = labkit.compile_and_compare(fills_a_dead_temporary, torch.ones(4, device=device), backend="inductor")
print(labkit.render.fate_line(dead, "nb04::fill"))
assert dead.fate("nb04::fill")["ran"] is False and fill.dce_safe is False

# %% [markdown]
# ## 3. Static and dynamic shapes
#
# `torch.compile` specialises a graph to the shapes it saw, and recompiles when they change — unless it
# compiles with *symbolic* sizes:
#
# - `dynamic=False` — always static: one graph per new shape;
# - `dynamic=True` — symbolic from the start: one graph;
# - `dynamic=None` (the default) — static first; when a size changes, recompile once with that size symbolic.

# %%
shapes = [(torch.ones(n, device=device),) for n in (4, 6, 8)]
graphs = {mode: labkit.compile_and_compare(result_unused(pure), calls=shapes, backend="aot_eager",
                                           dynamic=mode)
          for mode in (False, True, None)}
for mode, report in graphs.items():
    sizes = [g.input_shapes[-1] for g in report.dynamo_graphs]
    print(f"dynamic={str(mode):<5} graphs per call {report.graphs_per_call}  built for sizes {sizes}")

# %%
assert graphs[False].graphs_per_call == [1, 1, 1]
assert graphs[True].graphs_per_call == [1, 0, 0]
assert graphs[None].graphs_per_call == [1, 1, 0] and graphs[None].recompiles == 1
assert graphs[None].dynamo_graphs[1].input_shapes[-1].startswith("[s")   # a symbolic size, e.g. [s77]

# %% [markdown]
# `torch._dynamo.mark_dynamic(x, 0)` asks for a symbolic dimension 0 on the *first* compile, without
# `dynamic=True` for everything:

# %%
first = torch.ones(4, device=device)
torch._dynamo.mark_dynamic(first, 0)
marked = labkit.compile_and_compare(result_unused(pure), calls=[(first,), (torch.ones(6, device=device),)],
                                    backend="aot_eager", dynamic=None)
print(marked.graphs_per_call, marked.dynamo_graphs[0].input_shapes)
assert marked.graphs_per_call == [1, 0] and marked.dynamo_graphs[0].input_shapes[-1].startswith("[s")

# %% [markdown]
# ### The removal decision does not depend on shapes
#
# Nothing in torch's impurity check or Inductor's scheduler reads sizes. Measured: every case of section 2,
# under every dynamic mode, on three shapes:

# %%
by_mode = {}
for mode in (False, True, None):
    for case, fields in CASES.items():
        op = labkit.declare(name="nb04::case", **fields)
        report = labkit.compile_and_compare(result_unused(op), calls=shapes, backend="inductor", dynamic=mode)
        by_mode[(mode, case)] = report.fate("nb04::case")["ran"]
print({mode: sum(by_mode[(mode, c)] for c in CASES) for mode in (False, True, None)}, "ops kept per mode")

# %%
assert all(by_mode[(mode, case)] == survives[case] for mode in (False, True, None) for case in CASES)

# %% [markdown]
# ### A disabled CI test, rebuilt
#
# A widely shared post cites a disabled PyTorch CI test, `test_custom_op_dce_dynamic_shapes_cuda`. We could not
# find that test in PyTorch's sources or issues; here is its scenario as a cell that asserts: under dynamic
# shapes, an unused pure custom op is removed and a side-effecting one kept — on CUDA (Triton code) when a GPU is
# present, on the CPU otherwise.

# %%
outcome = {}
for declaration in ("pure, result unused", "has_side_effect"):
    op, report = labkit.widgets.dce_experiment(declaration, True, (4, 6, 8), device=device.type, namespace="nb04ci")
    outcome[declaration] = report.fate(op.name)["ran"]
    assert report.graphs_per_call == [1, 0, 0] and report.verdict.agree
kernel_kind = "Triton" if any("triton" in c for c in report.inductor_code) else "C++"
print(f"device={device.type}: {outcome}; generated kernels: {kernel_kind}")
assert outcome == {"pure, result unused": False, "has_side_effect": True}

# %% [markdown]
# ## 4. Myth check: "`fullgraph=False` makes custom ops run eagerly"
#
# `fullgraph` only decides whether a graph break is an error. With `fullgraph=False` and a real graph break
# (a `print`) right after an unused op, Dynamo makes two graphs — and the op is still traced and removed:

# %%
def with_a_graph_break(x):
    pure(x)
    print("(a print is a graph break)")
    return x + 1

myth = labkit.compile_and_compare(with_a_graph_break, torch.ones(4, device=device), backend="inductor",
                                  fullgraph=False)
print("graphs:", myth.graphs_per_call, "| kernel calls compiled:", myth.compiled_calls["nb04::pure"])
assert myth.graphs_per_call == [2] and myth.compiled_calls["nb04::pure"] == 0

# %% [markdown]
# ## 5. The dynamic-mode widget
#
# Flip the dynamic mode, the op's declaration, the shape sequence and (with a GPU) the device. The view shows
# the real kernel calls, the op's fate at each stage, the generated code, the recompile count and the sizes each
# graph was built for. States you have seen come back instantly.

# %%
dynamic_lab = labkit.widgets.DynamicLab(namespace="nb04w")
dynamic_lab

# %%
dynamic_lab.set(dynamic="False", shapes="4 → 6 → 4")
print(dynamic_lab.report.graphs_per_call, "recompiles:", dynamic_lab.report.recompiles)
assert dynamic_lab.report.graphs_per_call == [1, 1, 0]

# %% [markdown]
# ## Exercise 1: count the compiles
#
# With `dynamic=None` and the shape sequence `4 → 6 → 4`, how many graphs does Dynamo compile in total?

# %%
my_graph_count = ...

# %%
dynamic_lab.set(dynamic="None", shapes="4 → 6 → 4")
truth_graphs = dynamic_lab.report.graph_count
if labkit.exercises.answered(my_graph_count):
    labkit.exercises.check(my_graph_count == truth_graphs, f"{truth_graphs} graphs.",
                           "The second shape triggers a dynamic recompile; does the third need another?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: [4] static, then [s0] symbolic — which also covers the final [4].
assert truth_graphs == 2
assert labkit.exercises.check(dynamic_lab.report.graphs_per_call == [1, 1, 0], "my_graph_count = 2", "")

# %% [markdown]
# ## Exercise 2: keep the logger alive
#
# `nb04::log_stats` returns nothing and writes statistics to a log — a side effect torch cannot see. Choose the
# `effect` (`None`, `"side_effect"` or `"ordered"`) that keeps it running under `torch.compile` **the way torch
# recommends for new operators**.

# %%
my_effect = ...

# %%
if labkit.exercises.answered(my_effect):
    try:
        logger = labkit.declare(name="nb04::log_stats", returns="none", effect=my_effect)
        ran = labkit.compile_and_compare(result_unused(logger), torch.ones(4)).fate("nb04::log_stats")["ran"]
        labkit.exercises.check(ran and my_effect == "ordered", "kept, through the effects system.",
                               "kept, but torch asks new ops to use effects, not has_side_effect." if ran
                               else "the logger was removed: torch saw no reason to keep it.")
    except labkit.LabOpError as problem:
        labkit.exercises.check(False, "", str(problem))

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: an ORDERED effect (CustomOpDef.register_effect on torch 2.13; labkit's effect="ordered").
logger = labkit.declare(name="nb04::log_stats", returns="none", effect="ordered")
assert labkit.exercises.check(labkit.compile_and_compare(result_unused(logger), torch.ones(4))
                              .fate("nb04::log_stats")["ran"], 'my_effect = "ordered"', "")

# %% [markdown]
# ## What to remember
#
# - Dynamo keeps every call; **AOTAutograd** removes unused ops, and Inductor's scheduler removes what has no side
#   effects. `fullgraph=False` changes none of this.
# - torch keeps an op only if it is *impure*: a mutable schema whose write is observable, `has_side_effect`, or an
#   **effect**. Python side effects, writes to dead temporaries and random ops with unused results are removed.
# - `dynamic=False/True/None` and `mark_dynamic` decide how often you compile and whether sizes are symbolic —
#   not whether an op is removed.
#
# **Next:** 05 · Field guide.
