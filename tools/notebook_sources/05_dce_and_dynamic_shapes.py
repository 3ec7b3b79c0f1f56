# %% [markdown]
# # 05 · Dead-code elimination and dynamic shapes
#
# **What you will learn**
# - *where* `torch.compile` removes unused ops, and *how*: `node.is_impure()`, asked of each **graph node**;
# - what keeps an op alive (a `copy_` into an input, an effect token, `has_side_effect`) and what does not;
# - static vs dynamic shapes, and when torch recompiles;
# - one case where a custom op **does** run eagerly (a data-dependent output size under `fullgraph=False`), and
#   why such an op, unused, is **kept** under `fullgraph=True`;
# - torch's own tools for it: `set_logs`/`TORCH_LOGS` and `torch._dynamo.explain`.
#
# **Time:** about 30 minutes. **Before:** 00–02. Runs on the CPU, and on the GPU when one is present. Outputs
# recorded on torch 2.13.0 (CPU); without a GPU, section 4's GPU cell shows what it printed on one, labelled.
#
# **labkit vs plain torch.** `labkit.compile_and_compare` runs a function eagerly and compiled (default
# `backend="aot_eager"`, `dynamic=False`, `fullgraph=False`, caches bypassed) and counts real kernel calls. Where a
# lesson is about torch, the notebook writes the op with `@torch.library.custom_op` and compiles with plain
# `torch.compile` next to it.

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
# (`labkit.declare` is labkit's shorthand for a `@torch.library.custom_op` with a fake kernel; section 2 writes
# them in plain torch):

# %%
pure = labkit.declare(name="nb05::pure", returns="fresh")
reports = {backend: labkit.compile_and_compare(result_unused(pure), torch.ones(4, device=device), backend=backend)
           for backend in ("eager", "aot_eager", "inductor")}
fates = {backend: report.fate("nb05::pure") for backend, report in reports.items()}
for backend, fate in fates.items():
    print(f"{backend:<10} {fate}")

# %%
assert fates["eager"] == {"dynamo": True, "aot": None, "inductor": None, "ran": True}, \
    "eager: Dynamo keeps every call, and the op runs"
assert fates["aot_eager"]["aot"] is False, "aot_eager: AOTAutograd removes the op"
assert fates["aot_eager"]["ran"] is False, "aot_eager: the op's kernel does not run"
assert fates["inductor"]["inductor"] is False, "inductor: the op is not in Inductor's graph"
assert fates["inductor"]["ran"] is False, "inductor: the op's kernel does not run"

# %% [markdown]
# In each fate, `True` means the op is present at that stage, `False` that it is gone, and `None` that the backend
# does not have that stage (`labkit.draw_fate(report, "nb05::pure")` draws it, as in notebook 00).
#
# - **Dynamo** records every call: with `backend="eager"` (Dynamo only) the op runs.
# - **AOTAutograd** runs dead-code elimination on its graph: the op is gone before Inductor sees it.
# - **Inductor** has dead-code passes of its own (an FX pass behind `torch._inductor.config.dce`, off by default;
#   one in its scheduler behind `use_dce`, on), but in this notebook AOTAutograd always removes the dead node first.

# %%
import torch._inductor.config as inductor_config
print("inductor config: dce =", inductor_config.dce, "| use_dce =", inductor_config.use_dce)
assert inductor_config.dce is False, "Inductor's FX dead-code pass is off by default"
assert inductor_config.use_dce is True, "Inductor's scheduler dead-code pass is on by default"

# %% [markdown]
# ## 2. The question torch asks — of each graph node
#
# torch's dead-code elimination is `torch.fx.Graph.eliminate_dead_code`: it walks the graph backwards and erases
# every node that has no users, unless `node.is_impure()` says the node must stay. The question is asked of a
# **graph node**, and after AOTAutograd has functionalized the program your op is not always its own node: a
# mutating op becomes an `auto_functionalized_v2` node, an effectful op a `with_effects` node.
#
# Four ops in plain torch, each with a kernel that counts its calls. First, one that mutates its input and one
# that draws random numbers:

# %%
# GPU setup: ran and count
ran = {}
def count(name):
    ran[name] = ran.get(name, 0) + 1

# %%
from torch._library.effects import EffectType   # a private module: see "effects" below

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
# Two more, whose only job is a side effect: one registers an *effect*, the other is marked with `has_side_effect`:

# %%
import gc

