"""One overload examined (:func:`examine`): its samples, then on each sample everything :func:`labkit.audit` checks
and the checks only the doctor runs (:data:`labkit.auditing.CHECKS`' ``doctor_only`` ones, through the same
:func:`labkit.auditing.run_check`), then the cache note; each defect once, with the sample that showed it (its
official page and lesson came with it from its check), into one :class:`OpResult`. Never raises: a failing op,
sample or check is a finding.

Not here: which ops (:mod:`labkit.doctor.discovery`) and which inputs (:mod:`labkit.doctor.samples`), what each
check looks at (:mod:`labkit.auditing`), and the run around it: caches, warm-up, progress
(:mod:`labkit.doctor.running`).
"""

from __future__ import annotations

import dataclasses
import time
import traceback

from .. import _torch as internals
from .. import auditing, cache
from .discovery import Target
from .report import FAIL, PASS, SKIP, Finding, OpResult
from .samples import generated_fits, samples_for
from .stopping import by_the_user, raised


ISSUES = "https://github.com/torch-compile-lab/custom-ops-lab/issues"   # where a bug of labkit's own is reported


def _unique(findings: list[Finding]) -> list[Finding]:
    """Each finding once: the same check and problem on a later sample is the same defect."""
    seen, kept = set(), []
    for finding in findings:
        if (finding.check, finding.problem) not in seen:
            seen.add((finding.check, finding.problem))
            kept.append(finding)
    return kept


def _doctor_error(check: str, error: BaseException, sample: int | None) -> Finding:
    return Finding("doctor", f"labkit's {check} step failed on this op: {type(error).__name__}: "
                   f"{' '.join(str(error).split())[:300]}", "the doctor could not finish this check, so the op "
                   "is not passed", "run labkit.audit(op, *sample) on it by hand; if that works, report this "
                   "as a labkit bug with the JSON report", docs=ISSUES,
                   detail="".join(traceback.format_exception(error)), sample=sample)


def _project_stopped(check: str, error: BaseException, sample: int) -> Finding:
    """The op's own code (its kernel, its fake kernel, what they call) raised what is no error: it would stop, or
    skip, whatever program calls the op. The doctor says so and goes on to the next sample."""
    return Finding("project-code", f"calling the op in the {check} check raised {raised(error)}",
                   "a custom op's code runs inside a model, a test run or a server: raising this there ends or skips "
                   "all of it, not one call", "raise an exception (RuntimeError, ValueError) for what the op cannot "
                   "do, instead of exiting or skipping", sample=sample)


def _no_kernel_here(backend: str) -> str:
    return (f"no kernel for the {backend} backend on this machine (torch: could not run it with arguments from the "
            f"{backend!r} backend)")


def cache_note(target_name: str) -> list[str]:
    """What the run's compile caches key on for this op: a note, never a check. The doctor compiles with labkit's
    fingerprint on, and a Python-defined op's declaration is part of that fingerprint by construction, so there is
    nothing about the op that could fail; a C++ op's declaration is not, and the note says what to do instead."""
    if cache.covers(target_name):
        return ["compile caches: compiled with labkit's cache fingerprint on, which holds this op's declaration "
                "(defined from Python): a changed declaration compiles afresh (a note, not a check)"]
    return ["its declaration is not in labkit's cache fingerprint (an op defined in C++), and torch's compile "
            "caches do not key on an op's schema (pytorch #187319): after rebuilding it with another schema, "
            "change torch.compiler.config.cache_key_tag or clear the cache (TORCHINDUCTOR_FX_GRAPH_CACHE=0)"]


