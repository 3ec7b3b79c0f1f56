# %% [markdown]
# # 02 · `mutates_args`: the promise, and what breaks when you break it
#
# **What you will learn**
# - what declaring a mutation changes: the schema (`Tensor(a0!) x`), the functionalized
#   AOTAutograd graph (`auto_functionalized_v2` + `copy_`), and Inductor's re-inplacing;
# - `mutates_args="unknown"`, and the `tags=torch.Tag.inplace` form new in torch 2.13;
# - what each *wrong* declaration does — silently wrong, an error, or correct but not free;
# - which `opcheck` test catches which mistake, and which mistakes nothing catches;
# - to explore all of it live with the **declaration widget**.
#
# **Time:** about 30 minutes. **Before:** 01 · Custom ops and the compile pipeline.
#
# Every claim is asserted by the cell that shows it; outputs recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb02")

# %% [markdown]
# ## 1. What the declaration changes
#
# ### The schema
#
# An op that adds 1 to `x` in place, declared truthfully. First with torch's API, then with
# `labkit.declare` (whose kernel does the same and counts its calls): the schemas match.

# %%
@torch.library.custom_op("nb02::raw_bump", mutates_args={"x"})
def raw_bump(x: torch.Tensor) -> None:
    x.add_(1)


bump = labkit.declare(name="nb02::bump", writes=("x",), mutates_args=("x",), returns="none")
print(raw_bump._opoverload._schema)
print(bump.schema)

# %%
assert str(raw_bump._opoverload._schema) == "nb02::raw_bump(Tensor(a0!) x) -> ()"
assert bump.schema == "nb02::bump(Tensor(a0!) x) -> ()"

# %% [markdown]
# `Tensor(a0!) x` reads: "`x` belongs to alias set `a0`, and the op **writes** (`!`) to it".
# Everything the compiler does with the op's mutation starts from this annotation.
#
# ### AOTAutograd: functionalization
#
# AOTAutograd rewrites the graph so that no op mutates anything — that makes reordering and
# fusion safe. A mutating custom op becomes `auto_functionalized_v2(op, …)`, which *returns* the new
# value of `x` instead of writing it; at the very end, `copy_` writes it back into your input.

# %%
def step(x):
    bump(x)
    return x * 2

report = labkit.compile_and_compare(step, torch.ones(3), backend="aot_eager")
print(labkit.render.stage_code(report)["aot"])

# %%
aot = report.aot_graphs[0]
(call,) = aot.calls("nb02::bump")
assert call.wrapper == "auto_functionalized_v2" and call.mutating
copies = [n for n in aot.nodes if n.target == "copy_.default"]
assert len(copies) == 1 and copies[0].args.startswith("arg0_1")   # written back into the input
assert report.verdict.agree

# %% [markdown]
# ### Inductor: re-inplacing
#
# Copying `x` so that the op can write the copy, then copying back, would cost memory and time.
# Inductor's re-inplacing pass sees that nobody else reads the old `x`, and calls the op **directly on
# your tensor** — no clone:

# %%
report = labkit.compile_and_compare(step, torch.ones(3), backend="inductor")
print(labkit.render.stage_code(report)["inductor"])

# %%
code = labkit.render.stage_code(report)["inductor"]
assert "torch.ops.nb02.bump.default(arg0_1)" in code and "clone" not in code
assert report.verdict.agree and report.compiled_calls["nb02::bump"] == 1

# %% [markdown]
# ### `mutates_args="unknown"`
#
# When you cannot say which arguments an op writes, `"unknown"` declares *all* of them mutable.
# Always correct, never precise:

# %%
both = labkit.declare(name="nb02::maybe", args=("x", "y"), writes=("x",), mutates_args="unknown",
                      returns="none")
print(both.schema)
unknown_report = labkit.compile_and_compare(lambda x, y: (both(x, y), x + y)[1],
                                            torch.ones(2), torch.ones(2), backend="inductor")
print(unknown_report.verdict)

# %%
assert both.schema == "nb02::maybe(Tensor(a0!) x, Tensor(a1!) y) -> ()"
assert unknown_report.verdict.agree

