# %% [markdown]
# # 06 · Field guide: a checklist that runs, myths vs facts, and a capstone
#
# **What you will learn**
# - a checklist for every custom op you ship — each item a cell that proves it on *your* torch;
# - which claims in circulation hold, computed live;
# - to diagnose and fix a small model with three buggy custom ops, using `labkit.audit` — and to run the same
#   checks in your own project with `torch.library.opcheck`.
#
# **Time:** about 35 minutes. **Before:** 00–05 (or at least 00, 02 and 05).
#
# Outputs recorded on torch 2.13.0 (CPU); every verdict below is computed by the cell that shows it.

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import labkit
from labkit import audit

labkit.setup()
dropped = labkit.drop_namespace("nb06")

# %% [markdown]
# ## 1. The checklist, run
#
# `labkit.audit(op, *sample_inputs)` runs the checks torch.compile cares about: the kernel against its
# declaration, every `opcheck` test, and eager vs compiled (aot_eager and inductor, static and dynamic) on a
# program that discards the op's result. Each finding says what is wrong, why it matters, and the fix.
#
# **☐ Every argument the kernel writes is in `mutates_args`.**

# %%
writes_quietly = labkit.declare(name="nb06::writes_quietly", writes=("x",), returns="none")
report = audit(writes_quietly, torch.randn(4))
print("\n".join(str(finding) for finding in report.findings))

# %%
assert {"declaration", "opcheck", "compile"} <= report.kinds(), \
    "an undeclared write is found by the declaration check, by opcheck and by the compile comparison"
assert any(f.fix == "add 'x' to mutates_args" for f in report.findings), \
    "one finding's fix says: add 'x' to mutates_args"

# %% [markdown]
# **☐ Every op that returns a tensor (or returns nothing and writes nothing) has a fake kernel.**

# %%
no_fake = labkit.declare(name="nb06::no_fake", returns="fresh", fake=False)
missing = audit(no_fake, torch.randn(4))
print([f.check for f in missing.findings])
assert "opcheck:test_faketensor" in [f.check for f in missing.findings], \
    "opcheck's test_faketensor finds the missing fake kernel"

# %% [markdown]
# **☐ No output is an input or a view of one** (unless tagged `torch.Tag.inplace`, torch ≥ 2.13).

# %%
returns_input = labkit.declare(name="nb06::returns_input", writes=("x",), mutates_args=("x",), returns="input")
aliasing = audit(returns_input, torch.randn(4))
print(aliasing.findings[0].problem[:120], "…")
assert aliasing.kinds() == {"eager"}, \
    "audit's only finding for an op that returns its input comes from running it eagerly"

# %% [markdown]
# **☐ An op with an outside effect (logging, I/O) is registered as effectful** — with
# `CustomOpDef.register_effect` or `torch.fx.node.has_side_effect`, both private or experimental on torch 2.13
# (notebook 05). `audit` cannot see Python side effects, so check the op's fate instead:

# %%
logger = labkit.declare(name="nb06::logger", returns="none")
fate = labkit.compile_and_compare(labkit.experiments.discards_result(logger), torch.ones(4)).fate("nb06::logger")
logger_audit = audit(logger, torch.ones(4))
print("plain logger runs compiled:", fate["ran"], "| audit finds:", logger_audit.findings)
assert fate["ran"] is False, "a logger with no registered effect is removed when its result is unused"
assert logger_audit.ok, "audit cannot see a Python side effect: nothing flags the logger"

# %% [markdown]
# **☐ After changing a declaration, the compile caches cannot serve the old one.** labkit's "fingerprinted"
# policy adds a hash of every live custom op's schema, tags, purity and whether it has a fake kernel to
# `torch.compiler.config.cache_key_tag`; torch's own cache key does not include an op's schema (notebook 04, which
# also shows the plain-torch recipe). The hash does not cover the fake kernel's *code* or an autograd formula: after editing
# those, the cache can still serve an old artifact (https://github.com/pytorch/pytorch/issues/160472,
# https://github.com/pytorch/pytorch/issues/144344): clear the cache or change the tag yourself.

