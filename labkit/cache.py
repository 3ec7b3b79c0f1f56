"""Keep torch's persistent compile caches from handing back stale artifacts.

torch's FX-graph and AOTAutograd caches key on the graph's text, which names a
custom op but not its schema (pytorch #187319). Change ``lab::foo`` from pure to
mutating and an artifact compiled for the *old* declaration can come back, even
after ``torch.compiler.reset()`` and even in another process.

labkit's answer is a policy, ``"fingerprinted"`` by default: a hash of every live
custom op's schema, fake kernel and effects goes into
``torch.compiler.config.cache_key_tag``, so a changed declaration is a new key and
an unchanged one still hits the (shared, fast) cache. The other policies exist so
a lesson can show the bug (``"default"``) and the other mitigations.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile

import torch

from . import _torch_internals as internals
from . import ops

POLICIES = ("fingerprinted", "default", "isolated", "disabled")
TAG_PREFIX = "labkit-ops-"

_state = {"policy": None, "isolated_dir": None, "saved_dir": None}


def fingerprint() -> str:
    """A short hash of every live custom op's declaration (any namespace, labkit's or not)."""
    parts = []
    for qualname in internals.custom_op_qualnames():
        namespace, name = qualname.split("::")
        try:
            overload = getattr(getattr(torch.ops, namespace), name).default
        except (AttributeError, RuntimeError):
            continue
        parts.append("|".join([
            str(overload._schema),
            f"fake={internals.has_fake_impl(qualname)}",
            f"impure={internals.is_impure(overload)}",
            f"tags={sorted(str(t) for t in overload.tags)}",
        ]))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def refresh() -> None:
    """Recompute the fingerprint tag now, and make sure every Dynamo compile recomputes it.

    labkit calls this whenever a lab op changes and before each of its own compiles, and
    hooks it to the start of every Dynamo compile, so ops declared with plain
    ``torch.library.custom_op`` are covered too. ``torch.compiler.reset()`` unhooks it:
    after calling that yourself, call ``labkit.cache.refresh()`` (labkit's own resets re-hook).
    """
    if _state["policy"] == "fingerprinted":
        torch.compiler.config.cache_key_tag = TAG_PREFIX + fingerprint()
        internals.on_dynamo_compile_start(refresh)


@contextlib.contextmanager
def using(name: str, fresh_dir: bool = True):
    """Use policy ``name`` inside the block, in a fresh cache directory; restore both after.

    Makes a cache experiment start from an empty cache, whatever ran before it.
    """
    previous, saved_dir = _state["policy"], os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    temp = tempfile.mkdtemp(prefix="labkit-cache-") if fresh_dir else None
    try:
        if temp:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = temp
        set_policy(name)
        yield temp
    finally:
        set_policy(previous or "fingerprinted")
        if temp:
            if saved_dir is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved_dir
            shutil.rmtree(temp, ignore_errors=True)


def policy() -> str:
    return _state["policy"]


def set_policy(name: str) -> str:
    """Choose how compile caches behave for the rest of this process.

    fingerprinted: caches on, keyed also on the custom ops' declarations (safe, fast).
    default:       torch as shipped: caches on, blind to declarations (#187319 shows).
    isolated:      caches on, in a fresh temporary directory of this process.
    disabled:      ``torch.compiler.config.force_disable_caches`` (safe, slowest).
    """
    if name not in POLICIES:
        raise ValueError(f"Cache policy must be one of {POLICIES}, not {name!r}.")
    _undo()
    cfg = torch.compiler.config
    if name == "fingerprinted":
        _state["policy"] = name
        refresh()
    elif name == "isolated":
        _state["saved_dir"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        _state["isolated_dir"] = tempfile.mkdtemp(prefix="labkit-cache-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = _state["isolated_dir"]
    elif name == "disabled":
        cfg.force_disable_caches = True
    _state["policy"] = name
    return name


def _undo() -> None:
    cfg = torch.compiler.config
    if cfg.cache_key_tag.startswith(TAG_PREFIX):
        cfg.cache_key_tag = ""
    cfg.force_disable_caches = False
    if _state["isolated_dir"]:
        if _state["saved_dir"] is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = _state["saved_dir"]
        shutil.rmtree(_state["isolated_dir"], ignore_errors=True)
        _state["isolated_dir"] = None


ops.on_change(refresh)
internals._after_reset.append(refresh)
