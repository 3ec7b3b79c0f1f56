# %% [markdown]
# # 07 · Data-dependent shapes: unbacked sizes, runtime asserts, `int` vs `SymInt`
#
# **What you will learn**
# - to write the fake kernel of an op whose output size depends on the data: `new_dynamic_size(min=, max=)`;
# - what an *unbacked* size (`u0`) is, the `_assert_scalar` checks torch puts in the graph for it, and what they do
#   when your kernel breaks the promise;
# - where `fullgraph` changes what happens to such an op — and to code that branches on its size;
# - why `int` in a schema you write yourself compiles once per value, and `SymInt` does not;
# - `mark_dynamic` vs `mark_unbacked`, and `recompile_limit`: new inputs run eagerly under `fullgraph=False`, an
#   error under `fullgraph=True`;
# - torch's own tools: `TORCH_LOGS="graph_breaks,recompiles"`, `TORCH_TRACE` + `tlparse`, `opcheck` — and what
#   `opcheck` does not check.
#
# **Time:** about 60 minutes. **Before:** 05 (sections 3 and 4). Runs on the CPU. Outputs recorded on torch 2.13.0
# (CPU).
#
# The ops are plain torch — `@torch.library.custom_op` — except section 1's, which labkit declares and prints in
# plain torch; the rest is `torch.compile` and backends of a few lines that record what Dynamo and AOTAutograd hand
# to the compiler.

# %%
# NBVAL_IGNORE_OUTPUT

import torch

import labkit

labkit.setup()     # the widget in section 7 compiles with Inductor
print("torch", torch.__version__)

# %% [markdown]
# Three helpers used throughout: one counts the kernel calls of this notebook's own plain-torch ops, one returns
# the error a call raises (as text), and `labkit.torch_logs` captures torch's log (`torch._logging.set_logs`, the
# Python form of `TORCH_LOGS`) so a cell can check it.

# %%
import re

ran = {}
def count(name):
    ran[name] = ran.get(name, 0) + 1


def error_of(call):
    """Run call(); return what it raised as "ErrorType: message", or None if it returned."""
    try:
        call()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


torch_logs = labkit.torch_logs   # torch._logging.set_logs(**settings), its stderr caught (notebook 00's recipe)

# %% [markdown]
# ## 1. An unbacked size
#
# Notebook 05's op keeps the positive entries of a tensor. How many there are is known only when the kernel runs,
# so its fake kernel cannot compute the output size from the input sizes; it asks torch for a new symbolic size
# with `torch.library.get_ctx().new_dynamic_size()`. labkit declares the same op (`returns="data-dependent"`, a
# kernel that counts its calls in `positives.calls`); `torch_source()` prints it in plain torch, as you would write it:

# %%
positives = labkit.declare(name="nb07::positives", returns="data-dependent")
print(positives.torch_source())

def sums_positives(x):
    return positives(x).sum() + x.sum()

# %% [markdown]
# Compiled with `fullgraph=True` (why: section 3) and a backend that keeps Dynamo's graph; torch prints its code:

# %%
def dynamo_graphs(fn, *args, **compile_options):
    """Compile fn, run it once; return the FX graphs Dynamo produced and the kernel calls."""
    graphs = []
    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    torch.compiler.reset()
    ran.clear()
    positives.calls = 0
    torch.compile(fn, backend=recording, **compile_options)(*args)
    return graphs, {**ran, **({"positives": positives.calls} if positives.calls else {})}

x = torch.tensor([1.0, -2.0, 3.0, -4.0])
graphs, calls = dynamo_graphs(sums_positives, x, fullgraph=True)
print(graphs[0].code.strip())
op_node = next(n for n in graphs[0].graph.nodes if str(n.target) == "nb07.positives.default")   # the op, by name
print("the op's output, as traced:", op_node.meta["example_value"].shape)

# %%
assert len(graphs) == 1, "fullgraph=True: Dynamo compiles one graph"
assert calls == {"positives": 1}, "the op's kernel runs once"
assert op_node.target is torch.ops.nb07.positives.default, \
    "the graph calls the one live OpOverload, also on a re-run (labkit keeps it)"
assert str(op_node.meta["example_value"].shape) == "torch.Size([u0])", "the op's output size is the unbacked u0"
assert "Runtime assertion failed for expression u0 >= 0" in graphs[0].code, "the graph checks u0 >= 0 at run time"
asserts = [n for n in graphs[0].graph.nodes if n.target is torch.ops.aten._assert_scalar.default]
assert asserts, "the graph has _assert_scalar nodes"
assert all(n.is_impure() for n in asserts), "_assert_scalar is side-effectful: never dead code"

