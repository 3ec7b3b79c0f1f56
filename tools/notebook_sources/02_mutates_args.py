# %% [markdown]
# # 02 · `mutates_args`: the promise, and what breaks when you break it
#
# **What you will learn**
# - what declaring a mutation changes: the schema (`Tensor(a0!) x`), the functionalized
#   AOTAutograd graph (`auto_functionalized_v2` + `copy_`), and Inductor's re-inplacing;
# - `mutates_args="unknown"`, and the `tags=torch.Tag.inplace` form new in torch 2.13;
# - what each *wrong* declaration does — silently wrong, an error, or correct but not free — including an
#   undeclared write whose result *is* used, which Inductor's fusion turns into a wrong answer;
# - which `opcheck` test catches which mistake, and which mistakes `opcheck` does not catch;
# - to explore all of it live with the **declaration widget**.
#
# **Time:** about 30 minutes. **Before:** 01 · Custom ops and the compile pipeline.
#
# Every claim is asserted by the cell that shows it; outputs recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import contextlib
import io

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
assert str(raw_bump._opoverload._schema) == "nb02::raw_bump(Tensor(a0!) x) -> ()", \
    "torch's schema marks x as written to: Tensor(a0!) x"
assert bump.schema == "nb02::bump(Tensor(a0!) x) -> ()", "labkit.declare gives the same schema"

# %% [markdown]
# `Tensor(a0!) x` reads: "`x` belongs to alias set `a0`, and the op **writes** (`!`) to it".
# Everything the compiler does with the op's mutation starts from this annotation.
#
# ### AOTAutograd: functionalization
#
# AOTAutograd rewrites the graph so that no op mutates anything — so that later passes may reorder and
# fuse operations freely (section 2 shows what that freedom does to a mutation nobody declared). A mutating custom op becomes `auto_functionalized_v2(op, …)`, which *returns* the new
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
assert call.wrapper == "auto_functionalized_v2", "AOTAutograd wraps the op in auto_functionalized_v2"
assert call.mutating, "the wrapped call is recorded as writing x"
copies = [n for n in aot.nodes if n.target == "copy_.default"]
assert len(copies) == 1, "the graph has one copy_"
assert copies[0].args.startswith("arg0_1"), "the copy_ writes the new value back into the input"
assert report.verdict.agree, "compiled == eager"

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
assert "torch.ops.nb02.bump.default(arg0_1)" in code, "Inductor calls the op directly on the input"
assert "clone" not in code, "re-inplaced: no clone"
assert report.verdict.agree, "compiled == eager"
assert report.compiled_calls["nb02::bump"] == 1, "compiled: the kernel ran once"

# %% [markdown]
# ### `mutates_args="unknown"`
#
# When you cannot say which arguments an op writes, `"unknown"` declares *all* of them mutable.
# Correct for any kernel, but it pays the price of over-declaring (section 2) for every argument:

# %%
both = labkit.declare(name="nb02::maybe", args=("x", "y"), writes=("x",), mutates_args="unknown",
                      returns="none")
print(both.schema)
unknown_report = labkit.compile_and_compare(lambda x, y: (both(x, y), x + y)[1],
                                            torch.ones(2), torch.ones(2), backend="inductor")
print(unknown_report.verdict)

# %%
assert both.schema == "nb02::maybe(Tensor(a0!) x, Tensor(a1!) y) -> ()", \
    'mutates_args="unknown" declares every argument written to'
assert unknown_report.verdict.agree, 'mutates_args="unknown": compiled == eager'

# %% [markdown]
# One more price: an op that mutates anything — `"unknown"` included — cannot have an autograd formula.
# torch refuses `register_autograd` on it:

# %%
@torch.library.custom_op("nb02::unknown_writes", mutates_args="unknown")
def unknown_writes(x: torch.Tensor) -> torch.Tensor:
    return x.clone()

try:
    unknown_writes.register_autograd(lambda ctx, grad: grad)
    autograd_refusal = None
