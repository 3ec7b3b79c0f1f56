# %% [markdown]
# # 09 · Custom ops for GPU kernels: what Inductor sees, CUDA graphs, `Tag.out`, re-inplacing
#
# You wrote a Triton kernel. Wrap it one way and Inductor sees it: its source lands in Inductor's code and in the
# cache key. Wrap it another way and Inductor calls it by name, blind. Then `mode="reduce-overhead"` may skip
# your graph, and an `out=` buffer may cost a clone. Inductor's generated code says which. This notebook reads it
# on your CPU, and shows what a GPU printed where a GPU has run a cell.
#
# **What you will learn**
# - `torch.library.triton_op` + `wrap_triton` (Inductor sees the kernel) against a plain `custom_op` (an opaque
#   call), and what each puts in the FX-graph cache key;
# - why CUDA graphs skip an op that mutates an input, and what `torch.Tag.cudagraph_unsafe` does;
# - `torch.Tag.out`: write-only output buffers, and the clone they save;
# - a case where re-inplacing fails and Inductor's code keeps a **clone** of your tensor.
#
# **Time:** about 40 minutes. **Before:** 02 · `mutates_args`. Every section runs on a CPU: each op's
# registration, its tags, and what Inductor decides, read from its configuration and its CPU code. A `# GPU cell`
# adds what only a GPU shows; without CUDA and Triton it shows what a GPU printed, labelled with the machine and
# the code it ran, or says that no GPU has run it. Collapsed *Check* cells assert every claim
# ([docs/torch-versions.md](../docs/torch-versions.md): what differs between releases).

# %% tags=["nbval-ignore-output"]
# GPU setup: 09 imports
import importlib.util
import logging

import torch
from torch import Tensor

import labkit
from labkit.logs import code_lines, inductor_code

GPU = torch.cuda.is_available() and importlib.util.find_spec("triton") is not None
print(f"torch {torch.version.__version__}; CUDA and Triton here: {GPU}")
if GPU:
    import triton
    import triton.language as tl

# %% [markdown]
# Everything here is read from Inductor's generated code, what `TORCH_LOGS=output_code` prints.
# `inductor_code(fn, *args)` compiles `fn` fresh and returns that text; `code_lines(code, text)` picks its lines.
#
# ## 1. An opaque custom op: Inductor calls it by name *(CPU)*
#
# Inductor fuses the code around a `custom_op`, but the op itself stays one call,
# `torch.ops.<namespace>.<name>.default(...)`, to whatever kernel you registered. Below, the op next to a
# control, the same arithmetic inline; the picture shows what each compiled `call` runs:

# %%
@torch.library.custom_op("nb09::scale", mutates_args=())
def scale(x: Tensor) -> Tensor:
    return x * 2

scale.register_fake(lambda x: torch.empty_like(x))

def scaled_plus_one(x):
    return scale(x) + 1

code = inductor_code(scaled_plus_one, torch.ones(4))
inline_code = inductor_code(lambda x: x * 2 + 1, torch.ones(4))     # the control: no custom op
print("\n".join(code_lines(code, "nb09")))
labkit.pictures.inductor_steps({"x * 2 + 1": inline_code, "scale(x) + 1": code})

# %% tags=["check"]
#@title Check: the op is one opaque call; its body is in no kernel of Inductor's
kernels = {"inline": code_lines(inline_code, "_fused_"), "custom op": code_lines(code, "_fused_")}
assert code_lines(code, "torch.ops.nb09.scale.default("), "the op is one opaque call, by name"
assert "x * 2" not in inline_code, "the control's code lacks the text x * 2 too: looking for it proves nothing"
assert any("_fused_add_mul" in line for line in kernels["inline"]), "the control: Inductor compiles x * 2 itself"
assert kernels["custom op"], "§1's code has a kernel of Inductor's own (the add)"
assert not any("mul" in line for line in kernels["custom op"]), "§1's code has no mul kernel: the body is not in it"

# %% [markdown]
# Inductor names each kernel after the aten ops it fused: the control's kernel is `..._add_mul_...`; with the
# op, Inductor's only kernel is the `add`, and the multiplication happens inside the op's call.
#
# ## 2. `triton_op` + `wrap_triton`: Inductor sees the kernel *(CPU for the mechanism, GPU for the kernel)*
#
# `torch.library.triton_op` defines an op whose body Inductor may see: under `torch.compile` the op is
# **decomposed** (replaced by its body) before Inductor compiles the graph. Its documentation allows a body of
# torch's ops and Triton kernels launched through `torch.library.wrap_triton(kernel)[grid](...)`. On a CPU, with
# a body of torch ops, beside a `custom_op` with the same body:

# %%
with labkit.logs.logged(labkit.logs.TRITON_OP, logging.WARNING):   # torch warns where Triton is missing
    @torch.library.triton_op("nb09::add_seen", mutates_args=())
    def add_seen(x: Tensor, y: Tensor) -> Tensor:
        return x + y                   # the body is its own fake kernel: no register_fake

@torch.library.custom_op("nb09::add_hidden", mutates_args=())
def add_hidden(x: Tensor, y: Tensor) -> Tensor:
    return x + y

add_hidden.register_fake(lambda x, y: torch.empty_like(x))
seen_codes = {name: inductor_code(lambda x, y, op=op: op(x, y) * 3, torch.ones(4), torch.ones(4))
              for name, op in {"triton_op": add_seen, "custom_op": add_hidden}.items()}
labkit.pictures.inductor_steps(seen_codes)

# %% tags=["check"]
#@title Check: the triton_op is gone from Inductor's code, its add fused with * 3; the custom_op is one call
assert not code_lines(seen_codes["triton_op"], "nb09.add_seen"), "triton_op: Inductor's code does not call the op"
assert any("_fused_add_mul" in line for line in code_lines(seen_codes["triton_op"], "_fused_")), \
    "triton_op: its body's add is fused with the * 3 into one kernel"
assert code_lines(seen_codes["custom_op"], "torch.ops.nb09.add_hidden.default("), "custom_op: one call, by name"

# %% [markdown]
# Inductor's code has no call to the `triton_op`: it compiled the body, fusing the `add` with the `* 3`
# (`..._add_mul_...`); the `custom_op` stays a call by name. On a GPU the body launches a Triton kernel, the
# decomposition puts that launch in the graph, and Inductor puts the kernel's **source** into its code. The GPU
# cells below define the kernel and both ops, then compare them:

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
# Then the same kernel, launched from inside a plain `custom_op`:

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

    add_opaque.register_fake(lambda x, y: torch.empty_like(x))
    print("defined: nb09::add_opaque (a custom_op)")

# %% [markdown]
# Each op in a compiled function, and what Inductor's code says of it:

# %%
# GPU cell: triton_op vs custom_op in Inductor's code
# needs: add_visible, a triton_op; add_opaque, a custom_op
if not GPU:
    labkit.show_gpu_recording()
else:
    a, b = torch.ones(1000, device="cuda"), torch.ones(1000, device="cuda")
    visible = inductor_code(lambda x, y: add_visible(x, y) * 3, a, b)
    opaque = inductor_code(lambda x, y: add_opaque(x, y) * 3, a, b)
    print("triton_op:", code_lines(visible, "async_compile.triton('add_kernel'"), code_lines(visible, "def add_kernel("))
    print("custom_op:", code_lines(opaque, "torch.ops.nb09.add_opaque.default("))

# %% tags=["check"]
#@title Check (on a GPU): the triton_op's kernel source is in Inductor's code; the custom_op is one call by name
if GPU:
    assert "def add_kernel(" in visible, "triton_op: the kernel's source is in Inductor's code"
    assert not code_lines(visible, "torch.ops.nb09.add_visible"), "triton_op: Inductor's code does not call the op"
    assert code_lines(opaque, "torch.ops.nb09.add_opaque.default("), "custom_op: one opaque call, by name"
    assert "def add_kernel(" not in opaque, "custom_op: the kernel's source is not in Inductor's code"
    assert torch.equal(torch.compile(lambda x, y: add_visible(x, y) * 3)(a, b), torch.full_like(a, 6.0)), \
        "triton_op, compiled: (1 + 1) * 3 = 6"

# %% [markdown]
# ## 3. What the cache key contains *(CPU, and GPU for the Triton half)*
#
# Inductor's FX-graph cache keys an artifact on the graph's text, the input metadata,
# `torch.compiler.config.cache_key_tag`, torch's version, Inductor's config and, for user-defined Triton kernels,
# their **source**: Inductor inlines that source into the artifact, so it must be in the key. A custom op's
# kernel is *called* by name at run time, so its body is not (nor is anything else missing from the graph's
# text: notebook 04's `mutates_args`). `TORCH_LOGS="+inductor"` prints the key's parts; for §1's function:

# %%
torch.compiler.reset()
with torch._inductor.config.patch(fx_graph_cache=True), torch._functorch.config.patch(enable_autograd_cache=False), \
        labkit.logs.logged(labkit.logs.CODECACHE) as messages:
    torch.compile(scaled_plus_one)(torch.ones(4))
