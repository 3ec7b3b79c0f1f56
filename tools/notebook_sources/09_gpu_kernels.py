# %% [markdown]
# # 09 · Custom ops for GPU kernels: what Inductor sees, CUDA graphs, `Tag.out`, re-inplacing
#
# **What you will learn**
# - the difference between wrapping a Triton kernel with `torch.library.triton_op` + `wrap_triton`
#   (Inductor sees the kernel) and hiding it inside a plain `custom_op` (Inductor calls it by name);
# - what Inductor's FX-graph cache key contains for each — Triton source yes, a custom op's Python
#   kernel no — and why that contrasts with the stale-cache bug of notebook 04;
# - why `mode="reduce-overhead"` (CUDA graphs) skips a graph whose op mutates an input, and what
#   `torch.Tag.cudagraph_unsafe` is for;
# - `torch.Tag.out` (new in torch 2.13): write-only output buffers;
# - a case where re-inplacing fails and Inductor's code keeps a **clone** of your tensor.
#
# **Time:** about 20 minutes. **Before:** 02 · `mutates_args`. **Needs:** a CPU is enough for the
# sections marked *CPU*; the cells marked *GPU* need CUDA and Triton and say so in one line otherwise.
#
# **Without a GPU**, each GPU cell shows what it printed on one, labelled with the machine, the torch it ran and
# whether the code it ran is the code you see (or an earlier version of it). With a GPU, it runs here.

# %% tags=["nbval-ignore-output"]
# GPU setup: 09 imports
import contextlib
import importlib.util
import logging

import torch
from torch import Tensor

import labkit   # only to show the GPU cells' recordings on a machine without a GPU

HAS_TRITON = importlib.util.find_spec("triton") is not None
GPU = torch.cuda.is_available() and HAS_TRITON
print(f"torch {torch.__version__}; CUDA: {torch.cuda.is_available()}; Triton: {HAS_TRITON}")
if GPU:
    import triton
    import triton.language as tl

# %% [markdown]
# Every observation here comes from torch's own logs. `TORCH_LOGS=output_code` (or
# `torch._logging.set_logs(output_code=True)`) prints Inductor's generated code to stderr; the helper
# below collects the same messages from the logger that emits them, so a cell can assert on them.

# %%
# GPU setup: logged
# needs: 09 imports
@contextlib.contextmanager
def logged(logger_name, level=logging.DEBUG):
    """Collect what one of torch's loggers emits inside the block, without printing it."""
    messages = []
    class Keep(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())
    logger, handler = logging.getLogger(logger_name), Keep(level)
    old_level, old_propagate = logger.level, logger.propagate
    logger.setLevel(level)
    logger.propagate = False            # keep the messages out of torch's own stderr handler
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate

# %% [markdown]
# Two helpers on top of it: `inductor_code` compiles a function with Inductor and returns the code that
# `TORCH_LOGS=output_code` would show; `calls` picks out the lines of that code that contain a text.

# %%
# GPU setup: inductor_code
# needs: 09 imports; logged
OUTPUT_CODE = "torch._inductor.codecache.__output_code"    # what TORCH_LOGS=output_code shows


def inductor_code(fn, *args, **compile_options):
    """Compile fn with Inductor (fresh: no cached artifact), run it once, return its generated code."""
    torch.compiler.reset()
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False), logged(OUTPUT_CODE) as messages:
        torch.compile(fn, **compile_options)(*args)
    return "\n".join(m for m in messages if m.startswith("Output code:"))


def calls(code, text):
    """The lines of generated code that contain text (comments left out)."""
    return [line.strip() for line in code.splitlines() if text in line and not line.strip().startswith("#")]

# %% [markdown]
# ## 1. An opaque custom op: Inductor calls it by name *(CPU)*
#
# A `custom_op` is a black box to Inductor: it fuses the code around it, but the op itself becomes one
# call, `torch.ops.<namespace>.<name>.default(...)`, to whatever kernel you registered. Here the kernel
# is plain torch on the CPU; with a Triton kernel inside it would be the same call.

# %%
@torch.library.custom_op("nb09::scale", mutates_args=())
def scale(x: Tensor) -> Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x)


def scaled_plus_one(x):
    return scale(x) + 1

code = inductor_code(scaled_plus_one, torch.ones(4))
print("\n".join(calls(code, "nb09")))

