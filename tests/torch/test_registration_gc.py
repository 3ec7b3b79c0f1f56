"""A redefined op's old registration, when garbage collected, must not disturb the live one.

torch.library.Library's finalizer deletes ``torch.ops.<ns>.<name>`` when the old Library object is
freed, even after a newer registration took the name: ``torch.ops.ns.name.default`` then becomes a
new object at a moment chosen by the garbage collector. This made notebook 07 fail at random when it
ran after 08 and 09 in one kernel (an identity check on its op's graph node). labkit keeps the
registrations it destroyed alive (``labkit.ops.keep_destroyed``).
"""

import gc

import torch

import labkit
from labkit import _torch as internals


def _collect_old(handle_holder: list) -> None:
    handle_holder.clear()
    gc.collect()


def test_a_redeclared_lab_op_keeps_its_torch_ops_identity_after_the_old_handle_is_collected():
    old = [labkit.declare(name="t::gc_pos", returns="data-dependent")]
    new = labkit.declare(name="t::gc_pos", returns="data-dependent")
    _collect_old(old)
    assert torch.ops.t.gc_pos.default is new.overload
    assert labkit.ops.live_overload(torch.ops.t.gc_pos) is new.overload
    assert not internals.is_dangling(new.overload)


def test_a_dropped_then_redeclared_lab_op_keeps_its_identity_too():
    old = [labkit.declare(name="t::gc_drop")]
    labkit.drop("t::gc_drop")
    new = labkit.declare(name="t::gc_drop")
    _collect_old(old)
    assert torch.ops.t.gc_drop.default is new.overload


def test_torch_still_clears_a_redefined_ops_cache_when_the_old_registration_is_collected():
    """Why labkit keeps old registrations: plain torch, without labkit, shows the behaviour.

    When this fails, torch no longer does it, and keep_destroyed can go (say so in its comment).
    """
    schema = "(Tensor x) -> Tensor"
    old = [torch.library.custom_op("t::gc_plain", lambda x: x.clone(), mutates_args=(), schema=schema)]
    new = torch.library.custom_op("t::gc_plain", lambda x: x.clone(), mutates_args=(), schema=schema)
    assert torch.ops.t.gc_plain.default is internals.overload_of(new)
    _collect_old(old)
    assert torch.ops.t.gc_plain.default is not internals.overload_of(new)
    assert str(torch.ops.t.gc_plain.default) == str(internals.overload_of(new))   # same op, new object


def test_a_live_plain_custom_op_is_not_called_stale_after_torch_clears_its_cache():
    schema = "(Tensor x) -> Tensor"
    old = [torch.library.custom_op("t::gc_live", lambda x: x.clone(), mutates_args=(), schema=schema)]
    new = torch.library.custom_op("t::gc_live", lambda x: x.clone(), mutates_args=(), schema=schema)
    _collect_old(old)
    assert labkit.ops.live_overload(new) is internals.overload_of(new)
    assert not internals.is_dangling(internals.overload_of(new))