details = next((m for m in messages if m.startswith("FX graph cache hash details")), None)
if details is not None:
    print("\n".join(line[:110] for line in details.splitlines() if "nb09" in line or "cache_key_tag" in line))
else:   # some releases send the details to the structured trace instead
    print(f"torch {torch.version.__version__} does not log the key's details here; TORCH_TRACE + tlparse shows them.")

# %% tags=["check"]
#@title Check: the op's name and a cache_key_tag line in the key; a slot for Triton sources
import inspect

if details is not None:                                         # torch 2.11 and 2.13 (checked)
    assert "torch.ops.nb09.scale.default" in details, "the op's name is in the key"
    assert any(line.split("] ", 1)[-1].startswith("cache_key_tag:") for line in details.splitlines()), \
        "the key has a cache_key_tag line (its value is whatever tag this kernel set, if any)"
else:
    assert labkit.env.torch_version() >= (2, 15), "only from torch 2.15.0 are the details not in this log"
assert "user_defined_triton_source" in inspect.getsource(torch._inductor.codecache.FxGraphHashDetails), \
    "the key has a slot for Triton sources"

# %% [markdown]
# The kernel's body is not in the key. To see it, give an op a new kernel for the same name
# (`register_kernel("cpu", …)`) and compile the same function again: a cache *hit*, and the new kernel runs,
# because the artifact calls the op by name. (Harmless here; notebook 04 shows the same blindness to a changed
# *declaration*, which is not.)

# %%
@torch.library.custom_op("nb09::rekerneled", mutates_args=())
def rekerneled(x: Tensor) -> Tensor:
    return x * 2

rekerneled.register_fake(lambda x: torch.empty_like(x))

def cached_compile():
    """Compile and run rekerneled(x) + 1 with the FX-graph cache on: (the result, the cache's verdict)."""
    torch.compiler.reset()
    labkit.logs.clear_counters()
    with torch._inductor.config.patch(fx_graph_cache=True), torch._functorch.config.patch(enable_autograd_cache=False):
        result = torch.compile(lambda x: rekerneled(x) + 1)(torch.ones(3)).tolist()
    return result, "hit" if labkit.logs.counters()["fxgraph_cache_hit"] else "miss"

first = cached_compile()                                   # a hit too if an earlier run stored it: either is fine
rekerneled.register_kernel("cpu", lambda x: x * 3)         # a new body, the same name
second = cached_compile()
print("before:", first[0], "| after the new kernel:", second)

# %% tags=["check"]
#@title Check: a cache hit after the new kernel, and the new body ran
assert first[0] == [3.0, 3.0, 3.0], "the first kernel computes x * 2 + 1"
assert second[1] == "hit", "a cache hit after the new kernel: the key did not change"
assert second[0] == [4.0, 4.0, 4.0], "the new body ran: the artifact calls the op, it does not inline it"

# %% [markdown]
# On a GPU, the key's details for §2's `triton_op` contain the kernel's source text:

# %%
# GPU cell: the Triton source in the cache key
# needs: triton_op vs custom_op in Inductor's code
if not GPU:
    labkit.show_gpu_recording()
else:
    torch.compiler.reset()
    with torch._inductor.config.patch(fx_graph_cache=True), \
            torch._functorch.config.patch(enable_autograd_cache=False), \
            labkit.logs.logged(labkit.logs.CODECACHE) as messages:
        torch.compile(lambda x, y: add_visible(x, y) * 3)(a, b)
    triton_details = next((m for m in messages if m.startswith("FX graph cache hash details")), "")
    source_lines = [line for line in triton_details.splitlines() if "user_defined_triton_source" in line]
    print(source_lines[0].split("] ", 1)[1][:120] if source_lines else "no key details logged here")

# %% tags=["check"]
#@title Check (on a GPU): the Triton kernel's source is in the key
if GPU and triton_details:
    assert "tl.store(out_ptr + offsets" in source_lines[0], "the Triton kernel's source is in the key"

# %% [markdown]
# ## 4. CUDA graphs and an op that mutates its input *(CPU for the mechanism, GPU for the reason)*
#
# `torch.compile(mode="reduce-overhead")` records the compiled graph as a CUDA graph and replays it. A replay
# reuses the same memory, so Inductor skips graphs it cannot replay safely, says why on the `cudagraphs` log
# (`TORCH_LOGS=cudagraphs`: "skipping cudagraphs due to ...") and counts it (`cudagraph_skips`). On a CPU every
# graph is skipped, counted, and no reason is logged:

# %%
# GPU setup: double_ and step
# needs: 09 imports
@torch.library.custom_op("nb09::double_", mutates_args={"x"})
def double_(x: Tensor) -> None:
    x.mul_(2)