# %% [markdown]
# The size is `u0`, an **unbacked** symbolic size. Compare `s77` in notebook 05: a *backed* size comes from an
# input, so torch knows its value for the example it compiles with (a "hint") and can *guard* on it — check it
# before running the graph, and recompile if the check fails. `u0` exists only after the op has run, so there is
# nothing to guard on. What torch assumes about it (a size is `>= 0`) becomes a **runtime assert** in the graph:
# `sym_size` reads the size after the kernel has run and `_assert_scalar` checks it. `_assert_scalar` is
# side-effectful, so dead-code elimination never removes it (notebook 05 §4: it keeps an unused op alive).
#
# ## 2. Promises: `min=` and `max=`
#
# `new_dynamic_size(min=0, max=None)` takes bounds you know: a filter never returns more than its input, a router
# never sends more than its capacity. They become asserts too. Here a fake kernel promises **at most 4** — and the
# kernel forgets to cap its output:

# %%
@torch.library.custom_op("nb07::top_positives", mutates_args=())
def top_positives(x: torch.Tensor) -> torch.Tensor:
    count("top_positives")
    return x[x > 0].clone()                  # the bug: meant to keep at most 4

@top_positives.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size(min=0, max=4))

def doubles_top(x):
    return top_positives(x) * 2

compiled_top = torch.compile(doubles_top, backend="aot_eager", fullgraph=True)
three, six = torch.tensor([1.0, -2.0, 3.0, 4.0]), torch.arange(1.0, 7.0)
torch.compiler.reset()
print("3 positives, compiled:", compiled_top(three))
print("6 positives, eager:   ", doubles_top(six))
broken_promise = error_of(lambda: compiled_top(six))
print("6 positives, compiled:", broken_promise)

# %%
assert torch.equal(compiled_top(three), doubles_top(three)), "3 positives: compiled and eager agree"
assert doubles_top(six).shape == (6,), "eager does not check the promise: it returns all six values"
assert broken_promise == "RuntimeError: Runtime assertion failed for expression u0 <= 4 on node 'le'", \
    "compiled, the graph's runtime assert u0 <= 4 stops the call"

# %% [markdown]
# Eager mode trusts the kernel and returns six values; the compiled graph checks the promise and stops. Do not
# count on that check: `new_dynamic_size`'s docstring calls wrong bounds *undefined behaviour* under
# `torch.compile`, and asks you to assert the bound in the kernel itself. Two more things the cells below check:
# `opcheck` runs the op on the same six positives and reports **success** — it compares the fake kernel with the
# real one, not the real size with your bounds; and bounds must be plain ints: `max=x.shape[0]` fails as soon as
# the input size is symbolic (`dynamic=True`).

# %%
from torch._library.fake_impl import FakeImplCtx        # the class of get_ctx() inside a fake kernel

assert "undefined behavior" in FakeImplCtx.new_dynamic_size.__doc__, \
    "new_dynamic_size's docstring calls wrong bounds undefined behaviour"
assert "add an assertion in the CPU/CUDA/etc" in FakeImplCtx.new_dynamic_size.__doc__, \
    "new_dynamic_size's docstring asks for an assert of the bound in the kernel"
assert set(torch.library.opcheck(top_positives, (six,)).values()) == {"SUCCESS"}, \
    "opcheck passes on six positives: it does not check max=4"

# %% [markdown]
# And a bound read from the input's size is refused as soon as that size is symbolic:

# %%
bounded_by_input = torch.library.custom_op("nb07::bounded_by_input", lambda x: x[x > 0].clone(), mutates_args=(),
                                           schema="(Tensor x) -> Tensor")
bounded_by_input.register_fake(   # under dynamic=True, x.shape[0] is a SymInt
    lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size(max=x.shape[0])))

torch.compiler.reset()
symbolic_bound = error_of(lambda: torch.compile(bounded_by_input, backend="aot_eager", fullgraph=True,
                                                      dynamic=True)(x))
print(re.search(r"expected min and max to be .*? SymInt", symbolic_bound).group(0))
assert "expected min and max to be statically known ints but got SymInt" in symbolic_bound, \
    "a symbolic bound (max=x.shape[0] under dynamic=True) is refused"

# %% [markdown]
# ## 3. Where `fullgraph` changes behaviour
#
# `torch.compile(fullgraph=True)` turns on `capture_dynamic_output_shape_ops`; without it Dynamo cannot put an op
# with an unbacked output size in a graph (notebook 05 §4). Under `fullgraph=False` the graph breaks at the op: its
# kernel runs eagerly, and the code after it (the two sums) is the only graph. Under `fullgraph=True` the op is in
# the graph — and, unused, it still runs (its size feeds `_assert_scalar`):

# %%
placement = {}
for fullgraph in (False, True):
    graphs, calls = dynamo_graphs(sums_positives, x, fullgraph=fullgraph)
    in_a_graph = any(str(n.target) == "nb07.positives.default" for g in graphs for n in g.graph.nodes)
    placement[fullgraph] = (len(graphs), in_a_graph, calls["positives"])
    print(f"fullgraph={fullgraph!s:<5} graphs: {len(graphs)}  op in a graph: {in_a_graph}  kernel calls: {calls}")
