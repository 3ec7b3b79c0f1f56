# %% [markdown]
# # 07 · Data-dependent shapes: unbacked sizes, runtime asserts, `int` vs `SymInt`
#
# Your filter op's fake kernel promises at most 4 values. One day the kernel returns six. Eager mode hands you
# the six without a word; the compiled program stops: `Runtime assertion failed for expression u0 <= 4`. Who
# checked, and why only there? And why does an op with an `int` argument compile a new graph per value?
#
# **What you will learn**
# - what an *unbacked* size (`u0`) is, and the runtime asserts torch puts in the graph for it;
# - what `new_dynamic_size(min=, max=)` promises, and who checks it;
# - where `fullgraph` changes what happens to such an op, and to code that branches on its size;
# - why `int` in a schema you write compiles once per value, and `SymInt` does not;
# - `mark_dynamic` vs `mark_unbacked`, and what happens past `recompile_limit`;
# - torch's tools for it: `TORCH_LOGS`, `TORCH_TRACE` + `tlparse`, `opcheck`.
#
# **Time:** about 40 minutes. **Before:** 05 (sections 3 and 4). Runs on the CPU; outputs recorded on torch 2.13.
# Collapsed *Check* cells assert every claim; other releases: `docs/torch-versions.md`.

# %% tags=["nbval-ignore-output"]
import collections
import re

import torch

import labkit

labkit.setup()                          # the widget in section 7 compiles with Inductor
kernel_calls = collections.Counter()    # the plain-torch ops below count their kernel calls here

# %% [markdown]
# ## 1. A size known only after the kernel runs
#
# Notebook 05's op keeps the positive entries of a tensor: how many, only the kernel knows. So its fake kernel
# asks torch for a new symbolic size, `new_dynamic_size()`. labkit declares it; `torch_source()` prints it:

# %%
positives = labkit.declare(name="nb07::positives", returns="data-dependent")
print(positives.torch_source())

# %% [markdown]
# Compiled with `fullgraph=True` (why: section 3); `compile_and_compare` runs it eagerly and compiled and keeps
# the graph Dynamo made:

# %%
def sums_positives(x):
    return positives(x).sum() + x.sum()

x = torch.tensor([1.0, -2.0, 3.0, -4.0])
captured = labkit.compile_and_compare(sums_positives, x, backend="eager", fullgraph=True)
print(captured.dynamo_graphs[0].code)

# %% tags=["check"]
#@title Check: one graph; the op's output size is u0, checked by an impure _assert_scalar
assert captured.verdict.agree, "compiled matches eager"
assert captured.graph_count == 1, "fullgraph=True: Dynamo compiles one graph"
assert captured.compiled_calls == {"nb07::positives": 1}, "the op's kernel runs once"
assert "Runtime assertion failed for expression u0 >= 0" in captured.dynamo_graphs[0].code, \
    "the graph checks u0 >= 0 at run time"
torch.compiler.reset()
with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):     # what fullgraph=True turns on
    (graph,) = torch._dynamo.explain(sums_positives)(x).graphs               # the torch.fx graph itself
op_node = next(n for n in graph.graph.nodes if str(n.target) == "nb07.positives.default")
assert op_node.target is torch.ops.nb07.positives.default, \
    "the graph calls the one live OpOverload, also on a re-run (labkit keeps it)"
assert str(op_node.meta["example_value"].shape) == "torch.Size([u0])", "the op's output size is the unbacked u0"
asserts = [n for n in graph.graph.nodes if n.target is torch.ops.aten._assert_scalar.default]
assert asserts, "the graph has _assert_scalar nodes"
assert all(n.is_impure() for n in asserts), "_assert_scalar is side-effectful: never dead code"

# %% [markdown]
# The size is `u0`, an **unbacked** symbolic size. A *backed* size (`s77` in notebook 05) comes from an input:
# torch knows its value when it compiles (a "hint") and can *guard* on it, i.e. check it before running the graph
# and recompile if the check fails. `u0` exists only after the op has run: nothing to guard on. What torch assumes
# about it (`>= 0`) becomes a **runtime assert** in the graph: `sym_size` reads the size after the kernel ran,
# and `_assert_scalar`, which dead-code elimination never removes, checks it.
#
# ## 2. Promises: `min=` and `max=`
#
# `new_dynamic_size(min=0, max=None)` takes bounds you know (a router never sends more than its capacity). They
# become runtime asserts too. Here the fake kernel promises **at most 4**, and the kernel forgets to cap:

# %%
@torch.library.custom_op("nb07::top_positives", mutates_args=())
def top_positives(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0].clone()                  # the bug: meant to keep at most 4

@top_positives.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size(min=0, max=4))

def doubles_top(x):
    return top_positives(x) * 2

