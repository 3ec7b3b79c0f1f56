# %% [markdown]
# # 06 · Field guide: a checklist that runs, myths vs facts, and a capstone
#
# Three custom ops, three bugs: one stops the compile, one drops an update silently, one loses every log line —
# and no checker finds the third. This notebook turns the lab into a checklist you run on your own ops.
#
# **What you will learn**
# - a checklist for every custom op you ship, each item proved on *your* torch;
# - which claims in circulation hold, computed live, among them where a data-dependent op breaks the graph;
# - to fix a small model with three buggy ops using `labkit.audit`, then in plain torch with `opcheck`;
# - to run `labkit doctor` on a module of your own, as your CI would, and read what its `ok` does not promise.
#
# **Time:** about 45 minutes. **Before:** 00–05 (or at least 00, 02 and 05).

# %% tags=["nbval-ignore-output"]
import contextlib
import io

import torch

import labkit
from labkit import audit

labkit.setup()
dropped = labkit.drop_namespace("nb06")

# %% [markdown]
# ## 1. The checklist, run
#
# `labkit.audit(op, *sample_inputs)` runs what torch.compile cares about, in this order:
# <!-- BEGIN audit-checks: generated from labkit.auditing.registry.CHECKS by --facts: do not edit -->
#
# 1. `declaration`: the arguments a real call writes against the ones its schema declares written
# 2. `memory`: each output's memory against each input's (bytes, not storages) where the schema declares no alias
# 3. `opcheck`: every torch.library.opcheck test
# 4. `compile`: eager against torch.compile, aot_eager and Inductor, static and dynamic shapes, on a program that
#    discards the op's result, with the compile caches bypassed
# 5. `aliasing`: a clone of a written argument passed in another argument's place, under Inductor
#
# <!-- END audit-checks -->
# Each finding says what is wrong, why it matters, and the fix.
#
# **☐ Every argument the kernel writes is in `mutates_args`.**

# %%
writes_quietly = labkit.declare(name="nb06::writes_quietly", writes=("x",), returns="none")
report = audit(writes_quietly, torch.randn(4))
print("\n".join(str(finding) for finding in report.findings))

# %% tags=["check"]
#@title Check: the declaration check, opcheck and the compile comparison each find the undeclared write
assert {"declaration", "opcheck", "compile"} <= report.kinds(), \
    "an undeclared write is found by the declaration check, by opcheck and by the compile comparison"
assert any(f.fix == "add 'x' to mutates_args" for f in report.findings), \
    "one finding's fix says: add 'x' to mutates_args"

# %% [markdown]
# **☐ Every op that returns a tensor or an `int` (or returns nothing and writes nothing) has a fake kernel.** torch
# supplies one for an op that declares a write and returns nothing, or (torch ≥ 2.13) is tagged `Tag.inplace` or
# `Tag.out` (02).

# %%
no_fake = labkit.declare(name="nb06::no_fake", returns="fresh", fake=False)
missing = audit(no_fake, torch.randn(4))
print([f.check for f in missing.findings])

# %% tags=["check"]
#@title Check: opcheck's test_faketensor finds the missing fake kernel; an op returning an int needs one too
assert "opcheck:test_faketensor" in [f.check for f in missing.findings], \
    "opcheck's test_faketensor finds the missing fake kernel"

@torch.library.custom_op("nb06::count_no_fake", mutates_args=())
def count_no_fake(x: torch.Tensor) -> int:
    return int((x > 0).sum())

assert labkit.compile_and_compare(lambda x: x * count_no_fake(x), torch.ones(3)).error.kind == \
    "missing_fake", "an op returning an int needs a fake kernel too"

# %% [markdown]
# **☐ No output is an input, a view of one, or a new tensor over its memory** (`torch.from_numpy(x.numpy())`: 03; an
# input may come back from an op
# tagged `Tag.inplace`, or an `out=` argument from one tagged `Tag.out`: notebooks 02, 03, 09).

# %%
returns_input = labkit.declare(name="nb06::returns_input", writes=("x",), mutates_args=("x",), returns="input")
aliasing = audit(returns_input, torch.randn(4))
print(aliasing.findings[0].problem[:120], "…")

# %% tags=["check"]
#@title Check: the only finding for an op returning its input comes from running it eagerly
assert aliasing.kinds() == {"eager"}, \
    "audit's only finding for an op that returns its input comes from running it eagerly"

# %% [markdown]
# **☐ An op with an outside effect (logging, I/O) is registered as effectful** (notebook 05). `audit` cannot see
# a Python side effect, so check the op's fate instead:

# %%
logger = labkit.declare(name="nb06::logger", returns="none")
fate = labkit.compile_and_compare(labkit.experiments.discards_result(logger), torch.ones(4)).fate("nb06::logger")
logger_audit = audit(logger, torch.ones(4))
print("plain logger runs compiled:", fate["ran"], "| audit finds:", logger_audit.findings)

# %% tags=["check"]
#@title Check: the plain logger is removed compiled, and audit flags nothing
assert fate["ran"] is False, "a logger with no registered effect is removed when its result is unused"
assert logger_audit.ok, "audit cannot see a Python side effect: nothing flags the logger"

# %% [markdown]
# **☐ After changing a declaration, the compile caches cannot serve the old one.** torch's cache key does not
# include an op's schema (notebook 04); labkit's "fingerprinted" policy adds a hash of every live op's
# declaration to `torch.compiler.config.cache_key_tag`. It does not cover a fake kernel's *code* or an autograd
# formula: after editing those, clear the cache or change the tag yourself (issues under Further reading).

# %%
stale = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "default")
safe = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "fingerprinted")
print("plain torch:", labkit.experiments.naming_story(stale))
print("labkit default:", labkit.experiments.naming_story(safe))

# %% tags=["check"]
#@title Check: plain torch serves the stale artifact; the fingerprinted policy compiles afresh
assert labkit.cache.policy() == "fingerprinted", "labkit.setup() turned on the fingerprinted policy"
assert stale.steps[1].stale, "plain torch: the changed declaration gets the stale artifact (#187319)"
assert not safe.steps[1].stale, "labkit's fingerprinted policy: the changed declaration compiles afresh"

# %% [markdown]
# ## 2. Myths vs facts, computed live
#
# Each claim is narrowed to what one experiment decides, on the torch you are running. Three ops in plain torch: `double` follows its input's shape; `positives` returns a tensor whose size depends on the
# data (notebook 05 §4); `count_positives` returns an `int` counted from the data. Both fake kernels of the last
# two ask for `new_dynamic_size()`:

# %%
kernel_calls = {"double": 0, "positives": 0, "count_positives": 0}

@torch.library.custom_op("nb06::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    kernel_calls["double"] += 1
    return x * 2

double.register_fake(lambda x: torch.empty_like(x))

@torch.library.custom_op("nb06::positives", mutates_args=())
def positives(x: torch.Tensor) -> torch.Tensor:
    kernel_calls["positives"] += 1
    return x[x > 0].clone()

@positives.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())

# %%
@torch.library.custom_op("nb06::count_positives", mutates_args=())
def count_positives(x: torch.Tensor) -> int:
    kernel_calls["count_positives"] += 1
    return int((x > 0).sum())

@count_positives.register_fake
def _(x):
    return torch.library.get_ctx().new_dynamic_size()     # an unbacked SymInt, no tensor's size

# %% [markdown]
# **Where a data-dependent op breaks the graph.** `torch._dynamo.explain` compiles a function and returns the
# graphs Dynamo made and why it broke between them. With default settings (and `fullgraph=False`), Dynamo stops
# at both ops, runs each eagerly and starts a new graph after it; `capture_dynamic_output_shape_ops=True` keeps
# each in one graph, with an `_assert_scalar` on its size:

# %%
def uses_positives(x):
    return positives(x + 1).sum() + x.sum()

def uses_count(x):
    return (x + 1) * count_positives(x + 1)

explained = {}
for name, fn in {"positives": uses_positives, "count_positives (-> int)": uses_count}.items():
    explained[f"{name}, default"] = torch._dynamo.explain(fn)(torch.linspace(-1, 1, 4))
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        explained[f"{name}, capture_dynamic_output_shape_ops"] = torch._dynamo.explain(fn)(torch.linspace(-1, 1, 4))
labkit.pictures.graph_breaks(explained, "nb06::")

# %% tags=["check"]
#@title Check: both ops break the graph by default; capture_dynamic_output_shape_ops=True captures both
for name in ("positives", "count_positives (-> int)"):
    default, captured = explained[f"{name}, default"], explained[f"{name}, capture_dynamic_output_shape_ops"]
    assert default.graph_break_count == 1, f"{name}: one graph break under default settings"
    assert "output shape depends on input Tensor data" in str(default.break_reasons[0].reason), \
        f"{name}: torch's reason: the output shape depends on the data"
    assert captured.graph_break_count == 0, f"{name}: capture_dynamic_output_shape_ops=True: no graph break"
    assert any("nb06" in str(n.target) for n in captured.graphs[0].graph.nodes), f"{name}: the op is in the graph"