# %% [markdown]
# And the body, `x * 2`, is not in that code. Looking for that text would prove nothing: Inductor writes a
# multiplication it compiles in code of its own, so the text is missing even then. What does show it: Inductor
# names each kernel it generates after the aten ops it fused. A control, the same function with the body written
# inline, gets a kernel named with `mul`; with the opaque op, Inductor's only kernel is the `add`, and the
# multiplication happens inside the op's call.

# %%
inline_code = inductor_code(lambda x: x * 2 + 1, torch.ones(4))     # the control: no custom op
kernels = {"inline": calls(inline_code, "_fused_"), "custom op": calls(code, "_fused_")}
print("\n".join(f"{name}: {lines[-1]}" for name, lines in kernels.items()))

# %%
assert calls(code, "torch.ops.nb09.scale.default("), "the op is one opaque call, by name"
assert "x * 2" not in inline_code, "the control's code lacks the text x * 2 too: looking for it proves nothing"
assert any("_fused_add_mul" in line for line in kernels["inline"]), "the control: Inductor compiles x * 2 itself"
assert kernels["custom op"], "§1's code has a kernel of Inductor's own (the add)"
assert not any("mul" in line for line in kernels["custom op"]), "§1's code has no mul kernel: the body is not in it"
print("checked: the op is an opaque call; its body is not in Inductor's code.")

# %% [markdown]
# ## 2. `triton_op` + `wrap_triton`: Inductor sees the kernel *(GPU)*
#
# `torch.library.triton_op` defines a custom op whose body launches Triton kernels through
# `torch.library.wrap_triton(kernel)[grid](...)`. Under `torch.compile` the op is *decomposed*: the
# kernel launch enters the graph as a user-defined Triton kernel, and Inductor puts the kernel's
# source into its own generated code. The same kernel launched from inside a plain `custom_op` stays
# an opaque call, as in §1.
#
# Both ops below launch the same `add_kernel`. The cells run only with CUDA and Triton. First the kernel, and the
# `triton_op` that launches it through `wrap_triton`:

# %%
# GPU cell: add_visible, a triton_op
# needs: 09 imports
if not GPU:
    labkit.show_gpu_recording()
else:
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
                 mask=mask)

    @torch.library.triton_op("nb09::add_visible", mutates_args=())
    def add_visible(x: Tensor, y: Tensor) -> Tensor:
        out = torch.empty_like(x)
        torch.library.wrap_triton(add_kernel)[(triton.cdiv(out.numel(), 256),)](x, y, out, out.numel(), BLOCK=256)
        return out

    print("defined: add_kernel, and nb09::add_visible (a triton_op)")

# %% [markdown]
# Then the same kernel, launched directly from inside a plain `custom_op`:

# %%
# GPU cell: add_opaque, a custom_op
# needs: 09 imports; add_visible, a triton_op
if not GPU:
    labkit.show_gpu_recording()
else:
    @torch.library.custom_op("nb09::add_opaque", mutates_args=())
    def add_opaque(x: Tensor, y: Tensor) -> Tensor:
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(out.numel(), 256),)](x, y, out, out.numel(), BLOCK=256)
        return out

    @add_opaque.register_fake
    def _(x, y):
        return torch.empty_like(x)

    print("defined: nb09::add_opaque (a custom_op)")

# %% [markdown]
# Each op in a compiled function, and what Inductor's code says of it:

# %%
# GPU cell: triton_op vs custom_op in Inductor's code
# needs: add_visible, a triton_op; add_opaque, a custom_op; inductor_code
if not GPU:
    labkit.show_gpu_recording()
else:
    a, b = torch.ones(1000, device="cuda"), torch.ones(1000, device="cuda")
    visible = inductor_code(lambda x, y: add_visible(x, y) * 3, a, b)
    opaque = inductor_code(lambda x, y: add_opaque(x, y) * 3, a, b)
    print("triton_op:", calls(visible, "async_compile.triton('add_kernel'"), calls(visible, "def add_kernel("))
    print("custom_op:", calls(opaque, "torch.ops.nb09.add_opaque.default("))
    assert "def add_kernel(" in visible, "triton_op: the kernel's source is in Inductor's code"
    assert not calls(visible, "torch.ops.nb09.add_visible"), "triton_op: Inductor's code does not call the op"
    assert calls(opaque, "torch.ops.nb09.add_opaque.default("), "custom_op: one opaque call, by name"
    assert "def add_kernel(" not in opaque, "custom_op: the kernel's source is not in Inductor's code"
    assert torch.equal(torch.compile(lambda x, y: add_visible(x, y) * 3)(a, b), torch.full_like(a, 6.0)), \
        "triton_op, compiled: (1 + 1) * 3 = 6"