def step(x):
    double_(x)
    return x + 1

# %%
torch.compiler.reset()
labkit.logs.clear_counters()
with labkit.logs.logged(labkit.logs.CUDAGRAPHS, logging.WARNING) as skips:
    result = torch.compile(step, mode="reduce-overhead")(torch.ones(3))
print("cudagraph skips counted:", labkit.logs.counters()["cudagraph_skips"], "| logged:", skips)

# %% tags=["check"]
#@title Check: on a CPU, one skip counted, none logged; the result is right
assert labkit.logs.counters()["cudagraph_skips"] == 1, "on a CPU: one cudagraph skip counted"
assert skips == [], "on a CPU: no skip reason logged"
assert result.tolist() == [3.0, 3.0, 3.0], "the graph ran, eagerly-correct"

# %% [markdown]
# On a GPU the reason for the same op is **"mutated inputs"**: `double_` writes into `x`, a tensor the caller
# owns, and a replayed CUDA graph writes only into memory it manages.

# %%
# GPU cell: CUDA graphs skip an op that mutates an input
# needs: double_ and step
if not GPU:
    labkit.show_gpu_recording()
else:
    torch.compiler.reset()
    with labkit.logs.logged(labkit.logs.CUDAGRAPHS, logging.WARNING) as skips:
        compiled = torch.compile(step, mode="reduce-overhead")
        x = torch.ones(3, device="cuda")
        compiled(x), compiled(x)
    print([message.splitlines()[0] for message in skips])      # the first line; the rest is a stack trace

# %% tags=["check"]
#@title Check (on a GPU): the logged reason is "mutated inputs", and both calls ran
if GPU:
    assert any(s.startswith("skipping cudagraphs due to mutated inputs") for s in skips), \
        "the logged reason: mutated inputs"
    assert x.tolist() == [4.0, 4.0, 4.0], "both calls ran, eagerly-correct"

# %% [markdown]
# An op that can never be captured (it synchronises with the host, or allocates data-dependent memory) says so
# with `tags=(torch.Tag.cudagraph_unsafe,)`. Inductor's scheduler is written to split the graph into
# **partitions** around such an op (`torch._inductor.config.graph_partition`, on by default), keeping it out of
# the captured pieces. A CPU shows the tag, the setting, and the reason in Inductor's source:

# %%
# GPU setup: host_checked
# needs: 09 imports
@torch.library.custom_op("nb09::host_checked", mutates_args=(), tags=(torch.Tag.cudagraph_unsafe,))
def host_checked(x: Tensor) -> Tensor:
    if not torch.isfinite(x).all():          # a host sync: fine eagerly, fatal inside a CUDA graph
        raise ValueError("x has a value that is not finite")
    return x.clone()

host_checked.register_fake(lambda x: torch.empty_like(x))
print(torch.ops.nb09.host_checked.default.tags)

# %% tags=["check"]
#@title Check: the op carries the tag; graph partitioning is on by default
assert torch.Tag.cudagraph_unsafe in torch.ops.nb09.host_checked.default.tags, "the op carries the tag"
assert torch._inductor.config.graph_partition, "graph partitioning is on by default (checked on 2.11, 2.13, 2.15)"
scheduler_source = inspect.getsource(torch._inductor.scheduler.Scheduler.should_partition)
assert '"CUDAGraph-unsafe custom ops"' in scheduler_source, "the scheduler keeps a tagged op out, and says why"
assert "if not node.is_gpu():" in scheduler_source, "the scheduler keeps every node that is not on a GPU out too"

# %% [markdown]
# Every node not on a GPU stays out too, so a CPU has no partitions: under `mode="reduce-overhead"`, Inductor's
# CPU code for the same function is one `call`, your op between two of its kernels:

# %%
def checked_then_add(x):
    return host_checked(x * 2) + 1

cpu_code = inductor_code(checked_then_add, torch.ones(3), mode="reduce-overhead")
print("partitions:", code_lines(cpu_code, "def partition_"), "| the op:", code_lines(cpu_code, "host_checked.default("))
labkit.pictures.inductor_steps({"on a CPU": cpu_code})

# %% tags=["check"]
#@title Check: on a CPU, no partition in Inductor's code; the op is one call, between two kernels
assert code_lines(cpu_code, "def partition_") == [], "on a CPU, no partitions"
assert code_lines(cpu_code, "torch.ops.nb09.host_checked.default(buf0)"), "the op is one call, on the kernel's buf0"
steps = [kind for kind, _ in labkit.logs.call_steps(cpu_code) if kind != "alloc"]
assert steps == ["kernel", "op", "kernel"], "the op between two of Inductor's kernels"