@torch.library.custom_op("nb05::log_stats", mutates_args=())
def log_stats(x: torch.Tensor) -> None:
    count("log_stats")          # imagine: writes x.mean() to a log file

log_stats.register_fake(lambda x: None)
log_stats.register_effect(EffectType.ORDERED)     # CustomOpDef.register_effect: no docstring in 2.13

@torch.library.custom_op("nb05::legacy_log", mutates_args=())
def legacy_log(x: torch.Tensor) -> None:
    count("legacy_log")

legacy_log.register_fake(lambda x: None)
# has_side_effect marks one OpOverload object; when a re-run's replaced op is collected, torch.ops drops its
# cached overload and hands out a new, unmarked one: so collect first, then mark the one torch.ops gives now.
gc.collect()
_ = torch.fx.node.has_side_effect(torch.ops.nb05.legacy_log.default)   # experimental, see below

# %% [markdown]
# And five programs that throw every result away. Each returns `y + 1`, so nothing the program returns reads what
# the op did:

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
# A ten-line backend shows what AOTAutograd hands to the compiler, and torch's own log says which nodes its
# dead-code elimination erased (`torch._logging.set_logs(modules={"torch.fx.graph": logging.INFO})` — the same as
# `TORCH_LOGS="+torch.fx.graph"`; the helper captures that log so the notebook can read it).
# `keep_inference_input_mutations=True` is what Inductor asks for: the write back into a mutated input stays in the
# graph as a `copy_`.

# %%
import logging
import re
from torch._dynamo.backends.common import aot_autograd

def aot_graph(fn, *args, fullgraph=True):
    """Compile fn with an AOTAutograd backend; return its forward graphs, the names of the nodes DCE erased (every
    DCE pass of the compile, sorted), and the kernel calls."""
    graphs = []
    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm
    backend = aot_autograd(fw_compiler=keep, keep_inference_input_mutations=True)
    torch.compiler.reset()
    ran.clear()
    with torch._functorch.config.patch(enable_autograd_cache=False), \
            labkit.torch_logs(modules={"torch.fx.graph": logging.INFO}) as log:   # set_logs, its stderr caught
        torch.compile(fn, backend=backend, fullgraph=fullgraph)(*args)
    erased = {name for line in log.getvalue().splitlines() if "dead code eliminated" in line
              for name in re.findall(r"'(\w+)'", line)}
    return graphs, sorted(erased), dict(ran)

# %% [markdown]
# Each program through that backend: did the kernel run, which nodes did DCE erase, and what does `is_impure()` say
# of each node left in the graph?

# %%
import inspect
assert "keep_inference_input_mutations=True" in inspect.getsource(torch._inductor.compile_fx), \
    "Inductor compiles with keep_inference_input_mutations=True"

PROGRAMS = [mutates_an_input, mutates_a_dead_temporary, random_result_unused, effect_registered,
            has_side_effect_registered]
seen = {}
for program in PROGRAMS:
    fw_graphs, erased, calls = aot_graph(program, torch.zeros(3), torch.zeros(3))
    nodes = [node for node in fw_graphs[0].graph.nodes if node.op == "call_function"]
    seen[program.__name__] = dict(
        kernel_ran=bool(calls), erased=erased,
        nodes={node.name: node.is_impure() for node in nodes},
        outputs=[str(a) for a in fw_graphs[0].graph.output_node().args[0]])
    print(f"{program.__name__:<27} kernel ran: {str(bool(calls)):<5}  DCE erased: {erased or '-'}")
    print(f"{'':<27} left in the graph (node: is_impure): {seen[program.__name__]['nodes']}")

# %%
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
# Read the table node by node:
#
# - **A mutated input.** The op is inside `auto_functionalized_v2`, and that node is **not** impure: torch treats
#   it as a function from old values to new ones. What is impure is the `copy_` that writes the new value back into
#   `x` — and it uses the node's output, so the node has a user and stays.
# - **A dead temporary.** The same `auto_functionalized_v2` node, but nothing copies the result anywhere:
#   no user, not impure, erased — even though the op's schema says it mutates.
# - **A random op.** The node is the op itself. During compilation DCE counts `nondeterministic_seeded` ops as
#   impure only when `torch._inductor.config.fallback_random` is on (it is off by default), so it is erased. The
#   next cell turns the flag on.
# - **An effect.** `with_effects` is not impure either; it stays because it returns a new *token* (`getitem`)
#   that is an output of the graph, so the node has a user. (The token also comes in as an extra graph input.)
# - **`has_side_effect`.** The op is its own node and torch lists it as side-effectful: the only case where the op's
#   node itself answers "impure".