# %% [markdown]
# ### `tags=torch.Tag.inplace` (torch 2.13 and later)
#
# Since torch 2.13 an op may *return* the tensor it mutates — the usual PyTorch in-place style
# (`x.add_(1)` returns `x`) — if it says so with `tags=torch.Tag.inplace`. Its first argument must be the
# mutated one, and it gets a fake kernel for free. On older torch this cell says so and skips.

# %%
if hasattr(torch.Tag, "inplace"):
    add_ = labkit.declare(name="nb02::add_", writes=("x",), mutates_args=("x",), returns="input",
                          tags=("inplace",))
    inplace_report = labkit.compile_and_compare(lambda x: add_(x) * 2, torch.ones(2), backend="inductor")
    print(add_.schema, "|", inplace_report.verdict)
    assert add_.schema == "nb02::add_(Tensor(a0!) x) -> Tensor(a0!)" and inplace_report.verdict.agree
else:
    print(f"torch {torch.__version__} has no torch.Tag.inplace (it arrived in 2.13): skipped.")

# %% [markdown]
# ## 2. Four ways to get it wrong — each one run
#
# `labkit.declare` lets the kernel's real behaviour (`writes`) and its declaration (`mutates_args`)
# differ on purpose. One function, four mistakes:

# %%
MISTAKES = {
    "undeclared mutation": dict(writes=("x",), mutates_args=(), returns="none"),
    "over-declared":       dict(writes=(), mutates_args=("x",), returns="none"),
    "returns its input":   dict(writes=("x",), mutates_args=("x",), returns="input"),
    "no fake kernel":      dict(writes=(), mutates_args=(), returns="fresh", fake=False),
}

def outcome(report):
    if report.eager_error:
        return "error in eager: " + report.eager_error.kind
    if report.error:
        return "error when compiling: " + report.error.kind
    return "correct" if report.verdict.agree else "SILENTLY WRONG"

results = {}
for mistake, fields in MISTAKES.items():
    op = labkit.declare(name="nb02::mistake", **fields)
    results[mistake] = labkit.compile_and_compare(
        lambda x: (lambda out: x * 2 if out is None else x + out)(op(x)), torch.ones(3), backend="inductor")
    print(f"{mistake:<20} {outcome(results[mistake])}")

# %%
assert outcome(results["undeclared mutation"]) == "SILENTLY WRONG"
assert outcome(results["over-declared"]) == "correct"
assert outcome(results["returns its input"]) == "error in eager: alias_return"
assert outcome(results["no fake kernel"]) == "error when compiling: missing_fake"

# %% [markdown]
# - **Undeclared mutation** — the worst: no error, a different answer (00 showed why: the op is dead code).
# - **Returning an input** — torch refuses in eager already, with this message:

# %%
print(results["returns its input"].eager_error.message)

# %% [markdown]
# - **No fake kernel** — the compile stops (01).
# - **Over-declared** — correct, but **not free**. Compare it with the same op declared pure, in a
#   function that never uses the op's effect:

# %%
ignores_the_op = labkit.scenarios.discards_result   # f(x): op(x); return x + 1

pure = labkit.declare(name="nb02::pure", returns="none")
over = labkit.declare(name="nb02::over", mutates_args=("x",), returns="none")
pure_report = labkit.compile_and_compare(ignores_the_op(pure), torch.ones(3), backend="inductor")
over_report = labkit.compile_and_compare(ignores_the_op(over), torch.ones(3), backend="inductor")
print("declared pure:  kernel calls", pure_report.compiled_calls["nb02::pure"], labkit.render.fate_line(pure_report, "nb02::pure"))
print("over-declared:  kernel calls", over_report.compiled_calls["nb02::over"], labkit.render.fate_line(over_report, "nb02::over"))
print(labkit.render.stage_code(over_report)["aot"])

# %%
assert pure_report.compiled_calls["nb02::pure"] == 0        # removed as dead code
assert over_report.compiled_calls["nb02::over"] == 1        # kept: it "writes" x, so it must run
assert over_report.aot_graphs[0].has("nb02::over")
assert any(n.target == "copy_.default" for n in over_report.aot_graphs[0].nodes)
assert pure_report.verdict.agree and over_report.verdict.agree