torch.compiler.reset()
compiled_top = torch.compile(doubles_top, backend="aot_eager", fullgraph=True)
three, six = torch.tensor([1.0, -2.0, 3.0, 4.0]), torch.arange(1.0, 7.0)
print("3 positives, compiled:", compiled_top(three))
print("6 positives, eager:   ", doubles_top(six))
broken_promise = labkit.stages.raised(lambda: compiled_top(six), "compiled")
print("6 positives, compiled:", broken_promise)

# %% tags=["check"]
#@title Check: eager returns six values; compiled, the runtime assert u0 <= 4 stops the call
assert torch.equal(compiled_top(three), doubles_top(three)), "3 positives: compiled and eager agree"
assert doubles_top(six).shape == (6,), "eager does not check the promise: it returns all six values"
assert broken_promise.type_name == "RuntimeError", "compiled, six positives raise a RuntimeError"
assert broken_promise.message == "Runtime assertion failed for expression u0 <= 4 on node 'le'", \
    "compiled, the graph's runtime assert u0 <= 4 stops the call"

# %% [markdown]
# Eager mode trusts the kernel; the compiled graph checks the promise. Do not count on that check:
# `new_dynamic_size`'s docstring calls wrong bounds *undefined behaviour* and asks you to assert the bound in the
# kernel. Nor does `opcheck` catch it: it compares the fake kernel with the real one, not the real size with your
# bounds. On the same six positives:

# %%
print(torch.library.opcheck(top_positives, (six,)))

# %% tags=["check"]
#@title Check: the docstring's warning; opcheck passes; a symbolic bound is refused
from torch._library.fake_impl import FakeImplCtx        # the class of get_ctx() inside a fake kernel
assert "undefined behavior" in FakeImplCtx.new_dynamic_size.__doc__, \
    "new_dynamic_size's docstring calls wrong bounds undefined behaviour"
assert "add an assertion in the CPU/CUDA/etc" in FakeImplCtx.new_dynamic_size.__doc__, \
    "new_dynamic_size's docstring asks for an assert of the bound in the kernel"
assert set(torch.library.opcheck(top_positives, (six,)).values()) == {"SUCCESS"}, \
    "opcheck passes on six positives: it does not check max=4"
bounded_by_input = torch.library.custom_op("nb07::bounded_by_input", lambda x: x[x > 0].clone(), mutates_args=(),
                                           schema="(Tensor x) -> Tensor")
bounded_by_input.register_fake(   # under dynamic=True, x.shape[0] is a SymInt
    lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size(max=x.shape[0])))
torch.compiler.reset()
symbolic_bound = labkit.stages.raised(
    lambda: torch.compile(bounded_by_input, backend="aot_eager", fullgraph=True, dynamic=True)(x))
assert "expected min and max to be statically known ints but got SymInt" in symbolic_bound.full, \
    "a symbolic bound (max=x.shape[0] under dynamic=True) is refused"

# %% [markdown]
# Bounds must be plain ints: `max=x.shape[0]` is refused once the input's size is symbolic (the check shows it).
#
# ## 3. Where `fullgraph` changes behaviour
#
# `fullgraph=True` turns on `capture_dynamic_output_shape_ops`; without it Dynamo cannot put an op with an
# unbacked output size in a graph (notebook 05 §4). The graph breaks at the op, which runs eagerly:

# %%
placement = {fullgraph: labkit.compile_and_compare(sums_positives, x, backend="eager", fullgraph=fullgraph)
             for fullgraph in (False, True)}
for fullgraph, report in placement.items():
    print(f"fullgraph={fullgraph!s:<5} graphs: {report.graph_count}  op in a graph: "
          f"{report.fate('nb07::positives')['dynamo']}  kernel calls: {report.compiled_calls}")

# %% tags=["check"]
#@title Check: one graph either way, the op in it only under fullgraph=True; an unused one is kept by its assert
assert {fg: (r.graph_count, r.fate("nb07::positives")["dynamo"], r.compiled_calls["nb07::positives"])
        for fg, r in placement.items()} == {False: (1, False, 1), True: (1, True, 1)}, \
    "one graph either way; the op is in it only under fullgraph=True; its kernel runs once"
assert "capture_dynamic_output_shape_ops" in torch.compile.__doc__, \
    "torch.compile's docstring says fullgraph=True sets capture_dynamic_output_shape_ops"
discards = labkit.experiments.discards_result(positives)       # positives(x); return x + 1
assert labkit.compile_and_compare(discards, x, fullgraph=True).compiled_calls == {"nb07::positives": 1}, \
    "fullgraph=True: the unused op's kernel still runs once"
has_switch = hasattr(torch._dynamo.config, "do_not_emit_runtime_asserts")
assert has_switch or labkit.env.torch_version()[:2] != (2, 13), \
    "torch 2.13 has torch._dynamo.config.do_not_emit_runtime_asserts"