# %%
with inductor_config.patch(fallback_random=True):
    fw_graphs, erased, calls = aot_graph(random_result_unused, torch.zeros(3), torch.zeros(3))
print("fallback_random=True:", "kernel ran" if calls else "removed", "| erased:", erased or "-")
assert calls == {"noise": 1}, "fallback_random=True: the random op's kernel runs"
assert "noise" not in erased, "fallback_random=True: DCE does not erase the random op"

# %% [markdown]
# ### Effects and `has_side_effect` are not stable APIs
#
# Both work on torch 2.13, and both may change: `CustomOpDef.register_effect` has no docstring, `EffectType` lives
# in the private `torch._library.effects`, the function form is `torch.library._register_effectful_op`; and
# `torch.fx.node.has_side_effect`'s docstring calls it experimental and asks new operators to use effects:

# %%
assert "please do not add to this set" in torch.fx.node.has_side_effect.__doc__, \
    "has_side_effect's docstring asks new operators not to use it"
assert "experimental and is *NOT* backward-compatible" in torch.fx.node.has_side_effect.__doc__, \
    "has_side_effect's docstring calls it experimental"
assert torch._library.custom_ops.CustomOpDef.register_effect.__doc__ is None, "register_effect has no docstring"
assert hasattr(torch.library, "_register_effectful_op"), "the function form is torch.library._register_effectful_op"
assert not hasattr(torch.library, "register_effectful_op"), "the function form has no public name"

# %% [markdown]
# `has_side_effect` marks the `OpOverload` *object* it is given, not the op's name: the cell that defines
# `legacy_log` says why it collects garbage before it marks. After a collection, the op is still kept:

# %%
gc.collect()
fw_graphs, erased, calls = aot_graph(has_side_effect_registered, torch.zeros(3), torch.zeros(3))
after_gc = {node.name: node.is_impure() for node in fw_graphs[0].graph.nodes if node.op == "call_function"}
print("after gc.collect():", after_gc, "| kernel calls:", calls)
assert after_gc.get("legacy_log") is True, "after gc.collect(), legacy_log's node is still impure: the op is kept"

# %% [markdown]
# A side effect inside the op's *Python body* counts for nothing: a custom op is opaque to the compiler. labkit's
# `-> None` op below increments a call counter — a real side effect — and is removed all the same:

# %%
hidden = labkit.declare(name="nb05::hidden", returns="none")
hidden_fate = labkit.compile_and_compare(result_unused(hidden), torch.ones(4, device=device),
                                         backend="inductor").fate("nb05::hidden")
print(hidden_fate)
assert hidden_fate["ran"] is False, "a side effect in the op's Python body does not keep the op"

# %% [markdown]
# ## 3. Static and dynamic shapes
#
# `torch.compile` specialises a graph to the shapes it saw, and recompiles when they change — unless it
# compiles with *symbolic* sizes:
#
# - `dynamic=False` — always static: one graph per new shape (up to `recompile_limit`: notebook 07);
# - `dynamic=True` — symbolic from the start: one graph for the sizes used here;
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
assert graphs[False].graphs_per_call == [1, 1, 1], "dynamic=False: one graph per new shape"
assert graphs[True].graphs_per_call == [1, 0, 0], "dynamic=True: one graph for the three sizes"
assert graphs[None].graphs_per_call == [1, 1, 0], "dynamic=None: static first, then one symbolic graph"
assert graphs[None].recompiles == 1, "dynamic=None: one recompile"
assert graphs[None].dynamo_graphs[1].input_shapes[-1].startswith("[s"), \
    "dynamic=None: the second graph's size is symbolic"
assert not any(report.fate("nb05::pure")["ran"] for report in graphs.values()), \
    "the unused op is removed under every mode"

# %% [markdown]
# A symbolic size prints as `s` and a number, e.g. `[s77]`. The number is a name torch picks (it depends on where
# the size came from), not a value: compare symbolic sizes by their form, never by the number. (`mark_dynamic`,
# `mark_unbacked` and `recompile_limit` — choosing symbolic sizes per tensor, and what happens after too many
# recompiles — are in notebook 07.)
#
# ## 4. Data-dependent output sizes: when `fullgraph` changes everything
#
# Most fake kernels *follow the input shapes*: the output's size is a function of the inputs' sizes. Some ops
# cannot say: `nonzero`, a filter, MoE routing — the output size depends on the **data**. Their fake kernel asks
# torch for a fresh, unknown size with `torch.library.get_ctx().new_dynamic_size()` (an *unbacked* symbolic size):

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
# `torch.compile(fullgraph=True)` also turns on `torch._dynamo.config.capture_dynamic_output_shape_ops` (the
# `torch.compile` docstring says so; the cell checks that sentence; it came with
# https://github.com/pytorch/pytorch/pull/163123, September 2025). Without it, Dynamo cannot put such an op in a
# graph: it **breaks the graph** and the kernel runs eagerly. A backend that records each graph Dynamo hands it:

