"""A doctor report (:class:`labkit.doctor.DoctorReport`) written out: a terminal table, JSON, JUnit XML.

Each form is fit for a bug report: torch's and labkit's versions, the device, each op's inputs (shapes, dtypes,
values), each finding with its fix in torch's terms and the official page. The terminal shortens torch's message
and says where the whole one is (``--json``, ``--junit-xml``); those two carry it in full.

Not here: what a report holds (:mod:`labkit.doctor.report`), running anything (:mod:`labkit.doctor.running`), and
the command line. Reads a report's attributes only; imports nothing of labkit's.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ElementTree

SHORT = 220   # characters of torch's message a terminal line shows
MARK = {"pass": "ok", "fail": "FAIL", "skip": "skip"}


def _short(text: str, limit: int = SHORT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def header(report) -> str:
    e = report.environment
    return (f"labkit doctor: {', '.join(report.targets)}\n"
            f"torch {e['torch']} · labkit {e['labkit']} · python {e['python']} · {e['platform']} · "
            f"device {e['device']} · {e['date']}")


def table(report, width: int = 120, details: bool = True) -> str:
    """The terminal's view: one row per overload, then (``details``) each finding, shortened, with its fix and docs."""
    rows = [(r.op, MARK[r.verdict], f"{r.seconds:.1f} s", _row_note(r)) for r in report.results]
    first = max([len("op overload")] + [len(r[0]) for r in rows])
    lines = [header(report), "", f"{'op overload':<{first}}  {'verdict':<7}  {'time':>6}  findings / note",
             f"{'-' * first}  {'-' * 7}  {'-' * 6}  {'-' * 16}"]
    room = max(30, width - first - 21)
    lines += [f"{op:<{first}}  {mark:<7}  {seconds:>6}  {_short(note, room)}" for op, mark, seconds, note in rows]
    for result in report.results if details else ():
        if result.verdict == "fail":
            lines += ["", *finding_lines(result, full=False)]
    counts = report.counts()
    warm = f"; Inductor warm-up {report.warmup_seconds:.1f} s" if report.warmup_seconds else ""
    lines += ["", *[f"warning: {w}" for w in report.warnings],
              f"{counts['pass']} passed, {counts['fail']} with findings, {counts['skip']} skipped (not checked) "
              f"in {report.seconds:.1f} s{warm}."]
    if counts["fail"] and details:
        lines.append("torch's whole messages: run again with --json or --junit-xml PATH.")
    return "\n".join(lines)


def _row_note(result) -> str:
    if result.verdict == "fail":
        return ", ".join(dict.fromkeys(f.check for f in result.findings))
    if result.verdict == "skip":
        return result.notes[0] if result.notes else "not checked"
    generated = any(s.source != "SAMPLES" for s in result.samples)
    checked = f"{len(result.samples)} sample{'s' if len(result.samples) != 1 else ''}"
    return f"{checked}{' generated from the schema' if generated else ''}; {', '.join(result.checks_run)}"


def finding_lines(result, full: bool) -> list[str]:
    """One op's findings: the inputs, then each finding's problem, why, fix, docs and "learn more"."""
    lines = [f"{result.op}  {result.schema}"]
    for index, sample in enumerate(result.samples):
        lines.append(f"  sample {index} ({sample.source}): {sample.describe()}")
    for finding in result.findings:
        on = f" (sample {finding.sample})" if finding.sample is not None and len(result.samples) > 1 else ""
        problem = finding.problem if full else _short(finding.problem)
        lines += [f"  ✘ [{finding.check}]{on} {problem}",
                  *textwrap.wrap(f"why: {finding.why}", 116, initial_indent="      ", subsequent_indent="      "),
                  *textwrap.wrap(f"fix: {finding.fix}", 116, initial_indent="      ", subsequent_indent="      "),
                  f"      docs: {finding.docs}"]
        if finding.compiled:
            lines.append(f"      under torch.compile: {finding.compiled if full else _short(finding.compiled)}")
        if finding.learn_more:
            lines.append(f"      learn more: {finding.learn_more}")
        if full and finding.detail:
            lines += ["      torch's message:", textwrap.indent(finding.detail.rstrip(), "        ")]
    return lines


