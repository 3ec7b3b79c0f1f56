"""pytorch #198031: a clone of a written argument passed in another argument's place, compiled with Inductor, with the
written argument a graph input and an intermediate.

Not here: the other compiled runs (:mod:`.compiled`).
"""

from __future__ import annotations

import re

import torch

from .. import _torch as internals
from ..findings import Finding
from ..stages import compile_and_compare
from .calls import Call, _signature, _with_distinct
from .vocabulary import ALIASING, NOTE


# What the written argument is in the compiled function when audit calls the op the way pytorch #198031 breaks it:
# torch 2.15.0 keeps the clone of a graph input, not of an intermediate, so audit tries both.
CLONE_CALLS = ("graph input", "intermediate")


def _where(written: str, calls) -> str:
    said = {"graph input": f"'{written}' a graph input (an argument of the compiled function)",
            "intermediate": f"'{written}' an intermediate (-(-{written}), or ~(~{written}) for integers and bool, "
                            "computed inside the compiled function)"}
    return " and with ".join(said[c] for c in calls)


def _clone_alias_findings(overload, call: Call) -> list[Finding]:
    """Call the op compiled the way pytorch #198031 breaks it: a clone of an argument it writes passed as another
    of its arguments (``y = x.clone(); op(y, x)``). Inductor may drop the clone and hand the op one buffer twice,
    so a kernel that reads one while it writes the other computes something else than eagerly. Each pair runs
    with ``x`` a graph input and with ``x`` an intermediate (torch 2.15.0 fixed only the first), each in two
    programs: one that never reads the clone again (the issue's), one that does; on distinct values (zeros hide a
    misread). The finding says which of the two calls went wrong."""
    names, values = zip(*call.named(overload)) if call.args or call.kwargs else ((), ())
    tensors = {name: v for name, v in zip(names, values) if isinstance(v, torch.Tensor) and not v.is_meta}
    findings, both_written = [], []
    for written in sorted(internals.written_args(overload) & tensors.keys()):
        for other, value in tensors.items():
            target = tensors[written]
            if other == written or (value.shape, value.dtype, value.device) != (target.shape, target.dtype,
                                                                                target.device):
                continue
            wrong, not_run = _wrong_calls(overload, call, names, values, written, other)
            findings += [Finding(NOTE, f"the #198031 call op({other}=<a clone of {written}>, ...) with "
                                 f"{_where(written, [where])} could not run here", "", why)
                         for where, why in not_run.items()]
            if not wrong:
                continue
            seen = next(iter(wrong.values()))
            right = [c for c in CLONE_CALLS if c not in wrong and c not in not_run]
            problem = (f"called as op({other}=<a clone of {written}>, {written}=...) with {_where(written, wrong)}, "
                       f"compiled with Inductor it gives another result than eagerly: "
                       f"{'; '.join(seen.verdict.problems)}" + (f" (right with {_where(written, right)})"
                                                                if right else ""))
            if other in internals.written_args(overload):
                both_written.append((other, written, wrong))
                continue
            twice = _called_with_one_buffer_twice(seen, overload)
            findings.append(Finding(
                ALIASING, problem,
                ("Inductor's code calls the op with the same buffer for both: the clone was removed, and the kernel "
                 f"reads '{other}' while it writes '{written}'" if twice else
                 "the clone did not survive Inductor's passes as it does eagerly, and the kernel reads memory it "
                 "writes") + " (pytorch #198031; in the lab's measurements torch 2.15.0 gets the call with a graph "
                 "input right and the one with an intermediate still wrong)",
                f"have the kernel copy '{other}' first when the two share storage ({other}.untyped_storage()."
                f"data_ptr() == {written}.untyped_storage().data_ptr()): free for distinct tensors, and it does "
                "not depend on which copies Inductor keeps"))
    return findings + ([_both_written_finding(both_written)] if both_written else [])


def _wrong_calls(overload, call: Call, names, values, written: str, other: str) -> tuple[dict, dict]:
    """Of :data:`CLONE_CALLS`: those whose compiled run differs from eager (call -> its report), and those that could
    not run (call -> why), so that a call that never ran is never said to be right."""
    sample, wrong, not_run = _with_distinct(values, names.index(written)), {}, {}
    for where in CLONE_CALLS:
        for reads_clone in (False, True):
            program = _clone_passed(overload, call, names, written, other, reads_clone, where == "intermediate")
            report = compile_and_compare(program, *sample, backend="inductor")
            failed = report.eager_error or report.error
            if failed is not None or report.verdict is None:
                not_run[where] = (f"{failed.type_name}: {failed.message[:160]}" if failed is not None else
                                  "labkit could not compare its runs")
                break
            if not report.verdict.agree and report.verdict.problems:
                wrong[where] = report
                break
    return wrong, not_run


