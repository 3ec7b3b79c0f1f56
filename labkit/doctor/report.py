"""What a doctor report holds: one call's inputs (:class:`Sample`), a defect (:class:`Finding`), one overload's
verdict (:class:`OpResult`), the whole run (:class:`DoctorReport`) and the machine it ran on (:func:`environment`).

Plain data, fit for a bug report: :mod:`labkit.doctor.running` builds it; ``report.table()`` and
``report.to_dict()`` hand it to :mod:`labkit.doctor.formats`.

Not here: finding the ops, taking their samples, checking anything, and how a report is laid out
(:mod:`labkit.doctor.formats`).
"""

from __future__ import annotations

import dataclasses
import datetime


from .. import env
from ..describe import describe_value
from ..findings import Finding   # audit's and the doctor's one finding type
from . import formats

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclasses.dataclass(frozen=True)
class Sample:
    """One call's inputs, as opcheck takes them, and where they came from."""

    args: tuple
    kwargs: dict
    source: str = "SAMPLES"   # or "generated from the schema"

    def describe(self) -> str:
        """The inputs for a bug report: ``float32[10, 20], 'nf4', 6.0, bias=None``."""
        return ", ".join([describe_value(a) for a in self.args] +
                         [f"{k}={describe_value(v)}" for k, v in self.kwargs.items()])


@dataclasses.dataclass
class OpResult:
    """One overload's verdict: ``"pass"``, ``"fail"`` (findings) or ``"skip"`` (nothing could run: ``note`` says
    why and what to add)."""

    op: str          # "ns::name.overload"
    schema: str
    found_in: str    # the module that registered it, or "namespace ns"
    verdict: str
    findings: list[Finding]
    samples: list[Sample]
    checks_run: list[str]
    notes: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.verdict != FAIL


@dataclasses.dataclass
class DoctorReport:
    """Every overload's result, and what a bug report needs about the machine."""

    targets: list[str]            # what was asked: module names, namespaces, or "ops given to check()"
    environment: dict[str, str]   # torch, labkit, python, platform, device, date
    results: list[OpResult]
    warnings: list[str]
    warmup_seconds: float | None
    seconds: float
    interrupted: str = ""         # why the run stopped before its last op (Ctrl-C), or "" for a whole run

    @property
    def ok(self) -> bool:
        return not self.interrupted and all(r.ok for r in self.results)

    @property
    def exit_status(self) -> int:
        """0 clean, 1 on a finding, 2 when every op was skipped (nothing checked: a CI job must not pass green) or
        the run was interrupted. A skip among checked ops is no finding: the table says it was not checked
        (``--strict`` fails it)."""
        if self.interrupted:
            return 2
        if not self.ok:
            return 1
        return 2 if self.results and all(r.verdict == SKIP for r in self.results) else 0

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.results) for v in (PASS, FAIL, SKIP)}

    def result(self, op: str) -> OpResult:
        """The result of ``"ns::name.overload"`` (``"ns::name"``: its default overload)."""
        name = op if "." in op.partition("::")[2] else f"{op}.default"
        return next(r for r in self.results if r.op == name)

    def table(self, width: int = 120, details: bool = True) -> str:
        """One row per overload; with ``details``, each finding below (shortened; the JSON has torch's whole text)."""
        return formats.table(self, width, details)

    def to_dict(self) -> dict:
        return formats.as_dict(self)

    def __str__(self):
        return self.table()

    __repr__ = __str__


def environment() -> dict[str, str]:
    """What a bug report states first: the versions and the machine."""
    import labkit

    info = env.report()   # the lab's own report of the environment; the doctor adds labkit's version and the date
    return {"torch": info["torch"], "labkit": labkit.__version__, "python": info["python"],
            "platform": info["platform"], "device": info["device"], "date": datetime.date.today().isoformat()}
