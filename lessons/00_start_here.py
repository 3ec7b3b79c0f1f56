# %% [markdown]
# # 00 · Start here: custom operators meet `torch.compile`
#
# A custom operator can tell the compiler a small lie, and the compiled program quietly computes something
# else: no error, no warning. In this notebook you will see it happen, see where, and fix it.
#
# **What you will learn**
# - what `mutates_args` promises the compiler, and what breaking the promise does;
# - the three stages of `torch.compile` (Dynamo, AOTAutograd, Inductor), and where an op can vanish;
# - how to catch the lie in your own project with `torch.library.opcheck` and `TORCH_LOGS`.
#
# **Time:** about 20 minutes. **Needs:** nothing but this notebook; it runs on a CPU.
#
# Run the cells from top to bottom; the first one checks your setup.

# %% tags=["nbval-ignore-output"]
import torch

import labkit

info = labkit.setup()

# %% [markdown]
# ## 1. An op with a secret
#
# `torch.library.custom_op` registers a Python function as an operator: one opaque step to the compiler. You
# must say which arguments it changes in place, in `mutates_args`. This one adds 1 to `x` in place but declares
# that it changes nothing. A list counts how often its kernel really runs:

# %%
kernel_runs = []

@torch.library.custom_op("nb00::secret_add_one", mutates_args=())   # the lie: it does write x
def secret_add_one(x: torch.Tensor) -> None:
    kernel_runs.append(1)
    x.add_(1)

@secret_add_one.register_fake          # what the compiler runs instead while tracing (notebook 01)
def _(x):
    return None

# %% [markdown]
# Use `x` after the call, and run the same function eagerly and compiled, each on its own `x`:

# %%
def double_after_secret(x):
    secret_add_one(x)
    return x * 2

eager_x, compiled_x = torch.ones(3), torch.ones(3)
eager = double_after_secret(eager_x)
eager_runs, kernel_runs[:] = len(kernel_runs), []
torch.compiler.reset()
compiled = torch.compile(double_after_secret)(compiled_x)
print("eager:    result", eager.tolist(), "  x after", eager_x.tolist(), "  kernel runs", eager_runs)
print("compiled: result", compiled.tolist(), "  x after", compiled_x.tolist(), "  kernel runs", len(kernel_runs))

# %% tags=["check"]
#@title Check: eager gives 4 and runs the kernel; compiled gives 2 and never runs it
assert eager.tolist() == [4.0] * 3, "eager: the result is (1 + 1) * 2 = 4"
assert eager_x.tolist() == [2.0] * 3, "eager: the kernel added 1 to x"
assert eager_runs == 1, "eager: the kernel ran once"
assert compiled.tolist() == [2.0] * 3, "compiled: the result is 1 * 2 = 2"
assert compiled_x.tolist() == [1.0] * 3, "compiled: x is unchanged"
assert kernel_runs == [], "compiled: the kernel never ran"

# %% [markdown]
# Eagerly the result is 4. Compiled it is 2, `x` never changed, and the kernel ran **zero** times.
#
# ## 2. Where did the call go?
#
# `torch.compile` works in three stages. **Dynamo** reads your Python and records a graph. **AOTAutograd**
# rewrites it in a purely functional form and deletes what nobody uses (*dead-code elimination*). **Inductor**
# generates code from what is left. The lab's helper package, `labkit`, keeps every stage's graph.
# `labkit.declare` is a short spelling of the same `custom_op`; `torch_source()` prints it in plain torch:

# %%
add_one = labkit.declare(name="nb00::add_one", writes=("x",), mutates_args=(), returns="none")

def double_after_add_one(x):
    add_one(x)
    return x * 2

report = labkit.compile_and_compare(double_after_add_one, torch.ones(3), backend="inductor")
print(add_one.torch_source())
labkit.draw_fate(report, "nb00::add_one")

# %% tags=["check"]
#@title Check: the call is in Dynamo's graph, then gone, and the answers differ
assert add_one.schema == "nb00::add_one(Tensor x) -> ()", "the schema says x is only read"
assert report.ok, "no error, eager or compiled"
assert not report.verdict.agree, "compiled and eager silently differ"
assert report.eager_calls["nb00::add_one"] == 1, "eager: the kernel ran once"
assert report.compiled_calls["nb00::add_one"] == 0, "compiled: the kernel never ran"
assert report.fate("nb00::add_one") == {"dynamo": True, "aot": False, "inductor": False, "ran": False}, \
    "the call is in Dynamo's graph, then gone: not in AOTAutograd's graph, not in Inductor's code, never run"

