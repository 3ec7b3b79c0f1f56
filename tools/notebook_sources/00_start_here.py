# %% [markdown]
# # 00 · Start here: custom operators meet `torch.compile`
#
# **What you will learn**
# - what this lab teaches, in what order, and how to run it;
# - how to check that your environment is ready;
# - a first taste: a custom op that changes its input *without saying so* gives one answer
#   eagerly and another compiled — with no error and no warning.
#
# **Time:** about 10 minutes. **Needs:** nothing but this notebook; runs on the CPU, uses a GPU if you have one.
#
# **The rule of this lab:** every statement about torch is shown by a cell that runs real
# `torch.compile` and *asserts* the result. If a torch release changes the behaviour, the cell fails
# and tells you. The outputs you see were recorded on **torch 2.13.0 (CPU)**.

# %% [markdown]
# ## The map
#
# | Notebook | Idea | Time |
# |---|---|---|
# | **00 · Start here** (this one) | environment check, a first silent bug | 10 min |
# | 01 · Custom ops and the compile pipeline | `custom_op`, fake kernels, `opcheck`; Dynamo → AOTAutograd → Inductor | 30 min |
# | 02 · `mutates_args` | what the declaration changes, and what each wrong declaration does | 30 min |
# | 03 · Aliasing and names | views, why outputs may not alias inputs, op names and stale compile caches | 30 min |
# | 04 · Dead-code elimination and dynamic shapes | who removes an op, what keeps it alive, static vs dynamic | 30 min |
# | 05 · Field guide | a checklist that runs, myths vs facts, a capstone | 30 min |
#
# Each notebook stands alone after this one.
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
# `labkit` is the lab's helper package. Importing it checks that torch is recent enough
# (with one clear sentence if it is not); `labkit.setup()` prints what you are running on and
# starts warming up Inductor, torch's compiler, in the background: its very first compile in a
# fresh kernel costs several seconds, later ones a fraction of a second.

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import labkit

info = labkit.setup()

# %%
assert info["device"] in ("cpu", "cuda")
assert labkit.env.torch_version() >= labkit.env.MINIMUM_TORCH
device = labkit.env.pick_device()
print("This notebook runs its examples on:", device.type)

# %% [markdown]
# ## 2. A custom operator that keeps a secret
#
# A *custom operator* is a function you register with torch so that the compiler treats it as
# one opaque step, like a built-in op. When you register one with `torch.library.custom_op`,
# you must say which arguments it changes in place, in `mutates_args`. The compiler believes you.
#
# `labkit.declare` registers such an op from a short description, with a kernel that counts how
# often it *really* runs. Here the kernel adds 1 to `x` in place (`writes=("x",)`) but the
# declaration says it changes nothing (`mutates_args=()`):

# %%
add_one = labkit.declare(name="lab00::add_one", writes=("x",), mutates_args=(), returns="none")
add_one.schema

# %% [markdown]
# The schema — torch's record of the op's signature — reads `Tensor x`: torch thinks `x` is
# only read. A function that uses the op:

# %%
def double_after_add_one(x):
    add_one(x)          # adds 1 to x in place (undeclared)
    return x * 2

x = torch.ones(3, device=device)
print("eager result:", double_after_add_one(x).tolist(), " x afterwards:", x.tolist())

# %% [markdown]
# Eagerly, the kernel runs: `x` becomes 2 and the result is 4. Now compile the same function.
# `labkit.compile_and_compare` runs it eagerly and through `torch.compile` on identical copies of
# the inputs, and compares both the outputs **and** what happened to the inputs.
#
# It uses the Inductor backend here, the default compiler of `torch.compile`. Expect the first
# Inductor compile of this kernel to take a few seconds (the warm-up started above takes most of it).

# %%
report = labkit.compile_and_compare(double_after_add_one, torch.ones(3, device=device), backend="inductor")
labkit.show(report)

# %% [markdown]
# The compiled function returned 2 instead of 4, and `x` was never changed: the real kernel ran
# **zero** times. No error, no warning. The cell below turns this observation into assertions,
# so it will fail the day torch behaves differently.

