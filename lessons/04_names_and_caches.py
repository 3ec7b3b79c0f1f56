# %% [markdown]
# # 04 · Names and compile caches: an op's name is its identity, and the caches remember it
#
# You find the bug: an op writes `x` but was declared pure. You fix the declaration, reset, compile again, and
# the program still behaves like the bug. torch's compile caches handed back the artifact built for the *old*
# declaration (§2), in this process and in the next one. This notebook shows why, and which fixes hold.
#
# **What you will learn**
# - that an op's qualified name *is* its identity, and what re-declaring a name does;
# - how the compile caches serve an artifact built for an op's old declaration, in one process and across two;
# - the mitigations, each checked, including the plain-torch recipe: a hash of your ops' schemas in
#   `torch.compiler.config.cache_key_tag`;
# - what such a hash cannot see: a changed fake kernel.
#
# **Time:** about 40 minutes. **Before:** 02 · `mutates_args`.

# %% tags=["nbval-ignore-output"]
import hashlib
import shutil
import tempfile
import warnings

import torch

import labkit

labkit.setup()

# %% [markdown]
# ## 1. A name is an identity
#
# The dispatcher knows an op by its qualified name. What happens when the cell that declares `nb04n::foo`
# runs again with a different declaration?

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")

    @torch.library.custom_op("nb04n::foo", mutates_args=())
    def foo_v1(x: torch.Tensor) -> None:
        x.add_(1)

    @torch.library.custom_op("nb04n::foo", mutates_args=("x",))
    def foo_v2(x: torch.Tensor) -> None:
        x.add_(100)

# private torch: a handle's schema has no public accessor (reading it is safe; calling the old handle is not)
print("warnings:", [str(w.message) for w in caught])
print("old handle reports:    ", foo_v1._opoverload._schema)
print("new handle reports:    ", foo_v2._opoverload._schema)
print("torch.ops.nb04n.foo is: ", torch.ops.nb04n.foo.default._schema)

# %% tags=["check"]
#@title Check: custom_op replaces a name silently; the old handle still reports the old schema
assert caught == [], "re-declaring nb04n::foo with custom_op gives no warning: the name is silently replaced"
assert str(foo_v1._opoverload._schema) == "nb04n::foo(Tensor x) -> ()", \
    "the old handle still reports the old schema (stale metadata)"
assert str(foo_v2._opoverload._schema) == "nb04n::foo(Tensor(a0!) x) -> ()", "the new handle reports the mutating schema"
assert str(torch.ops.nb04n.foo.default._schema) == str(foo_v2._opoverload._schema), \
    "torch.ops.nb04n.foo is the new declaration: a name has one declaration at a time"

# %% [markdown]
# `custom_op` replaced the registration, with no warning; the object you kept still *reports* the old schema.
# **Do not call it**: its C++ side points at the registration torch deleted (a dangling handle, Further
# reading). So a "model that uses both declarations of one name" cannot exist. (`labkit.declare` retires such
# handles: calling one raises `StaleOpError`.)
#
# The lower-level `Library.define` refuses a duplicate, and destroying the `Library` frees its names:

# %%
low = torch.library.Library("nb04nlow", "FRAGMENT")
low.define("bar(Tensor x) -> Tensor")
duplicate = labkit.stages.raised(lambda: low.define("bar(Tensor x) -> Tensor"))
print(duplicate.message[:100], "…")
low._destroy()         # private torch: what frees a Library's names (a plain `del` may not, while refs remain)
print("nb04nlow::bar after _destroy():", hasattr(torch.ops.nb04nlow, "bar"))

# %% tags=["check"]
#@title Check: Library.define refuses a name twice; a destroyed Library frees its names
assert duplicate is not None, "Library.define refuses to define a name twice"
assert duplicate.message.startswith("Tried to register an operator (nb04nlow::bar(Tensor x) -> Tensor) with the same"), \
    "torch's message names the operator registered twice"
assert not hasattr(torch.ops.nb04nlow, "bar"), "once the Library is destroyed, the name is free again"