assert placement == {False: (1, False, 1), True: (1, True, 1)}, \
    "one graph either way; the op is in it only under fullgraph=True; its kernel runs once"
assert "capture_dynamic_output_shape_ops" in torch.compile.__doc__, \
    "torch.compile's docstring says fullgraph=True sets capture_dynamic_output_shape_ops"

def discards(x):
    positives(x)                                    # result unused
    return x + 1

torch.compiler.reset()
positives.calls = 0
torch.compile(discards, backend="aot_eager", fullgraph=True)(x)
print("unused, fullgraph=True, kernel calls:", positives.calls)
assert positives.calls == 1, "fullgraph=True: the unused op's kernel still runs once"

# %% [markdown]
# Is `_assert_scalar` really what keeps it? `torch._dynamo.config.do_not_emit_runtime_asserts = True` (or
# `TORCH_DYNAMO_DO_NOT_EMIT_RUNTIME_ASSERTS=1` in the shell) tells Dynamo to keep its assumptions about `u0` but
# put no runtime assert in the graph. Then nothing reads the unused op's size, and it is removed like any unused
# op (notebook 05 §4 shows the DCE log): its kernel does not run:

# %%
if torch.__version__.startswith("2.13."):
    assert hasattr(torch._dynamo.config, "do_not_emit_runtime_asserts"), \
        "torch 2.13 has torch._dynamo.config.do_not_emit_runtime_asserts"
if hasattr(torch._dynamo.config, "do_not_emit_runtime_asserts"):
    torch.compiler.reset()
    positives.calls = 0
    with torch._dynamo.config.patch(do_not_emit_runtime_asserts=True):
        torch.compile(discards, backend="aot_eager", fullgraph=True)(x)
    print("unused, fullgraph=True, no runtime asserts, kernel calls:", positives.calls)
    assert positives.calls == 0, "no _assert_scalar: the unused op is dead code, removed, and its kernel never runs"
else:
    print("this torch has no torch._dynamo.config.do_not_emit_runtime_asserts")

# %% [markdown]
# The size itself follows the same rule. Python code that *branches* on it asks torch for a value it does not
# have. Under `fullgraph=True` there is no way out, and compiling fails. Under `fullgraph=False`, with the default
# settings, the question never comes up: the graph already broke **at the op**, so `kept` is a real tensor when
# the `if` runs, and Python decides:

# %%
def branches_on_size(x):
    kept = positives(x)
    if kept.shape[0] > 2:                  # a Python `if` on an unbacked size
        return kept.sum()
    return kept.mean()

torch.compiler.reset()
with_break = torch.compile(branches_on_size, backend="aot_eager")(x)
torch.compiler.reset()
no_way_out = error_of(lambda: torch.compile(branches_on_size, backend="aot_eager", fullgraph=True)(x))
print("fullgraph=False", with_break, "\nfullgraph=True ", no_way_out.splitlines()[0])

# %%
assert torch.equal(with_break, branches_on_size(x)), "fullgraph=False: compiled gives eager's answer, Python decides"
assert no_way_out.startswith("UserError"), "fullgraph=True: branching on u0 is a UserError"
assert "Could not guard on data-dependent expression u0 > 2" in no_way_out, \
    "fullgraph=True: torch cannot guard on u0 > 2"
assert "torch._check" in no_way_out, "the error suggests torch._check"

# %% [markdown]
# The break moves to the `if` only when Dynamo may capture the op under `fullgraph=False`:
# `torch._dynamo.config.capture_dynamic_output_shape_ops=True`. The recording backend shows where each break lands
# — whether the op and the `if`'s comparison (`gt`) are in a graph:

# %%
import operator

def where_it_breaks():
    """Record branches_on_size's Dynamo graphs (fullgraph=False); return, per graph, (op in it, comparison in it)."""
    graphs, calls = dynamo_graphs(branches_on_size, x)
    assert calls == {"positives": 1}, "the op's kernel runs once"
    return [(any(str(n.target) == "nb07.positives.default" for n in g.graph.nodes),
             any(n.target is operator.gt for n in g.graph.nodes)) for g in graphs]

breaks = {"default": where_it_breaks()}
with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
    breaks["capture_dynamic_output_shape_ops=True"] = where_it_breaks()
for setting, per_graph in breaks.items():
    print(f"{setting:<38} graphs (op in it, `if` comparison in it): {per_graph}")
assert breaks["default"] == [(False, False)], "by default the graph breaks at the op: eager, then the mean's graph"
assert breaks["capture_dynamic_output_shape_ops=True"] == [(True, True), (False, False)], \
    "with capture_dynamic_output_shape_ops=True the op is captured and the graph breaks at the `if`"

