# %% [markdown]
# # 05 · Dead-code elimination and dynamic shapes
#
# Your op logs a metric and returns nothing. You compile the model, and the log goes quiet: the compiler decided
# the call was dead code. Another op, unused too, keeps running. This notebook shows why, node by node.
#
# **What you will learn**
# - *where* `torch.compile` removes unused ops, and the question it asks of each **graph node**;
# - what keeps an op alive (a write into an input, an effect, `has_side_effect`) and what does not;
# - static vs dynamic shapes, and when torch recompiles;
# - why an unused op with a data-dependent output size runs eagerly under `fullgraph=False` (default settings) and
#   is **kept** under
#   `fullgraph=True`;
# - torch's own tools for it: `TORCH_LOGS` and `torch._dynamo.explain`.
#
# **Time:** about 40 minutes. **Before:** 00–02. Runs on the CPU; outputs recorded on torch 2.13 (CPU). Without
# a GPU, section 4's GPU cell shows what it printed on one, labelled. Other releases: `docs/torch-versions.md`.

# %% tags=["nbval-ignore-output"]
import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb05")
device = labkit.env.pick_device()
result_unused = labkit.experiments.discards_result   # f(x): op(x); return x + 1 — op's result unused

# %% [markdown]
# ## 1. Where ops get removed
#
# An op whose result nobody uses is *dead code*. Follow one through the stages with each backend
# (`labkit.declare` writes a `@torch.library.custom_op` with a fake kernel; `compile_and_compare` runs it eagerly
# and compiled and counts real kernel calls):

# %%
pure = labkit.declare(name="nb05::pure", returns="fresh")
reports = {backend: labkit.compile_and_compare(result_unused(pure), torch.ones(4, device=device), backend=backend)
           for backend in ("eager", "aot_eager", "inductor")}
fates = {backend: report.fate("nb05::pure") for backend, report in reports.items()}
print(*(f"{backend:<10} {fate}" for backend, fate in fates.items()), sep="\n")

# %% tags=["check"]
#@title Check: Dynamo keeps the call; AOTAutograd removes it before Inductor sees it
assert fates["eager"] == {"dynamo": True, "aot": None, "inductor": None, "ran": True}, \
    "eager: Dynamo keeps every call, and the op runs"
assert fates["aot_eager"]["aot"] is False, "aot_eager: AOTAutograd removes the op"
assert fates["aot_eager"]["ran"] is False, "aot_eager: the op's kernel does not run"
assert fates["inductor"]["inductor"] is False, "inductor: the op is not in Inductor's graph"
assert fates["inductor"]["ran"] is False, "inductor: the op's kernel does not run"
import torch._inductor.config as inductor_config
assert inductor_config.dce is False, "Inductor's FX dead-code pass is off by default"
assert inductor_config.use_dce is True, "Inductor's scheduler dead-code pass is on by default"

# %% [markdown]
# `True`: present at that stage; `False`: gone; `None`: no such stage. **Dynamo** records every call.
# **AOTAutograd** runs dead-code elimination (DCE) on its graph, so the op is gone before **Inductor** sees it.
# (Inductor's own passes — `torch._inductor.config.dce`, off by default, and `use_dce`, on — come too late here.)
#
# ## 2. The question torch asks — of each graph node
#
# DCE walks the graph backwards and erases every node that has **no user**, unless the node is **impure**
# (`node.is_impure()`). The question is asked of a *graph node*, and after AOTAutograd your op is not always its
# own node: a mutating op becomes an `auto_functionalized_v2` node, an effectful op a `with_effects` node.
#
# Four ops in plain torch, each counting its calls in `ran`. One writes into its input, one draws random numbers:

# %%
# GPU setup: ran and count
ran = {}
def count(name):
    ran[name] = ran.get(name, 0) + 1

# %%
@torch.library.custom_op("nb05::bump_", mutates_args=("x",))
def bump_(x: torch.Tensor) -> None:
    count("bump_")
    x.add_(1)

bump_.register_fake(lambda x: None)               # a fake kernel: nothing to return