# %% [markdown]
# ## 2. The caches remember the old declaration
#
# torch keeps compiled artifacts in two on-disk caches, **AOTAutograd**'s and Inductor's **FX-graph** cache.
# Their keys come from the graph's text, the inputs, the configuration, torch's version and
# `torch.compiler.config.cache_key_tag`. The graph text names `nb04n::fix`, not its schema. So: declare an op
# wrongly (pure, though it writes `x`), compile, fix the declaration, compile again, in plain torch
# (`labkit.cache.using("default")` turns labkit's fix off and gives a fresh cache directory). This is a known torch
# bug, one of the two this lab grew from: stale artifacts after a changed `mutates_args` (its issue: Further reading).

# %%
def declare_fix(mutating):
    @torch.library.custom_op("nb04n::fix", mutates_args=("x",) if mutating else ())
    def fix(x: torch.Tensor) -> None:
        x.add_(1)
    if not mutating:
        fix.register_fake(lambda x: None)
    return fix

def uses_fix(x):
    torch.ops.nb04n.fix(x)
    return x * 2 + 1

# %%
with labkit.cache.using("default"):
    declare_fix(mutating=False)                       # the bug
    x1 = torch.zeros(2)
    torch.compile(uses_fix, backend="inductor")(x1)
    declare_fix(mutating=True)                        # the fix
    torch.compiler.reset()                            # clears in-memory state only
    before = labkit.cache.counters()
    x2 = torch.zeros(2)
    torch.compile(uses_fix, backend="inductor")(x2)   # a new torch.compile
    after = labkit.cache.counters()
hits = {k: after[k] - before[k] for k in after if k.endswith("hit")}
print("after the bug:", x1.tolist(), "| after the fix:", x2.tolist(), "| cache hits:", hits)

# %% tags=["check"]
#@title Check: the fixed declaration ran the bug's artifact, served by both caches
assert x1.tolist() == [0.0, 0.0], "the pure declaration let the compiler remove the call (expected for the bug)"
assert x2.tolist() == [0.0, 0.0], (
    "The fixed declaration no longer gets the stale artifact (its call ran): torch may have fixed #187319 "
    f"(torch {torch.__version__}). This lesson needs updating.")
assert hits == {"fxgraph_hit": 1, "aot_hit": 1}, (
    "The fixed declaration's compile no longer hits both caches: torch may have fixed #187319 "
    f"(torch {torch.__version__}). This lesson needs updating.")

# %% [markdown]
# The fix did nothing: the caches served the artifact built for the pure declaration, call removed. It reproduces
# on every release this lab ran (Further reading); the check above tells you when a torch release changes it.
#
# The same happens **across processes** that share a cache directory (`TORCHINDUCTOR_CACHE_DIR`, or torch's
# default). `labkit.cache_demo.run_together` runs one process per declaration: process 2 shares process 1's
# directory and starts once process 1 has exited; process 3 has a directory of its own:

# %%
shared_dir = tempfile.mkdtemp(prefix="nb04-cache-")
try:
    bug, fixed, fresh = labkit.cache_demo.run_together(
        ("pure", "default", shared_dir),                            # process 1
        ("mutating", "default", shared_dir),                        # process 2: after process 1, same directory
        ("mutating", "default", tempfile.mkdtemp(dir=shared_dir)))  # process 3: a directory of its own
finally:
    shutil.rmtree(shared_dir, ignore_errors=True)
for label, run in (("process 1, pure", bug), ("process 2, mutating, same dir", fixed),
                   ("process 3, mutating, fresh dir", fresh)):
    print(f"{label:<32} x after: {run['x_after']}  FX-graph cache hits: {run['cache']['fxgraph_hit']}")

# %% tags=["check"]
#@title Check: process 2 gets process 1's artifact; process 3, with its own directory, compiles afresh
assert bug["x_after"] == [0.0] * 4, "process 1 (pure declaration): the call was removed, x is unchanged"
assert fixed["x_after"] == [0.0] * 4, (
    "The second process ran the fixed declaration's call: torch may have fixed #187319; update this lesson.")
assert fixed["cache"]["fxgraph_hit"] == 1, (
    "The second process compiled afresh: torch may have fixed #187319; update this lesson.")
