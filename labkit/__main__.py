"""The command line: ``python -m labkit doctor mypkg.ops`` (also ``labkit-doctor mypkg.ops``).

    python -m labkit doctor mypkg.ops [more.modules ...] [--namespace NS] [--op ns::name[.overload]]
                                      [--samples MODULE] [--strict] [--json [PATH]] [--junit-xml PATH]
                                      [--timeout-per-op SECONDS] [--quiet]

Exit status: 0 when every op examined is clean, 1 on a finding (with ``--strict``, a skipped op too), 2 on bad
usage (a module that does not import, one that registers no op, a SAMPLES key that names no op found, an unknown
option), when an op runs past ``--timeout-per-op`` (its name and every thread's stack on stderr), or when every op
was skipped, so nothing was checked; said in one sentence without a traceback. Progress lines go to stderr; the
table (or, with ``--json`` alone, the JSON) to stdout.

Not here: the doctor itself (:mod:`labkit.doctor`) and how a report is written (:mod:`labkit.doctor.formats`).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one sentence, no usage block
        print(f"labkit doctor: {message} (see: python -m labkit doctor --help)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="labkit doctor", description="Audit every custom op a module registers: opcheck's "
                     "tests, eager vs torch.compile (aot_eager, inductor; static, dynamic; fullgraph), the "
                     "#198031 clone call, fake kernels on a second dtype and device, compiled with labkit's cache "
                     "fingerprint on.", epilog="Exit status: 0 clean; 1 on a finding (with --strict, a skipped op "
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
    parser.add_argument("--json", nargs="?", const="-", metavar="PATH",
                        help="write the report as JSON to PATH (to stdout without PATH, instead of the table)")
    parser.add_argument("--junit-xml", metavar="PATH", help="write JUnit XML (one testcase per op overload)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    return parser


def doctor(argv: list[str] | None = None) -> int:
    """``labkit doctor ...``: the report printed or written; the exit status returned."""
    try:
        args = _parser().parse_args(argv)
        if args.timeout_per_op is not None and not args.timeout_per_op > 0:
            _parser().error(f"--timeout-per-op takes a number of seconds above 0, not {args.timeout_per_op:g}")
        if not args.modules and not args.namespace:
            _parser().error("name a module that registers custom ops, e.g. python -m labkit doctor mypkg.ops")
    except SystemExit as done:   # --help (0) or a usage error (2, said in one sentence): a status, not an exit
        return done.code if isinstance(done.code, int) else USAGE_ERROR
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())   # as python -m does: the project's own modules import from its folder
    from . import doctor as doctor_module
    from .doctor import formats

    say = None if args.quiet else doctor_module.say_to_stderr
    try:
        before = doctor_module.op_snapshot()    # before any import: a SAMPLES module may import the ops
        samples = {}
        for name in args.samples:
            table = getattr(doctor_module.import_module(name), "SAMPLES", None)
            if not isinstance(table, dict):
                raise doctor_module.UsageError(f"{name} has no SAMPLES dict: give it SAMPLES = {{op: [(args, "
                                               "kwargs), ...]}.")
            samples.update(table)
        report = doctor_module.run(args.modules, args.namespace, samples=samples or None, ops_only=args.op, say=say,
                                   before=before, timeout_per_op=args.timeout_per_op)
    except doctor_module.UsageError as problem:
        print(f"labkit doctor: {problem}", file=sys.stderr)
        return USAGE_ERROR
    if args.json == "-":
        sys.stdout.write(formats.to_json(report))
    else:
        print(formats.table(report))
        if args.json:
            pathlib.Path(args.json).write_text(formats.to_json(report))
    if args.junit_xml:
        pathlib.Path(args.junit_xml).write_text(formats.junit_xml(report))
    return _status(report, args.strict)


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
    raise SystemExit(doctor(sys.argv[1:]))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "doctor":
        print("labkit: the one command is doctor: python -m labkit doctor mypkg.ops (see --help)", file=sys.stderr)
        return USAGE_ERROR
    return doctor(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
