"""``labkit.audit(op, *sample_args)``: check a custom op's declaration the way torch.compile will use it.

It runs, and reports as a list of findings (problem, why it matters under compile, fix):

1. the kernel against its declaration: which tensor arguments a real call changes, versus
   the ones the schema marks as written (``Tensor(a!)``);
2. every ``torch.library.opcheck`` test;
3. eager vs compiled, with ``aot_eager`` and ``inductor``, static and dynamic shapes, on a
   program that discards the op's result (the case where a wrong declaration bites), with the
   compile caches bypassed so no stale artifact can answer.

It never raises at a learner: anything that goes wrong becomes a finding. What it cannot see —
a Python side effect in a "pure" op, a write that only happens for other inputs — it says so.
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import time

import torch

from . import _torch_internals as internals
from . import checks, ops
from .stages import as_torch_error, compile_and_compare, copy_inputs

COMPILE_MODES = (("aot_eager", False), ("aot_eager", True), ("inductor", False), ("inductor", True))

OPCHECK_ADVICE = {
    "test_schema": ("the schema does not match what the kernel does (an undeclared write, or an output that "
                    "aliases an input)", "declare every written argument in mutates_args; return new tensors"),
    "test_faketensor": ("the compiler traces with fake tensors; without a correct fake kernel it cannot know the "
                        "output's shape", "register_fake a function returning empty tensors of the right shape"),
    "test_aot_dispatch_dynamic": ("AOTAutograd's result differs from eager or fails",
                                  "fix the findings above first; then compare shapes/dtypes of the fake kernel"),
    "test_autograd_registration": ("autograd would not see the op correctly",
                                   "use register_autograd instead of a manual autograd.Function around the op"),
}


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str
    problem: str
    why: str
    fix: str

    def __str__(self):
        return f"[{self.check}] {self.problem}\n    why: {self.why}\n    fix: {self.fix}"


@dataclasses.dataclass
class AuditReport:
    op: str
    schema: str
    findings: list[Finding]
    checks_run: list[str]
    cannot_see: str
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.findings

    def kinds(self) -> set[str]:
        return {f.check.split(":")[0] for f in self.findings}

    def __str__(self):
        head = f"audit of {self.op}: {self.schema}  ({len(self.checks_run)} checks, {self.seconds:.1f} s)"
        body = "\n".join(str(f) for f in self.findings) or "no problems found."
        return f"{head}\n{body}\nnot checkable here: {self.cannot_see}"

    __repr__ = __str__

    def _repr_html_(self):
        rows = "".join(f"<tr><td><code>{html.escape(f.check)}</code></td><td>{html.escape(f.problem)}</td>"
                       f"<td>{html.escape(f.why)}</td><td>{html.escape(f.fix)}</td></tr>" for f in self.findings)
        verdict = ("<p style='color:#1b7f3b'><b>no problems found</b></p>" if self.ok else
                   f"<table><tr><th>check</th><th>problem</th><th>why it matters</th><th>fix</th></tr>{rows}</table>")
        return (f"<div><p>audit of <code>{html.escape(self.schema)}</code>: {len(self.checks_run)} checks</p>"
                f"{verdict}<p><i>not checkable here: {html.escape(self.cannot_see)}</i></p></div>")


def _declaration_findings(overload, args) -> list[Finding]:
    names = internals.argument_names(overload)
    after = copy_inputs(args)
    try:
        overload(*after)
    except Exception as error:  # noqa: BLE001 - torch's refusal is a finding
        problem = as_torch_error(error, "eager")
        fix = ("return a new tensor (e.g. x.clone()), or on torch >= 2.13 tag an in-place op with "
               "tags=torch.Tag.inplace" if problem.kind == "alias_return" else "make the op run eagerly first")
        return [Finding("eager", f"calling the op raised {problem.type_name}: {problem.message}",
                        "an op that fails eagerly cannot be compiled either", fix)]
    written = {name for name, before, now in zip(names, args, after)
               if isinstance(before, torch.Tensor) and not torch.equal(before, now)}
    declared = internals.written_args(overload)
    findings = []
    for name in sorted(written - declared):
        findings.append(Finding(
            "declaration", f"the kernel changes '{name}' in place but does not declare it",
            "the compiler believes the schema: it may drop the call or the write, silently (see notebooks 00, 02)",
            f"add '{name}' to mutates_args"))
    for name in sorted(declared - written):
        findings.append(Finding(
            "declaration", f"'{name}' is declared as mutated but this call left it unchanged",
            "correct, but the op can never be removed and carries functionalization (auto_functionalized + "
            "copy_) for nothing (notebook 02)",
            f"drop '{name}' from mutates_args if the kernel never writes it (this check saw one input only)"))
    return findings


def _opcheck_findings(overload, args) -> list[Finding]:
    findings = []
    for test, outcome in checks.opcheck(overload, args).items():
        if outcome != "ok":
            why, fix = OPCHECK_ADVICE.get(test, ("opcheck failed", "see torch's message"))
            findings.append(Finding(f"opcheck:{test}", outcome[len("FAIL: "):], why, fix))
    return findings


def _compile_findings(overload, args) -> list[Finding]:
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    def discards_result(*call_args):
        overload(*call_args)
        return tuple(call_args[i] + 0 for i in tensors)

    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
              for name in internals.argument_names(overload)[:len(args)]]
    discards_result.__signature__ = inspect.Signature(params)  # verdicts name the op's arguments

    failures: dict[str, list[str]] = {}
    for backend, dynamic in COMPILE_MODES:
        report = compile_and_compare(discards_result, *args, backend=backend, dynamic=dynamic)
        label = f"{backend}, dynamic={dynamic}"
        if report.error is not None:
            failures.setdefault(f"torch.compile raised {report.error.type_name}: {report.error.message}", []).append(label)
        elif report.verdict is not None and not report.verdict.agree:
            failures.setdefault(f"compiled result differs from eager: {'; '.join(report.verdict.problems)}", []).append(label)
    return [Finding("compile", f"{problem} ({' / '.join(labels)})",
                    "this is what a user of the op would see under torch.compile",
                    "fix the declaration findings; a compile error usually means a missing or wrong fake kernel")
            for problem, labels in failures.items()]


def audit(op, *sample_args) -> AuditReport:
    """Audit ``op`` on ``sample_args`` (tensors on any device). Takes a few seconds; never raises."""
    start = time.perf_counter()
    cannot_see = ("Python side effects inside a kernel declared pure, and writes that happen only for other "
                  "inputs: give such ops an effect (notebook 04) and audit them on several inputs.")
    try:
        overload = ops.live_overload(op)
    except ops.StaleOpError as stale:  # its registration is gone: calling it could crash the process
        finding = Finding("input", str(stale), "a stale handle points at a deleted registration; nothing about "
                          "it can be checked safely", "audit the handle the latest declaration returned")
        return AuditReport(_short_repr(op), "?", [finding], [], cannot_see, time.perf_counter() - start)
    if overload is None:
        finding = Finding("input", f"{_short_repr(op)} is not a custom operator",
                          "audit needs an op registered with torch.library (custom_op or Library.define)",
                          "pass the object custom_op returned, labkit.declare's handle, or torch.ops.ns.name")
        return AuditReport(_short_repr(op), "?", [finding], [], cannot_see, time.perf_counter() - start)
    findings, run = [], []
    for name, check in (("declaration", _declaration_findings), ("opcheck", _opcheck_findings),
                        ("compile", _compile_findings)):
        run.append(name)
        try:
            found = check(overload, sample_args)
        except Exception as error:  # noqa: BLE001 - an audit must not crash a learner's kernel
            found = [Finding(name, f"the check could not run: {type(error).__name__}: {str(error)[:200]}",
                             "the sample inputs may not fit the op's schema", "call the op once eagerly with them")]
        findings += found
        if name == "declaration" and any(f.check == "eager" for f in found):
            break  # nothing else can run on an op that fails eagerly
    return AuditReport(internals.qualname_of(overload), internals.schema_of(overload), findings, run, cannot_see,
                       time.perf_counter() - start)


def _short_repr(value) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break the report
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."