# %% [markdown]
# ## 3. What the cache key contains *(CPU, and GPU for the Triton half)*
#
# Inductor keeps compiled artifacts in its FX-graph cache under a key built by `FxGraphHashDetails`
# in `torch/_inductor/codecache.py`: the graph's text, the input metadata, `torch.compiler.config.cache_key_tag`,
# torch's version, Inductor's config — and, for user-defined Triton kernels in the graph, their
# **source code** (`user_defined_triton_source`). Inductor inlines that source into the artifact, so
# it must be in the key. A custom op's kernel is *called* by name at run time, so its body is not in
# the key — and neither is anything else that is not in the graph's text (notebook 04: the
# `mutates_args` of #187319 changes the artifact but not the key).
#
# With `TORCH_LOGS="+inductor"` torch prints these details, one line each; here they are collected for §1's
# function:

# %%
torch.compiler.reset()
with torch._inductor.config.patch(fx_graph_cache=True), \
        torch._functorch.config.patch(enable_autograd_cache=False), \
        logged("torch._inductor.codecache") as messages:
    torch.compile(scaled_plus_one)(torch.ones(4))
details = next((m for m in messages if m.startswith("FX graph cache hash details")), None)
if details is not None:
    print("\n".join(line[:110] for line in details.splitlines() if "nb09" in line or "cache_key_tag" in line))
else:   # observed on torch 2.15.0: the details go to the structured trace (TORCH_TRACE), not to this log
    print(f"torch {torch.__version__} does not log the key's details here; TORCH_TRACE + tlparse shows them.")

# %%
import inspect

TORCH = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
if details is not None:                                         # torch 2.11 and 2.13 (checked)
    assert "torch.ops.nb09.scale.default" in details, "the op's name is in the key"
    assert any(line.split("] ", 1)[-1].startswith("cache_key_tag:") for line in details.splitlines()), \
        "the key has a cache_key_tag line (its value is whatever tag this kernel set, if any)"
else:
    assert TORCH >= (2, 15), "only from torch 2.15.0 are the details in the structured trace, not in this log"
assert "user_defined_triton_source" in inspect.getsource(torch._inductor.codecache.FxGraphHashDetails), \
    "the key has a slot for Triton sources"
print("checked: the op's name and a cache_key_tag slot in the key; a slot for Triton sources.")

# %% [markdown]
# The kernel's body is not in the key. To see it, give a fresh op a new kernel for the same name
# (`register_kernel("cpu", …)`) and compile the same function again: a cache *hit*, so the key did not change — and
# the new kernel runs, because the artifact calls the op by name. (That is harmless here; notebook 04 shows the same
# blindness to a changed *declaration*, which is not.)

# %%
import torch._dynamo.utils

@torch.library.custom_op("nb09::rekerneled", mutates_args=())
def rekerneled(x: Tensor) -> Tensor:
    return x * 2


rekerneled.register_fake(lambda x: torch.empty_like(x))


def cached_compile():
    """Compile and run rekerneled(x) + 1 with the FX-graph cache on: (the result, the cache's verdict)."""
    torch.compiler.reset()
    torch._dynamo.utils.counters.clear()
    with torch._inductor.config.patch(fx_graph_cache=True), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        result = torch.compile(lambda x: rekerneled(x) + 1)(torch.ones(3)).tolist()
    return result, "hit" if torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"] else "miss"

# %% [markdown]
# Compile, give the op a new kernel, and compile again:

# %%
first = cached_compile()                                   # a hit too if an earlier run stored it: either is fine
rekerneled.register_kernel("cpu", lambda x: x * 3)         # a new body, the same name
second = cached_compile()
print("before:", first[0], "| after the new kernel:", second)

# %%
assert first[0] == [3.0, 3.0, 3.0], "the first kernel computes x * 2 + 1"
assert second[1] == "hit", "a cache hit after the new kernel: the key did not change"
assert second[0] == [4.0, 4.0, 4.0], "the new body ran: the artifact calls the op, it does not inline it"

