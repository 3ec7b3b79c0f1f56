# %% [markdown]
# # 00 · Start here: custom operators meet `torch.compile`
#
# **What you will learn**
# - what this lab teaches, in what order, and how to run it;
# - how to check that your environment is ready;
# - a first taste: a custom op that changes its input *without saying so* gives one answer
#   eagerly and another compiled — with no error and no warning;
# - what `labkit`, the lab's helper package, changes in your Python process, and how its defaults differ
#   from `torch.compile`'s;
# - how to see the same thing in your own project with torch's own tools (`TORCH_LOGS`, `opcheck`).
#
# **Time:** about 20 minutes. **Needs:** nothing but this notebook; runs on the CPU, uses a GPU if you have one.
#
# **The rule of this lab:** every statement about torch's behaviour is shown by a cell that runs real
# `torch.compile` and *asserts* the result. If a torch release changes the behaviour, the cell fails
# and tells you. The outputs you see were recorded on **torch 2.13.0 (CPU)**.

# %% [markdown]
# ## The map
# <!-- BEGIN map: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit -->
#
# | Notebook | Idea | Time |
# |---|---|---|
# | **00 · Start here** (this one) | environment check, a first silent bug, what labkit changes | 20 min |
# | 01 · Custom ops and the compile pipeline | `custom_op`, fake kernels, `opcheck`; Dynamo → AOTAutograd → Inductor; `TORCH_TRACE` and `tlparse` | 30 min |
# | 02 · `mutates_args` | what the declaration changes, and what each wrong declaration does | 30 min |
# | 03 · Aliasing and views | a mutating op on a view; why outputs may not alias inputs; `x.add_(1); return x` | 20 min |
# | 04 · Names and compile caches | an op's name is its identity; stale compile caches (#187319) and how to key them | 30 min |
# | 05 · Dead-code elimination and dynamic shapes | who removes an op, what keeps it alive, static vs dynamic | 30 min |
# | 06 · Field guide | a checklist that runs, myths vs facts, a capstone | 35 min |
# | 07 · Data-dependent shapes | unbacked sizes, `fullgraph`, `int` vs `SymInt`, `recompile_limit` | 30 min |
# | 08 · Training with custom ops | `register_autograd`, `opcheck` vs `gradcheck`, the backward graph | 30 min |
# | 09 · Custom ops for GPU kernels | `triton_op`, the cache key, CUDA graphs, `Tag.out`, re-inplacing | 20 min |
# | 10 · Beyond the shape | C++-style registration, wrong dtypes and strides, layout tags, autocast, scalars | 30 min |
# | 11 · Shipping custom ops: export, AOTInductor, profiler | `torch.export`, AOTInductor packages, the profiler, the cost per call | 25 min |
#
# <!-- END map -->
# Each notebook names the ones it builds on under **Before:**.
#
# ## How to run the lab
#
# - **On your machine:** `./lab` sets everything up (a `.venv` with the CPU build of torch) and opens
#   JupyterLab here; `./lab test` sets up and runs every test, notebooks included.
# - **Binder:** the `binder/` folder installs a CPU build of torch and the lab.
# - **Colab:** torch is already there; install only `labkit` (the lab's helper package), never a
#   new torch or ipywidgets.
#
# In any of them, run the cells from top to bottom (*Run → Run All Cells* works too).

# %% [markdown]
# ## 1. Check your environment
#
# `labkit` is the lab's helper package. `labkit.setup()` prints what you are running on and
# warms up Inductor, torch's compiler, right here, with a progress line: its very first compile in a
# fresh kernel costs several seconds, later ones a fraction of a second.

# %%
# NBVAL_IGNORE_OUTPUT
import contextlib
import inspect
import io

import torch

import labkit

info = labkit.setup()

# %%
assert info["device"] in ("cpu", "cuda"), "labkit.setup() reports the device: cpu or cuda"
assert labkit.env.torch_version() >= labkit.env.MINIMUM_TORCH, "torch is at least the lab's minimum version"
device = labkit.env.pick_device()
print("This notebook runs its examples on:", device.type)

