# %% [markdown]
# # 03 · Aliasing and names: views, the no-alias rule, and stale compile caches
#
# **What you will learn**
# - how a mutating op applied to a *view* of an input is functionalized and written back;
# - why a custom op's outputs may not alias its inputs, and where torch enforces it;
# - that an op's qualified name *is* its identity — and what re-declaring a name does;
# - **pytorch #187319, live**: the compile caches hand back an artifact built for an op's *old*
#   declaration, in one process and across two; and four mitigations, each checked.
#
# **Time:** about 30 minutes. **Before:** 02 · `mutates_args`.
#
# Outputs recorded on torch 2.13.0 (CPU); every assertion here also holds on torch 2.14.1.

# %%
# NBVAL_IGNORE_OUTPUT
import os
import warnings

import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb03")

# %% [markdown]
# ## 1. A mutating op on a view
#
# `bump` adds 1 in place and says so. Apply it to a slice of the input: eagerly, the slice shares
# storage with `x`, so `x` itself changes.

# %%
bump = labkit.declare(name="nb03::bump", writes=("x",), mutates_args=("x",), returns="none")

def bump_middle(x):
    bump(x[1:3])
    return x * 2

x = torch.zeros(5)
print(bump_middle(x), x)

# %% [markdown]
# Functionalization has to reproduce that without in-place writes. It records the **base**
# tensor and how the view was cut from it (`_x_base_index`, `_x_slice_dim/start/end`), lets the op
# produce a new base, and copies the new base back into your input:

# %%
report = labkit.compile_and_compare(bump_middle, torch.zeros(5), backend="aot_eager")
print(labkit.render.stage_code(report)["aot"])

# %%
(node,) = report.aot_graphs[0].calls("nb03::bump")
aot_code = labkit.render.stage_code(report)["aot"]
assert "_x_base_index = 0, _x_slice_dim = 0, _x_slice_start = 1, _x_slice_end = 3" in aot_code
assert "copy_.default(arg0_1" in aot_code and report.verdict.agree

# %% [markdown]
# Inductor re-inplaces it: the op runs directly on a view of your tensor (`reinterpret_tensor` with
# offset 1), no copy at all:

# %%
inductor_report = labkit.compile_and_compare(bump_middle, torch.zeros(5), backend="inductor")
print(labkit.render.stage_code(inductor_report)["inductor"])

# %%
assert "torch.ops.nb03.bump.default(reinterpret_tensor(arg0_1, (2, ), (1, ), 1))" in \
    labkit.render.stage_code(inductor_report)["inductor"]
assert inductor_report.verdict.agree

# %% [markdown]
# ## 2. Why an op's outputs may not alias its inputs
#
# That bookkeeping only works if the compiler knows *exactly* which tensors share storage. A mutation
# is declared in the schema; an output that secretly shares memory with an input is not — so
# functionalization would treat them as independent and could reorder or drop writes. torch therefore
# refuses outputs that are, or view, an input. For `custom_op` it checks **in eager**, on every call —
# returning a view is refused just like returning the input itself:

# %%
@torch.library.custom_op("nb03::first_row", mutates_args=())
def first_row(x: torch.Tensor) -> torch.Tensor:
    return x[:1]          # a view of x: shares its memory

try:
    first_row(torch.ones(3))
    alias_error = None
except RuntimeError as error:
    alias_error = labkit.stages.as_torch_error(error, "eager")
print(alias_error.message.split(" The most common")[0])

# %%
assert alias_error is not None and "may not alias any inputs" in alias_error.message

# %% [markdown]
# Ops registered through the lower-level `torch.library.Library.define` (or C++) get no eager check.
# For them AOTAutograd checks the outputs the first time the compiled code runs. Whether it **warns** or
# **raises** depends on the environment: torch reads the `CI` variable when it starts
# (`torch._functorch.config.error_on_custom_op_aliasing`). Here both settings, made explicit:

# %%
lib = torch.library.Library("nb03lib", "FRAGMENT")
lib.define("same(Tensor x) -> Tensor")
lib.impl("same", lambda x: x, "CompositeExplicitAutograd")           # returns its input
torch.library.register_fake("nb03lib::same", lambda x: torch.empty_like(x), lib=lib)

def use_same(x):
    return torch.ops.nb03lib.same(x) + 1