# %% [markdown]
# On a GPU the key's details for the `triton_op` of §2 contain the kernel's source text:

# %%
# GPU cell: the Triton source in the cache key
# needs: logged; triton_op vs custom_op in Inductor's code
if not GPU:
    labkit.show_gpu_recording()
else:
    torch.compiler.reset()
    with torch._inductor.config.patch(fx_graph_cache=True), \
            torch._functorch.config.patch(enable_autograd_cache=False), \
            logged("torch._inductor.codecache") as messages:
        torch.compile(lambda x, y: add_visible(x, y) * 3)(a, b)
    details = next(m for m in messages if m.startswith("FX graph cache hash details"))
    source_lines = [line for line in details.splitlines() if "user_defined_triton_source" in line]
    print(source_lines[0].split("] ", 1)[1][:120])          # after the "[hash] " prefix
    assert "tl.store(out_ptr + offsets" in source_lines[0], "the Triton kernel's source is in the key"

# %% [markdown]
# ## 4. CUDA graphs and an op that mutates its input *(CPU for the mechanism, GPU for the reason)*
#
# `torch.compile(mode="reduce-overhead")` records the compiled graph as a CUDA graph and replays it.
# A replay reuses the same memory, so Inductor refuses graphs it cannot replay safely and says why,
# in a warning on the `cudagraphs` log (`TORCH_LOGS=cudagraphs`) beginning "skipping cudagraphs due to",
# and counts it in `torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]`. On a CPU every graph
# is skipped: torch counts the skip but logs no reason (the reason is only logged for CUDA graphs).

# %%
# GPU setup: double_ and step
# needs: 09 imports
@torch.library.custom_op("nb09::double_", mutates_args={"x"})
def double_(x: Tensor) -> None:
    x.mul_(2)


def step(x):
    double_(x)
    return x + 1

CUDAGRAPHS = "torch._inductor.cudagraph_utils.__cudagraphs"     # what TORCH_LOGS=cudagraphs shows

# %% [markdown]
# On a CPU:

# %%
torch.compiler.reset()
torch._dynamo.utils.counters.clear()
with logged(CUDAGRAPHS, logging.WARNING) as skips:
    result = torch.compile(step, mode="reduce-overhead")(torch.ones(3))
print("cudagraph skips counted:", torch._dynamo.utils.counters["inductor"]["cudagraph_skips"], "| logged:", skips)

# %%
assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] == 1, "on a CPU: one cudagraph skip counted"
assert skips == [], "on a CPU: no skip reason logged"
assert result.tolist() == [3.0, 3.0, 3.0], "the graph ran, eagerly-correct"
print("checked: on a CPU the graph ran without a CUDA graph; one skip counted, none logged.")

# %% [markdown]
# On a GPU the reason for the same op is **"mutated inputs"**: `double_` writes into `x`, a tensor the
# caller owns, and a replayed CUDA graph writes only into memory it manages.

# %%
# GPU cell: CUDA graphs skip an op that mutates an input
# needs: logged; double_ and step
if not GPU:
    labkit.show_gpu_recording()
else:
    torch.compiler.reset()
    with logged(CUDAGRAPHS, logging.WARNING) as skips:
        compiled = torch.compile(step, mode="reduce-overhead")
        x = torch.ones(3, device="cuda")
        compiled(x), compiled(x)
    print([message.splitlines()[0] for message in skips])      # the first line; the rest is a stack trace
    assert any(s.startswith("skipping cudagraphs due to mutated inputs") for s in skips), \
        "the logged reason: mutated inputs"
    assert x.tolist() == [4.0, 4.0, 4.0], "both calls ran, eagerly-correct"

# %% [markdown]
# An op that can never be captured — it synchronises with the host, or allocates data-dependent
# memory — says so with `tags=(torch.Tag.cudagraph_unsafe,)` (a tuple: torch 2.11 takes no single tag). On a GPU
# (the two cells after next; without a GPU they show the run their recordings come from), Inductor split this graph into two
# **partitions** at the tagged op — `partition_0` and `partition_1` in its code, the op's call beside them — and
# skipped nothing: no "skipping cudagraphs" message, a skip count of 0, and three replays with the right values.
# Keeping such an op out of the captured pieces is what partitioning (`torch._inductor.config.graph_partition`) is
# for; the cell shows the split and the skip count, not where each piece runs.