# %%
def dynamo_graphs(fn, x, **compile_options):
    graphs = []
    def recording(gm, example_inputs):
        graphs.append([str(node.target) for node in gm.graph.nodes if node.op in ("call_function", "call_method")])
        return gm.forward
    torch.compiler.reset()
    ran.clear()
    torch.compile(fn, backend=recording, **compile_options)(x)
    return graphs, ran.get("positives", 0)

assert "capture_dynamic_output_shape_ops" in torch.compile.__doc__, "torch.compile's docstring names the flag"
x = torch.tensor([1.0, -2.0, 3.0, -4.0])
capture = {"fullgraph=False": dynamo_graphs(sums_positives, x, fullgraph=False),
           "fullgraph=True": dynamo_graphs(sums_positives, x, fullgraph=True)}
with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
    capture["fullgraph=False + capture flag"] = dynamo_graphs(sums_positives, x, fullgraph=False)
for setting, (graph_list, kernel_calls) in capture.items():
    print(f"{setting:<31} kernel calls: {kernel_calls}  graphs: {graph_list}")

# %%
graph_list, kernel_calls = capture["fullgraph=False"]
assert kernel_calls == 1, "fullgraph=False: the kernel runs once"
assert not any("nb05.positives" in t for g in graph_list for t in g), "fullgraph=False: in no graph: it ran eagerly"
for setting in ("fullgraph=True", "fullgraph=False + capture flag"):
    graph_list, kernel_calls = capture[setting]
    assert len(graph_list) == 1, f"{setting}: one graph, no break"
    assert "nb05.positives.default" in graph_list[0], f"{setting}: the op is captured in the graph"
    assert "aten._assert_scalar.default" in graph_list[0], f"{setting}: the graph checks the size with _assert_scalar"

# %% [markdown]
# Captured, the op brings company: `sym_size` reads its unbacked size, and `_assert_scalar` checks at run time
# what torch assumed about it (a size is `>= 0`). `_assert_scalar` is side-effectful — it must run to check — so
# it is never dead code. Now throw the result away, next to a shape-following op (`nb05::double`) whose result is
# thrown away too:

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
dd = {}
for fullgraph in (True, False):
    fw_graphs, erased, calls = aot_graph(discards_both, x, torch.zeros(2), fullgraph=fullgraph)
    dd[fullgraph] = dict(calls=calls, erased=erased,
                         impure=[str(n.target) for g in fw_graphs for n in g.graph.nodes if n.is_impure()],
                         kept=[str(n.target) for g in fw_graphs for n in g.graph.nodes if n.op == "call_function"])
    print(f"fullgraph={fullgraph!s:<5} kernel calls {calls}; double erased: {'double' in erased}\n"
          f"{'':<16}left: {dd[fullgraph]['kept']}")

# %%
assert dd[True]["calls"] == {"positives": 1}, "fullgraph=True: unused, yet the kernel ran compiled"
assert "nb05.positives.default" in dd[True]["kept"], "fullgraph=True: the op is kept in the graph"
assert "aten._assert_scalar.default" in dd[True]["impure"], "fullgraph=True: _assert_scalar is impure"
assert "double" in dd[True]["erased"], "fullgraph=True: the shape-following op is removed"
assert dd[False]["calls"] == {"positives": 1}, "fullgraph=False: the kernel runs once"
assert "nb05.positives.default" not in dd[False]["kept"], "fullgraph=False: the op is in no graph: it ran eagerly"
assert "double" in dd[False]["erased"], "fullgraph=False: the shape-following op is removed"