# %%
stale = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "default")
safe = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "fingerprinted")
print("plain torch:", labkit.experiments.naming_story(stale))
print("labkit default:", labkit.experiments.naming_story(safe))
assert labkit.cache.policy() == "fingerprinted", "labkit.setup() turned on the fingerprinted policy"
assert stale.steps[1].stale, "plain torch: the changed declaration gets the stale artifact (#187319)"
assert not safe.steps[1].stale, "labkit's fingerprinted policy: the changed declaration compiles afresh"

# %% [markdown]
# ## 2. Myths vs facts, computed live
#
# Each claim is narrowed to what one experiment decides, and paired with that experiment on the torch you are
# running. Two ops in plain torch: `double` (its fake kernel follows the input shape) and `positives` (its output
# size depends on the data, notebook 05 §4):

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

# %% [markdown]
# Two experiments, each compiling afresh: did an unused op's kernel run, and did an op run outside every graph?

# %%
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

# %%
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

# %% [markdown]
# Two more experiments, for the claim that `fullgraph=False` runs an op eagerly *only* when its output size depends
# on the data: an op that returns no tensor but an `int` counted from the data (its fake kernel asks for
# `new_dynamic_size()` too), and `double` in a frame past `torch._dynamo.config.recompile_limit` (notebook 07 §6):

# %%
@torch.library.custom_op("nb06::count_positives", mutates_args=())
def count_positives(x: torch.Tensor) -> int:
    kernel_calls["count_positives"] += 1
    return int((x > 0).sum())

@count_positives.register_fake
def _(x):
    return torch.library.get_ctx().new_dynamic_size()     # an unbacked SymInt, no tensor's size

int_result_ran_eagerly = in_no_graph_yet_ran(count_positives, "count_positives", use=lambda n, x: x * n)
print("an op returning a data-dependent int: in no graph, ran eagerly:", int_result_ran_eagerly)

# %%
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

double_ran_eagerly_past_the_limit = past_the_limit_runs_eagerly()
print("double, past recompile_limit: ran eagerly:", double_ran_eagerly_past_the_limit)

# %%
assert int_result_ran_eagerly, "an op returning a data-dependent int (no tensor at all) breaks the graph: eager"
assert double_ran_eagerly_past_the_limit, \
    "a shape-following op runs eagerly on a new input past recompile_limit"

# %% [markdown]
# Most claims are decided by a small function; these four read results from above:

# %%
def same_name_different_mutates_args_confuses_the_compiler():
    return stale.steps[1].stale and not stale.steps[1].correct

def compiler_reset_clears_stale_artifacts():
    return not stale.steps[1].stale           # naming.run calls torch.compiler.reset() between the two compiles

def running_torch_is_free_of_187319():
    return not stale.steps[1].stale           # the bug reproduced here, with torch's default caches

def custom_op_may_return_its_input_if_declared():
    return aliasing.ok

# %% [markdown]
# And three that need an experiment of their own:

# %%
def opcheck_catches_every_declaration_mistake():
    over = labkit.declare(name="nb06::over", mutates_args=("x",), returns="none")
    return set(labkit.checks.opcheck(over, (torch.randn(3),)).values()) != {"ok"}

def dynamic_mode_changes_dce_of_shape_following_ops():
    ran = {mode: runs_unused(double, "double", True, dynamic=mode, sizes=(3, 5)) for mode in (False, True, None)}
    return len(set(ran.values())) > 1

def dce_can_depend_on_shapes():
    # unused, fullgraph=True: the data-dependent op is kept (its size feeds _assert_scalar); double is removed
    return runs_unused(positives, "positives", True) and not runs_unused(double, "double", True)