if has_switch:
    with torch._dynamo.config.patch(do_not_emit_runtime_asserts=True):
        unasserted = labkit.compile_and_compare(discards, x, fullgraph=True)
    assert unasserted.compiled_calls == {"nb07::positives": 0}, \
        "no _assert_scalar: the unused op is dead code, removed, and its kernel never runs"

# %% [markdown]
# Under `fullgraph=True` even an *unused* call runs: its size feeds `_assert_scalar`. With
# `torch._dynamo.config.do_not_emit_runtime_asserts = True` it is removed like any unused op (notebook 05 §4).
#
# Python code that *branches* on the size asks torch for a value it does not have. Under `fullgraph=True`,
# compiling fails. Under `fullgraph=False` the graph already broke **at the op**, so `kept` is a real tensor
# when the `if` runs:

# %%
def branches_on_size(x):
    kept = positives(x)
    if kept.shape[0] > 2:                  # a Python `if` on an unbacked size
        return kept.sum()
    return kept.mean()

with_break = labkit.compile_and_compare(branches_on_size, x)
no_way_out = labkit.compile_and_compare(branches_on_size, x, fullgraph=True)
print("fullgraph=False:", with_break.verdict, "\nfullgraph=True: ", no_way_out.error.message.split(" (")[0])

# %% tags=["check"]
#@title Check: fullgraph=False gives eager's answer; fullgraph=True cannot guard on u0 > 2
assert with_break.verdict.agree, "fullgraph=False: compiled gives eager's answer, Python decides"
assert no_way_out.error.full.startswith("UserError"), "fullgraph=True: branching on u0 is a UserError"
assert "Could not guard on data-dependent expression u0 > 2" in no_way_out.error.full, \
    "fullgraph=True: torch cannot guard on u0 > 2"
assert "torch._check" in no_way_out.error.full, "the error suggests torch._check"

# %% [markdown]
# With `torch._dynamo.config.capture_dynamic_output_shape_ops = True` the break moves to the `if`.
# `labkit.logs.dynamo_graph_calls` lists what each graph calls (the `if`'s comparison is `gt`):

# %%
breaks = {"default": labkit.logs.dynamo_graph_calls(branches_on_size, x)}
with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
    breaks["capture_dynamic_output_shape_ops=True"] = labkit.logs.dynamo_graph_calls(branches_on_size, x)
for setting, graphs in breaks.items():
    print(f"{setting}: {len(graphs)} graph(s)", *graphs, sep="\n  ")

# %% tags=["check"]
#@title Check: by default the break is at the op; with the flag, at the `if`
def where_it_breaks(graphs):
    """Per graph: (the op is in it, the `if`'s comparison is in it)."""
    return [("nb07.positives.default" in g, "<built-in function gt>" in g) for g in graphs]

assert where_it_breaks(breaks["default"]) == [(False, False)], \
    "by default the graph breaks at the op: eager, then the mean's graph"
assert where_it_breaks(breaks["capture_dynamic_output_shape_ops=True"]) == [(True, True), (False, False)], \
    "with capture_dynamic_output_shape_ops=True the op is captured and the graph breaks at the `if`"
positives.calls = 0
labkit.logs.dynamo_graph_calls(branches_on_size, x)
assert positives.calls == 1, "the op's kernel runs once"

# %% [markdown]
# The `fullgraph=True` error suggests `torch._check*()`, for when *you* know the answer (another runtime
# assert). When the answer depends on the data, `torch.cond` puts both branches in the graph and picks one at run
# time (a *prototype* feature, its docstring says):

# %%
def conds_on_size(x):
    kept = positives(x)
    return torch.cond(kept.shape[0] > 2, lambda t: t.sum(), lambda t: t.mean(), (kept,))

torch.compiler.reset()
with_cond = torch.compile(conds_on_size, backend="aot_eager", fullgraph=True)
mostly_positive = torch.tensor([1.0, 2.0, 3.0, -4.0])
for data in (x, mostly_positive):
    print(data.tolist(), "-> torch.cond:", with_cond(data).item(), " Python's if:", branches_on_size(data).item())

# %% tags=["check"]
#@title Check: torch.cond picks the branch Python would, in one graph
assert torch.equal(with_cond(x), branches_on_size(x)), "torch.cond picks the branch Python would (2 positives)"
assert torch.equal(with_cond(mostly_positive), branches_on_size(mostly_positive)), \
    "torch.cond picks the branch Python would (3 positives)"
assert "prototype feature" in torch.cond.__doc__, "torch.cond's docstring calls it a prototype feature"

