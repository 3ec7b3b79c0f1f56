"""``labkit.audit(op, *inputs)``: resolve the op, run the registry's checks in order with torch's logs held back, and
tell each finding what the compiled runs did.

Not here: the checks (:mod:`.registry`), and printing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import time

from .. import _torch as internals
from .. import ops
from ..env import compiler_unavailable
from ..logs import torch_loggers
from ..findings import Finding
from .advice import _first_not_told_of_above
from .calls import Call, _short_repr
from . import registry
from .registry import run_check
from .report import AuditReport
from .vocabulary import COMPILE, COMPILE_MODES, EAGER, INPUT, INPUT_DOCS, NOTE


_ERROR_DETAIL = re.compile(r"^(torch\.compile raised \w+): .*( \([^()]*dynamic=[^()]*\))$", re.S)


def _with_compiled_consequence(findings: list[Finding], compile_ran: bool, broke: int = 0) -> list[Finding]:
    """Each finding of a check that asks for it (``Check.told_compiled``), told what the compiled runs of this
    audit did: the compile check's findings, or that they agreed with eager (``broke``: in how many of them Dynamo
    ran the op eagerly at a graph break; in all of them, none compiled it)."""
    every_mode = " (" + " / ".join(f"{backend}, dynamic={dynamic}" for backend, dynamic in COMPILE_MODES) + ")"
    in_all = f" (in all {len(COMPILE_MODES)} compiled runs)"
    seen = [_ERROR_DETAIL.sub(r"\1\2", f.problem).replace(every_mode, in_all) for f in findings
            if f.kind == COMPILE]
    if seen:
        consequence = "; ".join(seen)
    elif compile_ran and broke == len(COMPILE_MODES):
        consequence = (f"not seen: in all {len(COMPILE_MODES)} compiled runs Dynamo ran the op eagerly at a graph "
                       "break, so none of them compiled it")
    elif compile_ran:
        consequence = f"not on this program: the {len(COMPILE_MODES)} compiled runs agreed with eager on these inputs"
        consequence += f" (in {broke} of them Dynamo ran the op eagerly at a graph break)" if broke else ""
    else:
        return findings
    told = {check.kind for check in registry.CHECKS if check.told_compiled}
    return [dataclasses.replace(f, compiled=consequence) if f.kind in told else f for f in findings]


class _KeepTorchRecords(logging.Filter):
    """Holds back torch's log records (its tracebacks would spill into the learner's notebook)."""

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record):
        if record.name == "torch" or record.name.startswith("torch."):
            self.records.append(record)
            return False
        return True


@contextlib.contextmanager
def torch_logs_held_back():
    """For the block, no handler prints torch's log records; afterwards every handler is as it was.

    Only a filter is added to each handler (torch's own, the root's, ``logging.lastResort``) and
    then removed: levels, handlers and ``TORCH_LOGS`` settings are never touched.
    """
    keep = _KeepTorchRecords()
    loggers = [logging.getLogger(), *torch_loggers().values()]
    handlers = {id(h): h for logger in loggers for h in logger.handlers}
    if logging.lastResort is not None:
        handlers[id(logging.lastResort)] = logging.lastResort
    for handler in handlers.values():
        handler.addFilter(keep)
    try:
        yield keep.records
    finally:
        for handler in handlers.values():
            handler.removeFilter(keep)


def _resolve(op):
    """``(overload, None)``, or ``(None, finding)`` saying in one sentence what to pass instead."""
    try:
        overload = ops.live_overload(op)
        packet = internals.packet_overloads(op)
        if packet is not None and len(packet[1]) == 1:  # the one overload, whatever its name
            overload = ops.live_overload(getattr(op, packet[1][0]))
    except ops.StaleOpError as stale:  # its registration is gone: calling it could crash the process
        return None, Finding(INPUT, str(stale), "a stale handle points at a deleted registration; nothing about "
                             "it can be checked safely", "audit the handle the latest declaration returned",
                             docs=INPUT_DOCS)
    if packet is not None and len(packet[1]) > 1:
        qualname, names = packet
        spelled = "torch.ops." + qualname.replace("::", ".")
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return None, Finding(INPUT, f"{spelled} has {len(names)} overloads ({shown}): pass one, e.g. "
                             f"{spelled}.{names[0]}", "each overload has its own schema, and audit checks one "
                             "schema", f"pass the overload your inputs are for, e.g. {spelled}.{names[0]}",
                             docs=INPUT_DOCS)
    if overload is None:
        return None, Finding(INPUT, f"{_short_repr(op)} is not a custom operator",
                             "audit needs an op registered with torch.library (custom_op or Library.define)",
                             "pass the object custom_op returned, labkit.declare's handle, or torch.ops.ns.name",
                             docs=INPUT_DOCS)
    return overload, None


def _not_repeating(found: list[Finding], eager: str) -> list[Finding]:
    """``found`` less what repeats the eager failure ``eager`` (its problems), or only says it could not run on
    those inputs: a check after an eager failure adds nothing by saying it again."""
    if not eager:
        return found
    return [f for f in found if not (f.could_not_run or f.problem[:60] in eager)]


def audit(op, /, *sample_args, **sample_kwargs) -> AuditReport:
    """Audit ``op`` on one call's sample inputs, ``op(*sample_args, **sample_kwargs)`` (tensors on any device).

    It compiles four times: about 1-2 s once Inductor is warm (``labkit.setup()`` warms it), about
    10 s as the first compile of a fresh process (benchmarks/audit.py). Never raises. torch's own
    log records are held back while it runs: what went wrong comes back as findings, not tracebacks.
    """
    start = time.perf_counter()
    overload, refusal = _resolve(op)
    unavailable = compiler_unavailable()
    if refusal is None and unavailable is not None:
        refusal = Finding(INPUT, unavailable, "audit compares eager runs with compiled ones, and none can "
                          "compile honestly here", "audit from the main thread of a process where Dynamo is on",
                          docs=INPUT_DOCS)
    if refusal is not None:
        return AuditReport(_short_repr(op), "?", [refusal], [], [], time.perf_counter() - start)
    call = Call(sample_args, sample_kwargs)
    findings, run = [], []
    learners_counts = ops.call_counts()   # the op runs many times here: its .calls is put back afterwards
    with torch_logs_held_back(), _calls_put_back(learners_counts):
        for check in registry.CHECKS:   # read when audit runs: a test may register its own
            if check.doctor_only:
                continue
            if any(f.kind in check.stop_if for f in findings):
                break
            run.append(check.kind)
            eager = " ".join(f.problem for f in findings if f.kind == EAGER)
            findings += _not_repeating(run_check(check, overload, call), eager)
    notes = [f for f in findings if f.kind == NOTE]
    findings = _first_not_told_of_above(_with_compiled_consequence(
        [f for f in findings if f.kind != NOTE], compile_ran=COMPILE in run,
        broke=max([note.broke_in for note in notes], default=0)))
    return AuditReport(internals.qualname_of(overload), internals.schema_of(overload), findings, run, notes,
                       time.perf_counter() - start)


@contextlib.contextmanager
def _calls_put_back(counts: dict[str, int]):
    try:
        yield
    finally:
        ops.set_calls(counts)
