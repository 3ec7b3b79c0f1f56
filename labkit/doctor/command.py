"""The doctor's command line: ``python -m labkit doctor mypkg.ops`` (also ``labkit-doctor mypkg.ops``).

    python -m labkit doctor mypkg.ops [more.modules ...] [--namespace NS] [--op ns::name[.overload]]
                                      [--samples MODULE] [--strict] [--json PATH|-] [--junit-xml PATH|-]
                                      [--timeout-per-op SECONDS] [--quiet]

Exit status: 0 when every op examined is clean, 1 on a finding (with ``--strict``, a skipped op too), 2 on bad
usage (a module that does not import, one that registers no op, a SAMPLES key that names no op found, an unknown
option), when an import or an op runs past ``--timeout-per-op`` (its name and every thread's stack on stderr), or
when every op was skipped, so nothing was checked; said in one sentence without a traceback. Progress lines go to
stderr; the table (or, with ``--json -`` or ``--junit-xml -``, that report) to stdout, in whatever the console can
encode.

Errors in the options and report paths are answered before the doctor imports a module or torch's compiler: a
report path is refused when it is a ``.py`` file, a folder, not a regular file, in a missing folder, or an existing
file that is not an earlier report of the doctor's (or an empty ``.json``/``.xml`` file).

``labkit/__main__.py`` only imports this module, under the guard that turns a Ctrl-C while starting into one
sentence.

Not here: the doctor itself (:mod:`labkit.doctor`) and how a report is written (:mod:`labkit.doctor.formats`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import pathlib
import sys
import threading

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one sentence, no usage block
        print(f"labkit doctor: {message} (see: python -m labkit doctor --help)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def _checks_said() -> str:
    """The checks the doctor runs, from the registry (labkit.auditing.registry.CHECKS), in their order."""
    from ..auditing import registry

    return "; ".join(f"{check.kind}: {check.what}" for check in registry.CHECKS)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="labkit doctor", description="Audit every custom op a module registers, each overload on "
                     f"its samples: {_checks_said()}; compiled with labkit's cache fingerprint on.",
                     epilog="Exit status: 0 clean; 1 on a finding (with --strict, a skipped op "
                     "too); 2 on bad usage (a module that does not import or registers no op, a SAMPLES key that "
                     "names no op found), past --timeout-per-op, or when every op was skipped (nothing checked).")
    parser.add_argument("modules", nargs="*", help="modules (mypkg.ops) or .py files that register custom ops; "
                        "a module-level SAMPLES = {op: [(args, kwargs), ...]} gives their inputs")
    parser.add_argument("--namespace", action="append", default=[], metavar="NS",
                        help="also every op in namespace NS (C++ ops a module loaded), repeatable")
    parser.add_argument("--op", action="append", default=[], metavar="NS::NAME",
                        help="examine only this op (ns::name: its default overload; ns::name.out), repeatable")
    parser.add_argument("--samples", action="append", default=[], metavar="MODULE",
                        help="a module whose SAMPLES give inputs (when they live apart from the ops)")
    parser.add_argument("--strict", action="store_true", help="a skipped op (no samples, no kernel for this "
                        "machine) fails the run: exit status 1")
    parser.add_argument("--timeout-per-op", type=float, metavar="SECONDS",
                        help="an op overload running longer ends the run: exit status 2, naming the op, with "
                        "every thread's stack (a hung kernel or compile)")
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH (- : to stdout, instead "
                        "of the table); an existing file is overwritten only if it is an earlier doctor report")
    parser.add_argument("--junit-xml", metavar="PATH", help="write JUnit XML, one testcase per op overload (- : to "
                        "stdout); an existing file is overwritten only if it is an earlier doctor report")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    parser.add_argument("--version", action="version", version=_versions())
    return parser


def _versions() -> str:
    """labkit's version and torch's, read without importing torch."""
    import importlib.metadata

    from .. import __version__

    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "not installed"
    return f"labkit doctor {__version__} (torch {torch_version})"


def _usage_problem(args) -> str | None:
    """The first usage error in ``args``, as one sentence, or None: all of them are found before anything is
    imported or examined."""
    limit = args.timeout_per_op
    if limit is not None and not (math.isfinite(limit) and 0 < limit <= threading.TIMEOUT_MAX):
        return (f"--timeout-per-op takes a finite number of seconds above 0 and at most {threading.TIMEOUT_MAX:.0f}, "
                f"not {limit:g}")
    if not args.modules and not args.namespace:
        return "name a module that registers custom ops, e.g. python -m labkit doctor mypkg.ops"
    for option, values in (("a module", args.modules), ("--namespace", args.namespace), ("--op", args.op),
                           ("--samples", args.samples)):
        blank = next((v for v in values if not v.strip()), None)
        if blank is not None:
            return f"{option} was given as {blank!r}: name one (a module like mypkg.ops, or a .py file)"
    bad_op = next((op for op in args.op if "::" not in op), None)
    if bad_op is not None:
        return f"--op takes a qualified name, namespace::name (t::my_op, t::my_op.out), not {bad_op!r}"
    if args.json == "-" and args.junit_xml == "-":
        return "only one report can go to stdout: give --json or --junit-xml a file path"
    if args.json and args.junit_xml and "-" not in (args.json, args.junit_xml) and \
            os.path.realpath(args.json) == os.path.realpath(args.junit_xml):
        return f"--json {args.json} and --junit-xml {args.junit_xml} name one file: give each report its own"
    for option, path in (("--json", args.json), ("--junit-xml", args.junit_xml)):
        problem = _report_path_problem(option, path)
        if problem:
            return problem
    return None


def _report_path_problem(option: str, path: str | None) -> str | None:
    """Why the doctor must not write a report to ``path``, or None: checked before the run, so that nothing is
    overwritten and no report is lost after every op was examined."""
    if path is None or path == "-":
        return None
    where = pathlib.Path(os.path.realpath(path))     # a symlink is judged by what it points to
    if where.suffix == ".py" or pathlib.Path(path).suffix == ".py":
        return f"{option} {path}: a report is never written over a .py file; name a .json or .xml file"
    if where.is_dir():
        return f"{option} {path} is a folder: name a file in it"
    if not where.parent.is_dir():
        return f"{option} {path}: the folder {where.parent} does not exist: create it, or name a file elsewhere"
    if where.exists() and not where.is_file():
        return f"{option} {path} is not a regular file (a pipe, a device): name a file, or - for stdout"
    if where.exists() and not _an_earlier_report(where):
        return (f"{option} {path}: that file exists and is not an earlier labkit doctor report, which is all the "
                "doctor overwrites; name a new file, or remove that one yourself")
    return None


def _an_earlier_report(path: pathlib.Path) -> bool:
    """Whether ``path`` holds a report the doctor wrote (its JSON or its JUnit XML, known by how each begins), or
    is an empty ``.json`` or ``.xml`` file. Only the first bytes are read: a report can be large."""
    try:
        with open(path, "rb") as file:
            head = file.read(400).decode("utf-8", errors="replace")
    except OSError:
        return False
    if not head.strip():
        return path.suffix in (".json", ".xml")
    from .formats import begins_a_report     # no torch: the formats module imports none

    return begins_a_report(head)


@contextlib.contextmanager
def _console_that_encodes_anything():
    """stdout and stderr write what their encoding cannot (a non-UTF-8 console: "✘" on ASCII) as "?" instead of
    raising after the run; put back afterwards."""
    streams = [(s, s.errors) for s in (sys.stdout, sys.stderr) if hasattr(s, "reconfigure")]
    for stream, _ in streams:
        with contextlib.suppress(Exception):
            stream.reconfigure(errors="replace")
    try:
        yield
    finally:
        for stream, errors in streams:
            with contextlib.suppress(Exception):
                stream.reconfigure(errors=errors)


@contextlib.contextmanager
def _project_output_to_stderr():
    """While the project's code runs (its imports, its kernels), what it prints goes to stderr, Python's print and
    a C kernel's printf alike (file descriptor 1 is pointed at 2): stdout carries only the report, so that
    ``--json -`` is JSON. Put back afterwards, C's buffer flushed first."""
    sys.stdout.flush()
    saved = None
    with contextlib.suppress(OSError):   # no file descriptors to move (an embedded interpreter): Python's only
        saved = os.dup(1)
        os.dup2(2, 1)
    _STDOUT_MOVED.append((saved, sys.stdout))
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        _stdout_back()