# %% [markdown]
# ### What labkit changes in this process, and its defaults
#
# labkit is a guest in your kernel. In plain words:
#
# - **`import labkit` changes nothing in torch.** It only checks that torch is recent enough.
# - **`labkit.setup()`** turns on labkit's *fingerprinted* cache policy and says so: it appends a hash of
#   every live custom op's declaration to `torch.compiler.config.cache_key_tag` (keeping any tag you set
#   yourself), so that changing a declaration cannot bring back a compiled artifact built for the old one
#   (notebook 04 shows why that matters). The same hash rides in each key on a do-nothing Inductor pass, put
#   in `torch._inductor.config.post_grad_custom_post_pass` only when that slot is empty (yours is never
#   replaced), so your own `torch.compiler.reset()` does not switch the policy off. It also warms Inductor up,
#   right there, on this thread.
# - **`labkit.compile_and_compare(fn, *inputs)`** is not a plain `torch.compile`. It compiles a fresh copy
#   of `fn` instead of calling `torch.compiler.reset()`, so your own compiled functions stay compiled (only
#   notebook 04's naming experiment resets, because the bug it shows survives a reset). It
#   runs `fn` eagerly and compiled on *deep copies* of your inputs (your tensors are never changed), and
#   **bypasses torch's on-disk FX-graph and AOTAutograd caches** so that every graph is really traced.
#   Its defaults differ from `torch.compile`'s:

# %%
def defaults(fn, names):
    parameters = inspect.signature(fn).parameters
    return {name: parameters[name].default for name in names}

knobs = ("backend", "dynamic", "fullgraph")
print("torch.compile:           ", defaults(torch.compile, knobs))
print("labkit.compile_and_compare:", defaults(labkit.compile_and_compare, knobs))
print("labkit's hash in torch.compiler.config.cache_key_tag:", labkit.cache.TAG_PREFIX in torch.compiler.config.cache_key_tag)

# %%
torch_defaults = defaults(torch.compile, knobs)
assert torch_defaults["backend"] in ("inductor", None), \
    "torch.compile's default backend is Inductor (None, as on torch 2.13: torch picks its default, Inductor)"
assert torch_defaults["dynamic"] is None, "torch.compile defaults to dynamic=None"
assert torch_defaults["fullgraph"] is False, "torch.compile defaults to fullgraph=False"
assert defaults(labkit.compile_and_compare, knobs) == {"backend": "aot_eager", "dynamic": False, "fullgraph": False}, \
    "labkit.compile_and_compare defaults to backend='aot_eager', dynamic=False, fullgraph=False"
assert labkit.cache.TAG_PREFIX in torch.compiler.config.cache_key_tag, \
    "the fingerprinted policy is on: labkit's hash is in torch.compiler.config.cache_key_tag"
key_pass = torch._inductor.config.post_grad_custom_post_pass               # ... and its pass, in the empty slot
assert key_pass is not None, "labkit's key pass sits in post_grad_custom_post_pass"
assert key_pass.uuid().startswith(labkit.cache.TAG_PREFIX), "the key pass's uuid carries labkit's hash"

# %% [markdown]
# And your own compiled function stays compiled across a labkit experiment (a backend that counts compiles):

# %%
compiles = []
def counting_backend(gm, example_inputs):
    compiles.append(gm)
    return gm.forward

mine = torch.compile(lambda x: x * 3, backend=counting_backend)
mine(torch.ones(2))
labkit.compile_and_compare(lambda x: x + 1, torch.ones(2))
mine(torch.ones(2))
print("your function was compiled", len(compiles), "time(s)")
assert len(compiles) == 1, "your function compiled once, no recompile: labkit did not reset torch's compiler"

# %% [markdown]
# So when a lab cell passes `backend="inductor"`, it says so; `"aot_eager"` stops after AOTAutograd and
# runs its graph without generating code (fast, and enough to see what AOTAutograd keeps);
# `dynamic=False` compiles one graph per input shape.

# %% [markdown]
# ## 2. A custom operator that keeps a secret
#
# A *custom operator* is a function you register with torch so that the compiler treats it as
# one opaque step, like a built-in op. When you register one with `torch.library.custom_op`,
# you must say which arguments it changes in place, in `mutates_args`. The compiler believes you.
#
# Here is one in plain torch. Its kernel adds 1 to `x` in place, but its declaration says it changes
# nothing (`mutates_args=()`). A Python list counts how often the kernel really runs:

# %%
kernel_runs = []


@torch.library.custom_op("nb00::secret_add_one", mutates_args=())   # the lie: it does write x
def secret_add_one(x: torch.Tensor) -> None:
    kernel_runs.append(1)
    x.add_(1)


@secret_add_one.register_fake          # what the compiler uses instead of the kernel (notebook 01)
def _(x):
    return None

# %% [markdown]
# A function that uses `x` after the call, run eagerly and compiled, each on a fresh `x`:

# %%
def double_after_secret(x):
    secret_add_one(x)   # adds 1 to x in place (undeclared)
    return x * 2


x_eager, x_compiled = torch.ones(3), torch.ones(3)
eager_out = double_after_secret(x_eager)
eager_runs, kernel_runs[:] = len(kernel_runs), []
torch.compiler.reset()
compiled_out = torch.compile(double_after_secret)(x_compiled)      # torch.compile's defaults: Inductor
print("eager:    result", eager_out.tolist(), " x afterwards", x_eager.tolist(), " kernel runs", eager_runs)
print("compiled: result", compiled_out.tolist(), " x afterwards", x_compiled.tolist(), " kernel runs", len(kernel_runs))

# %%
assert eager_out.tolist() == [4.0] * 3, "eager: the result is (1 + 1) * 2 = 4"
assert x_eager.tolist() == [2.0] * 3, "eager: the kernel added 1 to x"
assert eager_runs == 1, "eager: the kernel ran once"
assert compiled_out.tolist() == [2.0] * 3, "compiled: the result is 1 * 2 = 2"
assert x_compiled.tolist() == [1.0] * 3, "compiled: x is unchanged"
assert kernel_runs == [], "compiled: the kernel never ran"
print(f"Observed on torch {torch.__version__}: compiled, the kernel never ran; no error, no warning.")

# %% [markdown]
# Eagerly, the kernel runs: `x` becomes 2 and the result is 4. Compiled, the result is 2, `x` is unchanged,
# and the kernel ran **zero** times. To see *where* the call went, the lab uses `labkit.declare`, a short
# spelling of the same `torch.library.custom_op` call (it writes the kernel for you from `writes=`, what
# the kernel really changes, and counts its runs), and `labkit.compile_and_compare`, which keeps each
# stage's graph:

# %%
add_one = labkit.declare(name="nb00::add_one", writes=("x",), mutates_args=(), returns="none")
print(add_one.schema)


def double_after_add_one(x):
    add_one(x)          # adds 1 to x in place (undeclared)
    return x * 2


report = labkit.compile_and_compare(double_after_add_one, torch.ones(3, device=device), backend="inductor")
labkit.show(report)

# %% [markdown]
# The schema — torch's record of the op's signature — reads `Tensor x`: torch thinks `x` is only read.
# The cell below turns the report into assertions, so it will fail the day torch behaves differently.

# %%
assert add_one.schema == "nb00::add_one(Tensor x) -> ()", "the schema says x is only read"
assert report.ok, "no error, eager or compiled"
assert not report.verdict.agree, "compiled and eager silently differ"
assert report.eager_calls["nb00::add_one"] == 1, "eager: the kernel ran once"
assert report.compiled_calls["nb00::add_one"] == 0, "compiled: the kernel never ran"
assert report.fate("nb00::add_one") == {"dynamo": True, "aot": False, "inductor": False, "ran": False}, \
    "the call is in Dynamo's graph, then gone: not in AOTAutograd's graph, not in Inductor's code, never run"

# %% [markdown]
# ### Why?
#
# The picture shows the op's path through the three stages of `torch.compile`, which the next
# notebooks open up one by one:
#
# 1. **Dynamo** reads your Python and records a graph of tensor operations. The call is there.
# 2. **AOTAutograd** rewrites that graph in a purely functional form and removes code whose
#    results nobody uses (*dead-code elimination*). The op returns nothing and, by its
#    declaration, changes nothing — so its node looks useless, and it is removed.
# 3. **Inductor** generates code from what is left. There is no call to the op in it.
#
# Removal is only one way a false declaration hurts: notebook 02 shows an op whose result *is* used,
# and compiled code that reads the wrong value of `x`.

