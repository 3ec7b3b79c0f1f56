"""Keep torch's persistent compile caches from handing back stale artifacts.

torch's FX-graph and AOTAutograd caches key on the graph's text, which names a
custom op but not its schema (pytorch #187319). Change ``lab::foo`` from pure to
mutating and an artifact compiled for the *old* declaration can come back, even
after ``torch.compiler.reset()`` and even in another process.

labkit's answer is a policy, ``"fingerprinted"``: a hash of every live custom op's
schema, fake kernel and effects is appended to ``torch.compiler.config.cache_key_tag``,
so a changed declaration is a new key and an unchanged one still hits the (shared, fast)
cache. ``import labkit`` changes nothing; :func:`enable` (called by ``labkit.setup()``)
turns the policy on, and ``set_policy("default")`` gives torch back exactly the settings
you had (your own ``cache_key_tag`` and ``force_disable_caches`` are kept throughout).
The other policies exist so a lesson can show the bug and the other mitigations.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import warnings

import torch

from . import _torch_internals as internals
from . import ops

POLICIES = ("fingerprinted", "default", "isolated", "disabled")
TAG_PREFIX = "labkit-ops-"

_state = {
    "policy": "default",  # "default" = torch exactly as the user configured it
    "user_tag": "",  # the user's cache_key_tag, which the fingerprint is appended to
    "written_tag": None,  # the tag labkit last wrote (a different value means the user changed it)
    "user_force_disable": None,  # the user's force_disable_caches, while "disabled" is on
    "isolation": None,  # the ExitStack holding the "isolated" policy's fresh cache directory
}


def fingerprint() -> str:
    """A short hash of every live custom op's declaration (any namespace, labkit's or not)."""
    parts = []
    for qualname in internals.custom_op_qualnames():
        overload = internals.find_overload(qualname)
        if overload is None:
            continue
        parts.append("|".join([
            internals.schema_of(overload),
            f"fake={internals.has_fake_impl(qualname)}",
            f"impure={internals.is_impure(overload)}",
            f"tags={sorted(str(t) for t in overload.tags)}",
        ]))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _tag(user_tag: str) -> str:
    return f"{user_tag}-{TAG_PREFIX}{fingerprint()}" if user_tag else TAG_PREFIX + fingerprint()


def refresh() -> None:
    """Recompute the fingerprint tag now (only under the ``"fingerprinted"`` policy).

    labkit calls this whenever a lab op changes, after its own compiler resets, and at the
    start of every Dynamo compile, so ops declared with plain ``torch.library.custom_op`` are
    covered too. ``torch.compiler.reset()`` unhooks the last one: after calling it yourself,
    call ``labkit.cache.refresh()``. A tag you set yourself meanwhile is kept, fingerprint appended.
    """
    if _state["policy"] != "fingerprinted":
        return
    cfg = torch.compiler.config
    if cfg.cache_key_tag != _state["written_tag"]:
        _state["user_tag"] = cfg.cache_key_tag  # set by the user since labkit last wrote it
    _state["written_tag"] = cfg.cache_key_tag = _tag(_state["user_tag"])
    internals.on_dynamo_compile_start(refresh)


def _hook(active: bool) -> None:
    ops.on_change(refresh, active)
    internals.after_reset(refresh, active)
    internals.on_dynamo_compile_start(refresh, active)


def enable() -> str:
    """Turn on the ``"fingerprinted"`` policy (``labkit.setup()`` calls this); return one line saying so."""
    set_policy("fingerprinted")
    yours = f" (appended to your tag {_state['user_tag']!r})" if _state["user_tag"] else ""
    return ("compile caches: labkit adds a hash of the custom ops' declarations to "
            f"torch.compiler.config.cache_key_tag{yours} against stale artifacts (pytorch #187319); "
            "labkit.cache.set_policy('default') undoes it.")


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
        raise ValueError(f"Cache policy must be one of {POLICIES}, not {name!r:.60}.")
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
    directory (None with ``fresh_dir=False``).
    """
    previous = _state["policy"]
    set_policy(name)  # before the fresh directory, so leaving restores in the reverse order
    try:
        with contextlib.ExitStack() as stack:
            directory = stack.enter_context(internals.fresh_cache_dir()) if fresh_dir else None
            stack.enter_context(warnings.catch_warnings())
            # torch warns once when caches are off; here they are off on purpose
            warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
            yield directory
    finally:
        set_policy(previous)