outcomes = {}
for raises in (False, True):
    torch.compiler.reset()
    with labkit.checks.aliasing_check_raises(raises), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.compile(use_same, backend="aot_eager")(torch.ones(2))
            outcomes[raises] = "warned" if any("may not alias" in str(w.message) for w in caught) else "silent"
        except RuntimeError:
            outcomes[raises] = "raised"
    print(f"error_on_custom_op_aliasing={raises}: {outcomes[raises]}")

# %%
assert torch.ops.nb03lib.same(x) is x              # eager: no check for Library.define ops
assert outcomes == {False: "warned", True: "raised"}
if "TORCHINDUCTOR_ERROR_ON_CUSTOM_OP_ALIASING" not in os.environ:   # torch's default follows CI
    assert torch._functorch.config.error_on_custom_op_aliasing == bool(os.getenv("CI"))
lib._destroy()

# %% [markdown]
# ## 3. A name is an identity
#
# The dispatcher knows an op by its qualified name. What happens when a notebook cell that declares
# `nb03::foo` runs again with a different declaration?

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")

    @torch.library.custom_op("nb03::foo", mutates_args=())
    def foo_v1(x: torch.Tensor) -> None:
        x.add_(1)

    @foo_v1.register_fake
    def _(x):
        return None

    @torch.library.custom_op("nb03::foo", mutates_args=("x",))
    def foo_v2(x: torch.Tensor) -> None:
        x.add_(100)

print("warnings:", [str(w.message) for w in caught])
print("old handle reports:    ", foo_v1._opoverload._schema)
print("new handle reports:    ", foo_v2._opoverload._schema)
print("torch.ops.nb03.foo is: ", torch.ops.nb03.foo.default._schema)

# %%
assert caught == []                                                            # silently replaced
assert str(foo_v1._opoverload._schema) == "nb03::foo(Tensor x) -> ()"          # stale metadata
assert str(foo_v2._opoverload._schema) == "nb03::foo(Tensor(a0!) x) -> ()"
assert str(torch.ops.nb03.foo.default._schema) == str(foo_v2._opoverload._schema)

# %% [markdown]
# `custom_op` destroys the old registration and makes a new one, with no warning; a Python object you
# kept from before still *reports* the old schema. **Do not call it.** Its C++ side still points at the
# registration torch deleted: a dangling handle (pytorch #98541, "memory corruption on re-register").
# Often the freed memory has been reused by the new registration and the call happens to reach the
# new kernel — but it is undefined behaviour: in this lab's own test run of every notebook twice in
# one kernel (torch 2.13.0), that call raised `MemoryError: std::bad_alloc`, and it can crash the
# kernel. That is why this cell does not make the call. `labkit.declare` retires such handles instead:
# calling one raises `StaleOpError` before anything reaches torch.
#
# The lower-level API refuses a duplicate instead, and `torch.library._scoped_library` (private, used
# in torch's own tests) frees a name when its block ends:

# %%
low = torch.library.Library("nb03low", "FRAGMENT")
low.define("bar(Tensor x) -> Tensor")
try:
    low.define("bar(Tensor x) -> Tensor")
    duplicate = None
except RuntimeError as error:
    duplicate = str(error)
print(duplicate[:100], "…")
low._destroy()

with torch.library._scoped_library("nb03scoped", "FRAGMENT") as scoped_lib:
    scoped_lib.define("tmp(Tensor x) -> Tensor")
    inside = hasattr(torch.ops.nb03scoped, "tmp")
after = hasattr(torch.ops.nb03scoped, "tmp")
print("inside the block:", inside, "| after it:", after)

# %%
assert duplicate.startswith("Tried to register an operator (nb03low::bar(Tensor x) -> Tensor) with the same name")
assert inside and not after

# %% [markdown]
# ## 4. pytorch #187319, live: the caches remember the old declaration
#
# torch keeps compiled artifacts in two on-disk caches, the **AOTAutograd** cache and Inductor's
# **FX-graph** cache. Their keys are computed from the graph's *text*, which names `nb03::fix` but not its
# schema. So: declare an op wrongly (pure, though it writes `x`), compile, fix the declaration, compile
# again. Plain torch, the default cache policy, a fresh cache directory:

# %%
def declare_fix(mutating):
    @torch.library.custom_op("nb03::fix", mutates_args=("x",) if mutating else ())
    def fix(x: torch.Tensor) -> None:
        x.add_(1)
    if not mutating:
        fix.register_fake(lambda x: None)
    return fix