# %% [markdown]
# ## 4. `int` vs `SymInt` in a schema you write
#
# `@torch.library.custom_op` infers the schema from the annotations, and turns `int` into `SymInt`, an integer
# that may be symbolic. In a schema you write yourself (`schema=`, `torch.library.define`), `int` means *a
# concrete Python int*, so torch guards on its value. Three ops that repeat a tensor `n` times:

# %%
def repeat(x: torch.Tensor, n: int) -> torch.Tensor:
    kernel_calls["repeat"] += 1
    return x.repeat(n)

repeat_inferred = torch.library.custom_op("nb07::repeat_inferred", repeat, mutates_args=())   # from the annotations
repeat_int = torch.library.custom_op("nb07::repeat_int", repeat, mutates_args=(), schema="(Tensor x, int n) -> Tensor")
repeat_symint = torch.library.custom_op("nb07::repeat_symint", repeat, mutates_args=(),
                                        schema="(Tensor x, SymInt n) -> Tensor")
for op in (repeat_inferred, repeat_int, repeat_symint):
    op.register_fake(lambda x, n: x.new_empty(x.shape[0] * n))
print("custom_op infers:", torch.library.infer_schema(repeat, mutates_args=()))

# %% tags=["check"]
#@title Check: custom_op infers SymInt from `n: int`; a schema you write keeps your `int`
schemas = {name: str(getattr(torch.ops.nb07, name).default._schema)
           for name in ("repeat_inferred", "repeat_int", "repeat_symint")}
assert torch.library.infer_schema(repeat, mutates_args=()) == "(Tensor x, SymInt n) -> Tensor", \
    "infer_schema turns the annotation `n: int` into SymInt"
assert schemas["repeat_inferred"] == "nb07::repeat_inferred(Tensor x, SymInt n) -> Tensor", \
    "custom_op infers SymInt from the annotation `n: int`"
assert schemas["repeat_int"] == "nb07::repeat_int(Tensor x, int n) -> Tensor", "a schema you write keeps your `int`"

# %% [markdown]
# Call `op(x, n) + 1`, compiled, with `n = 2, 3, 4, 5`, under the default `dynamic=None` and under `dynamic=True`.
# `labkit.stages.serving` compiles it from a reset and notes which graph ran each call; the picture shows them:

# %%
def over_values(op, values, **compile_options):
    """Compile op(x, n) + 1 and call it once for each n; which graph ran each call (labkit.stages.Served)."""
    return labkit.stages.serving(lambda x, n: op(x, n) + 1, [(torch.ones(2), n) for n in values], **compile_options)

N = (2, 3, 4, 5)
by_schema = {f"{name}, dynamic={dynamic}": over_values(op, N, dynamic=dynamic)
             for name, op in (("int", repeat_int), ("SymInt", repeat_symint)) for dynamic in (None, True)}
labkit.pictures.which_graph(by_schema, [f"n = {n}" for n in N])

# %% tags=["check"]
#@title Check: int compiles a graph per value, even under dynamic=True; SymInt 2 graphs, then 1
assert {label: len(run.graphs) for label, run in by_schema.items()} == {
    "int, dynamic=None": 4, "int, dynamic=True": 4, "SymInt, dynamic=None": 2, "SymInt, dynamic=True": 1}, \
    "int: a graph per value, even under dynamic=True; SymInt: 2 graphs (dynamic=None), 1 (dynamic=True)"
assert by_schema["SymInt, dynamic=None"].served == [0, 1, 1, 1], \
    "SymInt, dynamic=None: static for n = 2, then one symbolic graph serves 3, 4 and 5"
assert all(torch.equal(out, torch.full((2 * n,), 2.0)) for run in by_schema.values()
           for out, n in zip(run.outputs, N)), "op(x, n) + 1 is right, compiled, for every n"

# %% [markdown]
# With `SymInt`, `n` behaves like any integer input: static first, then symbolic (`dynamic=None`), or symbolic
# from the start (`dynamic=True`). With `int`, every new value is a new graph, even under `dynamic=True`, and
# nothing names the schema as the cause (section 8).
#
# ## 5. `mark_dynamic` vs `mark_unbacked`
#
# You can also make one *input's* size symbolic before the first compile: `torch._dynamo.mark_dynamic(t, 0)`
# makes dimension 0 backed, `mark_unbacked` unbacked. Torch *specialises* backed sizes on 0 and 1 (it assumes a
# symbolic size is at least 2, and guards on it), so sizes 1 and 0 each compile a graph of their own. An unbacked
# size has no hint to guard on: one graph serves all. `mark_unbacked` is not exported from `torch._dynamo`; it
# lives in `torch._dynamo.decorators`:

# %%
mark_unbacked = getattr(torch._dynamo, "mark_unbacked", None) \
    or torch._dynamo.decorators.mark_unbacked      # private torch: its only home so far