# %% [markdown]
# The graphs above were AOTAutograd's, on the CPU. Does any of it change on a GPU, where Inductor writes Triton
# code? The cell below counts real kernel calls for both ops on CUDA, one call under each `fullgraph` setting and
# each `dynamic` setting. Without a GPU it shows what it printed on one (a recording, labelled as such). First,
# does this kernel have what Inductor's GPU code needs?

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
# Dead-code elimination *does* depend on shapes — through the unbacked size, not through `dynamic=`: section 3's
# shape-following op was removed under every `dynamic` mode, on three shapes (its last assert). A widely shared
# post cites a disabled CI test, `test_custom_op_dce_dynamic_shapes_cuda`, as evidence of the opposite; we found no
# such test in PyTorch's sources or issues. On an H200 (the recording above: torch 2.11, Inductor on CUDA), one call
# per setting gave the same kernel counts under `dynamic=False`, `True` and `None` (a first call, so `None` compiled
# statically; section 3 showed its symbolic recompile on the CPU).

# %% [markdown]
# Is it really `_assert_scalar` that keeps the unused `positives` alive under `fullgraph=True`? Turn the runtime
# asserts off:
# `torch._dynamo.config.do_not_emit_runtime_asserts = True` (`TORCH_DYNAMO_DO_NOT_EMIT_RUNTIME_ASSERTS=1` in the
# shell) keeps what torch assumes about the size but puts no assert in the graph. Nothing reads the unused size
# any more, and DCE removes the op like `double` — its kernel does not run:

# %%
if torch.__version__.startswith("2.13."):
    assert hasattr(torch._dynamo.config, "do_not_emit_runtime_asserts"), \
        "torch 2.13 has torch._dynamo.config.do_not_emit_runtime_asserts"
if hasattr(torch._dynamo.config, "do_not_emit_runtime_asserts"):
    with torch._dynamo.config.patch(do_not_emit_runtime_asserts=True):
        fw_graphs, erased, calls = aot_graph(discards_both, x, torch.zeros(2), fullgraph=True)
    left = [str(n.target) for g in fw_graphs for n in g.graph.nodes if n.op == "call_function"]
    print(f"no runtime asserts: kernel calls {calls}; left: {left}")
    assert calls == {}, "no runtime asserts: the unused data-dependent op's kernel never runs"
    assert "nb05.positives.default" not in left, "no runtime asserts: the op is not in the graph"
    assert "positives" in erased, "no runtime asserts: DCE erased the op"
    assert "aten._assert_scalar.default" not in left, "no runtime asserts: no _assert_scalar in the graph"
else:
    print("this torch has no torch._dynamo.config.do_not_emit_runtime_asserts")

# %% [markdown]
# ## 5. The dynamic-mode widget
#
# Flip the dynamic mode, the op's declaration, the shape sequence and (with a GPU) the device. The view shows
# the real kernel calls, the op's fate at each stage, the generated code, the recompile count and the sizes each
# graph was built for. States you have seen come back instantly.

# %%
dynamic_lab = labkit.widgets.DynamicLab(namespace="nb05w")
dynamic_lab

# %%
dynamic_lab.set(dynamic="False", shapes="4 → 6 → 4")
print(dynamic_lab.report.graphs_per_call, "recompiles:", dynamic_lab.report.recompiles)
assert dynamic_lab.report.graphs_per_call == [1, 1, 0], \
    "dynamic=False, 4 → 6 → 4: a graph for [4], one for [6], and [4] again reuses the first"

# %% [markdown]
# ## 6. In your own project
#
# Everything above, with torch's tools only. **What dead-code elimination erased** —
# `TORCH_LOGS="+torch.fx.graph"`, or `set_logs(modules={"torch.fx.graph": logging.INFO})`: each pass logs "The
# following nodes were dead code eliminated" with the node names (section 2's `aot_graph` reads exactly this).
# **Where the graph breaks** — `torch._dynamo.explain` compiles once and reports the graphs and each break's reason:

# %%
def prints_between(x):
    y = double(x)
    print("logging something")          # a graph break
    return y + 1

torch.compiler.reset()
explanation = torch._dynamo.explain(prints_between)(torch.ones(3))
print(explanation.graph_count, "graphs,", explanation.graph_break_count, "break:",
      explanation.break_reasons[0].reason.splitlines()[0])
assert explanation.graph_count == 2, "explain reports two graphs"
assert explanation.graph_break_count == 1, "explain reports one graph break"
assert "print" in explanation.break_reasons[0].reason, "the break's reason names the print"

# %% [markdown]
# Graph-break and recompile logs (`TORCH_LOGS="graph_breaks,recompiles"`), a whole compile as a `TORCH_TRACE`
# report read with `tlparse`, and what `opcheck` checks (and does not) for a data-dependent fake kernel are in
# notebook 07, on section 4's op.
#
# ## Exercise 1: count the compiles
#
# With `dynamic=None` and the shape sequence `4 → 6 → 4`, how many graphs does Dynamo compile in total?
# Predict first, then run the check.

