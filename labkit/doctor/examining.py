"""One overload examined (:func:`examine`): its samples, then on each sample everything :func:`labkit.audit` checks
and the doctor's own steps (:data:`labkit.doctor.steps.STEPS`), then the cache note; audit's findings restated for
a bug report (the official page, the lab's lesson), each defect once, into one :class:`OpResult`. Never raises: a
failing op, sample or step is a finding.

Not here: which ops (:mod:`labkit.doctor.discovery`) and which inputs (:mod:`labkit.doctor.samples`), what each
step checks (:mod:`labkit.doctor.steps`), and the run around it: caches, warm-up, progress
(:mod:`labkit.doctor.running`).
"""

from __future__ import annotations

import dataclasses
import time
import traceback

from .. import _torch_internals as internals
from .. import auditing
from . import steps
from .discovery import Target
from .links import DOCS, FAKE_DOCS, TUTORIAL, learn_more, with_learn_more
from .report import FAIL, PASS, SKIP, Finding, OpResult
from .samples import generated_fits, samples_for


def _from_audit(finding: Finding, sample: int) -> Finding:
    """Audit's finding for a bug report: its official page, the lab's lesson, and the sample that showed it."""
    docs, topic = DOCS.get(finding.kind, (TUTORIAL, None))
    if finding.check == "opcheck:test_faketensor":
        docs = FAKE_DOCS
    return dataclasses.replace(finding, docs=docs, learn_more=learn_more(topic), sample=sample)


def _unique(findings: list[Finding]) -> list[Finding]:
    """Each finding once: the same check and problem on a later sample is the same defect."""
    seen, kept = set(), []
    for finding in findings:
        if (finding.check, finding.problem) not in seen:
            seen.add((finding.check, finding.problem))
            kept.append(finding)
    return kept


def _doctor_error(step: str, error: BaseException, sample: int | None) -> Finding:
    return Finding("doctor", f"labkit's {step} step failed on this op: {type(error).__name__}: "
                   f"{' '.join(str(error).split())[:300]}", "the doctor could not finish this check, so the op "
                   "is not passed", "run labkit.audit(op, *sample) on it by hand; if that works, report this "
                   "as a labkit bug with the JSON report", docs=DOCS["doctor"][0],
                   detail="".join(traceback.format_exception(error)), sample=sample)


def examine(target: Target, tables: list[dict]) -> OpResult:
    """One overload: its samples, then audit and the doctor's steps on each. Never raises."""
    start = time.perf_counter()
    overload, name = target.overload, target.name
    schema = internals.schema_of(overload)
    samples, notes, findings = samples_for(name, overload, tables)
    checks_run: list[str] = []
    break_notes: list[str] = []   # audit's notes that the op broke the graph
    if findings or not samples:
        verdict = FAIL if findings else SKIP
        return OpResult(name, schema, target.found_in, verdict, findings, samples, checks_run, notes,
                        time.perf_counter() - start)
    if samples[0].source != "SAMPLES":
        misfit = generated_fits(overload, samples[0])
        if misfit is not None:
            notes = [f"no samples: the inputs generated from the schema ({samples[0].describe()}) do not fit the "
                     f"op ({misfit}); add SAMPLES[{name.removesuffix('.default')!r}] = [(args, kwargs), ...]"]
            return OpResult(name, schema, target.found_in, SKIP, [], samples, checks_run, notes,
                            time.perf_counter() - start)
    for index, sample in enumerate(samples):
        try:
            audited = auditing.audit(overload, *sample.args, **sample.kwargs)
        except Exception as error:  # noqa: BLE001 - audit never raises; if it does, that is labkit's bug
            findings.append(_doctor_error("audit", error, index))
            continue
        backend = audited.missing_backend   # not the op's defect, only this machine's: the op is skipped naming it
        if backend:
            notes = [f"skipped: the op has no kernel for the {backend} backend on this machine (torch: could not "
                     f"run it with arguments from the {backend!r} backend); run the doctor where it has one"]
            return OpResult(name, schema, target.found_in, SKIP, [], samples, [], notes, time.perf_counter() - start)
        checks_run += [c for c in audited.checks_run if c not in checks_run]
        findings += [_from_audit(f, index) for f in audited.findings]
        for note in audited.not_checkable():
            if note not in notes:
                notes.append(note)
        break_notes += [n for n in audited.not_checkable() if n not in audited.not_checkable(breaks=False)]
        for step in steps.STEPS:
            try:
                with auditing.torch_logs_held_back():
                    found = step.find(overload, sample, audited)
            except Exception as error:  # noqa: BLE001 - a step must not crash the run
                findings.append(_doctor_error(step.name, error, index))
                continue
            found, step_notes = found if isinstance(found, tuple) else (found, [])
            checks_run += [step.name] if step.name not in checks_run else []
            findings += [dataclasses.replace(f, sample=index) for f in found]
            notes += [n for n in step_notes if n not in notes]
    notes += steps.cache_note(name)   # a note: the fingerprint holds a Python-defined op's declaration by design
    if any(f.check == "fullgraph" for f in findings):   # audit's note on the break: the finding now names it
        notes = [n for n in notes if n not in break_notes]
    findings = [with_learn_more(f) for f in _unique(findings)]
    return OpResult(name, schema, target.found_in, FAIL if findings else PASS, findings, samples, checks_run,
                    notes, time.perf_counter() - start)

