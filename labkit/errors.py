"""torch's errors as data: an exception becomes a :class:`TorchError` holding torch's own words, trimmed.

A notebook shows the message a learner would read, not a traceback; :data:`ERROR_KINDS` names the refusals
the lessons are about. :class:`InputError` is labkit's own: an input it cannot copy or compare.

Not here: deciding what an error means for an experiment (:mod:`labkit.stages`), and printing it
(:mod:`labkit.render`). Imports nothing of labkit's.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable


ERROR_KINDS = (
    ("missing_fake", r"no fake impl registered|no fake kernel|fake impl"),
    ("alias_return", r"must not also be an input|may not alias any inputs"),
    ("inplace_return", r"must return its first argument"),
    ("undeclared_mutation", r"is not defined as mutable but was mutated"),
    ("recompile_limit", r"recompile_limit|cache_size_limit"),
)

# torch's dispatcher, when an op has no kernel for the inputs' backend (a CUDA-only op called on CPU tensors)
_NO_KERNEL = re.compile(r"Could not run '[^']*' with arguments from the '(\w+)' backend")

_BOILERPLATE = re.compile(
    r"^(Set TORCHDYNAMO_VERBOSE|Set TORCH_LOGS|For more information|from user code|"
    r"You can suppress this exception|Developer debug context|For even more developer context|"
    r"\s*File \"|\s*Explanation:|\s*Hint:|\s*$)")


@dataclasses.dataclass(frozen=True)
class TorchError:
    """An exception torch raised, kept as data. ``message`` is torch's own text, trimmed."""

    stage: str  # "eager" or "compiled"
    kind: str  # one of ERROR_KINDS' names, or "other"
    type_name: str
    message: str
    full: str
    raised_in: str = ""  # compiled: "Dynamo", "AOTAutograd" or "Inductor" (while compiling), or "run time"
    call: int = 0        # which call (0 = the first) raised
    no_kernel_for: str = ""   # the backend the dispatcher found no kernel for ("CPU"), read from torch's words

    def __str__(self):
        return f"[{self.stage}] {self.type_name}: {self.message}"


def as_torch_error(error: BaseException, stage: str) -> TorchError:
    chain, seen = [error], {id(error)}
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and id(nxt) not in seen:
        chain.append(nxt)
        seen.add(id(nxt))
    root = chain[-1] if str(chain[-1]) else error  # the innermost error says what went wrong
    full = "\n\ncaused by ".join(f"{type(e).__name__}: {e}" for e in chain)
    text = re.split(r"\n\s*(?:from user code:|Set TORCHDYNAMO_VERBOSE)", str(root))[0]
    kind = next((k for k, pattern in ERROR_KINDS if re.search(pattern, full, re.I)), "other")
    lines = [line for line in text.splitlines() if not _BOILERPLATE.match(line)]
    message = " ".join(line.strip() for line in lines[:6])
    message = re.sub(r" \(with implementation in <module '[^']*' from '[^']*'>\)", "", message)
    message = re.sub(r"0x[0-9a-f]{6,}", "0x…", message)
    if len(message) > 600:
        message = message[:599] + "…"
    no_kernel = _NO_KERNEL.search(f"{message}\n{full}")
    return TorchError(stage, kind, type(root).__name__, message, full,
                      no_kernel_for=no_kernel.group(1) if no_kernel else "")


class InputError(ValueError):
    """An input labkit cannot copy or compare; the message says what to pass instead."""


def raised(call: Callable[[], Any], stage: str = "eager", quiet: bool = False) -> TorchError | None:
    """Run ``call()``: None when it returns, else the exception it raised, as a :class:`TorchError`.

    A cell that shows torch's refusal reads ``error = raised(lambda: ...)`` instead of a try/except.
    ``quiet=True`` drops the warnings torch issues meanwhile (autograd's anomaly mode repeats the
    error as "Error detected in ...Backward"). ``error.full`` starts with the outermost type
    (``BackendCompilerFailed`` for an error inside a backend), ``error.type_name`` is the innermost.
    """
    import warnings

    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        try:
            call()
        except Exception as error:  # noqa: BLE001 - torch's error is the data a lesson wants
            return as_torch_error(error, stage)
    return None