# %% [markdown]
# Each claim with its experiment, and the verdict on this torch:

# %%
MYTHS = {
    "fullgraph=False makes an op whose fake follows the input shapes run eagerly (in a frame that compiles)":
        lambda: in_no_graph_yet_ran(double, "double"),
    "fullgraph=False makes an op with a data-dependent output size run eagerly":
        lambda: in_no_graph_yet_ran(positives, "positives"),
    "under fullgraph=False, only an op with a data-dependent output size runs eagerly":
        lambda: not (int_result_ran_eagerly or double_ran_eagerly_past_the_limit),
    "same-named ops with different mutates_args confuse the compiler":
        same_name_different_mutates_args_confuses_the_compiler,
    "torch.compiler.reset() clears stale compiled artifacts": compiler_reset_clears_stale_artifacts,
    "the torch you are running no longer has #187319": running_torch_is_free_of_187319,
    "a custom_op may return its input if it declares the mutation": custom_op_may_return_its_input_if_declared,
    "opcheck catches every declaration mistake": opcheck_catches_every_declaration_mistake,
    "dynamic=False/True/None changes whether an unused shape-following op is removed":
        dynamic_mode_changes_dce_of_shape_following_ops,
    "dead-code elimination can depend on shapes (unbacked sizes)": dce_can_depend_on_shapes,
}
verdicts = {claim: experiment() for claim, experiment in MYTHS.items()}
for claim, holds in verdicts.items():
    print(f"{'TRUE ' if holds else 'FALSE'}  {claim}")

# %%
assert list(verdicts.values()) == [False, True, False, True, False, False, False, False, False, True], (
    "a verdict changed on this torch: re-read the matching notebook and update this table")

# %% [markdown]
# Read the TRUE rows closely:
#
# - **"Custom ops run eagerly under `fullgraph=False`"** holds for an op whose fake kernel calls
#   `new_dynamic_size` — a data-dependent output size, or an `int` counted from the data: with default settings
#   Dynamo breaks the graph at the op (notebook 07 §3: `capture_dynamic_output_shape_ops=True` captures it). It is false for a shape-following op in a frame that compiles — there, as a "workaround" against
#   dead-code elimination, it does nothing. But "*only* data-dependent sizes run eagerly" is false too (its row
#   above): the `int` op runs eagerly, and so does `double` in a frame past `recompile_limit`, on an input no
#   compiled graph accepts.
# - **Same-named ops** confuse the compile *caches*, not the compiler: the caches key on graph text, not on
#   schemas (notebook 04).
# - **DCE and shapes** meet through unbacked sizes: the `_assert_scalar` that checks a data-dependent size keeps
#   the op that produced it. The `dynamic=` mode does not change the decision for shape-following ops.
#
# "The torch you are running no longer has #187319" is re-decided on every torch you run this notebook on: an
# upgrade fixes the bug once that row says TRUE there (the issue: https://github.com/pytorch/pytorch/issues/187319).

# %% [markdown]
# ## 3. Capstone: a small model with three buggy ops
#
# `TinyNet` normalises its input, keeps running statistics, scales, logs its activations and applies a linear
# layer. Three custom ops do the work, each with a different declaration bug:

# %%
CAPSTONE_BUGGY = {
    "update_stats":    dict(args=("x", "stats"), writes=("stats",), mutates_args=(), returns="none"),
    "scale":           dict(returns="fresh", fake=False),
    "log_activations": dict(returns="none"),
}

def build_ops(declarations):
    return {name: labkit.declare(name=f"nb06::{name}", **fields) for name, fields in declarations.items()}