@torch.library.custom_op("nb05::noise", mutates_args=(), tags=(torch.Tag.nondeterministic_seeded,))
def noise(x: torch.Tensor) -> torch.Tensor:
    count("noise")
    return torch.rand_like(x)

_ = noise.register_fake(lambda x: torch.empty_like(x))

# %% [markdown]
# Two more whose only job is a side effect: one registers an ordered *effect*, the other is marked with
# `torch.fx.node.has_side_effect`. Both are private or experimental APIs on torch 2.13 (the check says how), so
# labkit makes the two calls:

# %%
@torch.library.custom_op("nb05::log_stats", mutates_args=())
def log_stats(x: torch.Tensor) -> None:
    count("log_stats")          # imagine: writes x.mean() to a log file

log_stats.register_fake(lambda x: None)
labkit.ops.register_ordered_effect(log_stats)     # log_stats.register_effect(EffectType.ORDERED)

@torch.library.custom_op("nb05::legacy_log", mutates_args=())
def legacy_log(x: torch.Tensor) -> None:
    count("legacy_log")

legacy_log.register_fake(lambda x: None)
labkit.ops.mark_side_effect(legacy_log)           # has_side_effect(torch.ops.nb05.legacy_log.default)

# %% tags=["check"]
#@title Check: effects and has_side_effect are private or experimental APIs
assert "please do not add to this set" in torch.fx.node.has_side_effect.__doc__, \
    "has_side_effect's docstring asks new operators not to use it"
assert "experimental and is *NOT* backward-compatible" in torch.fx.node.has_side_effect.__doc__, \
    "has_side_effect's docstring calls it experimental"
assert torch._library.custom_ops.CustomOpDef.register_effect.__doc__ is None, "register_effect has no docstring"
assert hasattr(torch.library, "_register_effectful_op"), "the function form is torch.library._register_effectful_op"
assert not hasattr(torch.library, "register_effectful_op"), "the function form has no public name"

# %% [markdown]
# Five programs that throw every result away; each returns `y + 1`:

# %%
def mutates_an_input(x, y):
    bump_(x)
    return y + 1

def mutates_a_dead_temporary(x, y):
    scratch = torch.empty_like(x)
    bump_(scratch)
    return y + 1

def random_result_unused(x, y):
    noise(x)
    return y + 1

def effect_registered(x, y):
    log_stats(x)
    return y + 1

def has_side_effect_registered(x, y):
    legacy_log(x)
    return y + 1

# %% [markdown]
# `labkit.logs.dead_code_run` compiles a program through AOTAutograd as Inductor gets it (the write back into a
# mutated input stays in the graph as a `copy_`), calls it once, and returns the forward graph and the nodes DCE
# erased — read from torch's own log, `TORCH_LOGS="+torch.fx.graph"`. The picture shows, per program, each node
# left and why it stayed:

# %%
PROGRAMS = [mutates_an_input, mutates_a_dead_temporary, random_result_unused, effect_registered,
            has_side_effect_registered]
runs, kernel_ran = {}, {}
for program in PROGRAMS:
    ran.clear()
    runs[program.__name__] = labkit.logs.dead_code_run(program, torch.zeros(3), torch.zeros(3))
    kernel_ran[program.__name__] = bool(ran)
print("kernel ran:", kernel_ran)
labkit.pictures.what_keeps_alive(runs)

# %% tags=["check"]
#@title Check: the copy_ into x, the effect's token and has_side_effect keep their op; the rest is erased
assert labkit.logs.inductor_keeps_input_mutations(), "Inductor compiles with keep_inference_input_mutations=True"
seen = {name: dict(kernel_ran=kernel_ran[name], erased=r.erased, nodes=r.nodes, outputs=r.outputs)
        for name, r in runs.items()}
assert seen["mutates_an_input"]["kernel_ran"], "a mutated input: the kernel runs"
assert seen["mutates_an_input"]["nodes"]["auto_functionalized_v2"] is False, \
    "a mutated input: the auto_functionalized_v2 node is not impure"