def uses_fix(x):
    torch.ops.nb03.fix(x)
    return x * 2 + 1

with labkit.cache.using("default"):
    declare_fix(mutating=False)                       # the bug
    x1 = torch.zeros(2)
    torch.compile(uses_fix, backend="inductor")(x1)
    declare_fix(mutating=True)                        # the fix
    torch.compiler.reset()                            # even a full reset...
    before = labkit._torch_internals.cache_counters()
    x2 = torch.zeros(2)
    torch.compile(uses_fix, backend="inductor")(x2)   # ...and a new torch.compile
    after = labkit._torch_internals.cache_counters()
hits = {k: after[k] - before[k] for k in after if k.endswith("hit")}
print("after the bug:", x1.tolist(), "| after the fix:", x2.tolist(), "| cache hits:", hits)

# %%
assert x1.tolist() == [0.0, 0.0]       # expected: the pure declaration let the call be removed
assert x2.tolist() == [0.0, 0.0] and hits == {"fxgraph_hit": 1, "aot_hit": 1}, (
    "The fixed declaration no longer gets the stale artifact: torch may have fixed #187319 "
    f"(torch {torch.__version__}). This lesson needs updating.")
print(f"Observed on torch {torch.__version__}: the fix compiled to the artifact of the bug.")

# %% [markdown]
# The fix did nothing: the second compile was served from the caches, and the artifact built for the
# pure declaration — with the call removed — ran again. The same happens **across processes** that share a
# cache directory (the normal case: the default directory is per user). `labkit.cache_demo` runs one
# process per declaration; each prints what it saw:

# %%
import shutil
import tempfile

shared_dir = tempfile.mkdtemp(prefix="nb03-cache-")
try:
    bug = labkit.cache_demo.run_in_subprocess("pure", "default", shared_dir)
    fixed = labkit.cache_demo.run_in_subprocess("mutating", "default", shared_dir)
    fresh = labkit.cache_demo.run_in_subprocess("mutating", "default", tempfile.mkdtemp(dir=shared_dir))
finally:
    shutil.rmtree(shared_dir, ignore_errors=True)
for label, run in (("process 1, pure", bug), ("process 2, mutating, same dir", fixed),
                   ("process 3, mutating, fresh dir", fresh)):
    print(f"{label:<32} x after: {run['x_after']}  FX-graph cache hits: {run['cache']['fxgraph_hit']}")

# %%
assert bug["x_after"] == [0.0] * 4
assert fixed["x_after"] == [0.0] * 4 and fixed["cache"]["fxgraph_hit"] == 1, (
    "The second process compiled afresh: torch may have fixed #187319; update this lesson.")
assert fresh["x_after"] == [1.0] * 4 and fresh["cache"]["fxgraph_hit"] == 0

# %% [markdown]
# ### Four mitigations, each checked
#
# `labkit.naming.run` replays the in-process story (pure first, then mutating) under a cache policy, in
# a fresh cache directory, and reports each step:

# %%
mitigations = {
    "distinct names":               labkit.naming.run("distinct names", labkit.naming.ORDERS[0], "default"),
    "caches disabled":              labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "disabled"),
    "schema fingerprint in the key": labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "fingerprinted"),
}
for label, result in mitigations.items():
    fixed_step = result.steps[1]
    print(f"{label:<30} x after the fix: {fixed_step.x_after}  cache hits: {fixed_step.cache_hits}")
print(f"{'a fresh cache dir (process 3)':<30} x after the fix: {fresh['x_after'][:2]}  cache hits: 0")

# %%
assert all(r.steps[1].correct and not r.steps[1].stale for r in mitigations.values())

# %% [markdown]
# - **Distinct names** (`mylib::foo_v2`) change the graph text, so the key.
# - **Disabling the caches** (`torch.compiler.config.force_disable_caches = True`, or the environment variable
#   `TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`) always works and costs compile time.
# - **A fresh cache directory** (`TORCHINDUCTOR_CACHE_DIR`) works across processes, not within one.
# - **A fingerprint of the declarations in `torch.compiler.config.cache_key_tag`** keeps the caches on and
#   correct: a changed declaration is a new key, an unchanged one still hits. This is what labkit does by
#   default (`labkit.cache.set_policy("fingerprinted")`); it is hooked to every Dynamo compile.
#
# ## 5. Myth vs fact
#
# | Claim in circulation | Verdict here |
# |---|---|
# | "Same-named ops with different `mutates_args` confuse **Dynamo's aliasing analysis**." | **Misleading.** The *symptom* is real (section 4), but the cause is the **compile caches**, keyed on graph text. Dynamo does no aliasing analysis of custom ops; AOTAutograd reads the *current* schema — and is skipped when the cache hits. |
# | "Re-running the cell that declares an op gives an error." | **False** for `custom_op`: silently replaced (section 3). **True** for `Library.define`. |
# | "`torch._dynamo.reset()` clears everything compiled." | **False:** it clears in-memory state; the on-disk caches still answer (section 4). |
#
# The cell below checks the row that is easiest to get wrong: with the caches off, the same two declarations
# compile correctly — so the confusion lives in the caches, not in tracing.