class TinyNet(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
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
    ops = build_ops(declarations)
    torch.manual_seed(0)
    model = TinyNet(ops).eval().requires_grad_(False)
    return ops, labkit.compile_and_compare(model, torch.randn(2, 4), torch.zeros(4), backend="inductor")

buggy_ops, buggy = run_capstone(CAPSTONE_BUGGY)
labkit.show(buggy)

# %%
assert buggy.error is not None, "the buggy TinyNet fails to compile"
assert buggy.error.kind == "missing_fake", "the compile fails first on the missing fake kernel"

# %% [markdown]
# The compile fails first. Audit each op on a sample input — the same checks as section 1:

# %%
samples = {"update_stats": (torch.randn(4), torch.zeros(4)), "scale": (torch.randn(4),),
           "log_activations": (torch.randn(4),)}
audits = {name: audit(op, *samples[name]) for name, op in buggy_ops.items()}
for name, result in audits.items():
    print(f"--- {name}")
    print("\n".join(f"[{f.check}] fix: {f.fix}" for f in result.findings) or "no findings (but see 'not checkable')")

# %%
assert "declaration" in audits["update_stats"].kinds(), "audit: update_stats writes stats without declaring it"
assert "opcheck" in audits["scale"].kinds(), "audit: opcheck finds scale's missing fake kernel"
assert audits["log_activations"].ok, "audit finds nothing in log_activations: its bug is a Python side effect"

# %% [markdown]
# ## Exercise: fix the three declarations
#
# Fill in, for each op, the fields that change (anything `labkit.declare` takes: `mutates_args`, `fake`,
# `effect`, ...). The check rebuilds `TinyNet` with your fixes and compares compiled with eager — outputs, the
# running statistics, and the number of log entries. Use the audits above, and notebook 05 §2 for the logger.

# %%
my_fixes = {
    "update_stats": ...,        # e.g. dict(mutates_args=(...))
    "scale": ...,
    "log_activations": ...,
}

# %%
def check_capstone(fixes):
    if not all(labkit.exercises.answered(v) for v in fixes.values()):
        return False
    try:
        fixed = {name: dict(fields, **fixes[name]) for name, fields in CAPSTONE_BUGGY.items()}
        ops, result = run_capstone(fixed)
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

capstone_ok = check_capstone(my_fixes)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: declare the write, give scale a fake kernel, make the logger effectful.
import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()):      # silent: the answer is in the source, not in the output
    solved = check_capstone({"update_stats": dict(mutates_args=("stats",)), "scale": dict(fake=True),
                             "log_activations": dict(effect="ordered")})
assert solved, "the three fixes make TinyNet compile, agree with eager and keep its log"
print("solution checked")

# %% [markdown]
# ## 4. In your own project
#
# After the exercise: TinyNet's three ops as you would write them without labkit, checked with torch's own tools.
# First the ops, fixed:

# %%
from torch._library.effects import EffectType    # a private module (notebook 05 §2)

log_entries = []

@torch.library.custom_op("nb06plain::update_stats", mutates_args=("stats",))
def update_stats(x: torch.Tensor, stats: torch.Tensor) -> None:
    stats.add_(1)

update_stats.register_fake(lambda x, stats: None)

