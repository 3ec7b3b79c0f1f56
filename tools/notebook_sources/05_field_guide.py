# %% [markdown]
# # 05 · Field guide: a checklist that runs, myths vs facts, and a capstone
#
# **What you will learn**
# - a checklist for every custom op you ship — each item a cell that proves it on *your* torch;
# - which claims in circulation hold, computed live;
# - to diagnose and fix a small model with three buggy custom ops, using `labkit.audit` and the widgets.
#
# **Time:** about 30 minutes. **Before:** 00–04 (or at least 00 and 02).
#
# Outputs recorded on torch 2.13.0 (CPU); every verdict below is computed by the cell that shows it.

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import labkit
from labkit.audit import audit

labkit.setup()
dropped = labkit.drop_namespace("nb05")

# %% [markdown]
# ## 1. The checklist, run
#
# `labkit.audit(op, *sample_inputs)` runs the checks torch.compile cares about: the kernel against its
# declaration, every `opcheck` test, and eager vs compiled (aot_eager and inductor, static and dynamic) on a
# program that discards the op's result. Each finding says what is wrong, why it matters, and the fix.
#
# **☐ Every argument the kernel writes is in `mutates_args`.**

# %%
writes_quietly = labkit.declare(name="nb05::writes_quietly", writes=("x",), returns="none")
report = audit(writes_quietly, torch.randn(4))
print(report)

# %%
assert {"declaration", "opcheck", "compile"} <= report.kinds()
assert any(f.fix == "add 'x' to mutates_args" for f in report.findings)

# %% [markdown]
# **☐ Every op that returns a tensor (or returns nothing and writes nothing) has a fake kernel.**

# %%
no_fake = labkit.declare(name="nb05::no_fake", returns="fresh", fake=False)
missing = audit(no_fake, torch.randn(4))
print([f.check for f in missing.findings])
assert "opcheck:test_faketensor" in [f.check for f in missing.findings]

# %% [markdown]
# **☐ No output is an input or a view of one** (unless tagged `torch.Tag.inplace`, torch ≥ 2.13).

# %%
returns_input = labkit.declare(name="nb05::returns_input", writes=("x",), mutates_args=("x",), returns="input")
aliasing = audit(returns_input, torch.randn(4))
print(aliasing.findings[0].problem[:120], "…")
assert aliasing.kinds() == {"eager"}

# %% [markdown]
# **☐ An op with an outside effect (logging, I/O, communication) is registered as effectful** — `audit` cannot see
# Python side effects, so check the op's fate instead:

# %%
logger = labkit.declare(name="nb05::logger", returns="none")
fate = labkit.compile_and_compare(labkit.scenarios.discards_result(logger), torch.ones(4)).fate("nb05::logger")
print("plain logger runs compiled:", fate["ran"], "| audit finds:", audit(logger, torch.ones(4)).findings)
assert fate["ran"] is False and audit(logger, torch.ones(4)).ok       # removed, and nothing flags it

# %% [markdown]
# **☐ After changing a declaration, the compile caches cannot serve the old one.** labkit's default policy
# fingerprints declarations into the cache key; plain torch does not (notebook 03):

# %%
stale = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "default")
safe = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "fingerprinted")
print("plain torch:", labkit.widgets.naming_story(stale))
print("labkit default:", labkit.widgets.naming_story(safe))
assert labkit.cache.policy() == "fingerprinted" and stale.steps[1].stale and not safe.steps[1].stale

# %% [markdown]
# ## 2. Myths vs facts, computed live
#
# Each claim is paired with the experiment that decides it on the torch you are running:

# %%
def fullgraph_false_runs_ops_eagerly():
    pure = labkit.declare(name="nb05::pure", returns="fresh")
    def f(x):
        pure(x)
        print(end="")        # a graph break
        return x + 1
    return labkit.compile_and_compare(f, torch.ones(2), backend="inductor").compiled_calls["nb05::pure"] > 0

def same_name_different_mutates_args_confuses_the_compiler():
    return stale.steps[1].stale and not stale.steps[1].correct

def dynamo_reset_clears_stale_artifacts():
    return not stale.steps[1].stale           # naming.run resets Dynamo between the two compiles