# %% [markdown]
# The first kernel's name mentions the op; the op is the separate call on `buf0`. On a GPU, the two cells below
# check what torch's scheduler predicts: two partitions (`def partition_0`, `def partition_1`) around the op, no
# skip, three right replays. Where no GPU has run them, that is read from torch's source, not seen.

# %%
# GPU cell: checked_step under reduce-overhead
# needs: host_checked
if not GPU:
    labkit.show_gpu_recording()
else:
    def checked_step(x):
        return host_checked(x * 2) + 1

    labkit.logs.clear_counters()
    unsafe_code = inductor_code(checked_step, torch.ones(3, device="cuda"), mode="reduce-overhead")
    partitions = code_lines(unsafe_code, "def partition_")
    print("graph partitions:", partitions, "| the op:", code_lines(unsafe_code, "torch.ops.nb09.host_checked.default("))

# %% tags=["check"]
#@title Check (on a GPU): two partitions around the op
if GPU:
    assert len(partitions) == 2, "two partitions: x * 2 | host_checked, outside CUDA graphs | + 1"

# %% [markdown]
# The same function, compiled again and replayed three times:

# %%
# GPU cell: checked_step replayed under reduce-overhead
# needs: checked_step under reduce-overhead
if not GPU:
    labkit.show_gpu_recording()
else:
    torch.compiler.reset()
    with labkit.logs.logged(labkit.logs.CUDAGRAPHS, logging.WARNING) as skips:
        compiled = torch.compile(checked_step, mode="reduce-overhead")
        results = [compiled(torch.ones(3, device="cuda")).tolist() for _ in range(3)]   # read before the next replay
    skipped = labkit.logs.counters()["cudagraph_skips"]   # both compiles, since the last clear
    print("skip messages:", skips, "| cudagraph skips counted:", skipped)

# %% tags=["check"]
#@title Check (on a GPU): no skip logged or counted, three right replays
if GPU:
    assert skips == [], "no 'skipping cudagraphs' message"
    assert skipped == 0, "no cudagraph skip counted, in either compile"
    assert results == [[3.0, 3.0, 3.0]] * 3, "three replays, each right"

# %% [markdown]
# ## 5. `Tag.out`: a write-only output buffer *(CPU)*
#
# Fast kernels often take the buffer to write into (`out=`). Declared with plain `mutates_args={"out"}`, torch
# must assume the op may also *read* `out`. `tags=torch.Tag.out` (new in torch 2.13) says the buffer is
# write-only: the op takes `out` keyword-only and returns it, gets a fake kernel for free (no `register_fake`
# below; `fullgraph=True` compiles), and Inductor passes a buffer of its own as `out=`:

# %%
if hasattr(torch.Tag, "out"):               # older releases lack the tag: its half of this section is skipped
    @torch.library.custom_op("nb09::scale_out", mutates_args={"out"}, tags=(torch.Tag.out,))
    def scale_out(x: Tensor, *, out: Tensor) -> Tensor:
        torch.mul(x, 2, out=out)
        return out

    def scale_into_new(x):
        return scale_out(x, out=torch.empty_like(x)) + 1

    out_code = inductor_code(scale_into_new, torch.ones(3), fullgraph=True)   # no register_fake needed
    print(torch.ops.nb09.scale_out.default._schema)
    print("\n".join(code_lines(out_code, "nb09.scale_out.default(")))

# %% tags=["check"]
#@title Check: out is keyword-only and returned; Inductor passes its own buffer; the result is right
if hasattr(torch.Tag, "out"):
    assert str(torch.ops.nb09.scale_out.default._schema) == \
        "nb09::scale_out(Tensor x, *, Tensor(a1!) out) -> Tensor(a1!)", "Tag.out: out is keyword-only, and returned"
    assert code_lines(out_code, "torch.ops.nb09.scale_out.default(arg0_1, out=buf0)"), \
        "Inductor passes a buffer of its own, buf0, as out="
    assert torch.compile(scale_into_new)(torch.ones(3)).tolist() == [3.0, 3.0, 3.0], "compiled, the result is right"
else:
    assert labkit.env.torch_version() < (2, 13), "torch.Tag.out is missing only before torch 2.13"

# %% [markdown]
# The tag matters when something **reads the buffer's old value after the call**. Below, `old = buf * 3` reads
# it, then the kernel overwrites `buf`. The same `out=` kernel, declared twice: with `Tag.out`, and with plain
# `mutates_args={"out"}` (positional `out`, returning nothing):

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
declared = {"mutates_args only": scale_into}
if hasattr(torch.Tag, "out"):
    declared["Tag.out"] = lambda x, buf: scale_out(x, out=buf)