@torch.library.custom_op("nb06plain::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return 2 * x

_ = scale.register_fake(lambda x: torch.empty_like(x))     # "_ =": no display of the returned fake kernel

# %% [markdown]
# And the logger, with a registered effect:

# %%
@torch.library.custom_op("nb06plain::log_activations", mutates_args=())
def log_activations(h: torch.Tensor) -> None:
    log_entries.append(float(h.abs().mean()))

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
for name, outcomes in passed.items():
    assert outcomes == {"SUCCESS"}, f"opcheck passes the fixed {name}"

# %% [markdown]
# The original `update_stats`, declared with `mutates_args=()`, under `opcheck`:

# %%
@torch.library.custom_op("nb06plain::update_stats_undeclared", mutates_args=())
def update_stats_undeclared(x: torch.Tensor, stats: torch.Tensor) -> None:
    stats.add_(1)

update_stats_undeclared.register_fake(lambda x, stats: None)

try:
    torch.library.opcheck(update_stats_undeclared, (torch.randn(4), torch.zeros(4)))
    opcheck_error = None
except Exception as error:                      # torch's OpCheckError
    opcheck_error = error
print(type(opcheck_error).__name__, str(opcheck_error).splitlines()[0][:110])
assert type(opcheck_error).__name__ == "OpCheckError", "opcheck raises OpCheckError on the undeclared write"
assert "test_schema" in str(opcheck_error), "opcheck's error names its test_schema"

# %% [markdown]
# Then the model, compiled with plain `torch.compile` (`aot_eager`, to keep it quick) next to eager, with
# `torch._logging.set_logs(aot_graphs=True)` (`TORCH_LOGS="aot_graphs"`) capturing the graph AOTAutograd made.
# Its text shows the two things that keep the ops alive: the `copy_` into `running_stats`, and `with_effects`
# around the logger:

# %%
import contextlib
import io

def tiny_net(x, running_stats, weight):
    update_stats(x, running_stats)
    h = scale(x)
    log_activations(h)
    return torch.relu(h @ weight)

torch.manual_seed(0)
x, weight = torch.randn(2, 4), torch.randn(4, 4)
stats_eager, stats_compiled = torch.zeros(4), torch.zeros(4)
log_entries.clear()
expected = tiny_net(x, stats_eager, weight)
eager_log = len(log_entries)

# %% [markdown]
# Now compiled, with AOTAutograd's graph caught from torch's log:

# %%
log_entries.clear()
torch.compiler.reset()
with labkit.torch_logs(aot_graphs=True) as aot_text, torch._functorch.config.patch(enable_autograd_cache=False):
    actual = torch.compile(tiny_net, backend="aot_eager", fullgraph=True)(x, stats_compiled, weight)
graph_text = aot_text.getvalue()     # torch._logging.set_logs(aot_graphs=True), its stderr caught
print("outputs agree:", torch.equal(actual, expected), "| running_stats agree:", torch.equal(stats_compiled, stats_eager),
      "| log entries eager/compiled:", eager_log, len(log_entries))
print("in the AOT graph:", {word: word in graph_text for word in ("auto_functionalized_v2", "copy_", "with_effects")})

# %%
assert torch.equal(actual, expected), "compiled, tiny_net returns what it returns eagerly"
assert torch.equal(stats_compiled, stats_eager), "compiled, tiny_net updates running_stats as it does eagerly"
assert eager_log == 1, "eagerly, the logger logs once"
assert len(log_entries) == eager_log, "compiled, the logger logs as often as eagerly"
for word in ("auto_functionalized_v2", "copy_", "with_effects"):
    assert word in graph_text, f"the AOT graph contains {word}"

# %% [markdown]
# ## What to remember
#
# - Before shipping a custom op: run `torch.library.opcheck` — or `labkit.audit`, which adds the compile checks —
#   and give an op with an outside effect a registered effect (a private API on torch 2.13); nothing can detect a
#   hidden Python side effect.
# - "Custom ops run eagerly under `fullgraph=False`" is false for a shape-following op in a frame that compiles;
#   with default settings it holds for an op whose fake kernel calls `new_dynamic_size` (a data-dependent size, or
#   an `int`), and for a
#   shape-following op too once its frame is past `recompile_limit` and meets a new input. "reset fixes it" is false; the real trap
#   after a changed declaration is the compile caches.
# - A model's bugs come one at a time: a compile error hides a silent one behind it. Fix, re-audit, re-compare.
#
# ## Questionnaire
#
# 1. Why can `labkit.audit` (or `opcheck`) not find the logger's bug, and what does that mean for your own review
#    of an op?
# 2. Why does the capstone's compile error have to be fixed before the silent bug in `update_stats` shows?
# 3. Why is "`fullgraph=False` makes custom ops run eagerly" true for one op of section 2 and false for the other —
#    and when does the other run eagerly too?
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