def installed_torch_fixed_187319():
    return not stale.steps[1].stale

def custom_op_may_return_its_input_if_declared():
    return aliasing.ok

def opcheck_catches_every_declaration_mistake():
    over = labkit.declare(name="nb05::over", mutates_args=("x",), returns="none")
    return set(labkit.checks.opcheck(over, (torch.randn(3),)).values()) != {"ok"}

def dce_depends_on_dynamic_shapes():
    pure = labkit.declare(name="nb05::pure", returns="fresh")
    f = labkit.scenarios.discards_result(pure)
    calls = [(torch.ones(n),) for n in (3, 5)]
    ran = {m: labkit.compile_and_compare(f, calls=calls, backend="inductor", dynamic=m).fate("nb05::pure")["ran"]
           for m in (False, True, None)}
    return len(set(ran.values())) > 1

MYTHS = {
    "fullgraph=False makes custom ops run eagerly": fullgraph_false_runs_ops_eagerly,
    "same-named ops with different mutates_args confuse the compiler": same_name_different_mutates_args_confuses_the_compiler,
    "torch._dynamo.reset() clears stale compiled artifacts": dynamo_reset_clears_stale_artifacts,
    f"upgrading to torch {torch.__version__.split('+')[0]} fixes #187319": installed_torch_fixed_187319,
    "a custom_op may return its input if it declares the mutation": custom_op_may_return_its_input_if_declared,
    "opcheck catches every declaration mistake": opcheck_catches_every_declaration_mistake,
    "dead-code elimination depends on dynamic shapes": dce_depends_on_dynamic_shapes,
}
verdicts = {claim: experiment() for claim, experiment in MYTHS.items()}
for claim, holds in verdicts.items():
    print(f"{'TRUE ' if holds else 'FALSE'}  {claim}")

# %%
assert list(verdicts.values()) == [False, True, False, False, False, False, False], (
    "a verdict changed on this torch: re-read the matching notebook and update this table")

# %% [markdown]
# The one true claim is true for a different reason than usually given: the compile *caches* key on graph
# text, not on schemas (03). Everything else is false on this torch — check again after each upgrade by
# re-running this notebook.
#
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
    return {name: labkit.declare(name=f"nb05::{name}", **fields) for name, fields in declarations.items()}

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

def run_capstone(declarations):
    ops = build_ops(declarations)
    torch.manual_seed(0)
    model = TinyNet(ops).eval().requires_grad_(False)
    return ops, labkit.compile_and_compare(model, torch.randn(2, 4), torch.zeros(4), backend="inductor")

buggy_ops, buggy = run_capstone(CAPSTONE_BUGGY)
labkit.show(buggy)

# %%
assert buggy.error is not None and buggy.error.kind == "missing_fake"

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
assert "declaration" in audits["update_stats"].kinds()
assert "opcheck" in audits["scale"].kinds()
assert audits["log_activations"].ok          # the invisible bug: a Python side effect

# %% [markdown]
# ## Exercise: fix the three declarations
#
# Fill in, for each op, the fields that change (anything `labkit.declare` takes: `mutates_args`, `fake`,
# `effect`, ...). The check rebuilds `TinyNet` with your fixes and compares compiled with eager — outputs, the
# running statistics, and the number of log entries. Use the audits above, and the DCE widget of notebook 04
# for the logger.

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
    logged = result.compiled_calls.get("nb05::log_activations", 0) == result.eager_calls.get("nb05::log_activations")
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
assert check_capstone({"update_stats": dict(mutates_args=("stats",)), "scale": dict(fake=True),
                       "log_activations": dict(effect="ordered")})

# %% [markdown]
# ## What to remember
#
# - Before shipping a custom op: run `torch.library.opcheck` — or `labkit.audit`, which adds the compile checks —
#   and give an op with an outside effect a registered effect; nothing can detect a hidden Python side effect.
# - Most advice in circulation about "custom ops run eagerly" or "reset fixes it" is false on current torch; the
#   real trap is the compile caches after a changed declaration.
# - A model's bugs come one at a time: a compile error hides a silent one behind it. Fix, re-audit, re-compare.