# %% [markdown]
# The error suggests `torch._check*()`: for when *you* know the answer (your check becomes another runtime assert).
# When the answer really depends on the data, keep the branch out of Python: `torch.cond` puts both branches in the
# graph and picks one at run time (its docstring calls it a *prototype* feature):

# %%
def conds_on_size(x):
    kept = positives(x)
    return torch.cond(kept.shape[0] > 2, lambda t: t.sum(), lambda t: t.mean(), (kept,))

torch.compiler.reset()
with_cond = torch.compile(conds_on_size, backend="aot_eager", fullgraph=True)
for data in (x, torch.tensor([1.0, 2.0, 3.0, -4.0])):
    print(data.tolist(), "->", with_cond(data).item())
    assert torch.equal(with_cond(data), branches_on_size(data)), "torch.cond picks the branch Python would"
assert "prototype feature" in torch.cond.__doc__, "torch.cond's docstring calls it a prototype feature"

# %% [markdown]
# ## 4. `int` vs `SymInt` in a schema you write
#
# `@torch.library.custom_op` infers the schema from the type annotations, and it turns an `int` annotation into
# `SymInt` — an integer that may be symbolic. When you write the schema yourself (`schema=` here, or
# `torch.library.define`), you choose, and `int` means *a concrete Python int*: a symbolic value reaching it must
# be made concrete, so torch guards on its value. Three ops that repeat a tensor `n` times:

# %%
def repeat(x: torch.Tensor, n: int) -> torch.Tensor:
    count("repeat")
    return x.repeat(n)

repeat_inferred = torch.library.custom_op("nb07::repeat_inferred", repeat, mutates_args=())   # from the annotations
repeat_int = torch.library.custom_op("nb07::repeat_int", repeat, mutates_args=(), schema="(Tensor x, int n) -> Tensor")
repeat_symint = torch.library.custom_op("nb07::repeat_symint", repeat, mutates_args=(),
                                        schema="(Tensor x, SymInt n) -> Tensor")
for op in (repeat_inferred, repeat_int, repeat_symint):
    op.register_fake(lambda x, n: x.new_empty(x.shape[0] * n))
schemas = {name: str(getattr(torch.ops.nb07, name).default._schema)
           for name in ("repeat_inferred", "repeat_int", "repeat_symint")}
print("\n".join(schemas.values()))

# %%
assert schemas["repeat_inferred"] == "nb07::repeat_inferred(Tensor x, SymInt n) -> Tensor", \
    "custom_op infers SymInt from the annotation `n: int`"
assert schemas["repeat_int"] == "nb07::repeat_int(Tensor x, int n) -> Tensor", "a schema you write keeps your `int`"

# %% [markdown]
# Call each, compiled, with `n = 2, 3, 4, 5`, and count the graphs Dynamo compiles — under the default
# `dynamic=None` and under `dynamic=True`:

# %%
def graphs_for(op, values, dynamic):
    """How many graphs Dynamo compiles for op(x, n) + 1 over the values of n."""
    graphs = []
    torch.compiler.reset()
    f = torch.compile(lambda x, n: op(x, n) + 1, backend=lambda gm, example_inputs: graphs.append(gm) or gm.forward,
                      dynamic=dynamic)
    for n in values:
        assert torch.equal(f(torch.ones(2), n), torch.full((2 * n,), 2.0)), f"op(x, {n}) + 1 is right, compiled"
    return len(graphs)

recompiles = {(name, dynamic): graphs_for(op, (2, 3, 4, 5), dynamic)
              for name, op in (("repeat_int", repeat_int), ("repeat_symint", repeat_symint))
              for dynamic in (None, True)}
for (name, dynamic), count_of_graphs in recompiles.items():
    print(f"{name:<18} dynamic={dynamic!s:<5} graphs for n = 2, 3, 4, 5: {count_of_graphs}")

# %%
assert recompiles == {("repeat_int", None): 4, ("repeat_int", True): 4,
                      ("repeat_symint", None): 2, ("repeat_symint", True): 1}, \
    "int: a graph per value, even under dynamic=True; SymInt: 2 graphs (dynamic=None), 1 (dynamic=True)"

# %% [markdown]
# With `SymInt`, `n` behaves like any integer input: static first, symbolic after the first change (`dynamic=None`,
# 2 graphs), symbolic from the start (`dynamic=True`, 1 graph). With `int`, every new value is a new graph, even
# under `dynamic=True` — and nothing names the schema as the cause (section 8 reads the recompile log).
#
# %% [markdown]
# ## 5. `mark_dynamic` vs `mark_unbacked`
#
# You can also make an *input's* size symbolic for one tensor, before the first compile.
# `torch._dynamo.mark_dynamic(t, 0)` makes dimension 0 a backed size; `mark_unbacked` makes it unbacked, like `u0`
# above. The difference shows on sizes 0 and 1: torch *specialises* backed sizes on them (it assumes a symbolic size
# is at least 2 and guards on it), so a size-1 or size-0 input compiles a graph of its own. An unbacked size has no
# hint to guard on: one graph serves them all. On torch 2.13 `mark_unbacked` lives in `torch._dynamo.decorators`
# (not re-exported as `torch._dynamo.mark_unbacked`); the cell takes it from wherever your torch has it:

# %%
mark_unbacked = getattr(torch._dynamo, "mark_unbacked", None) or torch._dynamo.decorators.mark_unbacked

def graphs_per_call(mark):
    """Graphs compiled at each call of x * 2 + 1 for sizes 4, 6, 1, 0 (the first input marked), and the size the
    first graph was built for."""
    graphs, per_call = [], []
    torch.compiler.reset()
    f = torch.compile(lambda x: x * 2 + 1, backend=lambda gm, example_inputs: graphs.append(gm) or gm.forward)
    first = torch.ones(4)
    mark(first, 0)
    for t in (first, torch.ones(6), torch.ones(1), torch.ones(0)):
        before = len(graphs)
        assert torch.equal(f(t), t * 2 + 1), f"size {t.shape[0]}: the compiled x * 2 + 1 is right"
        per_call.append(len(graphs) - before)
    traced = [n.meta["example_value"] for n in graphs[0].graph.nodes if n.op == "placeholder"]
    return per_call, str(next(v.shape for v in traced if isinstance(v, torch.Tensor)))

marks = {"mark_dynamic": graphs_per_call(torch._dynamo.mark_dynamic), "mark_unbacked": graphs_per_call(mark_unbacked)}
for name, (per_call, size) in marks.items():
    print(f"{name:<14} graphs per call (sizes 4, 6, 1, 0): {per_call}  first graph built for {size}")

# %%
assert marks["mark_dynamic"][0] == [1, 0, 1, 1], "mark_dynamic: sizes 1 and 0 each compile a graph of their own"
assert marks["mark_dynamic"][1].startswith("torch.Size([s"), "mark_dynamic: the first graph has a backed size s…"
assert marks["mark_unbacked"] == ([1, 0, 0, 0], "torch.Size([u0])"), \
    "mark_unbacked: one graph, for the unbacked size u0, serves sizes 4, 6, 1 and 0"
if torch.__version__.startswith("2.13."):
    assert not hasattr(torch._dynamo, "mark_unbacked"), "torch 2.13 does not re-export torch._dynamo.mark_unbacked"

unbacked_input = torch.ones(4)                        # section 3's price, for an unbacked input size
mark_unbacked(unbacked_input, 0)
torch.compiler.reset()
branches = torch.compile(lambda t: t.sum() if t.shape[0] > 2 else t.mean(), backend="eager", fullgraph=True)
assert "Could not guard on data-dependent expression u0 > 2" in error_of(lambda: branches(unbacked_input)), \
    "fullgraph=True: branching on an unbacked input size fails to compile"

# %% [markdown]
# The price of unbacked is section 3's: code that branches on the size cannot compile under `fullgraph=True`
# (the cell checks that too).
#
# ## 6. `recompile_limit`: eager for new inputs, or an error — by `fullgraph`
#
# Every recompile in section 4 is a new graph for the same frame, and torch stops at
# `torch._dynamo.config.recompile_limit` (8 by default). Past it, under `fullgraph=False`, an input that no
# compiled graph's guards accept runs the frame **eagerly**; under `fullgraph=True` it **raises**. The
# `int`-schema op with the limit set to 2, four values of `n`, and a backend that counts the calls that went
# through a compiled graph:

# %%
def four_values(fullgraph):
    """Call repeat_int with n = 1..4 under recompile_limit=2: the outcome, calls through a graph, kernel calls."""
    compiled_runs = []
    def counting(gm, example_inputs):
        return lambda *args: compiled_runs.append(1) or gm.forward(*args)
    torch.compiler.reset()
    ran.clear()
    f = torch.compile(lambda x, n: repeat_int(x, n) + 1, backend=counting, fullgraph=fullgraph)
    with torch._dynamo.config.patch(recompile_limit=2), torch_logs() as warning_text:
        try:
            for n in (1, 2, 3, 4):
                assert torch.equal(f(torch.ones(2), n), torch.full((2 * n,), 2.0)), f"n = {n}: the answer is right"
        except torch._dynamo.exc.FailOnRecompileLimitHit as error:
            return f"raised {type(error).__name__}: {error}", len(compiled_runs), ran.get("repeat", 0)
    warned = "hit config.recompile_limit (2)" in warning_text.getvalue()
    return f"all four right; warned: {warned}", len(compiled_runs), ran.get("repeat", 0)

# %% [markdown]
# The cell checks the default limit (8), then runs `four_values` under both `fullgraph` settings:

# %%
assert torch._dynamo.config.recompile_limit == 8, "recompile_limit is 8 by default"
limit = {fullgraph: four_values(fullgraph) for fullgraph in (False, True)}
for fullgraph, (outcome, compiled, kernel) in limit.items():
    print(f"fullgraph={fullgraph!s:<5} {outcome}\n{'':<16}calls through a compiled graph: {compiled}, "
          f"kernel calls: {kernel}")

# %%
assert limit[False] == ("all four right; warned: True", 2, 4), \
    "fullgraph=False: right answers and a warning; calls 3 and 4 ran eagerly"
assert limit[True][0].startswith("raised FailOnRecompileLimitHit"), \
    "fullgraph=True: the third value raises FailOnRecompileLimitHit"
assert limit[True][1:] == (2, 2), "fullgraph=True: two calls went through a graph, two kernel calls, before the raise"

# %% [markdown]
# Under `fullgraph=False` nothing fails: the warning goes to the log, the answers stay right, and the program
# silently stops being compiled for every new value. The frame does not turn eager for good, though: the graphs
# already compiled keep serving the inputs their guards accept. After the limit, `n = 1` and `n = 2` (compiled
# before) go through a graph again; `n = 5` (new) runs eagerly:

# %%
def through_a_graph_after_the_limit():
    """recompile_limit=2; repeat_int with n = 1, 2, 3, 4, then 1, 2, 5: did each call go through a compiled graph?"""
    compiled_runs = []
    def counting(gm, example_inputs):
        return lambda *args: compiled_runs.append(1) or gm.forward(*args)
    torch.compiler.reset()
    f = torch.compile(lambda x, n: repeat_int(x, n) + 1, backend=counting)
    through = []
    with torch._dynamo.config.patch(recompile_limit=2), torch_logs():
        for n in (1, 2, 3, 4, 1, 2, 5):
            before = len(compiled_runs)
            assert torch.equal(f(torch.ones(2), n), torch.full((2 * n,), 2.0)), f"n = {n}: the answer is right"
            through.append((n, len(compiled_runs) > before))
    return through

after_limit = through_a_graph_after_the_limit()
print("(n, went through a compiled graph):", after_limit)
assert after_limit[:4] == [(1, True), (2, True), (3, False), (4, False)], "the limit is hit at n = 3"
assert after_limit[4:] == [(1, True), (2, True), (5, False)], \
    "after the limit, the compiled graphs still serve n = 1 and 2; a new n = 5 runs eagerly"

# %% [markdown]
# Declare `SymInt` and the limit is never reached (section 4: one or two graphs).

# %% [markdown]
# ## 7. Flip it live
#
# Notebook 05's dynamic-mode widget has two more controls for this notebook: **output size** —
# `shape-following` (the fake kernel returns `empty_like(x)`) or `data-dependent` (it asks for
# `ctx.new_dynamic_size()`) — and **fullgraph**. Flip them with the dynamic mode and the shapes: does the op's
# kernel run inside a graph, eagerly at a graph break, or not at all? How many graphs are compiled?

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
assert fates[("shape-following", "False")] == {"in a graph": True, "kernel ran": False}, \
    "shape-following, fullgraph=False: traced, then removed"
assert fates[("shape-following", "True")] == {"in a graph": True, "kernel ran": False}, \
    "shape-following, fullgraph=True: traced, then removed"
assert fates[("data-dependent", "False")] == {"in a graph": False, "kernel ran": True}, \
    "data-dependent, fullgraph=False: a graph break, the kernel runs eagerly"
assert fates[("data-dependent", "True")] == {"in a graph": True, "kernel ran": True}, \
    "data-dependent, fullgraph=True: in the graph, kept by _assert_scalar"

# %% [markdown]
# ## 8. In your own project
#
# **Graph breaks and recompiles** — `TORCH_LOGS="graph_breaks,recompiles"` in the shell, or
# `torch._logging.set_logs(graph_breaks=True, recompiles=True)` in Python (captured here with `torch_logs`):

# %%
import warnings

torch.compiler.reset()
with warnings.catch_warnings(record=True) as caught, torch_logs(graph_breaks=True, recompiles=True) as log:
    warnings.simplefilter("always")
    torch.compile(sums_positives, backend="eager")(x)                  # section 3's graph break
    graphs_for(repeat_int, (2, 3), dynamic=True)                        # section 4's recompile
text = log.getvalue()
print(re.search(r"Explanation: .*", text).group(0), "\nrecompile reason:", re.findall(r"\d+/\d+: n == \d+", text))

# %%
assert "Dynamic shape operator" in text, "the graph_breaks log names the dynamic shape operator"
assert "depends on input Tensor data" in text, "the graph_breaks log says the shape depends on the data"
assert [reason.split(": ")[1] for reason in re.findall(r"\d+/\d+: n == \d+", text)] == ["n == 2"], \
    "the recompiles log gives one reason: the guard n == 2"