# %% [markdown]
# The over-declared op runs although its result is never used, and the graph carries the
# functionalization machinery (`auto_functionalized_v2` and a `copy_` back into `x`) for a write that
# never happens. Correct, but it costs a kernel call and blocks optimisations.
#
# ## 3. `opcheck` as the guard
#
# `torch.library.opcheck` is the tool to run on every custom op you write. Which of its tests catches
# which mistake? Computed live, one row per op (a `hidden side effect` op appends to a Python list and
# declares nothing — a mistake of a different kind):

# %%
side_log = []

@torch.library.custom_op("nb02::hidden_side_effect", mutates_args=())
def hidden_side_effect(x: torch.Tensor) -> None:
    side_log.append(x.sum().item())

@hidden_side_effect.register_fake
def _(x):
    return None

CASES = dict(MISTAKES, correct=dict(writes=("x",), mutates_args=("x",), returns="none"))
table = {}
for case, fields in CASES.items():
    table[case] = labkit.checks.opcheck(labkit.declare(name=f"nb02::check_{len(table)}", **fields),
                                        (torch.randn(3),))
table["hidden side effect"] = labkit.checks.opcheck(hidden_side_effect, (torch.randn(3),))
short = lambda verdict: "ok" if verdict == "ok" else "FAIL"
print(f"{'op':<21}" + "".join(f"{t:<28}" for t in labkit.checks.OPCHECK_TESTS))
for case, row in table.items():
    print(f"{case:<21}" + "".join(f"{short(row[t]):<28}" for t in labkit.checks.OPCHECK_TESTS))

# %%
assert table["undeclared mutation"]["test_schema"] == "FAIL: Argument x is not defined as mutable but was mutated"
assert [short(v) for v in table["undeclared mutation"].values()] == ["FAIL", "ok", "ok", "ok"]
assert set(table["over-declared"].values()) == {"ok"}       # nothing catches an over-declaration
assert set(table["hidden side effect"].values()) == {"ok"}  # nor a hidden Python side effect
assert table["no fake kernel"]["test_faketensor"].startswith("FAIL: There was no fake impl")
assert set(table["correct"].values()) == {"ok"}

# %% [markdown]
# Only `test_schema` catches an undeclared mutation — `test_aot_dispatch_dynamic` compares outputs,
# not inputs, so it passes. `opcheck` cannot know that a declared mutation never happens, nor that a
# "pure" op writes to a Python list: those you must get right yourself (04 shows how to keep an op with
# a real side effect alive).
#
# ## 4. A claim in circulation: "`x.add_(1); return x` is a valid mutating custom op"
#
# Blog posts show this pattern. Run it:

# %%
@torch.library.custom_op("nb02::seed", mutates_args={"x"})
def seed(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x

@seed.register_fake
def _(x):
    return torch.empty_like(x)

try:
    seed(torch.ones(2))
    seed_error = None
except RuntimeError as error:
    seed_error = labkit.stages.as_torch_error(error, "eager")   # torch's message, as data
print(seed_error.message.split(" The most common way")[0])

# %%
assert seed_error is not None and "must not also be an input to this custom operator" in seed_error.message

# %% [markdown]
# It fails **in eager**, before any compiler is involved. The legal ways to write it:
#
# 1. return nothing: `-> None` with `mutates_args={"x"}` (section 1);
# 2. return a *new* tensor, e.g. `x.clone()` after the update;
# 3. on torch ≥ 2.13, return `x` itself with `tags=torch.Tag.inplace` (section 1).
#
# Form 2, run and compared:

# %%
@torch.library.custom_op("nb02::seed_fixed", mutates_args={"x"})
def seed_fixed(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x.clone()

@seed_fixed.register_fake
def _(x):
    return torch.empty_like(x)

fixed_report = labkit.compile_and_compare(lambda x: seed_fixed(x) * 2, torch.ones(2), backend="inductor")
print(fixed_report.verdict)
assert fixed_report.verdict.agree

# %% [markdown]
# ## 5. The declaration widget
#
# Pick a declaration, a backend and a dynamic mode; the view shows the schema, the verdict (outputs
# *and* inputs), the real kernel calls, each stage's graph or code with the op and the mutation
# machinery highlighted, and torch's own message when it refuses. `step` runs on two input shapes so
# that `dynamic` matters. Each state is compiled once; states you have seen come back instantly.

# %%
lab = labkit.widgets.DeclarationLab(namespace="nb02w")
lab

# %% [markdown]
# Every widget in this lab can also be driven from Python — handy to script a demo:

# %%
lab.set(declaration="undeclared mutation", backend="inductor")
print(lab.schema, "→", lab.report.verdict)
lab.set(declaration="correct")
print(lab.schema, "→", lab.report.verdict)

# %%
lab.set(declaration="undeclared mutation", backend="inductor", dynamic="False")
assert not lab.report.verdict.agree
lab.set(declaration="correct")
assert lab.report.verdict.agree

# %% [markdown]
# ## Exercise 1: predict, then check
#
# For each mistake of section 2, predict on the **aot_eager** backend: `"silently wrong"`, `"error"`
# or `"correct"`. Fill the dictionary and run; the check compiles each case with the widget's core.

# %%
my_predictions = {
    "undeclared mutation": ...,
    "over-declared": ...,
    "returns its input": ...,
    "no fake kernel": ...,
}

# %%
def actual(declaration):
    _, report = labkit.widgets.declaration_experiment(declaration, "aot_eager", False, namespace="nb02x")
    if report.eager_error or report.error:
        return "error"
    return "correct" if report.verdict.agree else "silently wrong"

truth = {d: actual(d) for d in my_predictions}
if all(labkit.exercises.answered(v) for v in my_predictions.values()):
    wrong = [d for d in truth if my_predictions[d] != truth[d]]
    labkit.exercises.check(not wrong, "all four predictions hold.",
                           f"re-think: {', '.join(wrong)} (try them in the widget)")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution, computed above by the check itself.
assert truth == {"undeclared mutation": "silently wrong", "over-declared": "correct",
                 "returns its input": "error", "no fake kernel": "error"}
assert labkit.exercises.check(True, f"the answers: {truth}", "")

# %% [markdown]
# ## Exercise 2: declare a two-argument op
#
# `nb02::normalize_` updates **both** `x` and its running `stats` in place. Give the `mutates_args` that
# makes `opcheck`'s `test_schema` pass and the compiled function agree with eager.

# %%
my_normalize_mutates = ...

# %%
def check_normalize(mutates):
    if not labkit.exercises.answered(mutates):
        return False
    try:
        op = labkit.declare(name="nb02::normalize_", args=("x", "stats"), writes=("x", "stats"),
                            mutates_args=mutates, returns="none")
    except (labkit.LabOpError, TypeError) as problem:
        return labkit.exercises.check(False, "", str(problem))
    schema_check = labkit.checks.opcheck(op, (torch.randn(3), torch.zeros(3)), tests=("test_schema",))
    compiled = labkit.compile_and_compare(lambda x, s: (op(x, s), x * s)[1], torch.ones(3), torch.ones(3))
    return labkit.exercises.check(schema_check["test_schema"] == "ok" and compiled.verdict.agree,
                                  "the schema is honest and compiled == eager.",
                                  f"opcheck: {schema_check['test_schema']}; {compiled.verdict}")

answer_ok = check_normalize(my_normalize_mutates)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: both arguments are written, so both are declared ("unknown" would also pass, less precisely).
assert check_normalize(("x", "stats"))

# %% [markdown]
# ## What to remember
#
# - `mutates_args` becomes `Tensor(a0!)` in the schema; AOTAutograd functionalizes the call
#   (`auto_functionalized_v2` + `copy_` back), and Inductor re-inplaces it onto your tensor.
# - **Undeclared** mutation: silently wrong. **Over-declared**: correct but the op can no longer be removed
#   and drags functionalization along. **Returning an input**: an eager error (legal only with
#   `tags=torch.Tag.inplace`, torch ≥ 2.13). **No fake kernel**: a compile error.
# - Run `torch.library.opcheck`: its `test_schema` catches undeclared mutations. Nothing catches
#   over-declarations or hidden Python side effects.
#
# **Next:** 03 · Aliasing and names — and what the compile caches do with a changed declaration.