# %%
assert mitigations["caches disabled"].steps[1].correct
assert mitigations["caches disabled"].steps[1].schema_now == "naming::op(Tensor(a0!) x) -> ()"

# %% [markdown]
# ## 6. The naming widget
#
# Choose how the two declarations are named (one shared name, distinct names, or a name you type), their
# order, and the cache policy. The table shows what each Python handle reports, how often the kernel ran,
# the value of `x`, and whether the caches answered. A name you type is checked first — nothing you type is
# ever evaluated — and the widget frees the names it used, so nothing leaks into the rest of the notebook.

# %%
naming_lab = labkit.widgets.NamingLab(namespace="nb03w")
naming_lab

# %%
naming_lab.set(scheme="a name I type", typed_name="aten::add")
print(naming_lab.outcome.problem)
naming_lab.set(typed_name="mine::op", policy="fingerprinted")
print(labkit.widgets.naming_story(naming_lab.outcome))

# %%
assert "belongs to torch itself" in naming_lab.set(typed_name="aten::add").outcome.problem
assert naming_lab.set(typed_name="mine::op", policy="fingerprinted").outcome.steps[1].correct

# %% [markdown]
# ## Exercise 1: does an isolated cache help inside one process?
#
# The `"isolated"` policy gives the process its own fresh cache directory. With **one shared name**, pure
# first, does the fixed declaration compile correctly under it? Answer `True` or `False`.

# %%
isolated_is_enough = ...

# %%
isolated = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "isolated")
if labkit.exercises.answered(isolated_is_enough):
    labkit.exercises.check(isolated_is_enough == isolated.steps[1].correct,
                           "right: the second compile hits the artifact the first one wrote, in the same directory.",
                           "Try it in the widget: names 'one shared name', cache 'isolated'.")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: isolation protects one process from another, not a process from itself.
assert isolated.steps[1].stale and not isolated.steps[1].correct
assert labkit.exercises.check(True, "isolated_is_enough = False", "")

# %% [markdown]
# ## Exercise 2: keep the caches, lose the bug
#
# Pick the cache policy (one of `labkit.cache.POLICIES`) that keeps the compile caches **on** and still
# compiles the fixed declaration correctly with one shared name.

# %%
my_policy = ...

# %%
if labkit.exercises.answered(my_policy):
    if my_policy not in labkit.cache.POLICIES:
        labkit.exercises.check(False, "", f"pick one of {labkit.cache.POLICIES}")
    else:
        mine = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], my_policy)
        labkit.exercises.check(mine.steps[1].correct and my_policy != "disabled",
                               "correct, and the caches stay on.",
                               "that policy either goes stale or turns the caches off.")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: the fingerprint changes the key exactly when a declaration changes.
assert labkit.exercises.check(mitigations["schema fingerprint in the key"].steps[1].correct,
                              'my_policy = "fingerprinted"', "")

# %% [markdown]
# ## What to remember
#
# - A mutating op on a view is functionalized through its **base** and written back; Inductor re-inplaces it.
# - Custom-op outputs may not alias inputs: `custom_op` refuses in eager; for `Library.define` ops
#   AOTAutograd warns, or raises when `CI` is set.
# - An op's qualified name is its identity. `custom_op` replaces a name silently; old handles lie about the
#   schema and must not be called (a dangling handle). `Library.define` refuses duplicates; `_scoped_library` frees names.
# - **#187319:** the compile caches key on graph text, not on schemas. After changing a declaration, give the
#   op a new name, disable the caches, or put a fingerprint of the declarations in
#   `torch.compiler.config.cache_key_tag` (labkit's default). `torch.compiler.reset()` is not enough.
#
# **Next:** 04 · Dead-code elimination and dynamic shapes.