# %%
# GPU setup: host_checked
# needs: 09 imports
@torch.library.custom_op("nb09::host_checked", mutates_args=(), tags=(torch.Tag.cudagraph_unsafe,))
def host_checked(x: Tensor) -> Tensor:
    assert bool(torch.isfinite(x).all()), "x is finite"   # a host sync: fine eagerly, fatal inside a CUDA graph
    return x.clone()


@host_checked.register_fake
def _(x):
    return torch.empty_like(x)

assert torch.Tag.cudagraph_unsafe in torch.ops.nb09.host_checked.default.tags, "the op carries the tag"
print(torch.ops.nb09.host_checked.default.tags)

# %%
# GPU cell: checked_step under reduce-overhead
# needs: host_checked; inductor_code
if not GPU:
    labkit.show_gpu_recording()
else:
    def checked_step(x):
        return host_checked(x * 2) + 1

    torch._dynamo.utils.counters.clear()
    unsafe_code = inductor_code(checked_step, torch.ones(3, device="cuda"), mode="reduce-overhead")
    partitions = calls(unsafe_code, "def partition_")
    print("graph partitions:", partitions, "| the op:", calls(unsafe_code, "torch.ops.nb09.host_checked.default("))
    assert torch._inductor.config.graph_partition, "graph partitioning is on by default (2.11 to 2.15)"
    assert len(partitions) == 2, "two partitions: x * 2 | host_checked, outside CUDA graphs | + 1"

# %% [markdown]
# The same function, compiled again and replayed three times:

# %%
# GPU cell: checked_step replayed under reduce-overhead
# needs: checked_step under reduce-overhead; logged; double_ and step
if not GPU:
    labkit.show_gpu_recording()
else:
    torch.compiler.reset()
    with logged(CUDAGRAPHS, logging.WARNING) as skips:
        compiled = torch.compile(checked_step, mode="reduce-overhead")
        results = [compiled(torch.ones(3, device="cuda")).tolist() for _ in range(3)]   # read before the next replay
    skipped = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]   # both compiles, since the last clear
    print("skip messages:", skips, "| cudagraph skips counted:", skipped)
    assert skips == [], "no 'skipping cudagraphs' message"
    assert skipped == 0, "no cudagraph skip counted, in either compile"
    assert results == [[3.0, 3.0, 3.0]] * 3, "three replays, each right"

# %% [markdown]
# Graph partitioning is on by default in the torch you run too (checked on 2.11, 2.13 and 2.15):

# %%
print("torch._inductor.config.graph_partition =", torch._inductor.config.graph_partition)
assert torch._inductor.config.graph_partition, "graph partitioning is on by default"

# %% [markdown]
# ## 5. `Tag.out`: a write-only output buffer *(CPU)*
#
# Kernels written for speed often take the buffer to write into (`out=`), like `torch.mul(x, 2, out=y)`.
# Declared with plain `mutates_args={"out"}`, torch must assume the op may also *read* `out`. Since
# torch 2.13, `tags=torch.Tag.out` says the buffer is write-only: the op takes `out` keyword-only and
# returns it, and gets a fake kernel for free (below, no `register_fake`, and `fullgraph=True` compiles).
# Inductor allocates a buffer itself and passes it as `out=`:

# %%
if hasattr(torch.Tag, "out"):
    @torch.library.custom_op("nb09::scale_out", mutates_args={"out"}, tags=(torch.Tag.out,))
    def scale_out(x: Tensor, *, out: Tensor) -> Tensor:
        torch.mul(x, 2, out=out)
        return out

    def scale_into_new(x):
        return scale_out(x, out=torch.empty_like(x)) + 1

    out_code = inductor_code(scale_into_new, torch.ones(3), fullgraph=True)   # no register_fake needed
    print(torch.ops.nb09.scale_out.default._schema)
    print("\n".join(calls(out_code, "nb09.scale_out.default(")))
    assert str(torch.ops.nb09.scale_out.default._schema) == \
        "nb09::scale_out(Tensor x, *, Tensor(a1!) out) -> Tensor(a1!)", "Tag.out: out is keyword-only, and returned"
    assert calls(out_code, "torch.ops.nb09.scale_out.default(arg0_1, out=buf0)"), \
        "Inductor passes a buffer of its own, buf0, as out="
    assert torch.compile(scale_into_new)(torch.ones(3)).tolist() == [3.0, 3.0, 3.0], "compiled, the result is right"