SIZES = (4, 6, 1, 0)
by_mark = {}
for mark in (torch._dynamo.mark_dynamic, mark_unbacked):
    inputs = [torch.ones(n) for n in SIZES]
    mark(inputs[0], 0)                             # before the first compile
    by_mark[mark.__name__] = labkit.stages.serving(lambda t: t * 2 + 1, [(t,) for t in inputs])
labkit.pictures.which_graph(by_mark, [f"size {n}" for n in SIZES])

# %% tags=["check"]
#@title Check: mark_dynamic compiles again for sizes 1 and 0; mark_unbacked's one graph serves all four
assert by_mark["mark_dynamic"].served == [0, 0, 1, 2], "mark_dynamic: sizes 1 and 0 each compile a graph of their own"
assert by_mark["mark_dynamic"].graphs[0].input_shapes[-1].startswith("[s"), \
    "mark_dynamic: the first graph has a backed size s…"
assert by_mark["mark_unbacked"].served == [0, 0, 0, 0], "mark_unbacked: one graph serves sizes 4, 6, 1 and 0"
assert by_mark["mark_unbacked"].graphs[0].input_shapes[-1] == "[u0]", "mark_unbacked: that graph's size is u0"
assert all(torch.equal(out, torch.ones(n) * 2 + 1) for run in by_mark.values() for out, n in zip(run.outputs, SIZES)), \
    "every size: the compiled t * 2 + 1 is right"
if labkit.env.torch_version()[:2] <= (2, 15):     # observed on 2.11.0, 2.12.1, 2.13.0, 2.14.1 and 2.15.0
    assert not hasattr(torch._dynamo, "mark_unbacked"), "torch up to 2.15 does not re-export mark_unbacked"
    assert mark_unbacked is torch._dynamo.decorators.mark_unbacked, "mark_unbacked is torch._dynamo.decorators'"
else:
    assert callable(mark_unbacked), "a later torch has mark_unbacked, re-exported or in torch._dynamo.decorators"
unbacked_input = torch.ones(4)                        # section 3's price, for an unbacked input size
mark_unbacked(unbacked_input, 0)
branches = labkit.stages.raised(lambda: torch.compile(lambda t: t.sum() if t.shape[0] > 2 else t.mean(),
                                                      backend="eager", fullgraph=True)(unbacked_input))
assert "Could not guard on data-dependent expression u0 > 2" in branches.full, \
    "fullgraph=True: branching on an unbacked input size fails to compile"

# %% [markdown]
# The price of unbacked is section 3's: a branch on the size cannot compile under `fullgraph=True` (checked).
#
# ## 6. `recompile_limit`: eager for new inputs, or an error, by `fullgraph`
#
# Every recompile in section 4 is a new graph for the same frame, up to `torch._dynamo.config.recompile_limit`
# (8 by default). Past it, an input no compiled graph accepts runs **eagerly** under `fullgraph=False` and
# **raises** under `fullgraph=True`. The `int`-schema op, with the limit set to 2:

# %%
VALUES = (1, 2, 3, 4, 1, 2, 5)
with torch._dynamo.config.patch(recompile_limit=2), labkit.torch_logs() as limit_log:
    limited = over_values(repeat_int, VALUES)
    refused = labkit.stages.raised(lambda: over_values(repeat_int, VALUES, fullgraph=True), "compiled")
print("fullgraph=True: ", refused.full.splitlines()[0])
labkit.pictures.which_graph({"fullgraph=False": limited}, [f"n = {n}" for n in VALUES])

# %% tags=["check"]
#@title Check: fullgraph=False: new values run eagerly, old ones still get their graph; fullgraph=True raises
assert torch._dynamo.config.recompile_limit == 8, "recompile_limit is 8 by default"
assert "hit config.recompile_limit (2)" in limit_log.getvalue(), "fullgraph=False: torch logs a warning"
assert limited.served[:4] == [0, 1, None, None], "fullgraph=False: the limit is hit at n = 3; n = 3 and 4 run eagerly"
assert limited.served[4:] == [0, 1, None], \
    "after the limit, the compiled graphs still serve n = 1 and 2; a new n = 5 runs eagerly"
assert all(torch.equal(out, torch.full((2 * n,), 2.0)) for out, n in zip(limited.outputs, VALUES)), \
    "fullgraph=False: every answer is right, eager ones too"
assert refused.full.startswith("FailOnRecompileLimitHit"), "fullgraph=True: a value past the limit raises"
with torch._dynamo.config.patch(recompile_limit=2), labkit.torch_logs():       # its warning, kept out of sight
    kernel_calls.clear()
    over_values(repeat_int, VALUES[:4])
    assert kernel_calls["repeat"] == 4, "fullgraph=False: every call runs the kernel, the eager ones too"
    assert over_values(repeat_int, VALUES[:2], fullgraph=True).served == [0, 1], \
        "fullgraph=True: the first two values each go through a graph"
    kernel_calls.clear()
    labkit.stages.raised(lambda: over_values(repeat_int, VALUES[:3], fullgraph=True))