_STDOUT_MOVED: list = []   # (fd 1's copy, Python's stdout) while the project's output goes to stderr


def _stdout_back() -> None:
    """Undo :func:`_project_output_to_stderr`, C's buffer flushed first; called by it, or by the Ctrl-C watch's thread
    before it writes the report of a run it ends."""
    try:
        saved, python_stdout = _STDOUT_MOVED.pop()
    except IndexError:         # put back already (by the other thread)
        return
    for step in (sys.stderr.flush, _flush_c_stdio, python_stdout.flush):   # each alone: none may keep fd 1
        with contextlib.suppress(Exception):
            step()
    if saved is not None:
        with contextlib.suppress(OSError):
            os.dup2(saved, 1)
        os.close(saved)
    sys.stdout = python_stdout


def _flush_c_stdio() -> None:
    """C's stdio buffers emptied (a kernel's printf) while fd 1 still points at stderr (POSIX; elsewhere nothing)."""
    import ctypes

    ctypes.CDLL(None).fflush(None)


def doctor(argv: list[str] | None = None, watch=None) -> int:
    """``labkit doctor ...``: the report printed or written; the exit status returned. ``watch``: the process's
    :class:`~labkit.doctor.stopping.CtrlCWatch` (the command line's own process only; in-process calls have none)."""
    from .stopping import CtrlCWatch

    watch = watch or CtrlCWatch()
    with _console_that_encodes_anything():
        status = _doctor(argv, watch)
    watch.exiting(status)
    return status