# %%
my_graph_count = ...

# %%
dynamic_lab.set(dynamic="None", shapes="4 → 6 → 4")
truth_graphs = dynamic_lab.report.graph_count
if labkit.exercises.answered(my_graph_count):
    labkit.exercises.check(my_graph_count == truth_graphs, f"{truth_graphs} graphs.",
                           "The second shape triggers a dynamic recompile; does the third need another?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: 2. A static graph for [4], then one with a symbolic size (printed as [s…]) that also covers the last [4].
assert truth_graphs == 2, "dynamic=None, 4 → 6 → 4: two graphs in total"
assert dynamic_lab.report.graphs_per_call == [1, 1, 0], "the symbolic graph also covers the last [4]"
assert truth_graphs != 3, "'one graph per shape change' (3) is rejected"
print("solution checked")

# %% [markdown]
# ## Exercise 2: predict, then run
#
# For each program, predict whether the kernel of the op it calls runs when the program is compiled as stated
# (`True`/`False`). Use sections 2 and 4; the check compiles all four.
#
# - `"a"`: `mutates_a_dead_temporary`, `fullgraph=True`
# - `"b"`: `discards_both`'s `positives` call, `fullgraph=True`
# - `"c"`: `discards_both`'s `positives` call, `fullgraph=False`
# - `"d"`: `random_result_unused`, `fullgraph=True`, with `fallback_random=True`

# %%
my_predictions = {"a": ..., "b": ..., "c": ..., "d": ...}

# %%
def what_runs():
    _, _, a = aot_graph(mutates_a_dead_temporary, torch.zeros(3), torch.zeros(3))
    _, _, b = aot_graph(discards_both, x, torch.zeros(2), fullgraph=True)
    _, _, c = aot_graph(discards_both, x, torch.zeros(2), fullgraph=False)
    with inductor_config.patch(fallback_random=True):
        _, _, d = aot_graph(random_result_unused, torch.zeros(3), torch.zeros(3))
    return {"a": "bump_" in a, "b": "positives" in b, "c": "positives" in c, "d": "noise" in d}

if all(labkit.exercises.answered(v) for v in my_predictions.values()):
    truth = what_runs()
    wrong = sorted(k for k in truth if my_predictions[k] != truth[k])
    labkit.exercises.check(not wrong, "all four right.",
                           f"look again at {', '.join(wrong)}: which graph node would DCE be asked about?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: a False (auto_functionalized_v2 with no copy_), b True (kept by _assert_scalar), c True (graph break:
# eager), d True (fallback_random makes seeded ops impure).
truth = what_runs()
assert truth == {"a": False, "b": True, "c": True, "d": True}, \
    "a: removed; b: kept by _assert_scalar; c: eager after a graph break; d: kept by fallback_random"
assert truth != dict.fromkeys("abcd", False), "'an unused op never runs' is rejected"
print("solution checked")

# %% [markdown]
# ## What to remember
#
# - Dynamo keeps every call; **AOTAutograd** removes dead nodes before Inductor sees them.
# - DCE asks `node.is_impure()` of each **graph node**. A mutating op's `auto_functionalized_v2` node is removable;
#   the `copy_` back into an input is what keeps it. An effect keeps its op through the token it returns;
#   `has_side_effect` marks the op's node itself. Python side effects, dead temporaries and (by default) random ops
#   are removed. Effects and `has_side_effect` are private or experimental APIs.
# - `dynamic=False/True/None` decides how often you compile and whether sizes are symbolic.
# - An op whose fake kernel uses `new_dynamic_size()` graph-breaks and runs eagerly under `fullgraph=False`; under
#   `fullgraph=True` it is captured, and an unused one is kept alive by its `_assert_scalar` (with
#   `do_not_emit_runtime_asserts=True` there is none, and the op is removed). For shape-following
#   ops `fullgraph` changes nothing about DCE.
#
# ## Questionnaire
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
# - Dead code elimination of collectives (an outside effect removed): https://github.com/pytorch/pytorch/issues/130918
# - Compiled-autograd DCE of custom ops: https://github.com/pytorch/pytorch/issues/149181
#
# **Next:** 06 · Field guide. Data-dependent shapes in depth (`new_dynamic_size(min=, max=)`, `int` vs `SymInt`,
# `mark_unbacked`, `recompile_limit`): notebook 07.