else:
    print(f"torch {torch.__version__} has no torch.Tag.out (it arrived in 2.13): skipped.")

# %% [markdown]
# What does the tag change? There is no clone above, and nothing there reads the buffer's old contents. The tag
# matters when something **reads the buffer's old value after the call**. Below, `old = buf * 3` reads it; in the graph Inductor re-inplaces, that read sits after the call
# (Inductor moves it next to its use, and fuses it with the final add). The same out= kernel, declared twice:
# with `Tag.out`, and with plain `mutates_args={"out"}` (positional `out`, returning nothing):

# %%
@torch.library.custom_op("nb09::scale_into", mutates_args={"out"})
def scale_into(x: Tensor, out: Tensor) -> None:
    torch.mul(x, 2, out=out)


def read_then_overwrite(op):
    def fn(x, buf):
        old = buf * 3              # the buffer's old value...
        op(x, buf)                 # ...then the kernel overwrites it
        return buf + old
    return fn

# %% [markdown]
# Both declarations, compiled with Inductor on a buffer that holds 5s:

# %%
DECLARED = {"mutates_args only": scale_into}
if hasattr(torch.Tag, "out"):
    DECLARED["Tag.out"] = lambda x, buf: scale_out(x, out=buf)
tag_codes, tag_results = {}, {}
for name, op in DECLARED.items():
    torch.compiler.reset()
    x, buf = torch.ones(3), torch.full((3,), 5.0)
    with torch._inductor.config.patch(fx_graph_cache=False), logged(OUTPUT_CODE) as messages:
        returned = torch.compile(read_then_overwrite(op))(x, buf)
    tag_codes[name] = "\n".join(m for m in messages if m.startswith("Output code:"))
    tag_results[name] = returned.tolist(), buf.tolist()
    launched = [line for line in calls(tag_codes[name], "clone") if "async_compile" not in line]
    print(f"{name}: clone kernels {launched}, the op {calls(tag_codes[name], 'torch.ops.nb09.scale_')[:1]}")

# %%
plain = tag_codes["mutates_args only"]
assert calls(plain, "_clone_"), "without the tag, Inductor's code clones the buffer"
assert calls(plain, "torch.ops.nb09.scale_into.default(arg1_1, buf0)"), "without the tag, the op writes buf0: the clone"
if "Tag.out" in tag_codes:
    tagged = tag_codes["Tag.out"]
    assert "clone" not in tagged, "with Tag.out, no clone"
    assert calls(tagged, "torch.ops.nb09.scale_out.default(arg1_1, out=buf0)"), \
        "with Tag.out, the op writes a fresh buffer, buf0"
    assert any("_fused_" in line and "copy_" in line for line in calls(tagged, "(buf")), \
        "with Tag.out, the fused kernel of the final add copies the result back into your tensor"
assert all(result == ([17.0] * 3, [2.0] * 3) for result in tag_results.values()), \
    "both right: the function returns 2·1 + 3·5 = 17, and buf ends as 2"
print("checked: without the tag Inductor clones the buffer's old value for the op; with it, a fresh buffer.")

# %% [markdown]
# Without the tag, torch must assume the kernel may read `out`, so it hands the kernel a **clone** of the
# buffer, old contents copied in (`clone` above), and keeps the original for `old`. With `Tag.out` the kernel
# never sees the old contents: on torch 2.13 Inductor gives it an empty buffer (`out=buf0`), copies nothing in,
# and copies the result into your tensor afterwards, in the fused kernel of the final add (`copy_` in its name).
# The tag does this for every call — the empty buffer is made in
# `_do_auto_functionalize_v2_for_out_operator`, `torch/_higher_order_ops/auto_functionalize.py` — so it saves
# the clone only where one was needed: a buffer whose old value is read after the call.

# %% [markdown]
# ## 6. When re-inplacing fails: a clone in your code *(CPU)*
#
# Notebook 02 showed the happy path: AOTAutograd turns a mutating op into a functional one, and
# Inductor's re-inplacing pass (`torch/_inductor/fx_passes/reinplace.py`) turns it back into a call on
# your tensor. When the pass cannot prove that is safe, it keeps a **clone**: the op writes a copy, which
# is then copied back — correct, but it costs memory and a pass over the data.
#
# The classic case is #131192: the op mutates a *view* of an input (`x[0]`). The redesigned
# functionalization, `auto_functionalized_v2` (PR #134409), fixed it and is on by default. The original
# form, `auto_functionalized`, is still in torch behind the config flag below, and it still clones.
# Same function, both forms:

# %%
@torch.library.custom_op("nb09::bump", mutates_args={"x"})
def bump(x: Tensor) -> None:
    x.add_(1)


def bump_first_row(x):
    bump(x[0])
    return x.sum()

v2_code = inductor_code(bump_first_row, torch.zeros(2, 3))
with torch._inductor.config.patch(enable_auto_functionalized_v2=False), \
        logged("torch._inductor.fx_passes.reinplace", logging.INFO) as reinplace_log:
    v1_code = inductor_code(bump_first_row, torch.zeros(2, 3))
print("v2:", calls(v2_code, "nb09.bump"))
print("v1:", calls(v1_code, "nb09.bump"), calls(v1_code, "clone")[:1])
print("torch's re-inplacing log (v1):", reinplace_log)

# %%
assert torch._inductor.config.enable_auto_functionalized_v2, "v2 is the default"
assert calls(v2_code, "torch.ops.nb09.bump.default(reinterpret_tensor(arg0_1"), "v2: the op writes a view of x"
assert "clone" not in v2_code, "v2: no clone"
assert "clone" in v1_code, "v1: Inductor's code keeps a clone"
assert calls(v1_code, "torch.ops.nb09.bump.default(buf0)"), "v1: the op writes buf0, the clone"
assert any("remain clones=['x']" in m                 # torch 2.13's wording
           or "unable to reinplace ['x']" in m        # torch 2.11's and 2.15.0's
           for m in reinplace_log), "v1: torch's re-inplacing log says x stays a clone"
with torch._inductor.config.patch(enable_auto_functionalized_v2=False):
    torch.compiler.reset()
    x = torch.zeros(2, 3)
    assert torch.compile(bump_first_row)(x).item() == 3.0, "v1: the result is right"
    assert x[0].tolist() == [1.0, 1.0, 1.0], "v1: the clone is copied back into your tensor"
print("checked: v2 writes your tensor in place; v1 writes a clone and copies it back (still correct).")

# %% [markdown]
# Under the default (`v2`) on torch 2.13, the view patterns a kernel author meets most re-inplace
# without a clone. The cell checks a few; if one of them ever clones, it says which:

# %%
VIEW_PATTERNS = {
    "a column x[:, 0]": lambda x: bump(x[:, 0]),
    "a transpose x.t()": lambda x: bump(x.t()),
    "a list of two rows": lambda x: [bump(row) for row in x.unbind(0)],
}
for name, fn in VIEW_PATTERNS.items():
    code = inductor_code(fn, torch.zeros(2, 3))
    assert "clone" not in code, f"{name}: Inductor kept a clone"
    assert calls(code, "nb09.bump.default("), f"{name}: Inductor's code does not call the op"
print("checked: no clone for", ", ".join(VIEW_PATTERNS))

# %% [markdown]
# ## Exercise: predict, then run
#
# For each call below, predict whether Inductor's code (with the v1 form, as above) keeps a clone of the
# tensor `bump` writes. Write `True` (a clone) or `False` (in place) and run the check.
#
# - `"input"`: `bump(x)` — the whole input;
# - `"row"`: `bump(x[1])` — a view of the input;
# - `"temporary"`: `y = x + 1; bump(y); return y` — a tensor created inside the function.

# %%
my_predictions = {"input": ..., "row": ..., "temporary": ...}

# %%
def temporary(x):
    y = x + 1
    bump(y)
    return y

EXERCISE = {"input": lambda x: bump(x), "row": lambda x: bump(x[1]), "temporary": temporary}


def v1_clones(fn):
    with torch._inductor.config.patch(enable_auto_functionalized_v2=False):
        return "clone" in inductor_code(fn, torch.zeros(2, 3))

if ... in my_predictions.values():
    print("Replace each ... with True or False, then run this cell.")
else:
    observed = {name: v1_clones(fn) for name, fn in EXERCISE.items()}
    wrong = [name for name in observed if observed[name] != my_predictions[name]]
    print("all three right." if not wrong else f"not quite: look again at {wrong} — who else could see the old value?")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Solution (click to expand): only the view of the input clones under v1 — v1 cannot re-inplace a view