# %% tags=["check"]
#@title Check: for the -> int op, capture_scalar_outputs alone still breaks; fullgraph=True captures it
with torch._dynamo.config.patch(capture_scalar_outputs=True):
    scalars = torch._dynamo.explain(uses_count)(torch.linspace(-1, 1, 4))
assert scalars.graph_break_count == 1, "the -> int op: capture_scalar_outputs=True alone still breaks the graph"
one_graph = labkit.compile_and_compare(uses_count, torch.linspace(-1, 1, 4), fullgraph=True)
assert one_graph.ok, "fullgraph=True captures the -> int op (it turns the capture settings on)"
assert one_graph.graph_count == 1, "fullgraph=True: the -> int op in one graph"

# %% tags=["check"]
#@title The experiments behind the table (open them to read how each row is decided)
def runs_unused(op, name, fullgraph, dynamic=False, sizes=(4,)):
    """Compile f(x): op(x); return x + 1 (aot_eager, caches off). Did op's kernel run in the compiled calls?"""
    def f(x):
        op(x)
        return x + 1
    torch.compiler.reset()
    compiled = torch.compile(f, backend="aot_eager", fullgraph=fullgraph, dynamic=dynamic)
    kernel_calls[name] = 0
    with torch._functorch.config.patch(enable_autograd_cache=False):
        for n in sizes:
            compiled(torch.linspace(-1, 1, n))
    return kernel_calls[name] > 0

# %% tags=["check"]
#@title The experiments behind the table, continued
def in_no_graph_yet_ran(op, name, use=lambda result, x: result.sum() + x.sum()):
    """Compile x -> use(op(x), x) with fullgraph=False: is op in no Dynamo graph, and did its kernel run?"""
    graphs = []
    def recording(gm, example_inputs):
        graphs.append([str(node.target) for node in gm.graph.nodes])
        return gm.forward
    torch.compiler.reset()
    kernel_calls[name] = 0
    torch.compile(lambda x: use(op(x), x), backend=recording, fullgraph=False)(torch.linspace(-1, 1, 4))
    return kernel_calls[name] == 1 and not any(f"nb06.{name}" in t for g in graphs for t in g)

# %% tags=["check"]
#@title The experiments behind the table, continued
def past_the_limit_runs_eagerly():
    """recompile_limit=1, f(x, n) = double(x) * n, n = 1 then 2: did the 2nd call skip every graph yet run double?"""
    through_a_graph = []
    def counting(gm, example_inputs):
        return lambda *args: through_a_graph.append(1) or gm.forward(*args)
    torch.compiler.reset()
    f = torch.compile(lambda x, n: double(x) * n, backend=counting, dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=1), labkit.torch_logs() as log:
        f(torch.ones(2), 1)
        kernel_calls["double"] = 0
        f(torch.ones(2), 2)
    return len(through_a_graph) == 1 and kernel_calls["double"] == 1 and "recompile_limit" in log.getvalue()

int_result_ran_eagerly = in_no_graph_yet_ran(count_positives, "count_positives", use=lambda n, x: x * n)
double_ran_eagerly_past_the_limit = past_the_limit_runs_eagerly()

def opcheck_catches_every_declaration_mistake():
    over = labkit.declare(name="nb06::over", mutates_args=("x",), returns="none")
    return set(labkit.checks.opcheck(over, (torch.randn(3),)).values()) != {"ok"}

# %% tags=["check"]
#@title The experiments behind the table, continued
def dynamic_mode_changes_dce_of_shape_following_ops():
    ran = {mode: runs_unused(double, "double", True, dynamic=mode, sizes=(3, 5)) for mode in (False, True, None)}
    return len(set(ran.values())) > 1

def dce_can_depend_on_shapes():
    # unused, fullgraph=True: the data-dependent op is kept (its size feeds _assert_scalar); double is removed
    return runs_unused(positives, "positives", True) and not runs_unused(double, "double", True)

assert int_result_ran_eagerly, "an op returning a data-dependent int (no tensor at all) breaks the graph: eager"
assert double_ran_eagerly_past_the_limit, "a shape-following op runs eagerly on a new input past recompile_limit"

# %% [markdown]
# Each claim with its experiment (open the cells above to read them), and the verdict on this torch:

# %%
MYTHS = {
    "fullgraph=False makes a shape-following op run eagerly (in a frame that compiles)":
        lambda: in_no_graph_yet_ran(double, "double"),
    "fullgraph=False makes an op with a data-dependent output size run eagerly":
        lambda: in_no_graph_yet_ran(positives, "positives"),
    "under fullgraph=False, only an op with a data-dependent output size runs eagerly":
        lambda: not (int_result_ran_eagerly or double_ran_eagerly_past_the_limit),
    "same-named ops with different mutates_args confuse the compile caches": lambda: stale.steps[1].stale,
    "torch.compiler.reset() clears stale compiled artifacts": lambda: not stale.steps[1].stale,
    "the torch you are running no longer serves a same-named op a stale artifact": lambda: not stale.steps[1].stale,
    "a custom_op may return its input if it declares the mutation": lambda: aliasing.ok,
    "opcheck catches every declaration mistake": opcheck_catches_every_declaration_mistake,
    "dynamic=False/True/None changes whether an unused shape-following op is removed":
        dynamic_mode_changes_dce_of_shape_following_ops,
    "dead-code elimination can depend on shapes (unbacked sizes)": dce_can_depend_on_shapes,
}
verdicts = {claim: experiment() for claim, experiment in MYTHS.items()}
print("\n".join(f"{'TRUE ' if holds else 'FALSE'}  {claim}" for claim, holds in verdicts.items()))

# %% tags=["check"]
#@title Check: the verdicts on this torch
assert list(verdicts.values()) == [False, True, False, True, False, False, False, False, False, True], (
    "a verdict changed on this torch: re-read the matching notebook and update this table")
assert not stale.steps[1].correct, "the stale artifact gives a wrong result"

# %% [markdown]
# Read the TRUE rows closely:
#
# - **"Custom ops run eagerly under `fullgraph=False`"** holds for an op whose fake kernel calls
#   `new_dynamic_size` (the picture above). For a shape-following op in a frame that compiles it is false: no
#   "workaround" against dead-code elimination. "*Only* data-dependent sizes run eagerly" is
#   false too: so does `double` in a frame past `recompile_limit`, on an input no compiled graph accepts.
# - **Same-named ops** confuse the compile *caches*, which key on graph text, not on schemas (notebook 04); a
#   `torch.compiler.reset()` does not clear them.
# - **DCE and shapes** meet through unbacked sizes: the `_assert_scalar` that checks a data-dependent size keeps
#   the op that produced it.

# %% [markdown]
# ## 3. Capstone: a small model with three buggy ops
#
# `TinyNet` keeps running statistics, scales its input, logs its activations and applies a linear layer. Three
# custom ops do the work, each with a different declaration bug:

# %%
CAPSTONE_BUGGY = {
    "update_stats":    dict(args=("x", "stats"), writes=("stats",), mutates_args=(), returns="none"),
    "scale":           dict(returns="fresh", fake=False),
    "log_activations": dict(returns="none"),
}

class TinyNet(torch.nn.Module):
    def __init__(self, declarations):
        super().__init__()
        self.ops = {name: labkit.declare(name=f"nb06::{name}", **fields) for name, fields in declarations.items()}
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, running_stats):
        self.ops["update_stats"](x, running_stats)      # running_stats += 1, in place
        h = self.ops["scale"](x)                         # 2 * x
        self.ops["log_activations"](h)                   # a side effect: counts as a log entry
        return torch.relu(self.linear(h))

# %% [markdown]
# Build it with the buggy declarations, and compare it compiled (Inductor) with eager:

# %%
def run_capstone(declarations):
    torch.manual_seed(0)
    model = TinyNet(declarations).eval().requires_grad_(False)
    return model.ops, labkit.compile_and_compare(model, torch.randn(2, 4), torch.zeros(4), backend="inductor")

buggy_ops, buggy = run_capstone(CAPSTONE_BUGGY)
labkit.show(buggy)

# %% tags=["check"]
#@title Check: the buggy TinyNet fails to compile, first on the missing fake kernel
assert buggy.error is not None, "the buggy TinyNet fails to compile"
assert buggy.error.kind == "missing_fake", "the compile fails first on the missing fake kernel"

# %% [markdown]
# The compile fails first and hides the rest. Audit each op, as in section 1:

# %%
samples = {"update_stats": (torch.randn(4), torch.zeros(4)), "scale": (torch.randn(4),),
           "log_activations": (torch.randn(4),)}
audits = {name: audit(op, *samples[name]) for name, op in buggy_ops.items()}
for name, result in audits.items():
    print(f"--- {name}")
    print("\n".join(f"[{f.check}] fix: {f.fix}" for f in result.findings) or "no findings (but see 'not checkable')")

# %% tags=["check"]
#@title Check: audit finds update_stats' and scale's bugs, and nothing in log_activations
assert "declaration" in audits["update_stats"].kinds(), "audit: update_stats writes stats without declaring it"
assert "opcheck" in audits["scale"].kinds(), "audit: opcheck finds scale's missing fake kernel"
assert audits["log_activations"].ok, "audit finds nothing in log_activations: its bug is a Python side effect"