tag_codes = {name: inductor_code(read_then_overwrite(op), torch.ones(3), torch.full((3,), 5.0))
             for name, op in declared.items()}
labkit.pictures.inductor_steps(tag_codes)

# %% tags=["check"]
#@title Check: without the tag, the op writes a clone of your buffer; with it, a fresh buffer; both right
plain = tag_codes["mutates_args only"]
assert code_lines(plain, "_clone_"), "without the tag, Inductor's code clones the buffer"
assert code_lines(plain, "torch.ops.nb09.scale_into.default(arg1_1, buf0)"), "without the tag, the op writes buf0: the clone"
if "Tag.out" in tag_codes:
    tagged = tag_codes["Tag.out"]
    assert "clone" not in tagged, "with Tag.out, no clone"
    assert code_lines(tagged, "torch.ops.nb09.scale_out.default(arg1_1, out=buf0)"), \
        "with Tag.out, the op writes a fresh buffer, buf0"
    assert any("_fused_" in line and "copy_" in line for line in code_lines(tagged, "(buf")), \
        "with Tag.out, the fused kernel of the final add copies the result back into your tensor"
for op in declared.values():
    torch.compiler.reset()
    x, buf = torch.ones(3), torch.full((3,), 5.0)
    returned = torch.compile(read_then_overwrite(op))(x, buf)
    assert (returned.tolist(), buf.tolist()) == ([17.0] * 3, [2.0] * 3), "right: 2·1 + 3·5 = 17, and buf ends as 2"

# %% [markdown]
# Without the tag, torch must assume the kernel may read `out`, so it hands the kernel a **clone** of the buffer
# (the `..._clone_...` kernel) and keeps the original for `old`. With `Tag.out` the kernel gets an empty buffer,
# `buf0`, and the result is copied into your tensor afterwards, in the fused kernel of the final add (`copy_` in
# its name). The tag saves a clone only where one was needed: a buffer whose old value is read after the call.
#
# **A sharp edge, found by `labkit.audit`.** The same op, in a program that returns copies of *both* tensors:

# %%
def doubled_then_copied(x, buf):
    scale_out(x, out=buf)
    return x.clone(), buf.clone()

if hasattr(torch.Tag, "out"):
    x, buf = torch.arange(1.0, 4.0), torch.zeros(3)
    torch.compiler.reset()
    x_copy, buf_copy = torch.compile(doubled_then_copied)(x, buf)
    print("eagerly buf would be", (2 * x).tolist(), "- compiled it is", buf.tolist())

# %% tags=["check"]
#@title Check: with Tag.out, returning x.clone() and buf.clone() leaves buf holding x (observed 2.13.0-2.15.0)
if hasattr(torch.Tag, "out"):
    assert buf.tolist() == x.tolist() == buf_copy.tolist(), (
        f"torch {torch.__version__} writes 2x into buf now: the Tag.out buffer-reuse bug is fixed; update §5")
    assert torch.equal(doubled_then_copied(x, torch.zeros(3))[1], 2 * x), "eagerly, buf holds 2x"
    found = labkit.audit(scale_out, x, out=torch.zeros(3))
    assert found.kinds() == {"compile"}, "labkit.audit reports it as a compile finding"
    assert "out differs afterwards" in str(found), "labkit.audit names out as what differs"

# %% [markdown]
# Compiled, `buf` ends up holding `x`, not `2x`: a silent wrong result on a correctly declared op. Inductor's
# code writes the op's result into a buffer, then reuses that buffer for the copy of `x` while the op's result
# still points at it. Returning only `buf.clone()` is right. Until a release fixes it, audit your `Tag.out` ops
# on the programs you really run: `labkit.audit(scale_out, x, out=torch.zeros(3))` reports this one.
#
# ## 6. When re-inplacing fails: a clone in your code *(CPU)*
#
# Notebook 02 showed the happy path: AOTAutograd turns a mutating op into a functional one, and Inductor's
# re-inplacing pass turns it back into a call on your tensor. When the pass cannot prove that safe, it keeps a
# **clone**: the op writes a copy, which is copied back; correct, at the cost of memory and a pass over the data.
# The classic case: the op mutates a *view* of an input (`x[0]`). The current functionalization form
# (`auto_functionalized_v2`, the default) re-inplaces it; the original form, still behind a config flag, clones:

# %%
@torch.library.custom_op("nb09::bump", mutates_args={"x"})
def bump(x: Tensor) -> None:
    x.add_(1)

def bump_first_row(x):
    bump(x[0])
    return x.sum()

