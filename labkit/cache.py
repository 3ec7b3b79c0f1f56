"""Keep torch's persistent compile caches from handing back stale artifacts.

torch's FX-graph and AOTAutograd caches key on the graph's text, which names a
custom op but not its schema (pytorch #187319). Change ``lab::foo`` from pure to
mutating and an artifact compiled for the *old* declaration can come back, even
after ``torch.compiler.reset()`` and even in another process.

labkit's answer is a policy, ``"fingerprinted"``: a hash of the declaration (schema, whether a
fake kernel exists, purity, tags) of every op defined from Python outside torch's own namespaces
(``custom_op``, ``Library.define``, ``torch.library.define``) is appended to
``torch.compiler.config.cache_key_tag``, and carried into every cache key by a no-op Inductor pass
as well, which ``torch.compiler.reset()`` does not remove (it takes only an empty
``post_grad_custom_post_pass`` slot). So a changed declaration is a new key and an unchanged one
still hits the (shared, fast) cache. Not hashed: C++ ops (``TORCH_LIBRARY``), and the code of
kernels, fake kernels and backward formulas (pytorch #160472, #144344).

``import labkit`` changes nothing; :func:`enable` (called by ``labkit.setup()``) turns the policy
on, and ``set_policy("default")`` gives torch back exactly the settings you had (your own
``cache_key_tag``, ``force_disable_caches`` and post-grad pass are kept throughout).
The other policies exist so a lesson can show the bug and the other mitigations.

Not here: private torch (the adapter reaches the config slot, the compile-start hook and the ops'
declarations), and printing: :func:`enable` returns its line, ``labkit.setup()`` prints it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import warnings

import torch

from .describe import brief
from . import _torch as internals
from . import ops
from .language import say
from .lessons import notebook_about

POLICIES = ("fingerprinted", "default", "isolated", "disabled")
TAG_PREFIX = "labkit-ops-"

# Namespaces that torch's own Python code defines ops in (``torch.library._defs`` on 2.13.0, after importing
# Inductor, distributed, ONNX and flex attention). Their schemas change only with torch's version, which
# the compile caches' keys already contain; a torch namespace missing here is merely hashed as well.
TORCH_OP_NAMESPACES = frozenset({
    "aten", "prim", "prims", "_native", "_c10d_functional", "c10d_functional", "_dtensor", "_inductor_test",
    "debug_mode_ops", "debugprims", "export", "flex_lib", "fsdp", "onnx", "onnx_symbolic",
    "quantized_decomposed", "rngprims", "streams", "symm_mem",
})

_state = {
    "policy": "default",  # "default" = torch exactly as the user configured it
    "user_tag": "",  # the user's cache_key_tag, which the fingerprint is appended to
    "written_tag": None,  # the tag labkit last wrote (a different value means the user changed it)
    "user_force_disable": None,  # the user's force_disable_caches, while "disabled" is on
    "isolation": None,  # the ExitStack holding the "isolated" policy's fresh cache directory
    "key_pass": False,  # whether labkit's no-op Inductor pass carries the fingerprint (the slot was free)
}


def _declarations() -> dict[str, str]:
    """What the fingerprint hashes: each live Python-defined op outside torch's namespaces, ``"ns::name.overload"``
    -> its declaration (schema, fake kernel or not, purity, tags) as one line."""
    parts = {}
    for name in internals.python_defined_op_names():
        if name.partition("::")[0] in TORCH_OP_NAMESPACES:
            continue
        qualname, _, overload_name = name.partition(".")
        overload = internals.find_overload(qualname, overload_name or "default")
        if overload is None:
            continue  # its registration was destroyed since
        parts[f"{qualname}.{overload_name or 'default'}"] = "|".join([
            internals.schema_of(overload),
            f"fake={internals.has_fake_impl(name)}",
            f"impure={internals.is_impure(overload)}",
            f"tags={sorted(str(t) for t in overload.tags)}",
        ])
    return parts


def fingerprint() -> str:
    """A short hash of the declaration of every live op defined from Python, labkit's or not.

    Covers ``custom_op``, ``Library(ns, "DEF" | "FRAGMENT").define`` + ``impl`` and
    ``torch.library.define``, with ``register_fake`` and effects, in every namespace but torch's own.
    """
    return hashlib.sha256("\n".join(_declarations().values()).encode()).hexdigest()[:16]


def covers(name: str) -> bool:
    """Whether the fingerprint hashes the declaration of ``name`` (``"ns::name.overload"``): then a changed schema,
    fake kernel registration, effect or tag of that overload changes every cache key under ``"fingerprinted"``."""
    qualname, _, overload_name = name.partition(".")
    return f"{qualname}.{overload_name or 'default'}" in _declarations()


def _users_part(tag: str) -> str:
    """The learner's own part of a ``cache_key_tag``: everything before labkit's fingerprint, if any.

    A tag can hold an old fingerprint of labkit's without labkit having just written it (a
    ``torch.compiler.config.patch`` block restores the value it found): that part is never the user's.
    """
    mark = tag.find(TAG_PREFIX)
    return tag if mark < 0 else tag[:mark].rstrip("-")


def _tag(user_tag: str) -> str:
    return f"{user_tag}-{TAG_PREFIX}{fingerprint()}" if user_tag else TAG_PREFIX + fingerprint()


def refresh() -> None:
    """Recompute the fingerprint tag now (only under the ``"fingerprinted"`` policy).

    labkit calls this whenever a lab op changes, after its own compiler resets, and at the
    start of every Dynamo compile, so ops declared with plain ``torch.library`` are covered too.
    ``torch.compiler.reset()`` drops that last hook; the keys stay right anyway (the Inductor pass
    carries the fingerprint), and the next cache lookup re-arms it, so the tag is current again from
    the compile after (until then a key may hold an old tag: at worst one extra cache miss). A tag
    you set yourself meanwhile is kept, fingerprint appended.
    """
    if _state["policy"] != "fingerprinted":
        return
    cfg = torch.compiler.config
    if cfg.cache_key_tag != _state["written_tag"]:
        _state["user_tag"] = _users_part(cfg.cache_key_tag)  # set by the user since labkit last wrote it
    _state["written_tag"] = cfg.cache_key_tag = _tag(_state["user_tag"])
    internals.on_dynamo_compile_start(refresh)


def _key_part() -> str | None:
    """The fingerprint, for the Inductor pass to put in each cache key; re-arms the tag's hook a reset removed.

    None (torch then skips the caches for that compile: safe) if some op's declaration cannot be read.
    """
    try:
        internals.on_dynamo_compile_start(refresh)
        return fingerprint()
    except Exception:  # noqa: BLE001 - never break the learner's compile over the key
        return None


def _hook(active: bool) -> None:
    ops.on_change(refresh, active)
    internals.on_dynamo_compile_start(refresh, active)
    _state["key_pass"] = internals.key_every_compile_on(_key_part if active else None)


def enable() -> str:
    """Turn on the ``"fingerprinted"`` policy (``labkit.setup()`` calls this); return one line saying so."""
    set_policy("fingerprinted")
    line = say("compile caches: labkit makes torch.compile compile afresh once an op's declaration changes, where "
               "torch alone may reuse code compiled for the old one (notebook {number}); "
               "labkit.cache.set_policy('default') turns this off.", number=notebook_about('compile caches').number)
    if _state["user_tag"]:
        line += say(" It adds a hash of the declarations to your torch.compiler.config.cache_key_tag ({tag}), which "
                    "it keeps.", tag=repr(_state["user_tag"]))
    if not _state["key_pass"]:
        line += say(" Your own post_grad_custom_post_pass is kept, so torch.compiler.config.cache_key_tag alone "
                    "carries labkit's hash of the declarations: after torch.compiler.reset(), call "
                    "labkit.cache.refresh() before compiling again.")
    return line


def reset_compiler() -> None:
    """``torch.compiler.reset()``, then the fingerprint re-armed at once (the reset dropped its compile-start hook):
    how labkit resets, so a capture starts from a clean Dynamo state with the cache keys current."""
    torch.compiler.reset()
    refresh()


def counters() -> dict[str, int]:
    """Hits and misses of the FX-graph and AOTAutograd caches so far in this process (for lessons)."""
    return internals.cache_counters()


def policy() -> str:
    return _state["policy"]


def set_policy(name: str) -> str:
    """Choose how compile caches behave for the rest of this process.

    fingerprinted: caches on, keyed also on the custom ops' declarations (safe, fast).
    default:       torch exactly as you configured it: caches on, blind to declarations (#187319 shows).
    isolated:      caches on, in a fresh temporary directory of this process (deleted when left, or at exit).
    disabled:      ``torch.compiler.config.force_disable_caches`` (safe, slowest).

    Leaving a policy restores exactly the values it changed. Raises ValueError for another name.
    """
    if not isinstance(name, str) or name not in POLICIES:
        raise ValueError(f"Cache policy must be one of {POLICIES}, not {brief(name)}.")
    _leave()
    cfg = torch.compiler.config
    _state["policy"] = name
    if name == "fingerprinted":
        _state["written_tag"] = None
        _hook(True)
        refresh()
    elif name == "isolated":
        stack = contextlib.ExitStack()
        stack.enter_context(internals.fresh_cache_dir())
        _state["isolation"] = stack
        atexit.unregister(_close_isolation)
        atexit.register(_close_isolation)  # the directory is deleted even if the policy is never left
    elif name == "disabled":
        _state["user_force_disable"] = cfg.force_disable_caches
        cfg.force_disable_caches = True
    return name


def _leave() -> None:
    """Undo what the current policy changed, and only that."""
    cfg = torch.compiler.config
    current = _state["policy"]
    if current == "fingerprinted":
        _hook(False)
        if cfg.cache_key_tag == _state["written_tag"]:
            cfg.cache_key_tag = _state["user_tag"]
        else:  # changed since labkit wrote it: keep the change, drop any fingerprint of labkit's in it
            cfg.cache_key_tag = _users_part(cfg.cache_key_tag)
        _state["written_tag"] = None
    elif current == "isolated" and _state["isolation"] is not None:
        _state["isolation"].close()
        _state["isolation"] = None
    elif current == "disabled" and _state["user_force_disable"] is not None:
        cfg.force_disable_caches = _state["user_force_disable"]
        _state["user_force_disable"] = None
    _state["policy"] = "default"


def _close_isolation() -> None:
    if _state["isolation"] is not None:
        _state["isolation"].close()
        _state["isolation"] = None


@contextlib.contextmanager
def using(name: str, fresh_dir: bool = True):
    """Use policy ``name`` inside the block, in a fresh cache directory; restore both after.

    Makes a cache experiment start from an empty cache, whatever ran before it. Yields the
    directory (None with ``fresh_dir=False``). Blocks nest: when an inner one ends, the outer
    one's policy and directory are back (an outer ``"isolated"`` directory is set aside, not deleted).
    """
    previous, outer_isolation = _set_aside_isolation()
    set_policy(name)  # before the fresh directory, so leaving restores in the reverse order
    try:
        with contextlib.ExitStack() as stack:
            directory = stack.enter_context(internals.fresh_cache_dir()) if fresh_dir else None
            stack.enter_context(warnings.catch_warnings())
            # torch warns once when caches are off; here they are off on purpose
            warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
            yield directory
    finally:
        if outer_isolation is None:
            set_policy(previous)
        else:
            set_policy("default")  # closes only what this block opened, innermost first
            _state["policy"], _state["isolation"] = "isolated", outer_isolation


def _set_aside_isolation():
    """The current policy, and the ``"isolated"`` policy's open directory taken off the state (None if not isolated).

    Leaving ``"isolated"`` deletes its directory and restores the cache directory of before it; an outer
    block's directory must instead outlive the inner block, and come back when it ends.
    """
    previous = _state["policy"]
    if previous != "isolated" or _state["isolation"] is None:
        return previous, None
    isolation, _state["isolation"], _state["policy"] = _state["isolation"], None, "default"
    return previous, isolation
