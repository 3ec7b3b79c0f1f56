# %% [markdown]
# # 01 · Custom ops and what `torch.compile` sees
#
# **What you will learn**
# - how to register a custom operator with `torch.library.custom_op`, and check it with `opcheck`;
# - why the compiler needs a *fake kernel*, and the exact error you get without one — including
#   for an op that returns nothing;
# - the mental model the rest of the lab uses: **Dynamo graph → AOTAutograd graph → Inductor code**,
#   shown on one small model whose custom op you can follow through every stage.
#
# **Time:** about 30 minutes. **Before:** 00 · Start here.
#
# Every claim below is asserted by the cell that shows it; the outputs were recorded on torch 2.13.0 (CPU).

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import labkit

labkit.setup()
dropped = labkit.drop_namespace("nb01")  # re-running this notebook starts from a clean namespace

# %% [markdown]
# ## 1. A custom op, by hand
#
# `torch.library.custom_op` turns a Python function into an operator that torch's dispatcher knows
# by a **qualified name**, `namespace::name`. The type hints become the op's *schema*;
# `mutates_args` says which arguments it changes in place (here: none).

# %%
@torch.library.custom_op("nb01::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x * factor


@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)


print(scale._opoverload._schema)
print(scale(torch.ones(2), 3.0))
print(torch.ops.nb01.scale(torch.ones(2), 3.0))  # the same op, called by its name

# %%
assert str(scale._opoverload._schema) == "nb01::scale(Tensor x, float factor) -> Tensor"
assert torch.equal(torch.ops.nb01.scale(torch.ones(2), 3.0), torch.full((2,), 3.0))

# %% [markdown]
# The function under `register_fake` is the **fake kernel**. We will see in a moment what it is
# for. First, torch's own checker: `torch.library.opcheck` runs a set of tests on sample inputs.
# `labkit.checks.opcheck` runs each test separately and returns the outcome as a table:

# %%
labkit.checks.opcheck(scale, (torch.randn(3), 2.0))

# %%
assert set(labkit.checks.opcheck(scale, (torch.randn(3), 2.0)).values()) == {"ok"}

# %% [markdown]
# ## 2. Why the compiler needs a fake kernel
#
# `torch.compile` does not run your model to find out what it does: it *traces* it with
# **fake tensors**, which carry a shape, a dtype and a device but no data. A built-in op knows how to
# compute the output shape from fake inputs. Your op's Python body does not — it would try to read
# the data. The fake kernel answers "what would the output look like?" Let's watch it being called:

# %%
seen_by_fake = []