v2_code = inductor_code(bump_first_row, torch.zeros(2, 3))
with torch._inductor.config.patch(enable_auto_functionalized_v2=False), \
        labkit.logs.logged(labkit.logs.REINPLACE, logging.INFO) as reinplace_log:
    v1_code = inductor_code(bump_first_row, torch.zeros(2, 3))
labkit.pictures.inductor_steps({"v2 (default)": v2_code, "v1": v1_code})

# %% tags=["check"]
#@title Check: v2 writes a view of your tensor; v1 writes a clone, copied back, and torch's log says why
assert torch._inductor.config.enable_auto_functionalized_v2, "v2 is the default"
assert code_lines(v2_code, "torch.ops.nb09.bump.default(reinterpret_tensor(arg0_1"), "v2: the op writes a view of x"
assert "clone" not in v2_code, "v2: no clone"
assert "clone" in v1_code, "v1: Inductor's code keeps a clone"
assert code_lines(v1_code, "torch.ops.nb09.bump.default(buf0)"), "v1: the op writes buf0, the clone"
assert any("remain clones=['x']" in m                 # torch 2.13's wording
           or "unable to reinplace ['x']" in m        # torch 2.11's and 2.15.0's
           for m in reinplace_log), "v1: torch's re-inplacing log says x stays a clone"
with torch._inductor.config.patch(enable_auto_functionalized_v2=False):
    torch.compiler.reset()
    x = torch.zeros(2, 3)
    assert torch.compile(bump_first_row)(x).item() == 3.0, "v1: the result is right"
    assert x[0].tolist() == [1.0, 1.0, 1.0], "v1: the clone is copied back into your tensor"

# %% [markdown]
# Under the default, the view patterns a kernel author meets most (a column `x[:, 0]`, a transpose `x.t()`, a
# list of rows) re-inplace without a clone; the check below compiles each.

# %% tags=["check"]
#@title Check: a column, a transpose and a list of rows re-inplace under v2, without a clone
VIEW_PATTERNS = {
    "a column x[:, 0]": lambda x: bump(x[:, 0]),
    "a transpose x.t()": lambda x: bump(x.t()),
    "a list of two rows": lambda x: [bump(row) for row in x.unbind(0)],
}
for name, fn in VIEW_PATTERNS.items():
    view_code = inductor_code(fn, torch.zeros(2, 3))
    assert "clone" not in view_code, f"{name}: Inductor kept a clone"
    assert code_lines(view_code, "nb09.bump.default("), f"{name}: Inductor's code does not call the op"

# %% [markdown]
# ## Exercise: predict, then run
#
# For each call below, predict whether Inductor's code, under the v1 form as above, keeps a clone of the tensor
# `bump` writes. Answer `"clone"` or `"in place"` for each, then run the check.
#
# - `"input"`: `bump(x)`, the whole input;
# - `"row"`: `bump(x[1])`, a view of the input;
# - `"temporary"`: `y = x + 1; bump(y); return y`, a tensor created inside the function.

# %%
my_predictions = {"input": ..., "row": ..., "temporary": ...}

# %% tags=["check"]
#@title The exercise's check (it compiles the three calls under v1 and looks for a clone in Inductor's code)
def temporary(x):
    y = x + 1
    bump(y)
    return y

EXERCISE = {"input": lambda x: bump(x), "row": lambda x: bump(x[1]), "temporary": temporary}
ANSWERS = {"clone": ["a clone", "cloned", "copy", "True"], "in place": ["inplace", "in-place", "no clone", "False"]}

def v1_clones(fn):
    with torch._inductor.config.patch(enable_auto_functionalized_v2=False):
        return "clone" in inductor_code(fn, torch.zeros(2, 3))

# %% tags=["check"]
#@title The exercise's check, continued (your three words against what Inductor's code does)
def wrong_predictions(predictions):
    """The calls predicted wrongly; None after choice() has said which answer is not one of the allowed words."""
    said = {name: labkit.exercises.choice(str(p), ANSWERS, f"my_predictions[{name!r}]") for name, p in predictions.items()}
    return None if None in said.values() else [n for n, fn in EXERCISE.items() if (said[n] == "clone") != v1_clones(fn)]

def check_predictions(predictions):
    if labkit.exercises.answered(predictions, 'replace each ... in the my_predictions cell by "clone" or "in place", '
                                              "run it, then run this one"):
        wrong = wrong_predictions(predictions)
        if wrong is not None:
            labkit.exercises.check(not wrong, "all three right.", f"look again at {wrong}: who else could see the old value?")

# %%
check_predictions(my_predictions)