assert fresh["x_after"] == [1.0] * 4, "process 3 (its own cache dir) runs the mutating op: x is incremented"
assert fresh["cache"]["fxgraph_hit"] == 0, "process 3 (its own cache dir) compiles afresh: no FX-graph cache hit"

# %% [markdown]
# ## 3. Mitigations, each checked
#
# `labkit.naming.run` replays the in-process story (pure first, then mutating) under a cache policy, in a fresh
# cache directory, and reports each step:

# %%
mitigations = {
    "distinct names":       labkit.naming.run("distinct names", labkit.naming.ORDERS[0], "default"),
    "caches disabled":      labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "disabled"),
    "labkit's fingerprint": labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "fingerprinted"),
}
for label, result in mitigations.items():
    print(f"{label:<22} x after the fix: {result.steps[1].x_after}  cache hits: {result.steps[1].cache_hits}")

# %% tags=["check"]
#@title Check: each mitigation gives the fixed declaration a fresh, correct compile
for label, result in mitigations.items():
    assert result.steps[1].correct, f"{label}: the fixed declaration compiles to a correct result"
    assert not result.steps[1].stale, f"{label}: the fixed declaration's compile is not served from the cache"

# %% [markdown]
# - **Distinct names** (`mylib::foo_v2`) change the graph text, so the key.
# - **Disabling the caches** (`torch.compiler.config.force_disable_caches = True`) works; every compile is done
#   in full.
# - **A cache directory per declaration** (`TORCHINDUCTOR_CACHE_DIR`) works across processes (process 3); within
#   one? Exercise 1.
# - **A hash of the declarations in `cache_key_tag`** keeps the caches on: a changed schema is a new key, an
#   unchanged one still hits. `labkit.setup()` does this. The key's parts, without it and with it:

# %%
shared_name = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "default")
labkit.pictures.cache_keys({"torch's default": shared_name, "labkit's fingerprint": mitigations["labkit's fingerprint"]})

# %% tags=["check"]
#@title Check: without the fingerprint the tag and key stay the same and the cache answers; with it, the tag changes
steps, tagged = shared_name.steps, mitigations["labkit's fingerprint"].steps
assert steps[0].tag == steps[1].tag, "torch's default: both compiles have the same cache_key_tag"
assert steps[1].stale, "torch's default: the fix's compile is served from the cache"
assert not steps[1].correct, "torch's default: the fix runs the old artifact, so x is wrong"
assert tagged[0].tag != tagged[1].tag, "labkit's fingerprint: the changed schema gives a new tag, so a new key"
assert tagged[1].tag.startswith(labkit.cache.TAG_PREFIX), "labkit's part of the tag is its fingerprint"

# %% [markdown]
# ### The plain-torch recipe
#
# Without labkit, it is a few lines: hash your ops' schemas into the tag, before each compile.

# %%
def schema_tag(*ops):
    """A cache_key_tag that changes whenever one of these ops' schemas changes."""
    # private torch: the schema string has no public accessor
    schemas = "\n".join(sorted(str(op._opoverload._schema) for op in ops))
    return "my-ops-" + hashlib.sha256(schemas.encode()).hexdigest()[:16]

def compile_once(fn, x):
    """A reset, a new torch.compile, one call: x after it, and the FX-graph cache hits it took."""
    torch.compiler.reset()
    before = labkit.cache.counters()
    torch.compile(fn, backend="inductor")(x)
    return x.tolist(), labkit.cache.counters()["fxgraph_hit"] - before["fxgraph_hit"]

# %%
with labkit.cache.using("default"):                         # labkit's own tag off: plain torch only
    fix = declare_fix(mutating=False)
    torch.compiler.config.cache_key_tag = schema_tag(fix)   # set before compiling
    bug_run = compile_once(uses_fix, torch.zeros(2))
    fix = declare_fix(mutating=True)
    torch.compiler.config.cache_key_tag = schema_tag(fix)   # the schema changed: a new tag
    fixed_run = compile_once(uses_fix, torch.zeros(2))
    again_run = compile_once(uses_fix, torch.zeros(2))      # nothing changed: the cache may answer
    torch.compiler.config.cache_key_tag = ""