assert kernel_calls["repeat"] == 2, "fullgraph=True: two kernel calls, then the third value raises"

# %% [markdown]
# Under `fullgraph=False` nothing fails: a warning goes to the log, the answers stay right, and every new value
# silently runs uncompiled, while the graphs already compiled still serve theirs (`n = 1`, `2`). With `SymInt`
# the limit is never reached (section 4).
#
# ## 7. Flip it live
#
# Notebook 05's widget, with two more controls: **output size** (`shape-following`: the fake returns
# `empty_like(x)`; `data-dependent`: it asks for `new_dynamic_size()`) and **fullgraph**. Does the op's kernel
# run inside a graph, eagerly at a graph break, or not at all?

# %%
dynamic_lab = labkit.widgets.DynamicLab(namespace="nb07w", op_kind="data-dependent", fullgraph="True")
dynamic_lab

# %% [markdown]
# The four corners, driven from Python (the same calls the controls make):

# %%
fates = {}
for op_kind in ("shape-following", "data-dependent"):
    for fullgraph in ("False", "True"):
        dynamic_lab.set(op_kind=op_kind, fullgraph=fullgraph, dynamic="None", shapes="4 → 6 → 4")
        op, report = dynamic_lab.result()
        fate = report.fate(op.name)
        fates[(op_kind, fullgraph)] = {"in a graph": fate["dynamo"], "kernel ran": fate["ran"]}
        print(f"{op_kind:<16} fullgraph={fullgraph:<5} {fates[(op_kind, fullgraph)]}")

# %% tags=["check"]
#@title Check: only the data-dependent op runs, eagerly under fullgraph=False, in the graph under True
assert fates[("shape-following", "False")] == {"in a graph": True, "kernel ran": False}, \
    "shape-following, fullgraph=False: traced, then removed"
assert fates[("shape-following", "True")] == {"in a graph": True, "kernel ran": False}, \
    "shape-following, fullgraph=True: traced, then removed"
assert fates[("data-dependent", "False")] == {"in a graph": False, "kernel ran": True}, \
    "data-dependent, fullgraph=False: a graph break, the kernel runs eagerly"
assert fates[("data-dependent", "True")] == {"in a graph": True, "kernel ran": True}, \
    "data-dependent, fullgraph=True: in the graph, kept by _assert_scalar"

# %% [markdown]
# ## 8. torch's own tools: logs, traces, `opcheck`
#
# **Graph breaks and recompiles:** `TORCH_LOGS="graph_breaks,recompiles"` in the shell, or
# `torch._logging.set_logs(graph_breaks=True, recompiles=True)` in Python (captured here with `labkit.torch_logs`):

# %%
with labkit.torch_logs(graph_breaks=True, recompiles=True) as log:
    labkit.compile_and_compare(sums_positives, x)                  # section 3's graph break
    over_values(repeat_int, (2, 3), dynamic=True)                   # section 4's recompile
text = log.getvalue()
print(re.search(r"Explanation: .*", text).group(0), "\nrecompile reason:", re.findall(r"\d+/\d+: n == \d+", text))

# %% tags=["check"]
#@title Check: the logs name the dynamic shape operator and the guard n == 2, never the schema's int
import warnings
assert "Dynamic shape operator" in text, "the graph_breaks log names the dynamic shape operator"
assert "depends on input Tensor data" in text, "the graph_breaks log says the shape depends on the data"
assert [reason.split(": ")[1] for reason in re.findall(r"\d+/\d+: n == \d+", text)] == ["n == 2"], \
    "the recompiles log gives one reason: the guard n == 2"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    over_values(repeat_int, (2, 3), dynamic=True)
schema_named = "SymInt" in text or any("SymInt" in str(warning.message) for warning in caught)
assert not schema_named, "neither the log nor a warning names the schema's int (2.11.0 to 2.15.0; pytorch#186897)"

# %% [markdown]
# The recompile reason is the guard `n == 2`, not the schema's `int`: no release this lab runs on names it.
#
# **The whole compile, as a report:** `TORCH_TRACE=<dir>` makes torch write a trace of every compile, and
# `tlparse` (`pip install tlparse`) turns it into an HTML report. torch reads the variable when it starts, so
# `labkit.logs.torch_trace_report` runs the program in a new process:

# %% tags=["nbval-ignore-output"]
PROGRAM = """
import torch
positives = torch.library.custom_op("nb07::positives", lambda x: x[x > 0].clone(), mutates_args=(),
                                    schema="(Tensor x) -> Tensor")
positives.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))
torch.compile(lambda x: positives(x).sum() + x.sum(), backend="aot_eager")(torch.randn(6))
"""
trace_report = labkit.logs.torch_trace_report(PROGRAM)     # a few seconds: a new process compiles
print("open this in a browser:", trace_report / "index.html")