# %% jupyter={"source_hidden": true} tags=["solution"]
#@title Solution (open it once you have tried)
# Only the view of the input clones under v1: v1 cannot re-inplace a view of a graph input (the issue linked under
# Further reading); the whole input and a temporary are written in place.
import contextlib
import io

assert {name: v1_clones(fn) for name, fn in EXERCISE.items()} == {"input": False, "row": True, "temporary": False}, \
    "under v1 only the view of the input clones"
with contextlib.redirect_stdout(io.StringIO()):
    assert wrong_predictions({"input": "in place", "row": "Clone", "temporary": "in-place"}) == [], "spellings pass"
    assert wrong_predictions({"input": "in place", "row": "in place", "temporary": "in place"}) == ["row"], \
        "'in place' for the row is refused"
    assert wrong_predictions({"input": "maybe", "row": "clone", "temporary": "clone"}) is None, "a non-answer is refused"

# %% [markdown]
# ## In your own project
#
# Every observation here came from torch's own logs:
#
# - `TORCH_LOGS=output_code`: Inductor's code. Is your kernel inlined Triton (`def your_kernel(`) or an opaque
#   `torch.ops.ns.op.default(...)` call? Does a `clone` surround it?
# - `TORCH_LOGS=cudagraphs`: why a `reduce-overhead` graph was not recorded;
# - `TORCH_LOGS="+inductor"`: the cache key's parts, and re-inplacing's verdict for each mutating op.
#
# §6's verdict the way you would get it in a script: `torch._logging.set_logs` is the in-process form of
# `TORCH_LOGS`, and `labkit.torch_logs` calls it for one block and keeps what it wrote to stderr:

# %%
torch.compiler.reset()
with torch._inductor.config.patch(enable_auto_functionalized_v2=False, fx_graph_cache=False), \
        labkit.torch_logs(inductor=logging.INFO) as log:          # TORCH_LOGS="inductor"
    torch.compile(bump_first_row)(torch.zeros(2, 3))
marks = ("Reinplace for", "attempted to reinplace")          # the summary's wording differs between releases
verdicts = [line[line.index(mark):] for line in log.getvalue().splitlines() for mark in marks if mark in line]
print("\n".join(verdicts))

# %% tags=["check"]
#@title Check: torch's log says re-inplacing missed x
assert any("missed opportunities=['x']" in v or "unable to reinplace ['x']" in v for v in verdicts), \
    "torch's log says re-inplacing missed x"

# %% [markdown]
# ## What to remember
#
# - Wrap Triton kernels with `triton_op` + `wrap_triton`: Inductor then sees the kernel (and keys its cache on
#   its source). A `custom_op` around the same kernel is an opaque call.
# - `mode="reduce-overhead"` skips, with a logged reason, graphs whose ops mutate inputs it does not own; ops
#   that can never be captured carry `Tag.cudagraph_unsafe`.
# - `Tag.out` marks write-only output buffers: Inductor hands the kernel a fresh buffer instead of a clone of
#   yours when your buffer's old value is still read after the call.
# - Re-inplacing can fail and leave a clone; `TORCH_LOGS=output_code` shows it, `+inductor` says why.
#
# ## Questions
#
# 1. Why must a user-defined Triton kernel's source be part of Inductor's cache key, while a `custom_op`'s
#    kernel body need not be?
# 2. Which part of an op's *declaration* can change a compiled artifact without changing its cache key
#    (notebook 04)? How does `torch.compiler.config.cache_key_tag` help?
# 3. Why can a CUDA graph not replay a graph whose op writes into an input tensor the caller owns?
# 4. What does `Tag.out` promise that `mutates_args={"out"}` does not, and what does Inductor save by it?
# 5. The v1 form clones `x[0]` before the op writes it. What could go wrong if it wrote `x[0]` in place without
#    proving that nobody reads the old value?
#
# ## Further reading
#
# - User-defined Triton kernels with `torch.compile`:
#   https://docs.pytorch.org/tutorials/recipes/torch_compile_user_defined_triton_kernel_tutorial.html
# - Custom operators: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html
# - `torch.library` reference (`triton_op`, `wrap_triton`, `custom_op`): https://docs.pytorch.org/docs/stable/library.html
# - CUDA graphs in `torch.compile`: https://docs.pytorch.org/docs/stable/torch.compiler_cudagraph_trees.html
# - Views not re-inplaced (#131192), fixed by `auto_functionalized_v2` (PR #134409):
#   https://github.com/pytorch/pytorch/issues/131192; extra copies for mutable inputs:
#   https://github.com/pytorch/pytorch/issues/127660; notebook 04's stale cache:
#   https://github.com/pytorch/pytorch/issues/187319