except RuntimeError as error:
    autograd_refusal = str(error)
print(autograd_refusal)

# %%
assert autograd_refusal is not None, 'torch refuses register_autograd on an op with mutates_args="unknown"'
assert "non-functional operator" in autograd_refusal, "torch's refusal calls the op a non-functional operator"

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
    assert add_.schema == "nb02::add_(Tensor(a0!) x) -> Tensor(a0!)", "the op returns the x it writes: Tensor(a0!)"
    assert inplace_report.verdict.agree, "an op tagged inplace: compiled == eager"
    try:                                   # mutating the second argument instead: refused at definition
        @torch.library.custom_op("nb02::bad_inplace", mutates_args={"y"}, tags=(torch.Tag.inplace,))
        def bad_inplace(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            y.add_(1)
            return y
        refusal = None
    except ValueError as error:
        refusal = str(error)
    print(refusal.split(". Got func")[0])
    assert "requires mutates_args to contain exactly the first positional argument" in refusal, \
        "torch.Tag.inplace is refused when the op mutates an argument other than the first"
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
        lambda x, op=op: (lambda out: x * 2 if out is None else x + out)(op(x)), torch.ones(3), backend="inductor")
    print(f"{mistake:<20} {outcome(results[mistake])}")

# %%
assert outcome(results["undeclared mutation"]) == "SILENTLY WRONG", "an undeclared mutation is silently wrong"
assert outcome(results["over-declared"]) == "correct", "an over-declaration is correct"
assert outcome(results["returns its input"]) == "error in eager: alias_return", \
    "returning an input is refused in eager (alias_return)"
assert outcome(results["no fake kernel"]) == "error when compiling: missing_fake", \
    "without a fake kernel the compile stops (missing_fake)"

# %% [markdown]
# - **Undeclared mutation** — the worst: no error, a different answer. Here (and in 00) the op returns
#   nothing, so its call is dead code and is removed. The next subsection shows the other way it goes wrong.
# - **Returning an input** — torch refuses in eager already, with this message:

# %%
print(results["returns its input"].eager_error.message)

# %% [markdown]
# - **No fake kernel** — the compile stops (01).
# - **Over-declared** — correct, but **not free**. Compare it with the same op declared pure, in a
#   function that never uses the op's effect:

# %%
ignores_the_op = labkit.experiments.discards_result   # f(x): op(x); return x + 1

pure = labkit.declare(name="nb02::pure", returns="none")
over = labkit.declare(name="nb02::over", mutates_args=("x",), returns="none")
pure_report = labkit.compile_and_compare(ignores_the_op(pure), torch.ones(3), backend="inductor")
over_report = labkit.compile_and_compare(ignores_the_op(over), torch.ones(3), backend="inductor")
print("declared pure:  kernel calls", pure_report.compiled_calls["nb02::pure"], labkit.render.fate_line(pure_report, "nb02::pure"))
print("over-declared:  kernel calls", over_report.compiled_calls["nb02::over"], labkit.render.fate_line(over_report, "nb02::over"))
print(labkit.render.stage_code(over_report)["aot"])

# %%
assert pure_report.compiled_calls["nb02::pure"] == 0, "declared pure: the call is removed as dead code"
assert over_report.compiled_calls["nb02::over"] == 1, 'over-declared: the call is kept; it "writes" x, so it must run'
assert over_report.aot_graphs[0].has("nb02::over"), "over-declared: the AOTAutograd graph keeps the call"
assert any(n.target == "copy_.default" for n in over_report.aot_graphs[0].nodes), \
    "over-declared: the AOTAutograd graph copies x back"
assert pure_report.verdict.agree, "declared pure: compiled == eager"
assert over_report.verdict.agree, "over-declared: compiled == eager"