def _doctor(argv: list[str] | None, watch) -> int:
    try:
        args = _parser().parse_args(argv)
        problem = _usage_problem(args)
        if problem:
            _parser().error(problem)
    except SystemExit as done:   # --help (0) or a usage error (2, said in one sentence): a status, not an exit
        return done.code if isinstance(done.code, int) else USAGE_ERROR
    except KeyboardInterrupt:
        return _stopped_before_any_op(watch)
    for option in ("json", "junit_xml"):   # before any import: a project's module may change directory
        if getattr(args, option) not in (None, "-"):
            setattr(args, option, os.path.abspath(getattr(args, option)))
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())   # as python -m does: the project's own modules import from its folder
    watch.limit_s = args.timeout_per_op
    try:
        from . import discovery, formats, running
    except KeyboardInterrupt:
        return _stopped_before_any_op(watch)
    running.CURRENT = None
    watch.on_stuck = lambda: _end_stuck(args, formats)
    say = None if args.quiet else running.say_to_stderr
    try:
        with _project_output_to_stderr():
            report = _examined(args, say)
    except discovery.UsageError as problem:
        with watch.main_reports():
            print(f"labkit doctor: {problem}", file=sys.stderr)
        return USAGE_ERROR
    except running.Interrupted as interrupted:     # Ctrl-C between or inside ops: keep what was examined
        with watch.main_reports(after_ctrl_c=True):
            return _keep_what_was_examined(args, interrupted.report, formats, interrupted)
    except KeyboardInterrupt:    # before the first op, or a second Ctrl-C while the first was being taken
        stopped = running.interrupted_run()
        if stopped is None:
            return _stopped_before_any_op(watch)
        with watch.main_reports(after_ctrl_c=True):
            return _keep_what_was_examined(args, stopped.report, formats, stopped)
    with watch.main_reports():
        try:
            written = _write_reports(args, report, formats)
        except KeyboardInterrupt:
            watch.took_ctrl_c = True
            print("labkit doctor: stopped by Ctrl-C while writing the reports (each is whole or as it was before).",
                  file=sys.stderr)
            return USAGE_ERROR
        return written if written is not None else _status(report, args.strict)


BEFORE_ANY_OP = "stopped by Ctrl-C before any op was examined (while importing or warming up)"


def _stopped_before_any_op(watch) -> int:
    with watch.main_reports(after_ctrl_c=True):
        print(f"labkit doctor: {BEFORE_ANY_OP}.", file=sys.stderr)
    return USAGE_ERROR


def _keep_what_was_examined(args, report, formats, stopped, why: str = "") -> int:
    """A run stopped by Ctrl-C: the report of the ops examined before it written where asked, and one sentence."""
    try:
        written = _write_reports(args, report, formats)
    except KeyboardInterrupt:      # a second Ctrl-C while writing: each report is whole or as it was before
        written = USAGE_ERROR
    kept = [p for p in (args.json, args.junit_xml) if p and p != "-"] if written is None else []
    print(f"labkit doctor: {stopped}{why}" + (f"; the report of those is in {' and '.join(kept)}" if kept else "")
          + ".", file=sys.stderr)
    return USAGE_ERROR