# %% [markdown]
# ## Exercise: fix the three declarations
#
# For each op, fill in the fields that change, as a `dict` of what `labkit.declare` takes: `mutates_args` (a tuple
# of names), `fake` (`True`/`False`), `effect` (`"ordered"` or `"side_effect"`). The check rebuilds `TinyNet` with
# your fixes and compares compiled with eager: outputs, running statistics, log entries. Notebook 05 §2 helps.

# %%
my_fixes = {
    "update_stats": ...,        # e.g. dict(mutates_args=(...))
    "scale": ...,
    "log_activations": ...,
}

# %% tags=["check"]
#@title The exercise's check (it rebuilds TinyNet with your fixes, compiles it and audits each op)
def check_capstone(fixes):
    if not labkit.exercises.answered(fixes, "replace each ... in the my_fixes cell above by a dict, run it, then this"):
        return None
    try:
        ops, result = run_capstone({name: dict(fields, **fixes[name]) for name, fields in CAPSTONE_BUGGY.items()})
    except (labkit.LabOpError, TypeError) as problem:
        return labkit.exercises.check(False, "", str(problem))
    logged = result.compiled_calls.get("nb06::log_activations", 0) == result.eager_calls.get("nb06::log_activations")
    problems = ([f"compile error: {result.error.message}"] if result.error else []) + \
               ([str(result.verdict)] if result.verdict and not result.verdict.agree else []) + \
               ([] if logged else ["the log lost entries under compile"])
    for name, op in ops.items():
        problems += [f"{name}: {f.problem}" for f in audit(op, *samples[name]).findings]
    return labkit.exercises.check(not problems, "TinyNet compiles, agrees with eager, and keeps its log.",
                                  "; ".join(problems))

# %%
capstone_ok = check_capstone(my_fixes)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# Declare the write, give scale a fake kernel, make the logger effectful.
right = {"update_stats": dict(mutates_args=("stats",)), "scale": dict(fake=True), "log_activations": dict(effect="ordered")}
with contextlib.redirect_stdout(io.StringIO()):      # silent: the answer is in the source, not in the output
    assert check_capstone(right), "the three fixes make TinyNet compile, agree with eager and keep its log"
    assert not check_capstone(dict(right, log_activations=dict())), "a logger left without an effect is rejected"

# %% [markdown]
# ## 4. In your own project
#
# TinyNet's three ops as you would write them without labkit, checked with torch's own tools. First the ops, fixed,
# the logger with a registered effect (a private API, notebook 05 §2):

# %%
from torch._library.effects import EffectType    # private torch: the effect registration has no public spelling

log_entries = []

@torch.library.custom_op("nb06plain::update_stats", mutates_args=("stats",))
def update_stats(x: torch.Tensor, stats: torch.Tensor) -> None:
    stats.add_(1)