assert seen["mutates_an_input"]["nodes"]["copy_"] is True, "a mutated input: the write into x is what is impure"
assert not seen["mutates_a_dead_temporary"]["kernel_ran"], "a dead temporary: the kernel does not run"
assert "auto_functionalized_v2" in seen["mutates_a_dead_temporary"]["erased"], \
    "a dead temporary: DCE erased its auto_functionalized_v2 node"
assert not seen["random_result_unused"]["kernel_ran"], "a random op: the kernel does not run"
assert seen["random_result_unused"]["erased"] == ["noise"], "a random op: DCE erased the op's own node"
assert seen["effect_registered"]["kernel_ran"], "an effect: the kernel runs"
assert seen["effect_registered"]["nodes"]["with_effects"] is False, "an effect: the with_effects node is not impure"
assert seen["effect_registered"]["outputs"][0] == "getitem", "an effect: the new token is a graph output"
assert seen["has_side_effect_registered"]["nodes"]["legacy_log"] is True, \
    "has_side_effect: the op's own node is impure"

# %% [markdown]
# Read the picture row by row:
#
# - **A mutated input.** `auto_functionalized_v2` is *not* impure: it maps old values to new ones. The `copy_`
#   writing the new value back into `x` is impure, and uses the node's output.
# - **A dead temporary.** The same node, but nothing copies its result: no user, erased — though the op mutates.
# - **A random op.** During compilation DCE counts `nondeterministic_seeded` ops as impure only when
#   `torch._inductor.config.fallback_random` is on (off by default), so it is erased. The next cell turns it on.
# - **An effect.** `with_effects` is not impure either; it returns a new *token* that the graph returns.
# - **`has_side_effect`.** The op is its own node, and that node answers "impure".

# %%
ran.clear()
with inductor_config.patch(fallback_random=True):
    random_run = labkit.logs.dead_code_run(random_result_unused, torch.zeros(3), torch.zeros(3))
print("fallback_random=True: kernel calls", ran, "| erased:", random_run.erased or "-")

# %% tags=["check"]
#@title Check: with fallback_random, the random op is kept and runs
assert ran == {"noise": 1}, "fallback_random=True: the random op's kernel runs"
assert "noise" not in random_run.erased, "fallback_random=True: DCE does not erase the random op"

# %% [markdown]
# `has_side_effect` marks one overload *object*, not the op's name (labkit's docstring says why that matters on a
# re-run). After a garbage collection, the op is still kept:

# %%
import gc
gc.collect()
after_gc = labkit.logs.dead_code_run(has_side_effect_registered, torch.zeros(3), torch.zeros(3)).nodes
print("after gc.collect():", after_gc)

# %% tags=["check"]
#@title Check: after a collection, legacy_log's node is still impure
assert after_gc.get("legacy_log") is True, "after gc.collect(), legacy_log's node is still impure: the op is kept"

# %% [markdown]
# A side effect in the op's *Python body* counts for nothing: a custom op is opaque to the compiler. labkit's
# `-> None` op below increments a call counter — a real side effect — and is removed all the same:

# %%
hidden = labkit.declare(name="nb05::hidden", returns="none")
hidden_fate = labkit.compile_and_compare(result_unused(hidden), torch.ones(4, device=device),
                                         backend="inductor").fate("nb05::hidden")
print(hidden_fate)

# %% tags=["check"]
#@title Check: a Python side effect does not keep the op
assert hidden_fate["ran"] is False, "a side effect in the op's Python body does not keep the op"

# %% [markdown]
# ## 3. Static and dynamic shapes
#
# `torch.compile` specialises a graph to the shapes it saw, and recompiles when they change — unless it uses
# *symbolic* sizes. `dynamic=False`: one graph per new shape; `dynamic=True`: symbolic from the start (a size of 0
# or 1 still gets a graph of its own);
# `dynamic=None` (the default): static first, then, when a size changes, one recompile with that size symbolic.

# %%
shapes = [(torch.ones(n, device=device),) for n in (4, 6, 8)]
graphs = {mode: labkit.compile_and_compare(result_unused(pure), calls=shapes, backend="aot_eager",
                                           dynamic=mode)
          for mode in (False, True, None)}