# %% [markdown]
# Dynamo recorded the call. AOTAutograd then saw an op that returns nothing and, by its declaration, changes
# nothing: a node nobody needs. It removed it, and Inductor never called it. (Notebook 02 shows an op whose
# result *is* used, and compiled code that reads a stale `x`.)
#
# ## 3. Tell the truth
#
# Declare the write (`mutates_args=("x",)` in plain torch; declaring the name again replaces the op):

# %%
add_one = labkit.declare(name="nb00::add_one", writes=("x",), mutates_args=("x",), returns="none")
fixed = labkit.compile_and_compare(double_after_add_one, torch.ones(3), backend="inductor")
print(add_one.schema, "|", fixed.verdict)
labkit.draw_fate(fixed, "nb00::add_one")

# %% tags=["check"]
#@title Check: declared truthfully, the call survives every stage and compiled == eager
assert add_one.schema == "nb00::add_one(Tensor(a0!) x) -> ()", "the schema marks x as written to (the !)"
assert fixed.verdict.agree, "declared truthfully: compiled == eager"
assert fixed.compiled_calls["nb00::add_one"] == 1, "compiled: the kernel ran once"
assert fixed.fate("nb00::add_one") == {"dynamo": True, "aot": True, "inductor": True, "ran": True}, \
    "the call survives Dynamo, AOTAutograd and Inductor, and runs"

# %% [markdown]
# `Tensor(a0!) x` is how the op's schema says "`x` is written". Now every stage keeps the call.
#
# ## Exercise: an op with two arguments
#
# `nb00::fill(x, scratch)` writes into `scratch` and only reads `x`. What must its `mutates_args` be? Answer
# as `custom_op` takes it: a tuple of argument names, e.g. `("a", "b")`. Before you check, predict: would
# `("x",)` make compiled and eager disagree here?

# %%
my_mutates_args = ...

# %% tags=["check"]
#@title The exercise's check (it declares the op with your answer, asks opcheck, compares compiled with eager)
from labkit.language import said, said_together   # its hints with fields, said in the notebook's language

def use_scratch(x, scratch):
    torch.ops.nb00.fill(x, scratch)    # any registered op can be called by name
    return x + scratch

def fill_hint(declared, schema, agree):
    """What a wrong answer is told: opcheck's refusal, or the write it promises that the kernel never makes."""
    unwritten = sorted(set(declared) - {"scratch"}) if declared != "unknown" else ["x"]
    extra = said('"unknown" declares x' if declared == "unknown" else "you declare {names}",
                 names=said_together(unwritten))
    agree = said("compiled and eager agree here: agreement alone proves little" if agree else
                 "compiled and eager differ too")
    return (said("opcheck refuses it ({why}); {agree}", why=schema.removeprefix("FAIL: "), agree=agree)
            if schema != "ok" else said("{extra} written, yet the kernel never writes it: a false promise", extra=extra))

# %% tags=["check"]
#@title The exercise's check, continued (what it tells you, in words)
def check_fill(declared):
    if not labkit.exercises.answered(declared, "replace the ... after my_mutates_args = with your answer, run that "
                                               "cell, then this one"):
        return False
    try:
        op = labkit.declare(name="nb00::fill", args=("x", "scratch"), writes=("scratch",),
                            mutates_args=declared, returns="none")
    except (labkit.LabOpError, TypeError, ValueError) as problem:
        return labkit.exercises.check(False, "", said("torch refuses it: {problem}", problem=problem))
    schema = labkit.checks.opcheck(op, (torch.zeros(2), torch.zeros(2)), tests="test_schema")["test_schema"]
    run = labkit.compile_and_compare(use_scratch, torch.zeros(2), torch.zeros(2))
    right = schema == "ok" and declared != "unknown" and not set(declared) - {"scratch"} and run.verdict.agree
    return labkit.exercises.check(right, "it matches the kernel: opcheck passes and compiled == eager.",
                                  fill_hint(declared, schema, run.verdict.agree))