# %% [markdown]
# A folder per compile (rank, frame, recompile, attempt): frame 0 is compiled twice (`0_0_0`, `0_0_1`), as the
# first attempt hits the graph break and restarts:

# %%
frames = {folder.name: sorted(f.name for f in folder.iterdir()) for folder in sorted(trace_report.iterdir())
          if folder.is_dir()}
break_files = sorted(trace_report.glob("*/*graph_break*"))
print("compiles:", list(frames))
print(f"{break_files[0].parent.name}:", re.search(r"Explanation: .*", break_files[0].read_text()).group(0))

# %% tags=["check"]
#@title Check: the report has the restart of frame 0, its graph break, and the resumed frame's graph
assert (trace_report / "index.html").exists(), "tlparse wrote index.html"
assert break_files, "the report has a graph-break file"
assert {"-_0_0_0", "-_0_0_1"} <= set(frames), "frame 0 is compiled twice: a first attempt, then a restart"
assert "Dynamic shape operator" in break_files[0].read_text(), "the graph-break file names the dynamic shape operator"
assert any(name.startswith("aot_inference_graph") for names in frames.values() for name in names), \
    "the report has the resumed frame's AOT inference graph"

# %% [markdown]
# **Is the declaration right?** `torch.library.opcheck(op, args)` checks the fake kernel against the real one
# on your sample inputs, but not your `min`/`max` (section 2).
#
# ## Exercise 1: count the graphs
#
# Under `dynamic=True`, `repeat_int` and `repeat_symint` are called with `n = 2, 3, 2, 5` (section 4's
# `over_values`). How many graphs does Dynamo compile for each? Answer a whole number for each key (e.g. `1`).

# %%
my_graphs = {"int": ..., "SymInt": ...}

# %% tags=["check"]
#@title Check: Exercise 1's grader compiles both ops (it holds the answers: open it afterwards)
EXERCISE_N = (2, 3, 2, 5)
truth_graphs = {"int": len(over_values(repeat_int, EXERCISE_N, dynamic=True).graphs),
                "SymInt": len(over_values(repeat_symint, EXERCISE_N, dynamic=True).graphs)}
assert all(isinstance(count, int) and count >= 1 for count in truth_graphs.values()), "each compiles a graph"

# %%
HINTS = {"int": "does a value seen before need a new graph?",
         "SymInt": "under dynamic=True, is n symbolic from the first call?"}
if labkit.exercises.answered(my_graphs, "fill in my_graphs where it says my_graphs = ..., run that cell, then this one"):
    labkit.exercises.check_numbers(my_graphs, truth_graphs, "both counts hold.", HINTS)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# int 3 (a graph per distinct value: 2, 3, 5; the second 2 passes the first graph's guard n == 2);
# SymInt 1 (n is symbolic from the start).
assert truth_graphs["int"] == 3, "int: a graph per distinct value, 3"
assert truth_graphs["SymInt"] == 1, "SymInt: one graph"
assert labkit.exercises.whole_number(4) != truth_graphs["int"], "'a graph per call' (4) is rejected"
assert labkit.exercises.whole_number("three") == truth_graphs["int"], "'three' written as a word is accepted"
assert labkit.exercises.whole_number("1 graph") is None, "an answer that is not a number is refused, not marked wrong"

# %% [markdown]
# ## Exercise 2: error or not?
#
# For each case, does the call return (`"ok"`) or raise (`"error"`)? The check runs all four.
#
# - `"a"`: `doubles_top` compiled with `fullgraph=True`, on five positives (its fake kernel promises at most 4);
# - `"b"`: the same five positives, `doubles_top` not compiled;
# - `"c"`: `branches_on_size` compiled with `fullgraph=False`, on `x`;
# - `"d"`: `repeat_int` with `fullgraph=True` and `recompile_limit=2`, called with `n = 1, 2, 3`.

# %%
my_outcomes = {"a": ..., "b": ..., "c": ..., "d": ...}

# %% tags=["check"]
#@title Check: Exercise 2's grader runs the four calls (it holds the answers: open it afterwards)
def outcome(call):
    return "ok" if labkit.stages.raised(call) is None else "error"

def limited_three():
    with torch._dynamo.config.patch(recompile_limit=2), labkit.torch_logs():
        over_values(repeat_int, (1, 2, 3), fullgraph=True)

five = torch.arange(1.0, 6.0)
torch.compiler.reset()
truth_outcomes = {"a": outcome(lambda: torch.compile(doubles_top, backend="aot_eager", fullgraph=True)(five)),
                  "b": outcome(lambda: doubles_top(five)),
                  "c": outcome(lambda: torch.compile(branches_on_size, backend="aot_eager")(x)),
                  "d": outcome(limited_three)}