# %% [markdown]
# The over-declared op runs although its result is never used, and the graph carries the
# functionalization machinery (`auto_functionalized_v2` and a `copy_` back into `x`) for a write that
# never happens. Correct, but it costs a kernel call that dead-code elimination would otherwise remove.
#
# ### Undeclared mutation whose result is used: the compiled code reads the wrong `x`
#
# An undeclared write does not need dead code to do harm. This op adds 1 to `x` in place (undeclared) and
# returns the sum of the new `x`, which the function *uses*; the function also reads `x` **before** the call:

# %%
@torch.library.custom_op("nb02::bump_and_sum", mutates_args=())     # the lie: it writes x
def bump_and_sum(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x.sum().reshape(1)

@bump_and_sum.register_fake
def _(x):
    return x.new_empty(1)

def read_then_bump(x):
    before = x * 2                     # x as it was: 1 → 2
    total = bump_and_sum(x)            # x becomes 2; total = 6
    return before + total              # eager: 2 + 6 = 8

used = labkit.compile_and_compare(read_then_bump, torch.ones(3), backend="inductor")
print(used.verdict)
print(labkit.render.stage_code(used)["inductor"])

# %% [markdown]
# Inductor believes `x` is only read, so it is free to compute `x * 2` whenever it likes. It fuses it into
# one generated kernel with the addition (`cpp_fused_add_mul_0`), launched **after** the op: that kernel
# reads `x` after the write and returns 2·2 + 6 = 10 instead of 8. The call was not removed; it ran, and
# its undeclared write changed what other code read.

# %%
def launches(report):
    return labkit.render.inductor_kernel_calls(report.inductor_code[0])

x_eager, x_compiled = torch.ones(3), torch.ones(3)
print("eager:", read_then_bump(x_eager).tolist(), "| compiled:", torch.compile(read_then_bump)(x_compiled).tolist())

# %%
assert read_then_bump(torch.ones(3)).tolist() == [8.0] * 3, "eager: 2 + 6 = 8"
assert torch.compile(read_then_bump)(torch.ones(3)).tolist() == [10.0] * 3, "compiled: silently wrong, 2·2 + 6 = 10"
assert not used.verdict.outputs_match, "compiled and eager outputs differ"
assert used.verdict.inputs_match, "x itself ends right"
assert launches(used) == ["torch.ops.nb02.bump_and_sum.default(…)", "cpp_fused_add_mul_0(…)"], \
    "the op is launched first, then the fused kernel that reads x"

# %% [markdown]
# Declared truthfully (`mutates_args={"x"}`), the same function compiles correctly. Look at what it costs:
# re-inplacing cannot run the op on your tensor, because `x * 2` still needs the old `x`. Inductor first
# **clones** `x`, runs the op on the clone, and computes the rest from both:

# %%
@torch.library.custom_op("nb02::bump_and_sum_declared", mutates_args={"x"})
def bump_and_sum_declared(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x.sum().reshape(1)

@bump_and_sum_declared.register_fake
def _(x):
    return x.new_empty(1)

def read_then_bump_declared(x):
    before = x * 2
    total = bump_and_sum_declared(x)
    return before + total

declared = labkit.compile_and_compare(read_then_bump_declared, torch.ones(3), backend="inductor")
print(declared.verdict)
print(launches(declared))

# %%
assert declared.verdict.agree, "declared truthfully: compiled == eager"
first, op_call = launches(declared)[:2]
assert "clone" in first, "Inductor's first launch clones x"
assert op_call == "torch.ops.nb02.bump_and_sum_declared.default(…)", "the op runs after the clone"

# %% [markdown]
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

# %% [markdown]
# The table: `labkit.checks.opcheck` on the four mistakes, on a correct declaration, and on `hidden_side_effect`:

# %%
CASES = dict(MISTAKES, correct=dict(writes=("x",), mutates_args=("x",), returns="none"))
table = {}
for case, fields in CASES.items():
    table[case] = labkit.checks.opcheck(labkit.declare(name=f"nb02::check_{len(table)}", **fields),
                                        (torch.randn(3),))
table["hidden side effect"] = labkit.checks.opcheck(hidden_side_effect, (torch.randn(3),))


def short(verdict):
    return "ok" if verdict == "ok" else "FAIL"


print(f"{'op':<21}" + "".join(f"{t:<28}" for t in labkit.checks.OPCHECK_TESTS))
for case, row in table.items():
    print(f"{case:<21}" + "".join(f"{short(row[t]):<28}" for t in labkit.checks.OPCHECK_TESTS))

# %%
assert table["undeclared mutation"]["test_schema"] == "FAIL: Argument x is not defined as mutable but was mutated", \
    "test_schema catches an undeclared mutation"
assert [short(v) for v in table["undeclared mutation"].values()] == ["FAIL", "ok", "ok", "ok"], \
    "only test_schema catches an undeclared mutation"
assert set(table["over-declared"].values()) == {"ok"}, "opcheck does not catch an over-declaration"
assert set(table["hidden side effect"].values()) == {"ok"}, "opcheck does not catch a hidden Python side effect"
assert table["no fake kernel"]["test_faketensor"].startswith("FAIL: There was no fake impl"), \
    "test_faketensor catches a missing fake kernel"
assert set(table["correct"].values()) == {"ok"}, "a correct declaration passes every test"

# %% [markdown]
# Only `test_schema` catches an undeclared mutation — `test_aot_dispatch_dynamic` compares outputs,
# not inputs, so it passes. `opcheck` cannot know that a declared mutation never happens, nor that a
# "pure" op writes to a Python list: those you must get right yourself (05 shows how to keep an op with
# a real side effect alive; labkit's `audit`, in 06, also flags over-declarations).

# %% [markdown]
# ## 4. The declaration widget
#
# Pick a declaration, a backend and a dynamic mode; the view shows the schema, the verdict (outputs
# *and* inputs), the real kernel calls, each stage's graph or code with the op and the mutation
# machinery highlighted, and torch's own message when it refuses. `step` runs on two input shapes so
# that `dynamic` matters. Each state is compiled once; states you have seen come back instantly.

# %%
lab = labkit.widgets.DeclarationLab(namespace="nb02w")
lab

# %% [markdown]
# ## Exercise 1: predict, then check
#
# Now predict the same experiments on the **`aot_eager`** backend. It stops after AOTAutograd and runs
# AOTAutograd's graph node by node, in order — no Inductor, no fusion. For each case answer
# `"silently wrong"`, `"error"` or `"correct"`, then run. (Think about *which stage* did the damage in
# each case above.)

# %%
my_predictions = {
    "undeclared mutation (returns nothing)": ...,
    "undeclared mutation, result used (read_then_bump)": ...,
    "over-declared": ...,
    "no fake kernel": ...,
}

# %%
def on_aot_eager(case):
    if case.startswith("undeclared mutation, result used"):
        return labkit.compile_and_compare(read_then_bump, torch.ones(3), backend="aot_eager")
    fields = MISTAKES[case.split(" (")[0]]
    op = labkit.declare(name="nb02::predict", **fields)
    return labkit.compile_and_compare(lambda x: (lambda out: x * 2 if out is None else x + out)(op(x)),
                                      torch.ones(3), backend="aot_eager")

def three_ways(report):
    if report.eager_error or report.error:
        return "error"
    return "correct" if report.verdict.agree else "silently wrong"

truth = {case: three_ways(on_aot_eager(case)) for case in my_predictions}
if all(labkit.exercises.answered(v) for v in my_predictions.values()):
    wrong = [case for case in truth if my_predictions[case] != truth[case]]
    labkit.exercises.check(not wrong, "all four predictions hold.",
                           f"re-think: {'; '.join(wrong)}. Which stage removed or reordered what?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution. Removal happens in AOTAutograd, so aot_eager is silently wrong too. The reordering that broke
# read_then_bump was Inductor's fusion: aot_eager runs x * 2 before the op, as written, and happens to be right.
# An over-declaration is correct on every backend; a missing fake kernel stops any compile.
assert truth == {"undeclared mutation (returns nothing)": "silently wrong",
                 "undeclared mutation, result used (read_then_bump)": "correct",
                 "over-declared": "correct", "no fake kernel": "error"}, \
    "on aot_eager: the removed call is silently wrong, read_then_bump is right, over-declared is correct, " \
    "a missing fake kernel is an error"
print("solution checked")

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
with contextlib.redirect_stdout(io.StringIO()):
    assert check_normalize(("x", "stats")), "declaring both written arguments is accepted"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# The graphs above came from labkit's recording backend; torch prints the same ones itself. From a shell:
# `TORCH_LOGS="aot_graphs,output_code" python my_script.py`. In a notebook, `torch._logging.set_logs`
# does the same; `labkit.torch_logs` is notebook 00's recipe for catching its stderr so a cell can assert
# on it. The truthfully declared `raw_bump` of section 1, in plain torch:

# %%
def raw_step(x):
    raw_bump(x)
    return x * 2

torch.compiler.reset()
with labkit.torch_logs(aot_graphs=True) as log:          # torch._logging.set_logs(aot_graphs=True), caught
    torch.compile(raw_step, backend="aot_eager")(torch.ones(3))
aot_lines = [line.strip() for line in log.artifact("aot_graphs") if "torch.ops." in line]
print("\n".join(aot_lines))

# %%
assert any("auto_functionalized_v2" in line and "nb02.raw_bump.default" in line for line in aot_lines), \
    "torch's AOTAutograd log shows raw_bump wrapped in auto_functionalized_v2"
assert any("torch.ops.aten.copy_.default(arg0_1" in line for line in aot_lines), \
    "torch's AOTAutograd log shows the copy_ back into the input"

# %% [markdown]
# ## What to remember
#
# - `mutates_args` becomes `Tensor(a0!)` in the schema; AOTAutograd functionalizes the call
#   (`auto_functionalized_v2` + `copy_` back), and Inductor re-inplaces it onto your tensor — or clones
#   first when other code still needs the old value.
# - **Undeclared** mutation: silently wrong, two ways — the call is removed as dead code (result unused), or
#   other code is reordered or fused across it and reads the wrong value (result used).
#   **Over-declared**: correct, but the call is kept and drags functionalization along even when unused.
#   **Returning an input**: an eager error (legal only with `tags=torch.Tag.inplace`, torch ≥ 2.13).
#   **No fake kernel**: a compile error.
# - Run `torch.library.opcheck` (00 and 01 call it directly): its `test_schema` catches undeclared
#   mutations. It does not catch over-declarations or hidden Python side effects.
#
# ## Questions
#
# 1. Why does AOTAutograd turn a mutating op into a functional `auto_functionalized_v2` node plus a `copy_`?
# 2. Why was `read_then_bump` right on `aot_eager` and wrong on Inductor, with the same graph?
# 3. Why did the truthful `bump_and_sum_declared` cost a clone, while `bump` in section 1 did not?
# 4. Why can `test_aot_dispatch_dynamic` pass for an op that writes an input it did not declare?
# 5. Why is over-declaring safe but not free?
#
# ## Further reading
#
# - PyTorch tutorial, [Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)
#   (see its page on mutable custom ops)
# - [`torch.library` reference](https://docs.pytorch.org/docs/stable/library.html) (`custom_op`, `mutates_args`, `opcheck`)
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - Re-inplacing of mutating custom ops: [pytorch #120509](https://github.com/pytorch/pytorch/issues/120509)
#   (the feature request) and [pytorch PR #134409](https://github.com/pytorch/pytorch/pull/134409)
#   (`auto_functionalized_v2`, designed for better re-inplacing)
#
# **Next:** 03 · Aliasing and views.
