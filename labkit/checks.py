"""``torch.library.opcheck`` as data: which of its tests passes or fails for an op.

Not here: what a failure means or how to fix it (:mod:`labkit.auditing` advises), and printing.
"""

from __future__ import annotations

import re

import torch

from .describe import brief
from ._torch import aliasing_check_raises  # noqa: F401 - re-exported for lessons
from ._torch import argument_names
from .ops import LabOpError, live_overload
from .compare import copy_inputs

OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
KNOWN_TESTS = (*OPCHECK_TESTS, "test_aot_dispatch_static")   # what torch.library.opcheck's test_utils takes


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
    return {test: outcome for test, (outcome, _) in opcheck_details(op, args, tests, kwargs).items()}


def opcheck_details(op, args: tuple, tests=OPCHECK_TESTS, kwargs: dict | None = None) -> dict[str, tuple[str, str]]:
    """As :func:`opcheck`, each test's outcome with torch's whole message beside it (``""`` for ``"ok"``):
    ``{"test_schema": ("FAIL: <torch's reason>", "<the error as torch raised it, every line>")}``."""
    overload = live_overload(op)
    if overload is None:
        raise LabOpError(f"opcheck needs a custom operator (a labkit.declare handle, the object custom_op "
                         f"returned, or torch.ops.ns.name), not {type(op).__name__}.")
    if not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    tests = _tests(tests)
    kwargs = _kwargs(kwargs, overload, len(args))
    results = {}
    for test in tests:
        *copies, kwarg_copies = copy_inputs((*args, dict(kwargs or {})))
        try:
            torch.library.opcheck(overload, tuple(copies), kwarg_copies, test_utils=test)
            results[test] = ("ok", "")
        except Exception as error:  # noqa: BLE001 - a failing check is the data we want
            results[test] = ("FAIL: " + _first_sentence(error), f"{type(error).__name__}: {error}")
    return results


def _tests(tests) -> tuple[str, ...]:
    """The opcheck tests asked for, or one sentence (LabOpError) naming the ones that exist."""
    tests = (tests,) if isinstance(tests, str) else tests
    known = ", ".join(KNOWN_TESTS)
    if not isinstance(tests, (tuple, list, set, frozenset)) or not tests:
        raise LabOpError(f"tests= takes the name of one opcheck test or a list of them ({known}), not {brief(tests)}.")
    unknown = [t for t in tests if t not in KNOWN_TESTS]
    if unknown:
        raise LabOpError(f"opcheck has no test {brief(unknown[0])}: choose among {known}.")
    return tuple(tests)


def _kwargs(kwargs, overload, positional: int) -> dict:
    """The keyword inputs, checked against the schema: a wrong name would fail every test for the wrong reason."""
    names = argument_names(overload)
    if positional > len(names):
        raise LabOpError(f"{overload.name()} takes {len(names)} inputs ({', '.join(names)}); {positional} were given.")
    if kwargs is None:
        return {}
    if not isinstance(kwargs, dict):
        raise LabOpError(f"kwargs= takes a dict of the op's keyword inputs ({', '.join(names)}), "
                         f"not a {type(kwargs).__name__}.")
    taken = set(names[:positional])
    for name in kwargs:
        if name not in names:
            raise LabOpError(f"{overload.name()} has no input named {name!r}: its inputs are {', '.join(names)}.")
        if name in taken:
            raise LabOpError(f"{overload.name()}'s input {name!r} is given twice, by position and as kwargs.")
    return dict(kwargs)


def gradcheck(fn, *inputs) -> str:
    """``torch.autograd.gradcheck(fn, inputs)`` as data: ``"ok"``, or ``"FAIL: "`` and torch's first line (a Jacobian
    mismatch, cut at its comma by torch's tensors, finished in words).

    gradcheck compares the gradient autograd computes (your formula) with finite differences, so give
    it float64 inputs that require grad. An error the backward raises itself (no formula, a formula
    with the wrong signature) is a failure too, with that error's first line.
    """
    try:
        torch.autograd.gradcheck(fn, inputs)
        return "ok"
    except Exception as error:  # noqa: BLE001 - a failing check is the data we want
        first = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
        if first.startswith("Jacobian mismatch") and first.endswith(","):   # torch's tensors follow the comma
            first = first[:-1] + ": the gradient the backward computes differs from the one finite differences measure"
        return "FAIL: " + first