def failure_text(report) -> str:
    """Every op with findings, each finding in full: what a failed test prints in a CI log."""
    failing = [r for r in report.results if r.verdict == "fail"]
    summary = "; ".join(f"{r.op}: {', '.join(dict.fromkeys(f.check for f in r.findings))}" for r in failing)
    lines = [f"labkit doctor found problems in {len(failing)} op overload{'s' if len(failing) != 1 else ''}: "
             f"{summary}", header(report)]
    for result in failing:
        lines += ["", *finding_lines(result, full=True)]
    return "\n".join(lines)


TOOL, SUITE = "labkit doctor", "labkit-doctor"   # how the JSON and the JUnit XML say the doctor wrote them


def begins_a_report(head: str) -> bool:
    """Whether ``head``, the first few hundred characters of a file, is the start of a report written here (the
    JSON's first key, or the XML's suite name): the command line overwrites nothing else."""
    return f'"tool": "{TOOL}"' in head or f'<testsuite name="{SUITE}"' in head


# a finding's fields in the JSON report, in this order
REPORTED = ("check", "problem", "why", "fix", "docs", "learn_more", "compiled", "detail", "sample")


def as_dict(report) -> dict:
    """The whole report as JSON-ready data (tensors described, never dumped)."""
    def sample(s):
        return {"source": s.source, "inputs": s.describe()}

    def finding(f):   # what a bug report states of a finding (the facts labkit acts on stay out)
        return {name: getattr(f, name) for name in REPORTED}

    return {
        "tool": TOOL, "targets": report.targets, "environment": report.environment,
        "ok": report.ok, "exit_status": report.exit_status, "counts": report.counts(),
        "seconds": round(report.seconds, 2),
        "warmup_seconds": None if report.warmup_seconds is None else round(report.warmup_seconds, 2),
        "warnings": report.warnings, "interrupted": report.interrupted,
        "results": [{"op": r.op, "schema": r.schema, "found_in": r.found_in, "verdict": r.verdict,
                     "seconds": round(r.seconds, 2), "samples": [sample(s) for s in r.samples],
                     "checks_run": r.checks_run, "notes": r.notes,
                     "findings": [finding(f) for f in r.findings]} for r in report.results],
    }


def to_json(report) -> str:
    return json.dumps(as_dict(report), indent=1, ensure_ascii=False) + "\n"


def junit_xml(report) -> str:
    """JUnit XML, one testcase per overload (a finding is a failure, a skipped op a skip), read by CI systems."""
    counts = report.counts()
    suite = ElementTree.Element("testsuite", name=SUITE, tests=str(len(report.results)),
                                failures=str(counts["fail"]), skipped=str(counts["skip"]),
                                errors=str(int(bool(report.interrupted))),
                                time=f"{report.seconds:.2f}")
    properties = ElementTree.SubElement(suite, "properties")
    for key, value in report.environment.items():
        ElementTree.SubElement(properties, "property", name=key, value=str(value))
    for result in report.results:
        case = ElementTree.SubElement(suite, "testcase", classname=f"labkit_doctor.{result.found_in}",
                                      name=result.op, time=f"{result.seconds:.2f}")
        if result.verdict == "fail":
            first = result.findings[0]
            failure = ElementTree.SubElement(case, "failure", type=first.check,
                                             message=_short(f"[{first.check}] {first.problem}", 500))
            failure.text = "\n".join([header(report), *finding_lines(result, full=True)])
        elif result.verdict == "skip":
            ElementTree.SubElement(case, "skipped", message=result.notes[0] if result.notes else "not checked")
        if result.notes:
            ElementTree.SubElement(case, "system-out").text = "\n".join(result.notes)
    if report.interrupted:     # a CI system reading only this file must not show the stopped run green
        stopped = ElementTree.SubElement(suite, "testcase", classname="labkit_doctor", name="the whole run")
        ElementTree.SubElement(stopped, "error", type="interrupted", message=report.interrupted)
    ElementTree.indent(suite)
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