for mode, r in graphs.items():
    print(f"dynamic={mode!s:<5} graphs per call", r.graphs_per_call, [g.input_shapes[-1] for g in r.dynamo_graphs])

# %% tags=["check"]
#@title Check: graphs per call under each dynamic mode; the unused op removed under all three
assert graphs[False].graphs_per_call == [1, 1, 1], "dynamic=False: one graph per new shape"
assert graphs[True].graphs_per_call == [1, 0, 0], "dynamic=True: one graph for the three sizes"
assert graphs[None].graphs_per_call == [1, 1, 0], "dynamic=None: static first, then one symbolic graph"
assert graphs[None].recompiles == 1, "dynamic=None: one recompile"
assert graphs[None].dynamo_graphs[1].input_shapes[-1].startswith("[s"), \
    "dynamic=None: the second graph's size is symbolic"
assert not any(report.fate("nb05::pure")["ran"] for report in graphs.values()), \
    "the unused op is removed under every mode"
small = labkit.compile_and_compare(result_unused(pure), calls=[(torch.ones(n, device=device),) for n in (1, 2, 3, 0)],
                                   backend="aot_eager", dynamic=True)
assert small.graphs_per_call == [1, 1, 0, 1], "dynamic=True: sizes 1 and 0 are specialised, each its own graph"

# %% [markdown]
# A symbolic size prints as `s` and a number, e.g. `[s77]`: a name torch picks, not a value. (`mark_dynamic`,
# `mark_unbacked`, `recompile_limit`: notebook 07.)
#
# **Where this lab began.** One of the two reports it grew from is a GPU test in PyTorch's CI, listed as disabled:
# `DISABLED test_custom_op_dce_dynamic_shapes_cuda (__main__.DynamicShapesCodegenGPUTests)`. Its name says what it
# is about: dead-code elimination of a custom op under dynamic shapes, with Inductor, on CUDA. We could not find its
# source, or why it was disabled, in any public PyTorch code, issue or pull request we could search, so we cannot say
# what it asserted. The behaviour its name stands for runs here, with Inductor on the CPU: compiled with
# `dynamic=True`, the unused op is gone from the generated code and its kernel never runs. (§4's GPU cell: what such
# ops did on an H200.)

# %%
cpu_shapes = [(torch.ones(n),) for n in (4, 6, 8)]              # on the CPU, whatever device this notebook uses
symbolic = labkit.compile_and_compare(result_unused(pure), calls=cpu_shapes, backend="inductor", dynamic=True)
print(symbolic.graphs_per_call, symbolic.fate("nb05::pure"))

# %% tags=["check"]
#@title Check: Inductor, dynamic=True, three sizes: one symbolic graph, the unused op removed, its kernel never run
assert symbolic.graphs_per_call == [1, 0, 0], "dynamic=True: one graph for the three sizes"
assert symbolic.dynamo_graphs[0].input_shapes[-1].startswith("[s"), "its size is symbolic"
assert symbolic.fate("nb05::pure") == {"dynamo": True, "aot": False, "inductor": False, "ran": False}, \
    "traced by Dynamo, removed before Inductor's code: the kernel never ran"
assert symbolic.compiled_calls["nb05::pure"] == 0 < symbolic.eager_calls["nb05::pure"], "eager ran it; compiled never"

# %% [markdown]
# ## 4. Data-dependent output sizes: when `fullgraph` changes everything
#
# Most fake kernels *follow the input shapes*. Some ops cannot: `nonzero`, a filter, MoE routing — the output size
# depends on the **data**. Their fake kernel asks for a fresh, unknown (*unbacked*) size:

# %%
# GPU setup: positives
# needs: ran and count
@torch.library.custom_op("nb05::positives", mutates_args=())
def positives(x: torch.Tensor) -> torch.Tensor:
    count("positives")
    return x[x > 0].clone()

@positives.register_fake
def _(x):
    size = torch.library.get_ctx().new_dynamic_size()     # how many are positive: unknown until it runs
    return x.new_empty(size)

def sums_positives(x):
    return positives(x).sum() + x.sum()