# %%
ax = labkit.draw_fate(report, "nb00::add_one")

# %% [markdown]
# ## 3. Tell the truth, get the right answer
#
# Declaring the same name again replaces the op (labkit also retires the old Python handle, so
# you cannot call a stale one by mistake). This time the declaration matches the kernel — in plain
# torch, `mutates_args={"x"}`:

# %%
add_one = labkit.declare(name="nb00::add_one", writes=("x",), mutates_args=("x",), returns="none")
print(add_one.schema)
fixed = labkit.compile_and_compare(double_after_add_one, torch.ones(3, device=device), backend="inductor")
labkit.show(fixed)

# %%
assert add_one.schema == "nb00::add_one(Tensor(a0!) x) -> ()", "the schema marks x as written to (the !)"
assert fixed.verdict.agree, "declared truthfully: compiled == eager"
assert fixed.compiled_calls["nb00::add_one"] == 1, "compiled: the kernel ran once"
assert fixed.fate("nb00::add_one") == {"dynamo": True, "aot": True, "inductor": True, "ran": True}, \
    "the call survives Dynamo, AOTAutograd and Inductor, and runs"
print(f"Observed on torch {torch.__version__}: with the mutation declared, compiled == eager.")

# %% [markdown]
# `Tensor(a0!) x` is how a schema says "`x` is written to". With it, AOTAutograd keeps the call,
# and Inductor calls the op directly on your tensor. Notebook 02 reads those graphs line by line.

# %% [markdown]
# ## Exercise: an op with two arguments
#
# `nb00::fill` takes `x` and `scratch` and writes into `scratch` only. Replace the `...` with the
# `mutates_args` that tells the truth — a tuple of argument names — and run the cell.
#
# Before you run it, predict: would declaring `("x",)` make compiled and eager agree here? (Think about
# whether anything in `use_scratch` could be removed.) The check accepts only the declaration that
# matches what the kernel writes, and tells you what else it observed.

# %%
my_mutates_args = ...

# %%
def use_scratch(x, scratch):
    torch.ops.nb00.fill(x, scratch)    # any registered op can be called by name
    return x + scratch


def fill_hint(schema_test, never_written, run):
    if schema_test != "ok":
        return f"opcheck's test_schema says: {schema_test}."
    if never_written:
        return (f"compiled and eager agree ({run.verdict.agree}), and opcheck passes, but you also declared "
                f"{never_written}, which the kernel never writes. That promise is false too; nothing here "
                "caught it except comparing it with the kernel (02 shows what it costs).")
    return f"compiled vs eager: {run.verdict}"

# %%
def check_fill(declared):
    if not labkit.exercises.answered(declared):
        return False
    declared = (declared,) if isinstance(declared, str) else tuple(declared)
    try:
        op = labkit.declare(name="nb00::fill", args=("x", "scratch"), writes=("scratch",),
                            mutates_args=declared, returns="none")
    except (labkit.LabOpError, TypeError, ValueError) as problem:
        return labkit.exercises.check(False, "", str(problem))
    schema_test = labkit.checks.opcheck(op, (torch.zeros(2), torch.zeros(2)), tests=("test_schema",))["test_schema"]
    run = labkit.compile_and_compare(use_scratch, torch.zeros(2), torch.zeros(2))
    never_written = sorted(set(declared) - {"scratch"})
    return labkit.exercises.check(schema_test == "ok" and not never_written and run.verdict.agree,
                                  "the declaration matches the kernel, opcheck passes, compiled == eager.",
                                  fill_hint(schema_test, never_written, run))


answer_ok = check_fill(my_mutates_args)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution (click to expand): the kernel writes `scratch`, and only `scratch`, so that is what is declared.
# ("x",) is refused: opcheck's test_schema sees scratch written without a declaration. Compiled and
# eager may still agree for it, since nothing in use_scratch is dead code: agreement alone proves little.
with contextlib.redirect_stdout(io.StringIO()):
    assert check_fill(("scratch",)), "declaring scratch, the one argument the kernel writes, is accepted"
    assert not check_fill(("x",)), "declaring x instead of scratch is rejected"
    assert not check_fill(("x", "scratch")), "declaring x as well as scratch is rejected"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# Nothing above needs labkit. With torch's own tools:
#
# - **`torch.library.opcheck`** tests a custom op's registration on sample inputs. Its `test_schema` runs the
#   kernel and sees the undeclared write:

# %%
results = torch.library.opcheck(secret_add_one, (torch.ones(3),), test_utils="test_schema", raise_exception=False)
print(str(results["test_schema"]).splitlines()[0][:160])

# %%
assert results["test_schema"] != "SUCCESS", "opcheck's test_schema fails on the undeclared write"
assert "Argument x is not defined as mutable but was mutated" in str(results["test_schema"]), \
    "test_schema's message names the undeclared write to x"

# %% [markdown]
# - **`TORCH_LOGS`** prints what each stage produced. From a shell: `TORCH_LOGS="graph_code,aot_graphs"
#   python my_script.py`. In a notebook, `torch._logging.set_logs(graph_code=True, aot_graphs=True)` does
#   the same (torch's logging handlers write to stderr; the cell below captures stderr to assert on it —
#   later notebooks call `labkit.torch_logs(...)`, which is exactly these lines).
#   The Dynamo graph has the call; the AOTAutograd graph does not:

# %%
log = io.StringIO()
with contextlib.redirect_stderr(log):
    torch._logging.set_logs(graph_code=True, aot_graphs=True)
    try:
        torch.compiler.reset()
        torch.compile(double_after_secret, backend="aot_eager")(torch.ones(3))
    finally:
        torch._logging.set_logs()          # logs off again
torch._logging.set_logs()                  # torch's handlers write to the real stderr again
logged = log.getvalue().splitlines()          # each line: "<time> <file:line>] [0/0] [__artifact] <text>"
dynamo_log = [line.split("[__graph_code]", 1)[1] for line in logged if "[__graph_code]" in line]
aot_log = [line.split("[__aot_graphs]", 1)[1] for line in logged if "[__aot_graphs]" in line]
print("Dynamo graph, op calls:     ", [line.strip() for line in dynamo_log if "= torch.ops." in line])
print("AOTAutograd graph, op calls:", [line.strip() for line in aot_log if "= torch.ops." in line])

# %%
assert any("torch.ops.nb00.secret_add_one.default(" in line for line in dynamo_log), "the Dynamo graph calls the op"
assert not any("torch.ops.nb00.secret_add_one" in line for line in aot_log), "AOTAutograd removed the call"
assert any("torch.ops.aten.mul.Tensor" in line for line in aot_log), "the AOTAutograd graph keeps x * 2"

# %% [markdown]
# ## What to remember
#
# - `mutates_args` is a promise to the compiler. It **must** list every argument the op changes in place,
#   and only those.
# - Break the promise and the compiled program can be silently wrong: here the op was removed as dead code,
#   the input never changed, and nothing warned.
# - The compile pipeline has three stages — Dynamo, AOTAutograd, Inductor — and an op can disappear
#   between them. `torch.library.opcheck` catches an undeclared write; `TORCH_LOGS` shows each stage's graph.
# - labkit's `compile_and_compare` defaults to `aot_eager`, `dynamic=False`, and no on-disk caches;
#   `torch.compile`'s to Inductor, `dynamic=None`, caches on.
#
# ## Questions
#
# 1. Why does the compiler believe `mutates_args` instead of checking what the kernel does?
# 2. Why is an op that returns nothing and (by its declaration) mutates nothing safe to remove?
# 3. Why does "compiled and eager agree" not prove a declaration right? (The exercise's `("x",)` case.)
# 4. Why does labkit run eager and compiled on copies of the inputs, and compare the inputs afterwards too?
#
# ## Further reading
#
# - PyTorch tutorial, [Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)
# - [`torch.library` reference](https://docs.pytorch.org/docs/stable/library.html) (`custom_op`, `opcheck`)
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)
# - [`torch._logging.set_logs` / `TORCH_LOGS`](https://docs.pytorch.org/docs/stable/logging.html)
#
# **Next:** 01 · Custom ops and the compile pipeline.
