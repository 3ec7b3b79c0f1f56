"""A doctor run, from what is asked to a :class:`DoctorReport`: :func:`run` (modules and namespaces, as the command
line asks), :func:`check` (ops given as objects: a notebook's, a test's), :func:`assert_clean` (one op, for a
project's own test) and :func:`examine_in_report` (one overload, for a pytest item). Each refuses where there is no
compiler, turns labkit's cache fingerprint on for the run (the caller's policy back afterwards), pays Inductor's
warm-up once, examines each overload in turn and says its progress.

Not here: what is checked on one overload (:mod:`labkit.doctor.examining`), finding the ops
(:mod:`labkit.doctor.discovery`), their samples (:mod:`labkit.doctor.samples`), and how a report is written
(:mod:`labkit.doctor.formats`).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import threading
import time
from typing import Callable, Iterable

from .. import _torch as internals
from .. import cache, env, ops, warmup
from ..describe import brief
from . import formats
from .discovery import Target, UsageError, discover, full_name, op_name, shown, targets_named
from .examining import examine
from .report import DoctorReport, environment
from .samples import refuse_unmatched, sample_tables, unmatched


@contextlib.contextmanager
def _fingerprinted():
    """labkit's cache fingerprint on while the doctor compiles; the caller's policy back afterwards."""
    previous = cache.policy()
    if previous != "fingerprinted":
        cache.set_policy("fingerprinted")
    try:
        yield
    finally:
        if cache.policy() != previous:
            cache.set_policy(previous)


TIMED_OUT = 2   # the exit status when an op runs past its time limit (as for bad usage: nothing was judged)


@contextlib.contextmanager
def time_limit(seconds: float | None, name: str, leave_out: str = "or leave the op out with --op"):
    """A hung op (a kernel that never returns, a compile that never ends) or a hung import must not hang CI until
    its job times out saying nothing: past ``seconds``, say which, dump every thread's stack (faulthandler) and
    exit 2."""
    if not seconds:
        yield
        return

    def expire():
        print(f"labkit doctor: {name} ran past --timeout-per-op {seconds:g} s: the stacks below show where; "
              f"raise the limit, {leave_out}.", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(TIMED_OUT)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def import_limit(seconds: float | None, what: str):
    """:func:`time_limit` for importing ``what`` (the project's modules): a hung import is named as one."""
    return time_limit(seconds, f"importing {what}", "or find what the import waits for (the stacks)")


def say_to_stderr(text: str) -> None:
    """Where the progress lines go by default: stderr, at once (the command line's table goes to stdout)."""
    print(text, file=sys.stderr, flush=True)


class Interrupted(Exception):
    """Ctrl-C while ops were being examined: ``report`` holds the ops examined before it (a warning says where it
    stopped), so the command line can keep it where a report was asked for."""

    def __init__(self, report: DoctorReport, done: int, total: int, running: str = ""):
        super().__init__(f"stopped by Ctrl-C after {done} of {total} op overloads")
        self.report, self.done, self.total, self.running = report, done, total, running


class Progress:
    """A run so far: what Ctrl-C keeps. The command line's watch reads it from its own thread when the main thread
    cannot take the interrupt (a kernel blocked in C code)."""

    def __init__(self, asked: list[str], total: int, warnings: list[str]):
        self.asked, self.total, self.warnings = asked, total, warnings
        self.results: list = []
        self.running = ""          # the overload being examined now
        self.warm = None
        self.start = time.perf_counter()
        self.environment = environment()   # now: the watch's thread must not start a subprocess or touch CUDA

    def interrupted(self) -> Interrupted:
        results = list(self.results)
        stopped = f"stopped by Ctrl-C after {len(results)} of {self.total} op overloads"
        report = DoctorReport(self.asked, self.environment, results, [*self.warnings, stopped], self.warm,
                              time.perf_counter() - self.start, interrupted=stopped)
        return Interrupted(report, len(results), self.total, self.running)


CURRENT: Progress | None = None    # the last run started in this process (what the command line's watch reads)


def interrupted_run() -> Interrupted | None:
    """What a Ctrl-C now keeps of the last run (:attr:`Progress.interrupted`), or None when no op was taken up yet
    (the import or the warm-up was stopped: there is nothing to report)."""
    progress = CURRENT
    if progress is None or not (progress.running or progress.results):
        return None
    return progress.interrupted()


def _examine_all(targets: list[Target], tables: list[dict], say: Callable[[str], None] | None,
                 asked: list[str], warnings: list[str], timeout_per_op: float | None = None) -> DoctorReport:
    global CURRENT
    refusal = env.compiler_unavailable()
    if refusal is not None:
        raise UsageError(refusal)
    progress = CURRENT = Progress(asked, len(targets), warnings)
    with _fingerprinted():
        paying = warmup.status() == "not run"
        warm = warmup.run(say=say or (lambda _: None))
        progress.warm = warm if paying else None      # paid before this run (labkit.setup(), an earlier run): not here
        results = progress.results
        try:
            for number, target in enumerate(targets, 1):
                progress.running = target.name
                with time_limit(timeout_per_op, target.name):
                    results.append(examine(target, tables))
                if say is not None:
                    say(f"[{number}/{len(targets)}] {target.name}: {results[-1].verdict} "
                        f"({results[-1].seconds:.1f} s)")
            progress.running = ""
        except KeyboardInterrupt:
            raise progress.interrupted() from None
    return DoctorReport(asked, progress.environment, results, warnings, progress.warm,
                        time.perf_counter() - progress.start)


def examine_in_report(target: Target, tables: list[dict]) -> DoctorReport:
    """One overload examined as :func:`run` does it (fingerprinted caches, Inductor warm), as a report of one:
    what a pytest item runs."""
    return _examine_all([target], tables, None, [target.found_in], [])


def run(modules: Iterable[str] | str = (), namespaces: Iterable[str] = (), samples: dict | None = None,
        ops_only: Iterable[str] = (), say: Callable[[str], None] | None = say_to_stderr,
        before: set[str] | None = None, timeout_per_op: float | None = None) -> DoctorReport:
    """Import ``modules`` (dotted names or ``.py`` paths), find their custom ops (and those of ``namespaces``) and
    examine each overload. ``samples`` adds a SAMPLES table of your own (it wins over the modules'); ``ops_only``
    keeps only the overloads named (``"ns::name"`` or ``"ns::name.overload"``); a SAMPLES key that names no op found
    is a :class:`UsageError`. ``say`` gets the progress lines
    (None: silent). ``before``: the ops registered before the caller imported anything of the project's
    (:func:`~labkit.doctor.discovery.op_snapshot`; its SAMPLES modules may import its ops). ``timeout_per_op``:
    seconds the import of the modules, and then each overload, may take before the process exits 2 naming it (the
    command line's ``--timeout-per-op``).
    :class:`UsageError` for what cannot be examined at all; every op's defect is in the report."""
    modules = [modules] if isinstance(modules, str) else list(dict.fromkeys(modules))   # each once
    namespaces = [namespaces] if isinstance(namespaces, str) else list(dict.fromkeys(namespaces))
    if not modules and not namespaces:
        raise UsageError("name at least one module (mypkg.ops) or namespace (--namespace mylib) to examine.")
    if samples is not None and not isinstance(samples, dict):
        raise UsageError(f"samples= takes a dict like SAMPLES ({{op: [(args, kwargs), ...]}}), not {brief(samples)}.")
    with import_limit(timeout_per_op, ", ".join(modules) or "the namespaces"):
        targets, imported = discover(modules, namespaces, before=before, sample_keys=list(samples or {}))
    tables = sample_tables(imported, samples)
    refuse_unmatched(tables, targets)
    if ops_only:
        wanted = {full_name(o) for o in ops_only}
        unknown = wanted - {t.name for t in targets}
        if unknown:
            raise UsageError(f"{sorted(unknown)[0]} is not among the ops found: "
                             f"{', '.join(t.name for t in targets[:8])}.")
        targets = [t for t in targets if t.name in wanted]
    asked = [shown(m) for m in modules] + [f"namespace {n}" for n in namespaces]
    return _examine_all(targets, tables, say, asked, [], timeout_per_op)


def check(op_list, samples: dict | None = None, say: Callable[[str], None] | None = None) -> DoctorReport:
    """Examine ops given as objects (a CustomOpDef, ``torch.ops.ns.name``, an overload, a labkit op), every
    overload of each; ``samples`` as a module's SAMPLES. For a notebook or a project's own test; silent by default.
    :class:`UsageError` when an item is not a live custom op."""
    items = list(op_list.values()) if isinstance(op_list, dict) else (
        [op_list] if internals.op_key(op_list) is not None or isinstance(op_list, ops.LabOp) else list(op_list))
    names = set()
    for item in items:
        try:
            overload = ops.live_overload(item)
        except ops.StaleOpError as stale:
            raise UsageError(str(stale)) from None
        key = op_name(item)
        if overload is None or key is None:
            raise UsageError(f"{brief(item)} is not a custom operator: pass the object custom_op returned, "
                             "torch.ops.ns.name or one of its overloads.")
        qualname, _, overload_name = key.partition(".")
        names |= ({f"{qualname}.{overload_name}"} if overload_name else
                  {f"{qualname}.{o}" for o in internals.overload_names(qualname)})
    targets = targets_named(names, "given")
    if not targets:
        raise UsageError("no custom operator given to check.")
    tables = sample_tables([], samples)
    asked = sorted({t.name.partition(".")[0] for t in targets})
    return _examine_all(targets, tables, say, asked, unmatched(tables, targets))


def assert_clean(op, samples=None) -> DoctorReport:
    """For a project's own test: examine ``op`` (every overload) on ``samples`` — a list of (args, kwargs) pairs, or
    a SAMPLES dict — and raise AssertionError with the report (every finding in full) if anything is found."""
    if samples is not None and not isinstance(samples, dict):
        key = op_name(op)
        samples = {key if key is not None else op: samples}
    report = check(op, samples=samples)
    if not report.ok:
        raise AssertionError(formats.failure_text(report))
    return report