def examine(target: Target, tables: list[dict]) -> OpResult:
    """One overload: its samples, then audit and the doctor-only checks on each. Never raises."""
    start = time.perf_counter()
    overload, name = target.overload, target.name
    schema = internals.schema_of(overload)
    samples, notes, findings = samples_for(name, overload, tables)
    checks_run: list[str] = []
    break_notes: list[str] = []   # audit's notes that the op broke the graph
    if findings or not samples:
        verdict = FAIL if findings else SKIP
        return OpResult(name, schema, target.found_in, verdict, findings, samples, checks_run,
                        notes + target.notes, time.perf_counter() - start)
    if samples[0].source != "SAMPLES":
        try:
            misfit = generated_fits(overload, samples[0])
        except BaseException as error:  # noqa: BLE001 - the op's own code exited or skipped on generated inputs
            if by_the_user(error):
                raise
            return OpResult(name, schema, target.found_in, FAIL, [_project_stopped("eager", error, 0)], samples,
                            checks_run, notes + target.notes, time.perf_counter() - start)
        if misfit is not None:
            notes = [f"no samples: the inputs generated from the schema ({samples[0].describe()}) do not fit the "
                     f"op ({misfit}); add SAMPLES[{name.removesuffix('.default')!r}] = [(args, kwargs), ...]",
                     *target.notes]
            return OpResult(name, schema, target.found_in, SKIP, [], samples, checks_run, notes,
                            time.perf_counter() - start)
    lacking: dict[int, str] = {}   # sample -> the backend this machine has no kernel of
    for index, sample in enumerate(samples):
        try:
            audited = auditing.audit(overload, *sample.args, **sample.kwargs)
        except Exception as error:  # noqa: BLE001 - audit never raises; if it does, that is labkit's bug
            findings.append(_doctor_error("audit", error, index))
            continue
        except BaseException as error:  # noqa: BLE001 - the op's own code exited or skipped
            if by_the_user(error):
                raise
            findings.append(_project_stopped("eager or compiled", error, index))
            continue
        if audited.missing_backend:   # not the op's defect, only this machine's: that sample is left out
            lacking[index] = audited.missing_backend
            continue
        checks_run += [c for c in audited.checks_run if c not in checks_run]
        findings += [dataclasses.replace(f, sample=index) for f in audited.findings]
        for note in audited.not_checkable():
            if note not in notes:
                notes.append(note)
        break_notes += [n for n in audited.not_checkable() if n not in audited.not_checkable(breaks=False)]
        call = auditing.Call(sample.args, sample.kwargs)
        for check in [c for c in auditing.registry.CHECKS if c.doctor_only]:
            try:
                with auditing.torch_logs_held_back():
                    found = auditing.run_check(check, overload, call, audited)
            except Exception as error:  # noqa: BLE001 - a check must not crash the run
                findings.append(_doctor_error(check.kind, error, index))
                continue
            except BaseException as error:  # noqa: BLE001 - the op's own code exited or skipped
                if by_the_user(error):
                    raise
                findings.append(_project_stopped(check.kind, error, index))
                continue
            checks_run += [check.kind] if check.kind not in checks_run else []
            findings += [dataclasses.replace(f, sample=index) for f in found if f.kind != auditing.NOTE]
            notes += [n.as_note() for n in found if n.kind == auditing.NOTE and n.as_note() not in notes]
    if lacking and len(lacking) == len(samples):   # every sample: the op cannot be examined on this machine
        notes = [f"skipped: the op has {_no_kernel_here(next(iter(lacking.values())))}; run the doctor where it "
                 "has one", *target.notes]
        return OpResult(name, schema, target.found_in, SKIP, [], samples, [], notes, time.perf_counter() - start)
    notes += [f"sample {index} left out: the op has {_no_kernel_here(backend)}; the other samples were examined"
              for index, backend in lacking.items()]
    notes += cache_note(name) + target.notes   # the fingerprint holds a Python-defined op's declaration by design
    if any(f.check == auditing.FULLGRAPH for f in findings):   # audit's note on the break: the finding names it
        notes = [n for n in notes if n not in break_notes]
    findings = _unique(findings)
    return OpResult(name, schema, target.found_in, FAIL if findings else PASS, findings, samples, checks_run,
                    notes, time.perf_counter() - start)