schema_named = "SymInt" in text or any("SymInt" in str(warning.message) for warning in caught)
assert not schema_named, "neither the log nor a warning names the schema's int (2.11.0 to 2.15.0; pytorch#186897)"

# %% [markdown]
# The recompile reason is the guard `n == 2`, pointing at your call — not at the schema's `int`.
# https://github.com/pytorch/pytorch/pull/186897 proposes a warning that names it; torch 2.11.0 to 2.15.0 have
# none, as the cell checks (it will fail on the first torch that has one).
#
# **The whole compile, as a report** — `TORCH_TRACE=<dir>` makes torch write a structured trace of every compile
# (graphs, graph breaks, guards, recompiles). torch reads that variable when it starts, so the cells below run the
# program in a fresh Python process; `tlparse` (`pip install tlparse`) turns the trace into an HTML report with a
# folder per compile id. Frame 0 is compiled twice (`0_0_0`, `0_0_1`): the first attempt hits the graph break and
# restarts. Open `index.html` in a browser; here the cells list the report and read the graph break out of it:

# %%
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

PROGRAM = """
import torch
positives = torch.library.custom_op("nb07::positives", lambda x: x[x > 0].clone(), mutates_args=(),
                                    schema="(Tensor x) -> Tensor")
positives.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))
torch.compile(lambda x: positives(x).sum() + x.sum(), backend="aot_eager")(torch.randn(6))
"""

tlparse = shutil.which("tlparse") or shutil.which("tlparse", path=os.path.dirname(sys.executable))
if tlparse is None:                   # e.g. on Colab: install it next to this Python
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "tlparse"], check=True)
    tlparse = shutil.which("tlparse", path=os.path.dirname(sys.executable)) or shutil.which("tlparse")

# %% [markdown]
# The program runs with `TORCH_TRACE` set, `tlparse` turns its log into the report, and the cell reads it:

# %%
work = pathlib.Path(tempfile.mkdtemp())
(work / "program.py").write_text(PROGRAM)
subprocess.run([sys.executable, "program.py"], cwd=work, env={**os.environ, "TORCH_TRACE": str(work / "trace")},
               check=True, capture_output=True)
trace_file = next((work / "trace").glob("*.log"))      # one log per process
subprocess.run([tlparse, str(trace_file), "-o", str(work / "report"), "--overwrite", "--no-browser",
                "--plain-text"], check=True, capture_output=True)

report = work / "report"
frames = {folder.name: sorted(f.name for f in folder.iterdir())
          for folder in sorted(report.iterdir()) if folder.is_dir()}
break_files = [report / frame / name for frame, names in frames.items() for name in names if "graph_break" in name]
print("report: index.html, and a folder per compile (rank_frame_recompile_attempt):", list(frames))
print(f"{break_files[0].parent.name}/{break_files[0].name}:",
      re.search(r"Explanation: .*", break_files[0].read_text()).group(0))

# %%
assert (report / "index.html").exists(), "tlparse wrote index.html"
assert break_files, "the report has a graph-break file"
assert {"-_0_0_0", "-_0_0_1"} <= set(frames), "frame 0 is compiled twice: a first attempt, then a restart"
assert "Dynamic shape operator" in break_files[0].read_text(), "the graph-break file names the dynamic shape operator"
assert any(name.startswith("aot_inference_graph") for names in frames.values() for name in names), \
    "the report has the resumed frame's AOT inference graph"

# %% [markdown]
# **Is the declaration right?** `torch.library.opcheck(op, args)` (section 2) checks the fake kernel against the
# real one on your sample inputs — shapes, dtypes, the schema — but not your `min`/`max`: assert those in the
# kernel.
#
# ## Exercise 1: count the graphs
#
# Under `dynamic=True`, `repeat_int` and `repeat_symint` are called with `n = 2, 3, 2, 5`. How many graphs does
# Dynamo compile for each? Predict, then run the check.

# %%
my_graphs = {"int": ..., "SymInt": ...}