# of a graph input (#131192); the whole input and a temporary are written in place.
assert {name: v1_clones(fn) for name, fn in EXERCISE.items()} == {"input": False, "row": True, "temporary": False}, \
    "under v1 only the view of the input clones"
print("solution checked")

# %% [markdown]
# ## In your own project
#
# Every observation in this notebook came from torch's own tools (labkit only shows the GPU cells' recordings):
#
# - `TORCH_LOGS=output_code` — Inductor's code: is your kernel inlined Triton (`def your_kernel(`) or an
#   opaque `torch.ops.ns.op.default(...)` call? Does a `clone` surround it?
# - `TORCH_LOGS=cudagraphs` — why a `reduce-overhead` graph was not recorded;
# - `TORCH_LOGS="+inductor"` — the cache key's parts, and re-inplacing's verdict for each mutating op
#   ("Reinplace for … remain clones=…, missed opportunities=…").
#
# The cell below repeats §6's observation the way you would in a script: `torch._logging.set_logs` is the
# in-process form of `TORCH_LOGS`, and its messages go to stderr, captured here.

# %%
import io

stderr = io.StringIO()
torch.compiler.reset()
with contextlib.redirect_stderr(stderr), \
        torch._inductor.config.patch(enable_auto_functionalized_v2=False, fx_graph_cache=False):
    torch._logging.set_logs(inductor=logging.INFO)            # TORCH_LOGS="inductor"
    try:
        torch.compile(bump_first_row)(torch.zeros(2, 3))
    finally:
        torch._logging.set_logs()                             # back to torch's defaults
marks = ("Reinplace for", "attempted to reinplace")          # torch 2.13's summary; 2.11's and 2.15.0's
verdicts = [line[line.index(mark):] for line in stderr.getvalue().splitlines() for mark in marks if mark in line]
print("\n".join(verdicts))
assert any("missed opportunities=['x']" in v or "unable to reinplace ['x']" in v for v in verdicts), \
    "torch's log says re-inplacing missed x"

# %% [markdown]
# ## Questions
#
# 1. Why must the source of a user-defined Triton kernel be part of Inductor's cache key, while the body
#    of a `custom_op`'s kernel need not be?
# 2. Which part of an op's *declaration* can change a compiled artifact without changing its cache key
#    (notebook 04)? How does `torch.compiler.config.cache_key_tag` help?
# 3. Why can a CUDA graph not replay a graph whose op writes into an input tensor the caller owns?
# 4. What does `Tag.out` promise that `mutates_args={"out"}` does not, and what does Inductor save by it?
# 5. The v1 form clones `x[0]` before the op writes it. What would go wrong if it wrote `x[0]` in place
#    *without* proving that nobody reads the old value?
#
# ## What to remember
#
# - Wrap Triton kernels with `triton_op` + `wrap_triton`: Inductor then sees the kernel (and keys its
#   cache on its source). A `custom_op` around the same kernel is an opaque call.
# - `mode="reduce-overhead"` skips, with a logged reason, graphs whose ops mutate inputs it does not own;
#   ops that can never be captured carry `Tag.cudagraph_unsafe`.
# - `Tag.out` (torch 2.13+) marks write-only output buffers: Inductor then hands the kernel a fresh buffer
#   instead of a clone of yours when your buffer's old value is still read after the call.
# - Re-inplacing can fail and leave a clone; `TORCH_LOGS=output_code` shows it, `+inductor` says why.
#
# ## Further reading
#
# - User-defined Triton kernels with `torch.compile`:
#   https://docs.pytorch.org/tutorials/recipes/torch_compile_user_defined_triton_kernel_tutorial.html
# - Custom operators landing page: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - `torch.library` reference (`triton_op`, `wrap_triton`, `custom_op`): https://docs.pytorch.org/docs/stable/library.html
# - The Custom Operators Manual: https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU
# - CUDA graphs in `torch.compile`: https://docs.pytorch.org/docs/stable/torch.compiler_cudagraph_trees.html
# - Issues: views not re-inplaced, https://github.com/pytorch/pytorch/issues/131192; extra copies for
#   mutable inputs, https://github.com/pytorch/pytorch/issues/127660; the stale cache of notebook 04,
#   https://github.com/pytorch/pytorch/issues/187319.