@torch.library.custom_op("nb01::peek", mutates_args=())
def peek(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@peek.register_fake
def _(x):
    seen_by_fake.append(type(x).__name__)
    return torch.empty_like(x)


torch.compile(lambda x: peek(x) + 1, backend="aot_eager")(torch.ones(2))
seen_by_fake

# %%
assert seen_by_fake and set(seen_by_fake) == {"FakeTensor"}

# %% [markdown]
# Now remove the fake kernel. Eagerly the op still works; compiled, tracing stops.
# `labkit.compile_and_compare` catches what torch raises and hands it back as data (`report.error`),
# with torch's own message:

# %%
no_fake = labkit.declare(name="nb01::no_fake", returns="fresh", fake=False)
report = labkit.compile_and_compare(lambda x: no_fake(x) + 1, torch.ones(2), backend="aot_eager")
print(report.error)

# %%
assert report.eager_error is None                       # eager: fine
assert report.error.kind == "missing_fake"              # compiled: no fake impl
assert report.error.message.startswith("There was no fake impl registered for <CustomOpDef(nb01::no_fake)>")

# %% [markdown]
# **A surprise:** an op that returns *nothing* and mutates nothing needs a fake kernel too
# (observed on torch 2.13). Ops that return nothing but *do* mutate an argument get one
# automatically — their output shape is known: there is none, and the mutated tensor keeps its shape.

# %%
returns_nothing = labkit.declare(name="nb01::log_only", returns="none", fake=False)
mutates_nothing_returned = labkit.declare(name="nb01::bump", writes=("x",), mutates_args=("x",),
                                          returns="none", fake=False)
pure_none = labkit.compile_and_compare(lambda x: (returns_nothing(x), x + 1)[1], torch.ones(2))
mutating_none = labkit.compile_and_compare(lambda x: (mutates_nothing_returned(x), x + 1)[1], torch.ones(2))
print("pure op returning None, no fake:    ", pure_none.error.kind if pure_none.error else "compiles")
print("mutating op returning None, no fake:", mutating_none.error.kind if mutating_none.error else "compiles")

# %%
assert pure_none.error is not None and pure_none.error.kind == "missing_fake"
assert mutating_none.error is None and mutating_none.verdict.agree

# %% [markdown]
# ## 3. One model, three stages
#
# Here is the model the rest of this notebook follows: a linear layer, our `scale` op, a ReLU.

# %%
class TinyBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(scale(self.linear(x), 2.0))


torch.manual_seed(0)
model = TinyBlock().eval().requires_grad_(False)   # inference: one forward graph, no backward
report = labkit.compile_and_compare(model, torch.randn(2, 4), backend="inductor")
print(report.verdict)

# %% [markdown]
# ### Stage 1 — Dynamo: your Python, as a graph
#
# Dynamo runs your Python bytecode and records every tensor operation into an FX graph. It keeps
# the model's structure: the `linear` module call, our op by its name, `relu`.

# %%
print(labkit.render.stage_code(report)["dynamo"])

# %% [markdown]
# ### Stage 2 — AOTAutograd: functional ATen ops
#
# AOTAutograd lowers the graph to ATen, torch's core operator set (`linear` becomes a
# transpose and an `addmm`), makes it purely functional (no in-place updates — more on that in 02), and
# removes unused code. The custom op stays **one opaque node**: AOTAutograd cannot look inside it.

# %%
print(labkit.render.stage_code(report)["aot"])

# %% [markdown]
# ### Stage 3 — Inductor: generated code
#
# Inductor turns the graph into code: a call to a matrix-multiply library (`extern_kernels.addmm`),
# a call to our op as a *fallback* (it cannot fuse through code it cannot see), and a generated C++
# kernel for the ReLU (`cpp_fused_…`; Triton kernels on a GPU). This is the `call()` function of
# the module Inductor wrote:

# %%
print(labkit.render.stage_code(report)["inductor"])

# %%
dynamo, aot = report.dynamo_graphs[0], report.aot_graphs[0]
assert dynamo.has("nb01::scale") and aot.has("nb01::scale")
assert any(n.target == "addmm.default" for n in aot.nodes)
assert any(n.target in ("t.default", "permute.default") for n in aot.nodes)
calls = labkit.render.inductor_kernel_calls(report.inductor_code[0])
assert "torch.ops.nb01.scale.default(…)" in calls
assert any(c.startswith(("cpp_fused_relu", "triton_")) for c in calls)
assert report.verdict.agree
print("Inductor launches:", calls)

# %% [markdown]
# The whole path in one picture; the op's node is yellow at each stage:

# %%
fig = labkit.render.draw_stages(report, "nb01::scale")

# %% [markdown]
# ## Exercise 1: where does an unused op disappear?
#
# `unused` calls `scale` and throws the result away. Which stage is the **first** whose output no
# longer contains the op: `"dynamo"`, `"aot"` or `"inductor"`? Replace the `...` and run.

# %%
first_stage_without_op = ...

# %%
def unused(x):
    scale(x, 2.0)
    return x + 1

fates = labkit.compile_and_compare(unused, torch.ones(3), backend="inductor").fate("nb01::scale")
truth = next(stage for stage in ("dynamo", "aot", "inductor") if fates[stage] is False)
if labkit.exercises.answered(first_stage_without_op):
    labkit.exercises.check(first_stage_without_op == truth, f"it is gone from the {truth} stage on.",
                           "Look at report.fate('nb01::scale') — or at the picture above — for each stage.")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: Dynamo records every call; AOTAutograd's dead-code elimination removes unused pure ops.
assert truth == "aot"
assert labkit.exercises.check(fates == {"dynamo": True, "aot": False, "inductor": False, "ran": False},
                              "the op is removed by AOTAutograd and never runs.", "")

# %% [markdown]
# ## Exercise 2: write a fake kernel
#
# `nb01::row_sums` returns the sum of each row: for `x` of shape `(n, m)` the result has shape `(n,)`.
# Complete `my_row_sums_fake` so that it returns an *empty* tensor of the right shape, dtype and
# device (without reading `x`'s data). The check runs `opcheck` and a compile.

# %%
def my_row_sums_fake(x):
    ...  # return a new empty tensor shaped (x.shape[0],), like x in dtype and device

# %%
@torch.library.custom_op("nb01::row_sums", mutates_args=())
def row_sums(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)


def check_row_sums_fake(fake):
    probe = fake(torch.empty(3, 5, device="meta"))
    if not labkit.exercises.answered(... if probe is None else probe):
        return False
    row_sums.register_fake(fake)
    checks = labkit.checks.opcheck(row_sums, (torch.randn(3, 5),))
    compiled = labkit.compile_and_compare(lambda x: row_sums(x) * 2, torch.randn(3, 5))
    return labkit.exercises.check(set(checks.values()) == {"ok"} and compiled.ok and compiled.verdict.agree,
                                  "opcheck passes and the compiled op agrees with eager.",
                                  f"opcheck says {checks}; compile error: {compiled.error}")


answer_ok = check_row_sums_fake(my_row_sums_fake)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution: new_empty makes a tensor like x (dtype, device) with the shape you give.
def solution_row_sums_fake(x):
    return x.new_empty(x.shape[0])


assert check_row_sums_fake(solution_row_sums_fake)

# %% [markdown]
# ## What to remember
#
# - `torch.library.custom_op("ns::name", mutates_args=...)` registers an op the compiler treats as one
#   opaque step; `opcheck` tests the registration.
# - The compiler traces with **fake tensors**. An op that returns a tensor — or returns nothing without
#   mutating anything — needs `register_fake`; without it, compiling fails with
#   "There was no fake impl registered…".
# - Dynamo records your Python as a graph; AOTAutograd lowers it to functional ATen ops and removes dead
#   code; Inductor generates code and calls your op as a fallback. A custom op stays one node throughout.
#
# **Next:** 02 · `mutates_args`: what the declaration changes in those graphs.