# %%
if all(labkit.exercises.answered(v) for v in my_graphs.values()):
    truth = {"int": graphs_for(repeat_int, (2, 3, 2, 5), True), "SymInt": graphs_for(repeat_symint, (2, 3, 2, 5), True)}
    labkit.exercises.check(my_graphs == truth, f"int: {truth['int']}, SymInt: {truth['SymInt']}.",
                           "an int argument gets a guard on its value; does a value seen before need a new graph?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: int 3 (a graph per distinct value: 2, 3, 5 — the second 2 passes the first graph's guard n == 2);
# SymInt 1 (n is symbolic from the start).
assert graphs_for(repeat_int, (2, 3, 2, 5), True) == 3, "int: a graph per distinct value, 3"
assert graphs_for(repeat_symint, (2, 3, 2, 5), True) == 1, "SymInt: one graph"
print("solution checked")

# %% [markdown]
# ## Exercise 2: error or not?
#
# For each case predict `"ok"` (the call returns) or `"error"` (it raises). The check runs all four.
#
# - `"a"`: `doubles_top` compiled with `fullgraph=True`, on five positives (its fake kernel promises at most 4);
# - `"b"`: the same five positives, `doubles_top` not compiled;
# - `"c"`: `branches_on_size` compiled with `fullgraph=False`, on `x`;
# - `"d"`: `repeat_int` in a `fullgraph=True` frame, `recompile_limit=2`, called with `n = 1, 2, 3`.

# %%
my_outcomes = {"a": ..., "b": ..., "c": ..., "d": ...}

# %%
def outcome(call):
    return "ok" if error_of(call) is None else "error"

def limited_three():
    torch.compiler.reset()
    f = torch.compile(lambda x, n: repeat_int(x, n) + 1, backend="eager", fullgraph=True)
    with torch._dynamo.config.patch(recompile_limit=2), torch_logs():
        for n in (1, 2, 3):
            f(torch.ones(2), n)

def error_or_not():
    five = torch.arange(1.0, 6.0)
    torch.compiler.reset()
    return {"a": outcome(lambda: torch.compile(doubles_top, backend="aot_eager", fullgraph=True)(five)),
            "b": outcome(lambda: doubles_top(five)),
            "c": outcome(lambda: torch.compile(branches_on_size, backend="aot_eager")(x)),
            "d": outcome(limited_three)}

# %%
if all(labkit.exercises.answered(v) for v in my_outcomes.values()):
    truth = error_or_not()
    wrong = sorted(k for k in truth if my_outcomes[k] != truth[k])
    labkit.exercises.check(not wrong, "all four right.",
                           f"look again at {', '.join(wrong)}: who checks the size, and when?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: a error (the graph's _assert_scalar checks u0 <= 4), b ok (eager trusts the kernel), c ok (by default
# the graph breaks at the op, so `kept` is a real tensor and Python decides the branch), d error (the third value
# needs a third graph; fullgraph=True raises).
assert error_or_not() == {"a": "error", "b": "ok", "c": "ok", "d": "error"}, "a: error, b: ok, c: ok, d: error"
print("solution checked")

# %% [markdown]
# ## What to remember
#
# - A data-dependent output size is an **unbacked** SymInt (`u0`): no value at compile time, so no guards — what
#   torch assumes about it (`>= min`, `<= max`) is checked by `_assert_scalar` nodes in the graph. Give
#   `new_dynamic_size` plain-int bounds you also assert in the kernel; `opcheck` does not check them.
# - `fullgraph=False` (default settings): the graph breaks at the op, which runs eagerly, so Python branches on a
#   real size; with `capture_dynamic_output_shape_ops=True` the op is captured and the break moves to the `if`.
#   `fullgraph=True`: the op is captured (an unused one is kept by its `_assert_scalar`), and a Python branch on
#   its size is a compile error — use `torch._check` or `torch.cond`.
# - In a schema you write, `int` guards on each value: one graph per value, even with `dynamic=True`. Write
#   `SymInt` (what `custom_op` infers from an `int` annotation).
# - `mark_unbacked` avoids the 0/1 recompiles of `mark_dynamic`, at section 3's price.
# - Past `recompile_limit` (8), an input no compiled graph accepts runs the frame eagerly, with a warning in the
#   log, while the graphs already compiled keep serving theirs (`fullgraph=False`); or the call raises
#   (`fullgraph=True`).
#
# ## Questionnaire
#
# 1. Why can torch guard on a backed size like `s77` but only assert on an unbacked `u0`?
# 2. Why did the compiled program stop on six positives when the eager one returned them — and why should your
#    kernel still assert its bound?
# 3. Under `fullgraph=False`, where does the graph break in `branches_on_size` — by default, and with
#    `capture_dynamic_output_shape_ops=True`? Why does its `if` fail to compile under `fullgraph=True`?
# 4. Why does `int n` in a schema compile a graph per value even under `dynamic=True`?
# 5. Why is reaching `recompile_limit` under `fullgraph=False` easy to miss in a real project?
#
# ## Further reading
#
# - PyTorch custom operators landing page: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - `torch.library` reference (`custom_op`, `register_fake`, `get_ctx`, `opcheck`):
#   https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual (data-dependent shapes, `new_dynamic_size`):
#   https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - Dynamic shapes: https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html, and backed vs unbacked
#   SymInts: https://docs.pytorch.org/docs/main/compile/dynamic_shapes_backed_unbacked.html
# - `fullgraph=True` captures data-dependent output shapes: https://github.com/pytorch/pytorch/pull/163123
# - A warning for `int` in a custom op's schema: https://github.com/pytorch/pytorch/pull/186897 (for
#   https://github.com/pytorch/pytorch/issues/154851)