OUTCOMES = {"ok": ["returns", "fine", "no error", "works"], "error": ["raises", "fails", "exception", "errors"]}
assert set(truth_outcomes.values()) <= set(OUTCOMES), "each call either returns or raises"

# %%
if labkit.exercises.answered(my_outcomes, "fill in my_outcomes where it says my_outcomes = ..., run that cell, then this one"):
    labkit.exercises.check_each(my_outcomes, truth_outcomes, OUTCOMES, "who checks the size, and when?")

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# a error (the graph's _assert_scalar checks u0 <= 4), b ok (eager trusts the kernel), c ok (by default the graph
# breaks at the op, so `kept` is a real tensor and Python decides the branch), d error (the third value needs a
# third graph; fullgraph=True raises).
assert truth_outcomes == {"a": "error", "b": "ok", "c": "ok", "d": "error"}, "a: error, b: ok, c: ok, d: error"
assert labkit.exercises.wrong_keys(dict.fromkeys("abcd", "ok"), truth_outcomes, OUTCOMES) == ["a", "d"], \
    "'compiling never changes whether a call fails' is rejected"
assert labkit.exercises.wrong_keys(dict.fromkeys("abcd", "error"), truth_outcomes, OUTCOMES) == ["b", "c"], \
    "'a data-dependent size always fails' is rejected"
assert labkit.exercises.wrong_keys({"a": "Raises", "b": "OK", "c": "returns", "d": "error."}, truth_outcomes,
                                   OUTCOMES) == [], "other spellings of the right answers are accepted"
assert labkit.exercises.wrong_keys({"a": "crash", "b": "ok", "c": "ok", "d": "error"}, truth_outcomes,
                                   OUTCOMES) is None, "a word outside the allowed ones is refused, not marked wrong"

# %% [markdown]
# ## In your own project
#
# ```python
# @torch.library.custom_op("mylib::keep_positive", mutates_args=())
# def keep_positive(x: torch.Tensor) -> torch.Tensor:
#     out = x[x > 0].clone()
#     assert out.shape[0] <= 4, "keep_positive returns at most 4 values"   # the bound, checked in the kernel
#     return out
#
# @keep_positive.register_fake
# def _(x):
#     return x.new_empty(torch.library.get_ctx().new_dynamic_size(min=0, max=4))   # plain-int bounds
# ```
#
# Annotate integers `int` and let `custom_op` infer `SymInt`; in a schema you write, write `SymInt`. Run with
# `TORCH_LOGS="graph_breaks,recompiles"` to see where the graph breaks and why it recompiles.
#
# ## What to remember
#
# - A data-dependent output size is **unbacked** (`u0`): no value at compile time, so no guards; what torch
#   assumes about it (`>= min`, `<= max`) is checked by `_assert_scalar` in the graph. Assert your bounds in the
#   kernel too: `opcheck` does not check them.
# - `fullgraph=False`, with default settings: the graph breaks at the op, which runs eagerly
#   (`capture_dynamic_output_shape_ops=True` keeps it in the graph). `fullgraph=True`: the op is captured (kept
#   even unused), and a Python branch on its size fails to compile: use `torch._check` or `torch.cond`.
# - In a schema you write, `int` means one graph per value, even with `dynamic=True`: write `SymInt`.
# - `mark_unbacked` avoids the 0/1 recompiles of `mark_dynamic`, at section 3's price.
# - Past `recompile_limit`, new inputs run eagerly with only a log warning (`fullgraph=False`), or raise
#   (`fullgraph=True`).
#
# ## Questions
#
# 1. Why can torch guard on a backed size like `s77` but only assert on an unbacked `u0`?
# 2. Why did the compiled program stop on six positives when eager returned them, and why should your kernel
#    still assert its bound?
# 3. Under `fullgraph=False`, where does the graph break in `branches_on_size`, by default and with
#    `capture_dynamic_output_shape_ops=True`? Why does its `if` fail to compile under `fullgraph=True`?
# 4. Why does `int n` in a schema compile a graph per value even under `dynamic=True`?
# 5. Why is reaching `recompile_limit` under `fullgraph=False` easy to miss in a real project?
#
# ## Further reading
#
# - Custom operators: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html, and the
#   `torch.library` reference: https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual (data-dependent shapes):
#   https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - Backed vs unbacked SymInts: https://docs.pytorch.org/docs/main/compile/dynamic_shapes_backed_unbacked.html
# - `fullgraph=True` captures data-dependent output shapes: https://github.com/pytorch/pytorch/pull/163123
# - A warning for `int` in a custom op's schema, proposed: https://github.com/pytorch/pytorch/pull/186897 (for
#   https://github.com/pytorch/pytorch/issues/154851)
