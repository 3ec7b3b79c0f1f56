"""``torch.library.opcheck`` as data: which of its tests passes or fails for an op."""

from __future__ import annotations

import re

import torch

from ._torch_internals import aliasing_check_raises  # noqa: F401 - re-exported for lessons
from .ops import LabOpError, live_overload
from .stages import copy_inputs

OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


_OPCHECK_PREFIX = re.compile(r"^opcheck\(op, \.\.\.\): \w+ failed with\s*")
_DIAGNOSES = (r"(Argument \w+ is not defined as mutable but was mutated)",
              r"(There was no fake impl registered for [^.]*)",
              r"(Shapes .*? are not equal!)",
              r"(The output of this custom operator \(1\) must not also be an input[^.]*)")
MAX_REASON = 240  # characters; reached by dropping whole sentences, never by cutting the diagnosis


def _first_sentence(error: BaseException) -> str:
    """torch's reason, diagnosis first: a known diagnosis, else the first line without opcheck's preamble.

    A long line is shortened by dropping its later sentences; the first sentence (what is wrong)
    is always kept whole.
    """
    text = str(error)
    for pattern in _DIAGNOSES:
        found = re.search(pattern, text)
        if found:
            return found.group(1)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(error).__name__)
    line = _OPCHECK_PREFIX.sub("", line).replace(" (scroll up for stack trace)", "")
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z(])", line)
    kept = sentences[0]
    for sentence in sentences[1:]:
        if len(kept) + 1 + len(sentence) > MAX_REASON:
            break
        kept += " " + sentence
    return kept


def opcheck(op, args: tuple, tests=OPCHECK_TESTS, kwargs: dict | None = None) -> dict[str, str]:
    """Run each opcheck test on fresh copies of ``args`` (and ``kwargs``): ``"ok"`` or torch's reason for failing.

    ``op``: a LabOp, the object ``custom_op`` returned, ``torch.ops.ns.name`` or an overload.
    Raises :class:`labkit.ops.StaleOpError` for a stale handle and LabOpError for a non-op:
    running torch's tests on those would crash or mislead.
    """
    overload = live_overload(op)
    if overload is None:
        raise LabOpError(f"opcheck needs a custom operator (a labkit.declare handle, the object custom_op "
                         f"returned, or torch.ops.ns.name), not {type(op).__name__}.")
    if not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    if isinstance(tests, str):
        tests = (tests,)
    results = {}
    for test in tests:
        *copies, kwarg_copies = copy_inputs((*args, dict(kwargs or {})))
        try:
            torch.library.opcheck(overload, tuple(copies), kwarg_copies, test_utils=test)
            results[test] = "ok"
        except Exception as error:  # noqa: BLE001 - a failing check is the data we want
            results[test] = "FAIL: " + _first_sentence(error)
    return results