@torch.library.custom_op("nb06plain::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return 2 * x

@torch.library.custom_op("nb06plain::log_activations", mutates_args=())
def log_activations(h: torch.Tensor) -> None:
    log_entries.append(float(h.abs().mean()))

_ = scale.register_fake(lambda x: torch.empty_like(x))     # "_ =": no display of the returned fake kernel
log_activations.register_fake(lambda h: None)
log_activations.register_effect(EffectType.ORDERED)

# %% [markdown]
# `torch.library.opcheck` tests each op against its declaration on sample inputs. It passes the fixed ops, and
# raises on the original `update_stats`, which writes `stats` without declaring it:

# %%
SAMPLES = {"update_stats": (update_stats, (torch.randn(4), torch.zeros(4))), "scale": (scale, (torch.randn(4),)),
           "log_activations": (log_activations, (torch.randn(4),))}
passed = {name: set(torch.library.opcheck(op, args).values()) for name, (op, args) in SAMPLES.items()}
print(passed)

# %% tags=["check"]
#@title Check: opcheck passes the three fixed ops
for name, outcomes in passed.items():
    assert outcomes == {"SUCCESS"}, f"opcheck passes the fixed {name}"

# %%
@torch.library.custom_op("nb06plain::update_stats_undeclared", mutates_args=())
def update_stats_undeclared(x: torch.Tensor, stats: torch.Tensor) -> None:
    stats.add_(1)

opcheck_error = None
try:
    torch.library.opcheck(update_stats_undeclared, (torch.randn(4), torch.zeros(4)))
except Exception as error:                      # torch's OpCheckError
    opcheck_error = error
print(type(opcheck_error).__name__, str(opcheck_error).splitlines()[0][:110])

# %% tags=["check"]
#@title Check: opcheck raises OpCheckError, from its test_schema, on the undeclared write
assert type(opcheck_error).__name__ == "OpCheckError", "opcheck raises OpCheckError on the undeclared write"
assert "test_schema" in str(opcheck_error), "opcheck's error names its test_schema"

# %% [markdown]
# Then the model, compiled with plain `torch.compile` (`aot_eager`, to keep it quick) next to eager, with
# `torch._logging.set_logs(aot_graphs=True)` (`TORCH_LOGS="aot_graphs"`) catching the graph AOTAutograd made. Its
# text shows what keeps the ops alive: the `copy_` into `running_stats`, and `with_effects` around the logger:

# %%
def tiny_net(x, running_stats, weight):
    update_stats(x, running_stats)
    h = scale(x)
    log_activations(h)
    return torch.relu(h @ weight)

torch.manual_seed(0)
x, weight = torch.randn(2, 4), torch.randn(4, 4)
stats_eager, stats_compiled = torch.zeros(4), torch.zeros(4)
log_entries.clear()
expected, eager_log = tiny_net(x, stats_eager, weight), len(log_entries)
log_entries.clear()
torch.compiler.reset()
with labkit.torch_logs(aot_graphs=True) as aot_text, torch._functorch.config.patch(enable_autograd_cache=False):
    actual = torch.compile(tiny_net, backend="aot_eager", fullgraph=True)(x, stats_compiled, weight)
graph_text = aot_text.getvalue()
print("outputs agree:", torch.equal(actual, expected), "| running_stats agree:", torch.equal(stats_compiled, stats_eager),
      "| log entries eager/compiled:", eager_log, len(log_entries))

# %% tags=["check"]
#@title Check: compiled tiny_net agrees with eager, logs as often, and its AOT graph keeps the write and the effect
assert torch.equal(actual, expected), "compiled, tiny_net returns what it returns eagerly"
assert torch.equal(stats_compiled, stats_eager), "compiled, tiny_net updates running_stats as it does eagerly"
assert eager_log == 1, "eagerly, the logger logs once"
assert len(log_entries) == eager_log, "compiled, the logger logs as often as eagerly"
for word in ("auto_functionalized_v2", "copy_", "with_effects"):
    assert word in graph_text, f"the AOT graph contains {word}"

# %% [markdown]
# ## 5. Take it home: `labkit doctor`
#
# One command does this notebook's checks on a whole package, for its CI: `python -m labkit doctor mypkg.ops`
# finds every op the module registers and examines each overload on the inputs of a module-level
# `SAMPLES = {op: [(args, kwargs)]}`: everything `audit` runs, then its own checks,
# <!-- BEGIN doctor-only-checks: generated from labkit.auditing.registry.CHECKS by --facts: do not edit -->
#
# 1. `fullgraph`: a graph break at the op, named with fullgraph=True instead of passed
# 2. `fake`: the fake kernel on the meta device and on a second dtype, which it must follow
#
# <!-- END doctor-only-checks -->
# all with labkit's cache fingerprint on. It exits 1 on a finding; `--junit-xml` and `pytest --labkit-doctor
# mypkg.ops` feed CI. Try it as you would on your project: the capstone's ops in plain torch, as first declared, in
# a module of a project folder (a temporary one, so nothing lands beside the notebooks):

# %%
import json
import pathlib
import re
import sys
import tempfile

project = pathlib.Path(tempfile.mkdtemp(prefix="nb06_project_"))
module_path, report_path = project / "tiny_ops.py", project / "report.json"
python = f'"{sys.executable}"'           # this kernel's Python (the one with labkit), quoted for the shell

# %% [markdown]
# `SAMPLES` gives the doctor its inputs, as `opcheck` takes them: for each op, a list of `(args, kwargs)` pairs.
# The logger has no entry yet (the exercise below adds it): for such an op the doctor makes inputs from the schema
# where that is safe, and says so. This cell writes the module:

# %%
# %%writefile {module_path}
import torch

log_entries = []

@torch.library.custom_op("nb06tiny::update_stats", mutates_args=())     # writes stats, undeclared
def update_stats(x: torch.Tensor, stats: torch.Tensor) -> None:
    stats.add_(1)

@torch.library.custom_op("nb06tiny::scale", mutates_args=())            # no fake kernel
def scale(x: torch.Tensor) -> torch.Tensor:
    return 2 * x

@torch.library.custom_op("nb06tiny::log_activations", mutates_args=())  # a Python side effect, no effect registered
def log_activations(h: torch.Tensor) -> None:
    log_entries.append(float(h.abs().mean()))

log_activations.register_fake(lambda h: None)
SAMPLES = {update_stats: [((torch.randn(4), torch.zeros(4)), {})],
           scale: [((torch.randn(4),), {})]}

# %% [markdown]
# Run the doctor on it as you would in a terminal (`!` runs a shell command from a notebook; `--json` also writes
# the report a program reads). Its table has a row per op, its times vary from run to run, and each finding
# follows, shortened (the JSON report holds torch's whole message):

# %% tags=["nbval-ignore-output"]
report_path.unlink(missing_ok=True)          # a run that cannot start writes none: never read an old one
# !{python} -m labkit doctor "{module_path}" --json "{report_path}"
doctor_exit = _exit_code      # noqa: F821 - what IPython's ! leaves: the command's exit status

# %% [markdown]
# The same run, read from its JSON report: each op's verdict, where its inputs came from, and the checks it ran
# and did not run (`aliasing` runs only after a `compile` check that found nothing, since a program that already
# differs can tell nothing more):

# %%
report = json.loads(report_path.read_text())
results = {result["op"].split("::")[1].removesuffix(".default"): result for result in report["results"]}
for result in results.values():
    not_run = [check.kind for check in labkit.auditing.CHECKS if check.kind not in result["checks_run"]]
    source = result["samples"][0]["source"] if result["samples"] else "none"
    print(f"{result['op']:34} {result['verdict']}, inputs {'from ' * (source == 'SAMPLES')}{source}:"
          f" ran {', '.join(result['checks_run'])}" + (f"; not {', '.join(not_run)}" if not_run else ""))

# %% tags=["check"]
#@title Check: exit 1; update_stats' write and scale's fake kernel found; the logger passes; aliasing waits
assert doctor_exit == 1, "a finding: the command exits 1"
assert report["exit_status"] == 1, "and its report says so"
assert "declaration" in {f["check"] for f in results["update_stats"]["findings"]}, "the undeclared write"
assert "opcheck:test_faketensor" in {f["check"] for f in results["scale"]["findings"]}, "no fake kernel"
assert results["log_activations"]["verdict"] == "pass", "the logger passes: its bug is invisible"
assert "aliasing" not in results["scale"]["checks_run"], "compile found a difference: aliasing waits"
assert "aliasing" in results["log_activations"]["checks_run"], "nothing found: every check ran"
assert results["log_activations"]["samples"][0]["source"] == "generated from the schema", "no entry: made, and said"

# %% [markdown]
# One finding, every field of it: what went wrong, why it matters, the fix, the official page, what a user of the
# op sees under `torch.compile`, the lesson of this lab that teaches it, torch's own message (none here: the
# doctor saw the write itself) and the sample it ran on:

# %%
(undeclared,) = [f for f in results["update_stats"]["findings"] if f["check"] == "declaration"]
for field, value in undeclared.items():
    print(f"{field:>10}: {value!r}" if field in ("detail", "sample") else f"{field:>10}: {value}")

# %% [markdown]
# **What "ok" means.** The logger's row says `ok`: no check the doctor runs found anything on these inputs. It does
# not say the op is right. §3 showed the compiled `TinyNet` losing its log, and no check sees a Python side effect;
# the doctor says so among the logger's notes, in its JSON report:

# %%
unseen = [note for note in results["log_activations"]["notes"] if note.startswith("Python side effects")]
print("\n".join(unseen))

# %% tags=["check"]
#@title Check: the logger's notes say the doctor cannot see a Python side effect
assert len(unseen) == 1, "the note on a passed op names what no check sees"

# %% [markdown]
# ## Exercise: give the logger its samples
#
# Add `log_activations` to `SAMPLES` in the module's cell: one sample, a batch of two activations of width 4.
# Run that cell, then the doctor's, then the check below. Mind the form: `args` is a tuple even for one argument.

# %% tags=["check"]
#@title The exercise's check (it reads the logger's row of the doctor's latest report)
def logger_samples_problem(result) -> str | None:
    """What is wrong with the op's samples in one report row, in the doctor's words; None when they are right."""
    inputs = [re.sub(r"\b\w+=", "", sample["inputs"]) for sample in result["samples"]]   # h=float32[2, 4] too
    if result["findings"] and result["findings"][0]["check"] == "samples":
        return f"The doctor says: {result['findings'][0]['problem']}"
    if result["verdict"] == "skip":                   # its note starts "skipped: ..."
        return f"The doctor {result['notes'][0]}"
    if not result["samples"] or result["samples"][0]["source"] != "SAMPLES":
        return "The doctor made the inputs itself: add a log_activations entry to SAMPLES, then rerun both cells"
    if inputs != ["float32[2, 4]"]:
        return f"The doctor ran it on {inputs}: one sample, torch.randn(2, 4)"
    if result["verdict"] != "pass":
        return f"The doctor found: {result['findings'][0]['problem']}"
    return None

# %% tags=["check"]
#@title The exercise's check, continued (the report, if the doctor could write one)
def check_logger_samples():
    if not report_path.exists():
        return labkit.exercises.check(False, "", f"The doctor could not run your module (exit status {doctor_exit}): "
                                      "read its sentence above, fix the module's cell, then rerun both cells")
    rows = json.loads(report_path.read_text())["results"]
    problem = logger_samples_problem(next(row for row in rows if row["op"] == "nb06tiny::log_activations.default"))
    return labkit.exercises.check(problem is None, "the logger ran on your sample, and passed.", str(problem))

# %%
logger_ok = check_logger_samples()

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# SAMPLES gains  log_activations: [((torch.randn(2, 4),), {})]: the comma makes (x,) a tuple. Checked below with
# labkit.doctor.check, the command's engine, on that entry and on the same entry with the comma forgotten.
def silent_logger(name):
    @torch.library.custom_op(f"nb06solved::{name}", mutates_args=())
    def logger(h: torch.Tensor) -> None:
        pass

    logger.register_fake(lambda h: None)
    return logger

right_op, comma_op = silent_logger("right"), silent_logger("comma")
solved = labkit.doctor.check([right_op, comma_op], samples={right_op: [((torch.randn(2, 4),), {})],
                                                          comma_op: [((torch.randn(2, 4)), {})]})
rows = {row["op"]: row for row in solved.to_dict()["results"]}
assert logger_samples_problem(rows["nb06solved::right.default"]) is None, "the right entry passes"
assert "with a comma" in logger_samples_problem(rows["nb06solved::comma.default"]), "the forgotten comma is refused"

# %% [markdown]
# From Python, `labkit.doctor.check` does the same on ops in your kernel. The capstone's ops with the exercise's
# three fixes, as `labkit.declare` made them:

# %% tags=["nbval-ignore-output"]
def doctor_on(declarations):
    ops = {name: labkit.declare(name=f"nb06::{name}", **fields) for name, fields in declarations.items()}
    return labkit.doctor.check(ops, samples={op: [(samples[name], {})] for name, op in ops.items()})

after = doctor_on({name: dict(fields, **right[name]) for name, fields in CAPSTONE_BUGGY.items()})
print(after.table(details=False))

# %% tags=["check"]
#@title Check: the fixed ops pass, every check run
assert after.exit_status == 0, "clean: the command would exit 0"
for result in after.results:
    assert {"opcheck", "compile", "fullgraph", "fake"} <= set(result.checks_run), f"{result.op}: every check ran"

# %% [markdown]
# ## What to remember
#
# - Before shipping a custom op, run `torch.library.opcheck` — or `labkit.audit`, which adds the compile checks —
#   and register an effect for an op with an outside effect: nothing detects a hidden Python side effect.
# - With default settings, an op whose fake kernel calls `new_dynamic_size` (a data-dependent size, or an `int`)
#   breaks the graph and runs eagerly; a shape-following op does not, unless its frame is past `recompile_limit`.
#   "reset fixes it" is false: the trap after a changed declaration is the compile caches.
# - A model's bugs come one at a time: a compile error hides a silent one behind it. Fix, re-audit, re-compare.
# - In your CI, `python -m labkit doctor mypkg.ops` runs these checks on each op the module registers, and exits 1
#   on a finding.
#
# ## Questions
#
# 1. Why can `labkit.audit` (or `opcheck`) not find the logger's bug, and what does that mean for your own review
#    of an op?
# 2. Why does the capstone's compile error have to be fixed before the silent bug in `update_stats` shows?
# 3. Why does `count_positives`, which returns no tensor at all, break the graph like `positives`?
# 4. Why does a fingerprint of schemas not protect you after you edit a fake kernel?
#
# ## Further reading
#
# - PyTorch custom operators landing page: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - `torch.library` reference (`custom_op`, `register_fake`, `opcheck`): https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual: https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - Same-named ops and the compile caches: https://github.com/pytorch/pytorch/issues/187319
# - Stale artifacts after a fake-kernel or backward edit: https://github.com/pytorch/pytorch/issues/160472,
#   https://github.com/pytorch/pytorch/issues/144344