print("bug:", bug_run, "| fix:", fixed_run, "| same fix again:", again_run, "  (x after, FX-graph hits)")

# %% tags=["check"]
#@title Check: the tag gives the fix a fresh compile, and the unchanged declaration still hits
assert bug_run == ([0.0, 0.0], 0), "the pure declaration: call removed, compiled afresh"
assert fixed_run == ([1.0, 1.0], 0), "the fixed declaration has a new tag, so a new key: compiled afresh, correct"
assert again_run == ([1.0, 1.0], 1), "the caches still answer for an unchanged declaration (one FX-graph hit)"

# %% [markdown]
# ### What labkit's fingerprint covers
#
# Every live op defined **from Python** (`custom_op`, or `Library.define` with `register_fake`, as vLLM does):
# its schema, whether it has a fake kernel, its purity and tags. Not C++ ops, nor the *code* of a kernel, fake
# kernel or backward (§4). A do-nothing Inductor pass carries it into every key, so your own
# `torch.compiler.reset()` does not switch it off. The third compile must hit: the key is new, not skipped.

# %%
with labkit.cache.using("fingerprinted"):
    declare_fix(mutating=False)
    with_labkit = [compile_once(uses_fix, torch.zeros(2))]      # resets first, as a notebook does
    declare_fix(mutating=True)
    with_labkit.append(compile_once(uses_fix, torch.zeros(2)))
    with_labkit.append(compile_once(uses_fix, torch.zeros(2)))  # unchanged: the cache must answer

fingerprints = {"before": labkit.cache.fingerprint()}
vllm_style = torch.library.Library("nb04lib", "FRAGMENT")
vllm_style.define("scale_(Tensor(a!) x) -> ()")
fingerprints["Library.define"] = labkit.cache.fingerprint()
torch.library.register_fake("nb04lib::scale_", lambda x: None, lib=vllm_style)
fingerprints["+ register_fake"] = labkit.cache.fingerprint()
del vllm_style
fingerprints["freed"] = labkit.cache.fingerprint()
print("with labkit, after your own resets:", with_labkit, "  (x after, FX-graph hits)")
print("fingerprint changed by:", {step: fingerprints[step] != fingerprints["before"] for step in list(fingerprints)[1:]})

# %% tags=["check"]
#@title Check: the fingerprint survives your resets, and sees Library.define and register_fake
assert with_labkit == [([0.0, 0.0], 0), ([1.0, 1.0], 0), ([1.0, 1.0], 1)], \
    "labkit's fingerprint gives the fix a new key despite the reset, and the unchanged declaration then hits"
assert len({fingerprints["before"], fingerprints["Library.define"], fingerprints["+ register_fake"]}) == 3, \
    "Library.define and register_fake each change the fingerprint"
assert fingerprints["freed"] == fingerprints["before"], "freeing the Library restores the fingerprint"

# %% [markdown]
# ## 4. What a schema hash cannot see: a changed fake kernel
#
# The tag above and labkit's fingerprint come from the *declaration*: neither sees what the fake kernel
# **does**, nor an autograd formula. `twice` returns `cat([x, x])`; its first fake kernel forgets the
# concatenation. Compiled code checks the real output's size against the fake's, so this bug is loud:

# %%
@torch.library.custom_op("nb04n::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x])

@twice.register_fake
def _(x):                        # the bug: one copy of x, not two
    return x.new_empty(x.shape[0])

def doubled(x):
    return twice(x) * 2

def compile_and_run(fn, x):
    """A reset, a new torch.compile, one call: its output's shape or its error, and the FX-graph cache hits."""
    torch.compiler.reset()
    before = labkit.cache.counters()
    try:
        outcome = f"output of shape {list(torch.compile(fn, backend='inductor')(x).shape)}"
    except AssertionError as error:              # compiled code checks each output against the fake's promise
        outcome = "AssertionError: " + str(error).splitlines()[0]
    return outcome, labkit.cache.counters()["fxgraph_hit"] - before["fxgraph_hit"]

# %% [markdown]
# The buggy fake kernel, then the fixed one, under labkit's fingerprinted policy; then the fixed one with the
# caches off:

# %%
with labkit.cache.using("fingerprinted"):
    with_bug = compile_and_run(doubled, torch.ones(3))
    key_with_bug = labkit.cache.fingerprint()

    @twice.register_fake
    def _(x):                    # the fix: the fake kernel now matches the kernel
        return x.new_empty(2 * x.shape[0])

    key_after_fix = labkit.cache.fingerprint()
    after_fix = compile_and_run(doubled, torch.ones(3))
with labkit.cache.using("disabled"):
    caches_off = compile_and_run(doubled, torch.ones(3))
print("fake with the bug: ", with_bug)
print("fake fixed:        ", after_fix, "| fingerprint unchanged:", key_with_bug == key_after_fix)
print("fixed, caches off: ", caches_off)

# %% tags=["check"]
#@title Check: the fixed fake kernel gets the buggy one's artifact from the cache; with the caches off it is right
assert with_bug == ("AssertionError: expected size 6==3, stride 1==1 at dim=0", 0), \
    "the buggy fake kernel: compiled code checks the real size against the fake's, loudly"
assert key_with_bug == key_after_fix, "the fingerprint does not see a change of the fake kernel's code"
assert after_fix == with_bug[:1] + (1,), (                  # the stale artifact came back, from the cache
    "The fixed fake kernel no longer gets the stale artifact: torch may have fixed #160472 "
    f"(torch {torch.__version__}). This lesson needs updating.")
assert caches_off == ("output of shape [6]", 0), "with the caches off, the fixed fake kernel compiles afresh, right"

# %% [markdown]
# So while you edit a fake kernel or a backward formula, in one process or across runs that share a cache
# directory: disable the caches, or put something in `cache_key_tag` that changes with it, such as a version
# number you bump or a hash of the kernel's source (Exercise 2).
#
# ## 5. Myth vs fact
#
# | Claim in circulation | Verdict here |
# |---|---|
# | "Same-named ops with different `mutates_args` confuse **Dynamo's aliasing analysis**." | **Misleading.** The *symptom* is real (§2), but the cause is the **compile caches**, whose key does not contain the schema. AOTAutograd reads the *current* schema, and is skipped when the cache hits. |
# | "Re-running the cell that declares an op gives an error." | **False** for `custom_op`: silently replaced (§1). **True** for `Library.define`. |
# | "`torch.compiler.reset()` clears everything compiled." | **False:** it clears in-memory state; the on-disk caches still answer (§2). |
# | "A schema fingerprint in the cache key makes the caches safe." | **Only for declaration changes:** a changed fake kernel still gets a stale artifact (§4). |
#
# The row easiest to get wrong, checked: with the caches off, the same two declarations compile correctly, so
# the confusion lives in the caches, not in tracing.

# %% tags=["check"]
#@title Check: with the caches off, the same two declarations compile correctly
assert mitigations["caches disabled"].steps[1].correct, \
    "with the caches off, the same two declarations compile correctly: the confusion is in the caches"
assert mitigations["caches disabled"].steps[1].schema_now == "naming::op(Tensor(a0!) x) -> ()", \
    "the second compile traced the mutating declaration"

# %% [markdown]
# ## Exercise 1: does a cache directory of its own help inside one process?
#
# Predict it before you meet the naming widget (§6), which shows it in one click. The `"isolated"` policy gives
# the process its own fresh cache directory. With **one shared name**, pure first, does the fixed declaration
# compile correctly under it? Answer `True` or `False`, then run the check.

# %%
isolated_is_enough = ...

# %% tags=["check"]
#@title The exercise's check (it replays the story under "isolated", then compares your answer with what ran)
isolated = labkit.naming.run("one shared name", labkit.naming.ORDERS[0], "isolated")

def check_isolated(answer):
    if not labkit.exercises.answered(answer, "replace the ... in the isolated_is_enough cell by True or False, "
                                             "run it, then run this one"):
        return False
    said = labkit.exercises.choice(str(answer), {"True": ["yes"], "False": ["no"]}, "isolated_is_enough")
    return said is not None and labkit.exercises.check(
        (said == "True") == isolated.steps[1].correct,
        "right: the second compile hits the artifact the first one wrote, in the same directory.",
        "the fix's compile runs in the same process, after the first: which directory does it read, and what did "
        "the first compile leave there? (Then see it in the naming widget below: cache 'isolated'.)")

# %%
answer_ok = check_isolated(isolated_is_enough)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# False: isolation protects one process from another, not a process from itself.
import contextlib
import io

assert isolated.steps[1].stale, "isolated, one process: the fix's compile hits the artifact of the first one"
assert not isolated.steps[1].correct, "isolated, one process: the fixed declaration runs the stale artifact, wrongly"
with contextlib.redirect_stdout(io.StringIO()):
    assert check_isolated(False), "False passes"
    assert check_isolated("no"), "'no', a spelling of False, passes"
    assert not check_isolated(True), "True is refused"
    assert not check_isolated("maybe"), "a word not allowed is refused"

# %% [markdown]
# ## 6. The naming widget
#
# Choose how the two declarations are named (one shared name, distinct names, or a name you type), their order,
# and the cache policy: the table shows what each handle reports, the kernel's runs, `x`, and the cache hits.
# Check your Exercise 1 prediction with cache `isolated`.

# %%
naming_lab = labkit.widgets.NamingLab(namespace="nb04w")
naming_lab

# %% [markdown]
# ## Exercise 2: a tag that sees the fake kernel
#
# Write `my_cache_tag(op, fake)`: a string for `torch.compiler.config.cache_key_tag` that changes when the op's
# schema **or its fake kernel's code** changes, and stays the same otherwise. (*Hint:* `schema_tag(op)` from §3
# sees the schema; `inspect.getsource(fake)` gives a function's source text.) The check replays §4 with your tag.

# %%
def my_cache_tag(op, fake):
    ...  # return a string

# %% tags=["check"]
#@title The exercise's check (it replays section 4: each fake kernel in turn, tagged by your function, compiled)
import types

# Three fakes with one name: buggy, fixed, and the fixed one again as a new object with the same code (as after
# re-running its cell). A tag must follow the code: not the name (all three share it), not the object (two differ).
def twice_fake(x):
    return x.new_empty(x.shape[0])

twice_fake_buggy = twice_fake

def twice_fake(x):
    return x.new_empty(2 * x.shape[0])

twice_fake_fixed = twice_fake
twice_fake_unchanged = types.FunctionType(twice_fake_fixed.__code__.replace(), twice_fake_fixed.__globals__,
                                          "twice_fake")   # new objects, function and code, as a re-run makes
twice_fake_unchanged.__qualname__ = twice_fake_fixed.__qualname__

# %% tags=["check"]
#@title The exercise's check, continued (an op of another schema; the unchanged fake in a new Python)
import ast
import os
import subprocess
import sys
import textwrap


# The same fake kernel on an op of another schema: the task asks for a tag that sees the schema too.
@torch.library.custom_op("nb04n::twice_scaled", mutates_args=())
def twice_scaled(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.cat([x, x]) * alpha


# %% tags=["check"]
#@title The exercise's check, continued (the script a new Python runs)
# What a new Python computes for the unchanged fake: an on-disk cache serves later processes, so a tag must be the
# same there (hash() of a string or a code object is salted per process).
NEW_PYTHON = """
import hashlib, inspect, torch

@torch.library.custom_op("nb04n::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x])

def twice_fake(x):
    return x.new_empty(2 * x.shape[0])

{helpers}
{source}
print("TAG", repr({name}(twice, twice_fake)))
"""

# %% tags=["check"]
#@title The exercise's check, continued (a tag computed in a new Python)
def tag_in_a_new_python(tag_fn) -> tuple[str | None, str]:
    """(the tag tag_fn gives the unchanged fake in a new Python process, or None; what went wrong there)."""
    import inspect

    try:
        source = textwrap.dedent(inspect.getsource(tag_fn))
        helpers = inspect.getsource(schema_tag)   # §3's helper, which a tag may call
    except (OSError, TypeError):
        return None, "its source could not be read: define it with def in a cell"
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "tag_in_a_new_python.py")
        with open(script, "w") as file:
            file.write(NEW_PYTHON.format(helpers=helpers, source=source, name=tag_fn.__name__))
        done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    said = [line[4:] for line in done.stdout.splitlines() if line.startswith("TAG ")]
    if done.returncode or not said:
        return None, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return ast.literal_eval(said[-1]), ""

# %% tags=["check"]
#@title The exercise's check, continued (the replay)
def compile_with_tag(tag_fn, fakes):
    """Section 4 replayed: register each fake kernel in turn, set the tag tag_fn gives, compile and run."""
    outcomes = []
    with labkit.cache.using("default"):
        for fake in fakes:
            twice.register_fake(fake)
            torch.compiler.config.cache_key_tag = tag_fn(twice, fake)
            outcomes.append(compile_and_run(doubled, torch.ones(3)))
        torch.compiler.config.cache_key_tag = ""
    return outcomes

# %% tags=["check"]
#@title The exercise's check, continued (a tag for another schema, and in a new Python)
def tag_sees_schema_and_processes(tag_fn, fixed_tag: str) -> bool:
    """Whether tag_fn's tag differs for an op of another schema, and is the same in a new Python; else says why."""
    if tag_fn(twice_scaled, twice_fake_fixed) == fixed_tag:
        return labkit.exercises.check(False, "", "your tag is the same for twice and for twice_scaled, an op of "
                                      "another schema with the same fake kernel: make it see the schema too.")
    fresh, why = tag_in_a_new_python(tag_fn)
    if fresh != fixed_tag:
        return labkit.exercises.check(False, "", f"in a new Python your tag for the unchanged fake is {fresh!r} "
                                      f"({why or 'not ' + repr(fixed_tag)}): the on-disk cache serves new processes, "
                                      "and hash() of text or code changes between them; use hashlib on the text.")
    return True

# %% tags=["check"]
#@title The exercise's check, continued (your tags, then the three compiles)
def check_tag(tag_fn):
    fakes = (twice_fake_buggy, twice_fake_fixed, twice_fake_unchanged)
    error = labkit.stages.raised(lambda: [tag_fn(twice, fake) for fake in fakes])
    if error:
        return labkit.exercises.check(False, "", f"my_cache_tag raised {error.type_name}: {error.message}")
    tags = [tag_fn(twice, fake) for fake in fakes]
    if not labkit.exercises.answered(... if tags[0] is None else tags[0], "make my_cache_tag return a string "
                                     "(replace its ...), run its cell, then run this one"):
        return False
    if not all(isinstance(t, str) for t in tags) or tags[0] == tags[1] or tags[1] != tags[2]:
        return labkit.exercises.check(False, "", f"your tags: {tags}. The first two must differ (the code changed), "
                                      "the last two match (the same code in a new function object of the same name).")
    if not tag_sees_schema_and_processes(tag_fn, tags[1]):
        return False
    outcomes = compile_with_tag(tag_fn, fakes)
    return labkit.exercises.check(outcomes[1] == ("output of shape [6]", 0) and outcomes[2][1] == 1,
                                  "the fixed fake kernel compiles afresh, and an unchanged one still hits.",
                                  f"compile outcomes with your tag: {outcomes}")

# %%
answer_ok = check_tag(my_cache_tag)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# Hash the schema (schema_tag, §3) and the fake kernel's source together.
import inspect


def solution_cache_tag(op, fake):
    text = schema_tag(op) + "\n" + inspect.getsource(fake)
    return "my-ops-" + hashlib.sha256(text.encode()).hexdigest()[:16]


with contextlib.redirect_stdout(io.StringIO()):
    assert check_tag(solution_cache_tag), "a tag of the schema and the fake kernel's source passes the check"
    assert not check_tag(lambda op, fake: schema_tag(op)), "a schema-only tag is rejected"
    assert not check_tag(lambda op, fake: inspect.getsource(fake).encode()), "a tag that is not a string is rejected"
    assert not check_tag(lambda op, fake: f"my-ops-{fake.__name__}"), "a tag of the name is rejected (one name)"
    assert not check_tag(lambda op, fake: f"my-ops-{fake.__qualname__}"), "so is one of the qualified name"

# %% tags=["check"]
#@title Check: the grader rejects the tags that look right and are not
with contextlib.redirect_stdout(io.StringIO()):
    assert not check_tag(lambda op, fake: f"my-ops-{id(fake)}"), "and one of the object (a new one, same code)"
    assert not check_tag(lambda op, fake: f"my-ops-{fake.__code__}"), "and one of the code object (its address)"
    assert not check_tag(lambda op, fake: "my-ops-" + hashlib.sha256(inspect.getsource(fake).encode()).hexdigest()), \
        "a tag of the fake's source alone is rejected (the task names the schema too)"

    def salted_tag(op, fake):
        return f"{schema_tag(op)}-{hash(fake.__code__)}"

    assert not check_tag(salted_tag), "a tag built on hash() is rejected: another process salts it differently"

# %% [markdown]
# ## In your own project
#
# Sections 2 to 4 used plain torch; labkit only counted the hits. In your project, run with
# `TORCH_TRACE=/tmp/trace` and open the `tlparse` report (notebook 01): each compile lists an
# `fx_graph_cache_hit` or `fx_graph_cache_miss`. When you change a custom op:
#
# - give it a new name, or
# - set `torch.compiler.config.cache_key_tag` from a hash of what you changed (the recipe above), or
# - run with `TORCHINDUCTOR_FORCE_DISABLE_CACHES=1` while you iterate on it.
#
# ## What to remember
#
# - An op's qualified name is its identity. `custom_op` replaces a name silently; old handles lie about the
#   schema and must not be called. `Library.define` refuses duplicates.
# - The compile caches' keys do not contain the schema, so a changed declaration can get the old one's artifact,
#   after `torch.compiler.reset()` and in the next process. Give the op a new name, disable the caches, or put a
#   hash of the declarations in `torch.compiler.config.cache_key_tag` (labkit's `setup()` does).
# - A hash of the declaration does not see a fake kernel's (or a backward's) code: put that in the tag too, or
#   disable the caches, while you change them.
#
# ## Questions
#
# 1. Why does `torch.compiler.reset()` not prevent the stale artifact?
# 2. Why does a separate cache directory per process help across processes but not within one?
# 3. Why does hashing the schema into `cache_key_tag` fix a changed `mutates_args` but not a changed fake kernel?
# 4. Why is the stale artifact in §4 loud (an assertion) while the one in §2 is silent?
#
# ## Further reading
#
# - [pytorch #187319](https://github.com/pytorch/pytorch/issues/187319): stale artifacts after a changed
#   `mutates_args` (§2). It reproduces on every release this lab ran, 2.10.0 to 2.15.0 (2026-12-04,
#   docs/torch-versions.md), and §2's checks fail the day yours fixes it. Pull requests that put the schema into the
#   key: [#187356](https://github.com/pytorch/pytorch/pull/187356), [#187830](https://github.com/pytorch/pytorch/pull/187830),
#   [#193499](https://github.com/pytorch/pytorch/pull/193499)
# - [pytorch #160472](https://github.com/pytorch/pytorch/issues/160472) (fake kernels, §4) and
#   [#144344](https://github.com/pytorch/pytorch/issues/144344) (backward formulas; a maintainer there: custom
#   operators are designed to behave like builtin ones, whose changes do not invalidate the cache either)
# - [pytorch #98541](https://github.com/pytorch/pytorch/issues/98541): re-registering an op, and the old handle
# - [`torch.compiler` configuration](https://docs.pytorch.org/docs/stable/torch.compiler_api.html) (`cache_key_tag`,
#   `force_disable_caches`) and the [compile-caching tutorial](https://docs.pytorch.org/tutorials/recipes/torch_compile_caching_tutorial.html)
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - What changed between torch releases for this notebook: [docs/torch-versions.md](https://github.com/torch-compile-lab/custom-ops-lab/blob/main/docs/torch-versions.md)
#
# **Next:** 05 · Dead-code elimination and dynamic shapes.