# %%
assert report.ok and not report.verdict.agree                      # silently different
assert report.eager_calls["lab00::add_one"] == 1
assert report.compiled_calls["lab00::add_one"] == 0                # compiled: never ran
assert report.fate("lab00::add_one") == {"dynamo": True, "aot": False, "inductor": False, "ran": False}
print(f"Observed on torch {torch.__version__}: the undeclared mutation was dropped.")

# %% [markdown]
# ### Why?
#
# The picture shows the op's path through the three stages of `torch.compile`, which the next
# notebooks open up one by one:
#
# 1. **Dynamo** reads your Python and records a graph of tensor operations. The call is there.
# 2. **AOTAutograd** rewrites that graph in a purely functional form and removes code whose
#    results nobody uses (*dead-code elimination*). The op returns nothing and, by its
#    declaration, changes nothing — so it looks useless, and it is removed.
# 3. **Inductor** generates code from what is left. There is no call to the op in it.

# %%
ax = labkit.draw_fate(report, "lab00::add_one")

# %% [markdown]
# ## 3. Tell the truth, get the right answer
#
# Declaring the same name again replaces the op (labkit also retires the old Python handle, so
# you cannot call a stale one by mistake). This time the declaration matches the kernel:

# %%
add_one = labkit.declare(name="lab00::add_one", writes=("x",), mutates_args=("x",), returns="none")
print(add_one.schema)
fixed = labkit.compile_and_compare(double_after_add_one, torch.ones(3, device=device), backend="inductor")
labkit.show(fixed)

# %%
assert "Tensor(a0!) x" in add_one.schema                           # the ! marks "written to"
assert fixed.verdict.agree and fixed.compiled_calls["lab00::add_one"] == 1
assert fixed.fate("lab00::add_one") == {"dynamo": True, "aot": True, "inductor": True, "ran": True}
print(f"Observed on torch {torch.__version__}: with the mutation declared, compiled == eager.")

# %% [markdown]
# `Tensor(a0!) x` is how a schema says "`x` is written to". With it, AOTAutograd keeps the call,
# and Inductor calls the op directly on your tensor. Notebook 02 reads those graphs line by line.

# %% [markdown]
# ## Exercise: an op with two arguments
#
# `lab00::fill` takes `x` and `scratch` and writes into `scratch` only. Replace the `...` with the
# `mutates_args` that makes the compiled function agree with eager, and run the cell.
# (*Hint:* it is a tuple of argument names.)

# %%
my_mutates_args = ...

# %%
def use_scratch(x, scratch):
    torch.ops.lab00.fill(x, scratch)    # any registered op can be called by name
    return x + scratch

if labkit.exercises.answered(my_mutates_args):
    try:
        labkit.declare(name="lab00::fill", args=("x", "scratch"), writes=("scratch",),
                       mutates_args=tuple(my_mutates_args), returns="none")
        mine = labkit.compile_and_compare(use_scratch, torch.zeros(2), torch.zeros(2), backend="aot_eager")
        labkit.exercises.check(mine.verdict.agree, "compiled and eager agree.",
                               "The compiled result still differs: which argument does the kernel write?")
    except (labkit.LabOpError, TypeError) as problem:
        labkit.exercises.check(False, "", str(problem))

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution (click to expand): the kernel writes `scratch`, so that is what must be declared.
labkit.declare(name="lab00::fill", args=("x", "scratch"), writes=("scratch",),
               mutates_args=("scratch",), returns="none")
solution = labkit.compile_and_compare(use_scratch, torch.zeros(2), torch.zeros(2), backend="aot_eager")
assert labkit.exercises.check(solution.verdict.agree, "compiled and eager agree.", "")

# %% [markdown]
# ## What to remember
#
# - `mutates_args` is a promise to the compiler. It **must** list every argument the op changes in place.
# - Break the promise and the compiled program can be silently wrong: here the op was removed as dead code,
#   the input never changed, and nothing warned.
# - The compile pipeline has three stages — Dynamo, AOTAutograd, Inductor — and an op can disappear
#   between them. `labkit.compile_and_compare` shows each stage and compares outputs *and* inputs.
#
# **Next:** 01 · Custom ops and the compile pipeline.