# %%
answer_ok = check_fill(my_mutates_args)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# The kernel writes scratch, and only scratch: mutates_args=("scratch",).
# ("x",) is refused by opcheck's test_schema (scratch is written undeclared), yet compiled and eager agree:
# nothing in the program is dead code, so agreement alone proves little. A bare "scratch" is refused as
# torch.library.custom_op refuses it: mutates_args is a sequence of names (or "unknown").
import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()) as printed:
    assert check_fill(("scratch",)), "('scratch',) is the truthful declaration"
    assert not check_fill(("x",)), "('x',) is refused"
    assert not check_fill(("x", "scratch")), "x is never written: refused"
    assert not check_fill("scratch"), "a bare string is refused, as torch refuses it"
    assert not check_fill("unknown"), '"unknown" is allowed by torch, but not the answer'
try:
    torch.library.custom_op("nb00::bare", lambda x: None, mutates_args="scratch")
    torch_refuses_a_bare_name = False
except ValueError:
    torch_refuses_a_bare_name = True
assert torch_refuses_a_bare_name, "torch.library.custom_op refuses mutates_args='scratch' (a bare string)"

# %% tags=["check"]
#@title Check: the exercise's hints are plain words: no Python value, no flag, no cell that is not above
with contextlib.redirect_stdout(io.StringIO()) as unanswered:
    check_fill(...)
hints = printed.getvalue() + unanswered.getvalue()      # the solution's wrong answers, and none at all
assert "=True" not in hints, "no 'agree=True': the hint says it in words"
assert "['" not in hints, "no Python list in a hint"
assert "cell above" not in hints, "the answer cell is not the one above the check's: named instead"
assert labkit.language.say(fill_hint("unknown", "ok", True)) in hints, "the false promise, said whole"

# %% [markdown]
# ## In your own project
#
# Nothing above needs labkit. **`torch.library.opcheck`** runs the kernel on sample inputs; its `test_schema`
# sees the undeclared write:

# %%
results = torch.library.opcheck(secret_add_one, (torch.ones(3),), test_utils="test_schema", raise_exception=False)
print(str(results["test_schema"]).splitlines()[0][:120])

# %% tags=["check"]
#@title Check: opcheck's test_schema names the undeclared write
assert results["test_schema"] != "SUCCESS", "opcheck's test_schema fails on the undeclared write"
assert "Argument x is not defined as mutable but was mutated" in str(results["test_schema"]), \
    "test_schema's message names the undeclared write to x"

# %% [markdown]
# **`TORCH_LOGS`** prints each stage's graph: `TORCH_LOGS="graph_code,aot_graphs" python my_script.py`. In a
# notebook, `labkit.torch_logs` catches the same log so a cell can read it:

# %%
with labkit.torch_logs(graph_code=True, aot_graphs=True) as log:
    torch.compiler.reset()
    torch.compile(double_after_secret, backend="aot_eager")(torch.ones(3))
for stage in ("graph_code", "aot_graphs"):
    print(f"{stage:<10}", [line.strip() for line in log.artifact(stage) if "= torch.ops." in line])

# %% tags=["check"]
#@title Check: the Dynamo graph calls the op; AOTAutograd's graph does not
assert any("torch.ops.nb00.secret_add_one.default(" in line for line in log.artifact("graph_code")), \
    "the Dynamo graph calls the op"
assert not any("torch.ops.nb00.secret_add_one" in line for line in log.artifact("aot_graphs")), \
    "AOTAutograd removed the call"
assert any("torch.ops.aten.mul.Tensor" in line for line in log.artifact("aot_graphs")), "AOTAutograd keeps x * 2"