# %% [markdown]
# `fullgraph=True` also turns on `torch._dynamo.config.capture_dynamic_output_shape_ops` (the `torch.compile`
# docstring says so). Without it, Dynamo cannot put such an op in a graph: it **breaks the graph** and the kernel
# runs eagerly. `labkit.logs.dynamo_graph_calls` lists the calls in each graph Dynamo hands the backend:

# %%
x = torch.tensor([1.0, -2.0, 3.0, -4.0])
capture = {}
for setting, options in {"fullgraph=False": {}, "fullgraph=True": {"fullgraph": True}}.items():
    ran.clear()
    capture[setting] = labkit.logs.dynamo_graph_calls(sums_positives, x, **options), ran.get("positives", 0)
with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
    ran.clear()
    capture["fullgraph=False + capture flag"] = labkit.logs.dynamo_graph_calls(sums_positives, x), ran["positives"]
for setting, (graph_list, kernel_calls) in capture.items():
    print(f"{setting:<31} kernel calls: {kernel_calls}  graphs: {graph_list}")

# %% tags=["check"]
#@title Check: a graph break without the flag; one graph with _assert_scalar with it
assert "capture_dynamic_output_shape_ops" in torch.compile.__doc__, "torch.compile's docstring names the flag"
graph_list, kernel_calls = capture["fullgraph=False"]
assert kernel_calls == 1, "fullgraph=False: the kernel runs once"
assert not any("nb05.positives" in t for g in graph_list for t in g), "fullgraph=False: in no graph: it ran eagerly"
for setting in ("fullgraph=True", "fullgraph=False + capture flag"):
    graph_list, kernel_calls = capture[setting]
    assert len(graph_list) == 1, f"{setting}: one graph, no break"
    assert "nb05.positives.default" in graph_list[0], f"{setting}: the op is captured in the graph"
    assert "aten._assert_scalar.default" in graph_list[0], f"{setting}: the graph checks the size with _assert_scalar"

# %% [markdown]
# Captured, the op brings company: `_assert_scalar` checks at run time what torch assumed about the unbacked size
# (`>= 0`), so it is impure. Now throw the result away, next to a shape-following op whose result is unused too:

