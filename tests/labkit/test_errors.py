"""labkit.errors: torch's errors as data, the innermost message of a chain, and ``raised`` (what a call raised,
or None)."""

import torch

from labkit import errors
from labkit.errors import as_torch_error


def test_error_chains_are_unwrapped_to_the_innermost_message():
    try:
        try:
            raise RuntimeError("There was no fake impl registered for <CustomOpDef(x::y)>.")
        except RuntimeError as inner:
            raise ValueError("wrapper\n\nfrom user code:\n  File x") from inner
    except ValueError as outer:
        error = as_torch_error(outer, "compiled")
    assert error.kind == "missing_fake" and error.type_name == "RuntimeError"
    assert error.message.startswith("There was no fake impl")


def test_raised_gives_none_or_torchs_error_with_the_outermost_type_first():
    assert errors.raised(lambda: None) is None
    error = errors.raised(lambda: torch.ones(2) @ torch.ones(3), "eager")
    assert error.stage == "eager" and error.type_name == "RuntimeError" and "size" in error.message
    def compiled_call():
        torch.compiler.reset()
        return torch.compile(lambda x: x @ torch.ones(3), backend="eager")(torch.ones(2))

    wrapped = errors.raised(compiled_call, "compiled", quiet=True)
    try:                                   # the same call, caught here: the outermost exception's own type
        compiled_call()
    except Exception as outermost:  # noqa: BLE001 - whatever torch raises is the answer
        outer_type = type(outermost).__name__
    assert wrapped is not None and wrapped.full.startswith(outer_type + ":"), (outer_type, wrapped.full[:200])