def _end_stuck(args, formats) -> None:
    """From the Ctrl-C watch's thread: the main thread did not take the interrupt in time (a kernel waiting in C
    code, or code that caught it). Say so and keep the report of the ops examined; the watch then ends the process
    (exit 2)."""
    from . import running, stopping

    _stdout_back()
    late = (f" did not stop within {stopping.GRACE_S:g} s of it (C code that does not return to Python, or code that "
            "caught the interrupt), so the doctor ended without waiting")
    stopped = running.interrupted_run()
    if stopped is None:
        print(f"labkit doctor: stopped by Ctrl-C before any op was examined: the import or warm-up{late}.",
              file=sys.stderr)
        return
    _keep_what_was_examined(args, stopped.report, formats, stopped, f"; {stopped.running or 'the run'}{late}")


def _write_reports(args, report, formats) -> int | None:
    """The table or the report asked for on stdout, and the reports asked for in files; USAGE_ERROR (said) when a
    file cannot be written, else None."""
    reports = {args.json: formats.to_json, args.junit_xml: formats.junit_xml}
    if "-" in reports:
        sys.stdout.write(reports["-"](report))
    else:
        print(formats.table(report))
    for path, write in reports.items():
        if path and path != "-":
            try:
                _replace_whole(pathlib.Path(os.path.realpath(path)), write(report))
            except OSError as error:
                print(f"labkit doctor: could not write {path} ({error.strerror or error}); the verdicts are above",
                      file=sys.stderr)
                return USAGE_ERROR
    return None


def _replace_whole(path: pathlib.Path, text: str) -> None:
    """Write ``text`` to a new file beside ``path``, then put it in ``path``'s place: an earlier report is either
    kept or replaced whole, never left half written (a full disk, Ctrl-C)."""
    partial = path.with_name(f".{path.name}.labkit-doctor-partial")
    try:
        partial.write_text(text, encoding="utf-8", errors="backslashreplace")   # a path's non-UTF-8 bytes: \udcff
        os.replace(partial, path)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _examined(args, say):
    """The run itself: the SAMPLES modules read, then every op found examined."""
    from . import discovery, running

    before = discovery.op_snapshot()    # before any import: a SAMPLES module may import the ops
    samples = {}
    for name in args.samples:
        with running.import_limit(args.timeout_per_op, name):
            table = getattr(discovery.import_module(name), "SAMPLES", None)
        if not isinstance(table, dict):
            raise discovery.UsageError(f"{name} has no SAMPLES dict: give it SAMPLES = {{op: [(args, "
                                           "kwargs), ...]}.")
        samples.update(table)
    return running.run(args.modules, args.namespace, samples=samples or None, ops_only=args.op, say=say,
                             before=before, timeout_per_op=args.timeout_per_op)


def _status(report, strict: bool) -> int:
    """The report's own status (1 on a finding), unless nothing was checked (2) or ``--strict`` fails a skip (1):
    a CI job whose every op skipped must not pass green."""
    skipped = [r.op for r in report.results if r.verdict == "skip"]
    named = f"{', '.join(skipped[:4])}{', ...' if len(skipped) > 4 else ''}"
    if report.exit_status == USAGE_ERROR:
        print(f"labkit doctor: nothing was checked: every op was skipped ({named}): give them SAMPLES that run on "
              "this machine.", file=sys.stderr)
    if report.exit_status or not (skipped and strict):
        return report.exit_status
    print(f"labkit doctor: --strict: {len(skipped)} op(s) skipped ({named}): give them SAMPLES, or drop --strict.",
          file=sys.stderr)
    return 1


def doctor_main() -> None:
    """The ``labkit-doctor`` console script."""
    raise SystemExit(_command(["doctor", *sys.argv[1:]]))


def main(argv: list[str] | None = None, watch=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "doctor":
        print("labkit: the one command is doctor: python -m labkit doctor mypkg.ops (see --help)", file=sys.stderr)
        return USAGE_ERROR
    return doctor(argv[1:], watch)


def _command(argv: list[str]) -> int:
    """The command line's own process (``python -m labkit``, ``labkit-doctor``): Ctrl-C ends it in one sentence
    wherever it lands (:mod:`labkit.doctor.stopping`)."""
    try:
        from .stopping import CtrlCWatch

        watch = CtrlCWatch().start()
    except KeyboardInterrupt:
        print("labkit doctor: stopped by Ctrl-C while starting; nothing was examined.", file=sys.stderr)
        return USAGE_ERROR
    return main(argv, watch)