# %%
# GPU setup: double and discards_both
# needs: ran and count; positives
@torch.library.custom_op("nb05::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    count("double")
    return x * 2

double.register_fake(lambda x: torch.empty_like(x))

def discards_both(x, y):
    positives(x)
    double(x)
    return y + 1

# %%
dd_runs, dd_calls = {}, {}
for fullgraph in (True, False):
    ran.clear()
    dd_runs[f"fullgraph={fullgraph}"] = labkit.logs.dead_code_run(discards_both, x, torch.zeros(2), fullgraph=fullgraph)
    dd_calls[fullgraph] = dict(ran)
    print(f"fullgraph={fullgraph!s:<5} kernel calls {dict(ran)}")
labkit.pictures.what_keeps_alive(dd_runs)

# %% tags=["check"]
#@title Check: under fullgraph=True the unused positives is kept and runs; double is removed either way
dd = {fg: dict(calls=dd_calls[fg], erased=r.erased, impure=r.targets(impure_only=True), kept=r.targets())
      for fg, r in zip((True, False), dd_runs.values())}
assert dd[True]["calls"] == {"positives": 1}, "fullgraph=True: unused, yet the kernel ran compiled"
assert "nb05.positives.default" in dd[True]["kept"], "fullgraph=True: the op is kept in the graph"
assert "aten._assert_scalar.default" in dd[True]["impure"], "fullgraph=True: _assert_scalar is impure"
assert "double" in dd[True]["erased"], "fullgraph=True: the shape-following op is removed"
assert dd[False]["calls"] == {"positives": 1}, "fullgraph=False: the kernel runs once"
assert "nb05.positives.default" not in dd[False]["kept"], "fullgraph=False: the op is in no graph: it ran eagerly"
assert "double" in dd[False]["erased"], "fullgraph=False: the shape-following op is removed"

# %% [markdown]
# Does any of it change on a GPU, where Inductor writes Triton code? The GPU cell counts real kernel calls for both
# ops on CUDA under each `fullgraph` and `dynamic` setting (without a GPU, what it printed on one):

# %%
# GPU setup: 05's GPU flag
import importlib.util

GPU = torch.cuda.is_available() and importlib.util.find_spec("triton") is not None   # Inductor's GPU code needs Triton
print("CUDA and Triton here:", GPU)

# %%
# GPU cell: the same unused ops on CUDA, compiled by Inductor, under every dynamic mode
# needs: 05's GPU flag; double and discards_both
if not GPU:
    labkit.show_gpu_recording()
else:
    x_cuda, y_cuda = torch.tensor([1.0, -2.0, 3.0, -4.0], device="cuda"), torch.zeros(2, device="cuda")
    on_cuda = {}
    for fullgraph in (True, False):
        for dynamic in (False, True, None):
            torch.compiler.reset()
            ran.clear()
            out = torch.compile(discards_both, fullgraph=fullgraph, dynamic=dynamic)(x_cuda, y_cuda)
            on_cuda[fullgraph, dynamic] = dict(ran)
            print(f"fullgraph={fullgraph!s:<5} dynamic={dynamic!s:<5} kernel calls {dict(ran)}")

# %% tags=["check"]
#@title Check (on a GPU): every setting runs positives once and removes double
if GPU:
    assert out.device.type == "cuda", "the result is on the GPU"
    assert out.tolist() == [1.0, 1.0], "the result is right"
    assert all(kernel_calls == {"positives": 1} for kernel_calls in on_cuda.values()), \
        "every setting: positives runs once, double is removed"

# %% [markdown]
# So on torch 2.13, for an unused op:
#
# | | shape-following fake | data-dependent fake (`new_dynamic_size`) |
# |---|---|---|
# | `fullgraph=False` | traced, removed | graph break: **runs eagerly** |
# | `fullgraph=True` | traced, **removed** | traced, **kept** (its size feeds `_assert_scalar`) |
#
# DCE *does* depend on shapes — through the unbacked size, not through `dynamic=`: section 3's op was removed
# under every `dynamic` mode, and the GPU recording shows the same kernel counts under all three.
#
# Is it really `_assert_scalar` that keeps the unused `positives` alive? Turn runtime asserts off with
# `torch._dynamo.config.do_not_emit_runtime_asserts = True` (`TORCH_DYNAMO_DO_NOT_EMIT_RUNTIME_ASSERTS=1`): torch
# keeps what it assumes about the size but puts no assert in the graph.

# %%
ran.clear()
with torch._dynamo.config.patch(do_not_emit_runtime_asserts=True):
    no_asserts = labkit.logs.dead_code_run(discards_both, x, torch.zeros(2), fullgraph=True)
print(f"no runtime asserts: kernel calls {ran}; left: {no_asserts.targets()}")

# %% tags=["check"]
#@title Check: without runtime asserts, DCE removes the data-dependent op too
assert hasattr(torch._dynamo.config, "do_not_emit_runtime_asserts"), \
    "this torch has torch._dynamo.config.do_not_emit_runtime_asserts"
assert ran == {}, "no runtime asserts: the unused data-dependent op's kernel never runs"
assert "nb05.positives.default" not in no_asserts.targets(), "no runtime asserts: the op is not in the graph"
assert "positives" in no_asserts.erased, "no runtime asserts: DCE erased the op"
assert "aten._assert_scalar.default" not in no_asserts.targets(), "no runtime asserts: no _assert_scalar in the graph"

# %% [markdown]
# ## 5. The dynamic-mode widget
#
# Flip the dynamic mode, the op's declaration, the shape sequence and (with a GPU) the device: the view shows the
# real kernel calls, the op's fate at each stage, the recompiles and the sizes each graph was built for.

# %%
dynamic_lab = labkit.widgets.DynamicLab(namespace="nb05w")
dynamic_lab

# %%
dynamic_lab.set(dynamic="False", shapes="4 → 6 → 4")
print(dynamic_lab.report.graphs_per_call, "recompiles:", dynamic_lab.report.recompiles)

# %% tags=["check"]
#@title Check: dynamic=False, 4 → 6 → 4 reuses the first graph for the last call
assert dynamic_lab.report.graphs_per_call == [1, 1, 0], \
    "dynamic=False, 4 → 6 → 4: a graph for [4], one for [6], and [4] again reuses the first"

# %% [markdown]
# ## 6. In your own project
#
# **What DCE erased:** `TORCH_LOGS="+torch.fx.graph"` (or `torch._logging.set_logs(modules={"torch.fx.graph":
# logging.INFO})`): each pass logs "The following nodes were dead code eliminated". **Where the graph breaks:**
# `torch._dynamo.explain` compiles once and reports the graphs and each break's reason:

# %%
def prints_between(x):
    y = double(x)
    print("logging something")          # a graph break
    return y + 1

torch.compiler.reset()
explanation = torch._dynamo.explain(prints_between)(torch.ones(3))
print(explanation.graph_count, "graphs,", explanation.graph_break_count, "break:",
      explanation.break_reasons[0].reason.splitlines()[0])

# %% tags=["check"]
#@title Check: explain reports two graphs and one break, caused by the print
assert explanation.graph_count == 2, "explain reports two graphs"
assert explanation.graph_break_count == 1, "explain reports one graph break"
assert "print" in explanation.break_reasons[0].reason, "the break's reason names the print"

# %% [markdown]
# Graph-break and recompile logs, `TORCH_TRACE`/`tlparse`, and what `opcheck` checks for a data-dependent fake are
# in notebook 07, on section 4's op.
#
# ## Exercise 1: count the compiles
#
# With `dynamic=None` and the shape sequence `4 → 6 → 4`, how many graphs does Dynamo compile in total? Answer a
# whole number in `my_graph_count` (e.g. `1`).

# %%
my_graph_count = ...

# %%
dynamic_lab.set(dynamic="None", shapes="4 → 6 → 4")
truth_graphs = dynamic_lab.report.graph_count
if labkit.exercises.answered(my_graph_count, "set my_graph_count in the cell above, run it, then this cell"):
    labkit.exercises.check_number(my_graph_count, truth_graphs, f"{truth_graphs} graphs.",
                                  "the second shape triggers a dynamic recompile; does the third need another?")

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# 2: a static graph for [4], then one with a symbolic size (printed [s…]) that also covers the last [4].
assert truth_graphs == 2, "dynamic=None, 4 → 6 → 4: two graphs in total"
assert dynamic_lab.report.graphs_per_call == [1, 1, 0], "the symbolic graph also covers the last [4]"
assert labkit.exercises.whole_number(3) != truth_graphs, "'one graph per shape change' (3) is rejected"
assert labkit.exercises.whole_number("two") == truth_graphs, "'two' written as a word is accepted"
assert labkit.exercises.whole_number("2 graphs") is None, "an answer that is not a number is refused, not marked wrong"

# %% [markdown]
# ## Exercise 2: predict, then run
#
# For each program, does the kernel of the op it calls run when compiled as stated? Answer `"runs"` or
# `"removed"` for each key (sections 2 and 4; the check compiles all four):
#
# - `"a"`: `mutates_a_dead_temporary`, `fullgraph=True`
# - `"b"`: `discards_both`'s `positives` call, `fullgraph=True`
# - `"c"`: `discards_both`'s `positives` call, `fullgraph=False`
# - `"d"`: `random_result_unused`, `fullgraph=True`, with `fallback_random=True`

# %%
my_predictions = {"a": ..., "b": ..., "c": ..., "d": ...}

# %% tags=["check"]
#@title Check: Exercise 2's grader compiles the four programs (it holds the answers: open it afterwards)
def what_runs():
    calls = {}
    for key, program, args, options in (("a", mutates_a_dead_temporary, (torch.zeros(3),) * 2, {}),
                                        ("b", discards_both, (x, torch.zeros(2)), {"fullgraph": True}),
                                        ("c", discards_both, (x, torch.zeros(2)), {"fullgraph": False}),
                                        ("d", random_result_unused, (torch.zeros(3),) * 2, {})):
        ran.clear()
        with inductor_config.patch(fallback_random=key == "d"):
            labkit.logs.dead_code_run(program, *args, **options)
        calls[key] = "runs" if ran else "removed"
    return calls

ANSWERS = {"runs": ["run", "ran", "kept", "true"], "removed": ["erased", "dead", "false", "eliminated"]}
truth = what_runs()
assert set(truth.values()) <= set(ANSWERS), "each program's kernel either runs or is removed"

# %%
if labkit.exercises.answered(my_predictions, "fill in my_predictions in the cell above, run it, then this cell"):
    labkit.exercises.check_each(my_predictions, truth, ANSWERS,
                               "which graph node would DCE be asked about, and does anything use it?")

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# a removed (auto_functionalized_v2, and no copy_ uses it), b runs (kept by _assert_scalar), c runs (graph break:
# eager), d runs (fallback_random makes seeded ops impure).
assert truth == {"a": "removed", "b": "runs", "c": "runs", "d": "runs"}, \
    "a: removed; b: kept by _assert_scalar; c: eager after a graph break; d: kept by fallback_random"
assert labkit.exercises.wrong_keys(dict.fromkeys("abcd", "removed"), truth, ANSWERS) == ["b", "c", "d"], \
    "'an unused op never runs' is rejected"
assert labkit.exercises.wrong_keys({"a": "Erased", "b": "ran", "c": "Runs ", "d": "kept"}, truth, ANSWERS) == [], \
    "other spellings of the right answers are accepted"
assert labkit.exercises.wrong_keys({"a": "gone", "b": "runs", "c": "runs", "d": "runs"}, truth, ANSWERS) is None, \
    "a word outside the allowed ones is refused, not marked wrong"

# %% [markdown]
# ## What to remember
#
# - Dynamo keeps every call; **AOTAutograd** removes dead nodes before Inductor sees them.
# - DCE asks `node.is_impure()` of each **graph node** with no user. A mutating op's `auto_functionalized_v2` node
#   is removable; the `copy_` back into an input keeps it. An effect keeps its op through the token the graph
#   returns; `has_side_effect` makes the op's node impure. Python side effects, dead temporaries and (by default)
#   random ops are removed.
# - `dynamic=False/True/None` decides how often you compile and whether sizes are symbolic.
# - With default settings, a data-dependent op (`new_dynamic_size()`) graph-breaks and runs eagerly under
#   `fullgraph=False` (07 shows the settings that change it); under
#   `fullgraph=True` it is captured, and an unused one is kept by its `_assert_scalar`.
#
# ## Questions
#
# 1. Why is `auto_functionalized_v2` removable when the `copy_` after it is not?
# 2. Why can an op that mutates its argument still be removed? What would make the same call stay?
# 3. Why does an unused op with a data-dependent output size survive under `fullgraph=True`, when a shape-following
#    op in the same function is removed?
# 4. Why does `fullgraph=False` let that op run eagerly, and what does `capture_dynamic_output_shape_ops` change?
# 5. Why does a Python side effect inside a custom op's body not keep the op alive?
#
# ## Further reading
#
# - PyTorch custom operators landing page: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - `torch.library` reference (`custom_op`, `register_fake`, `get_ctx`, `opcheck`):
#   https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual (data-dependent shapes, `new_dynamic_size`):
#   https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - `torch._logging` and `TORCH_LOGS`: https://docs.pytorch.org/docs/stable/logging.html
# - `fullgraph=True` turns on `capture_dynamic_output_shape_ops` (September 2025):
#   https://github.com/pytorch/pytorch/pull/163123
# - Dead code elimination of collectives (an outside effect removed): https://github.com/pytorch/pytorch/issues/130918
# - Compiled-autograd DCE of custom ops: https://github.com/pytorch/pytorch/issues/149181
# - How releases differ: https://github.com/pytorch/pytorch/releases (and this lab's `docs/torch-versions.md`)
#
# **Next:** 06 · Field guide. Data-dependent shapes in depth (`new_dynamic_size(min=, max=)`, `int` vs `SymInt`,
# `mark_unbacked`, `recompile_limit`): notebook 07.