def _both_written_finding(cases: list) -> Finding:
    """A clone of one written argument passed as another *written* argument: the declaration is not the cause,
    and no kernel change helps. With a graph input: observed on torch 2.11.0-2.14.1, fixed in 2.15.0
    (tests/torch/test_torch_findings.py: Inductor folds the clone into the input it copies, and the clone's place
    ends up with the input's result)."""
    pairs = ", ".join(f"{other}=<a clone of {written}> with {_where(written, wrong)}" for other, written, wrong
                      in cases)
    return Finding(
        ALIASING, f"called with a clone of one written argument as another written argument ({pairs}), compiled "
        f"with Inductor it gives another result than eagerly: "
        f"{'; '.join(next(iter(cases[0][2].values())).verdict.problems)}",
        "both places are declared written, so the declaration is not what is wrong: Inductor's code gives the "
        "clone other values than eager does (pytorch #198031's family; torch 2.15.0 keeps the clone of a graph "
        "input)",
        "no declaration avoids it; run such a call eagerly (outside torch.compile), or pass a tensor that is not "
        "a copy of the other argument")


def _buffer_arguments(text: str) -> list[str]:
    """The tensor names among a generated call's positional arguments (literals such as 0.0, None, 'adam' left out)."""
    names = [a.strip() for a in text.split(",") if a.strip() and "=" not in a]
    return [a for a in names if re.fullmatch(r"[A-Za-z_]\w*", a) and a not in ("None", "True", "False")]


def _called_with_one_buffer_twice(report, overload) -> bool:
    """Whether Inductor's generated code calls the op with one buffer in two argument places."""
    namespace, name = internals.qualname_of(overload).split("::")
    for line in "\n".join(report.inductor_code).splitlines():
        found = re.search(rf"torch\.ops\.{namespace}\.{name}\.\w+\(([^()]*)\)", line)
        if found:
            args = _buffer_arguments(found.group(1))
            if len(args) != len(set(args)):
                return True
    return False


_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _computed_copy(tensor: torch.Tensor) -> torch.Tensor:
    """The same bits, computed: an intermediate of the compiled function (see :func:`_clone_passed`). ``neg``
    twice for the usual floating and complex dtypes (exact, NaN and -0.0 included), ``bitwise_not`` twice for bool
    and the integer dtypes that have it; any other dtype (uint16, float8, ...) through a same-size integer view."""
    if tensor.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64) or tensor.is_complex():
        return torch.neg(torch.neg(tensor))
    if tensor.dtype in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        return torch.bitwise_not(torch.bitwise_not(tensor))
    same = _SAME_SIZE_INT[tensor.element_size()]
    return torch.bitwise_not(torch.bitwise_not(tensor.view(same))).view(tensor.dtype)


def _clone_passed(overload, call: Call, names, written: str, other: str, reads_clone: bool, intermediate: bool):
    """``f(*inputs)``: calls the op with a clone of ``written`` in ``other``'s place; returns what it wrote (and,
    with ``reads_clone``, the clone too). ``intermediate``: ``written`` is first replaced by ``-(-written)``, a
    tensor the compiled function computes, not one it is given, with the same values and dtype. Not ``written * 1``
    or ``written + 0``: torch 2.15.0 simplifies those to ``written`` itself, a graph input again, and the program
    then shows only what 2.15.0 fixed. An integer or bool one is ``~(~written)`` (exact; ``neg`` refuses bool)."""
    positional, keywords = len(call.args), list(call.kwargs)

    def clone_passed(*inputs):
        inputs = dict(zip(names, inputs))
        if intermediate:
            inputs[written] = _computed_copy(inputs[written])
        inputs[other] = inputs[written].clone()
        ordered = [inputs[name] for name in names]
        overload(*ordered[:positional], **dict(zip(keywords, ordered[positional:])))
        return (inputs[written].clone(), inputs[other].clone()) if reads_clone else inputs[written].clone()

    clone_passed.__signature__ = _signature(names)
    return clone_passed