# %% [markdown]
# ## What to remember
#
# - `mutates_args` is a promise: every argument the op changes in place, and only those.
# - Break it and the compiled program can be silently wrong. Here the op was deleted as dead code.
# - Dynamo, AOTAutograd, Inductor: an op can vanish between them. `opcheck` catches the lie; `TORCH_LOGS`
#   shows each stage.
#
# ## Questions
#
# 1. Why does the compiler believe `mutates_args` instead of checking what the kernel does?
# 2. Why is an op that returns nothing and (by its declaration) mutates nothing safe to remove?
# 3. Why does "compiled and eager agree" not prove a declaration right?
# 4. Why does labkit run eager and compiled on copies of the inputs, and compare the inputs afterwards too?
#
# ## The map
# <!-- BEGIN map: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit -->
#
# | Notebook | Idea | Time |
# |---|---|---|
# | **00 · Start here** (this one) | a first silent bug: where the call vanishes, and the fix | 20 min |
# | 01 · Custom ops and the compile pipeline | `custom_op`, fake kernels, `opcheck`; Dynamo → AOTAutograd → Inductor; `TORCH_TRACE` and `tlparse` | 35 min |
# | 02 · `mutates_args` | what the declaration changes, and what each wrong declaration does | 35 min |
# | 03 · Aliasing and views | a mutating op on a view; why outputs may not alias inputs; `x.add_(1); return x` | 25 min |
# | 04 · Names and compile caches | an op's name is its identity; a stale compile cache, and how to key it | 40 min |
# | 05 · Dead-code elimination and dynamic shapes | who removes an op, what keeps it alive, static vs dynamic | 40 min |
# | 06 · Field guide | a runnable checklist, myths vs facts, `labkit doctor` | 45 min |
# | 07 · Data-dependent shapes | unbacked sizes, `fullgraph`, `int` vs `SymInt`, `recompile_limit` | 40 min |
# | 08 · Training with custom ops | `register_autograd`, `opcheck` vs `gradcheck`, the backward graph | 45 min |
# | 09 · Custom ops for GPU kernels | `triton_op`, the cache key, CUDA graphs, `Tag.out`, re-inplacing | 40 min |
# | 10 · Beyond the shape | C++-style registration, wrong dtypes and strides, layout tags, autocast, scalars | 60 min |
# | 11 · Shipping custom ops: export, AOTInductor, profiler | `torch.export`, AOTInductor packages, the profiler, the cost per call | 35 min |
# | 12 · Which wrapper: one kernel, five boundaries | which boundary around a kernel: traced, opaque or a graph break, and its cost per call | 35 min |
#
# <!-- END map -->
#
# ## What labkit changes in your kernel
#
# `import labkit` changes nothing in torch. `labkit.setup()` adds a hash of every custom op's declaration to
# torch's compile-cache key, so a changed declaration cannot bring back a stale compiled artifact (notebook
# 04), and says so. `labkit.compile_and_compare` compiles a fresh copy of your function on copies of your
# inputs, by default with `backend="aot_eager"`, `dynamic=False` and no on-disk caches; your own compiled
# functions stay compiled.

# %% tags=["check"]
#@title Check: labkit's defaults differ from torch.compile's, as the box says
import inspect

def defaults(fn, names=("backend", "dynamic", "fullgraph")):
    return {name: inspect.signature(fn).parameters[name].default for name in names}

assert defaults(torch.compile)["backend"] in ("inductor", None), \
    "torch.compile's default backend is Inductor (None, as on torch 2.13: torch picks its default, Inductor)"
assert defaults(torch.compile)["dynamic"] is None, "torch.compile defaults to dynamic=None"
assert defaults(torch.compile)["fullgraph"] is False, "torch.compile defaults to fullgraph=False"
assert defaults(labkit.compile_and_compare) == {"backend": "aot_eager", "dynamic": False, "fullgraph": False}, \
    "labkit.compile_and_compare defaults to backend='aot_eager', dynamic=False, fullgraph=False"
assert info["device"] in ("cpu", "cuda"), "labkit.setup() reports the device: cpu or cuda"
assert labkit.env.torch_version() >= labkit.env.MINIMUM_TORCH, "torch is at least the lab's minimum version"

# %% tags=["check"]
#@title Check: the cache-key hash is on, and your own compiled function stays compiled
assert labkit.cache.TAG_PREFIX in torch.compiler.config.cache_key_tag, \
    "the fingerprinted policy is on: labkit's hash is in torch.compiler.config.cache_key_tag"
key_pass = torch._inductor.config.post_grad_custom_post_pass              # ... and its pass, in the empty slot
assert key_pass is not None, "labkit's key pass sits in post_grad_custom_post_pass"
assert key_pass.uuid().startswith(labkit.cache.TAG_PREFIX), "the key pass's uuid carries labkit's hash"
compiles = []
def counting_backend(gm, example_inputs):
    compiles.append(gm)
    return gm.forward

mine = torch.compile(lambda x: x * 3, backend=counting_backend)
mine(torch.ones(2))
labkit.compile_and_compare(lambda x: x + 1, torch.ones(2))
mine(torch.ones(2))
assert len(compiles) == 1, "your function compiled once, no recompile: labkit did not reset torch's compiler"

# %% [markdown]
# ## Further reading
#
# - PyTorch tutorial, [Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)
# - [`torch.library` reference](https://docs.pytorch.org/docs/stable/library.html) (`custom_op`, `opcheck`)
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - [`TORCH_LOGS` and `torch._logging.set_logs`](https://docs.pytorch.org/docs/stable/logging.html)
#
# **Next:** 01 · Custom ops and the compile pipeline.
