"""The checks, one registry (:data:`CHECKS`): each :class:`Check` with its kind, its official page and its lesson;
:func:`run_check` runs one, for audit and the doctor alike.

Not here: what each check looks at (its own module), and the audit around them (:mod:`.runner`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ..lessons import LESSONS
from ..errors import InputError, as_torch_error
from ..findings import Finding
from .calls import Call
from .clones import _clone_alias_findings
from .compiled import _compile_findings
from .declaration import _declaration_findings, _shared_memory_findings
from .doctor_checks import _fake_findings, _fullgraph_findings
from .opchecks import _opcheck_findings
from .report import AuditReport
from .vocabulary import (ALIASING, COMPILE, DECLARATION, EAGER, FAKE, FAKE_DOCS, FULLGRAPH, LIBRARY_DOCS, MEMORY,
                         NOTE, OPCHECK, TUTORIAL, learn_more)


@dataclasses.dataclass(frozen=True)
class Check:
    """One check of an op: ``find(overload, call)`` returns its findings, of kind ``kind`` (or :data:`EAGER`,
    :data:`NOTE`); if an audit check raises, that is one finding of its kind saying the check could not run.

    ``docs``: the official page that states the rule it holds the op to, and ``lesson``: the lab's topic that shows
    it (a key of :data:`labkit.lessons.LESSONS`; None for none). Every finding it makes but a note carries both
    (``docs``, ``learn_more``) unless it names its own page. ``stop_if``: the audit ends before this check once a
    finding of one of these kinds is in (this check could tell nothing more). ``told_compiled``: its findings are
    told what the compiled runs of this audit did. ``doctor_only``: ``labkit doctor`` runs it after audit, on each
    sample, as ``find(overload, call, audited)`` with audit's report, and ``labkit.audit`` does not (it compiles
    more, and its learners meet these in lessons); it reads ``audited`` itself to tell when it has nothing to add
    (``stop_if`` and ``told_compiled`` are audit's, refused here), and what it raises the doctor reports as labkit's
    bug. A wrong topic or a doctor-only check with audit's options is refused when the check is made.
    """

    kind: str
    find: Callable[..., list[Finding]]
    docs: str
    lesson: str | None
    stop_if: tuple[str, ...] = ()
    told_compiled: bool = False
    doctor_only: bool = False
    what: str = ""   # what it checks, in a few words: the command line's --help lists the registry's

    def __post_init__(self):
        if self.lesson is not None and self.lesson not in LESSONS:
            raise ValueError(f"Check {self.kind!r}: lesson {self.lesson!r} is no topic of labkit.lessons.LESSONS "
                             f"({', '.join(LESSONS)}); add it to a notebook's topics in pyproject.toml, or pass None")
        if self.doctor_only and (self.stop_if or self.told_compiled):
            raise ValueError(f"Check {self.kind!r}: stop_if and told_compiled are audit's; a doctor_only check "
                             "reads audit's report (its third argument) to tell when it has nothing to add")


CHECKS = (
    Check(DECLARATION, _declaration_findings, f"{LIBRARY_DOCS}#torch.library.custom_op", "mutates_args",
          told_compiled=True, what="the arguments a real call writes against the ones its schema declares written"),
    # after an eager failure it cannot run, and says nothing
    Check(MEMORY, _shared_memory_findings, f"{LIBRARY_DOCS}#torch.library.custom_op", "aliasing",
          what="each output's memory against each input's (bytes, not storages) where the schema declares "
          "no alias"),
    Check(OPCHECK, _opcheck_findings, f"{LIBRARY_DOCS}#torch.library.opcheck", "a silent wrong result",
          told_compiled=True, what="every torch.library.opcheck test"),
    # nothing compiled can run on an op that fails eagerly (opcheck has said what else is wrong)
    Check(COMPILE, _compile_findings, TUTORIAL, "a silent wrong result", stop_if=(EAGER,),
          what="eager against torch.compile, aot_eager and Inductor, static and dynamic shapes, on a program "
          "that discards the op's result, with the compile caches bypassed"),
    # a program that already differs tells nothing about a clone passed in another argument's place
    Check(ALIASING, _clone_alias_findings, "https://github.com/pytorch/pytorch/issues/198031", "mutates_args",
          stop_if=(COMPILE,), what="a clone of a written argument passed in another argument's place, under Inductor"),
    Check(FULLGRAPH, _fullgraph_findings, TUTORIAL, "graph breaks", doctor_only=True,
          what="a graph break at the op, named with fullgraph=True instead of passed"),
    Check(FAKE, _fake_findings, FAKE_DOCS, "fake kernels", doctor_only=True,
          what="the fake kernel on the meta device and on a second dtype, which it must follow"),
)


def run_check(check: Check, overload, call: Call, audited: AuditReport | None = None) -> list[Finding]:
    """``check``'s findings on one call, each carrying the check's official page and lesson unless it names its
    own. An audit check must not crash a learner's kernel: what it raises is one finding saying it could not run.
    A doctor-only check gets ``audited`` (audit's report on the same call), and what it raises is raised: the
    doctor reports it as labkit's bug."""
    if check.doctor_only:
        if audited is None:
            raise ValueError(f"the doctor_only check {check.kind!r} needs audit's report on the same call: "
                             "run_check(check, overload, call, audited)")
        found = check.find(overload, call, audited)
    else:
        try:
            found = check.find(overload, call)
        except Exception as error:  # noqa: BLE001 - an audit must not crash a learner's kernel
            message = str(error) if isinstance(error, InputError) else as_torch_error(error, check.kind).message
            found = [Finding(check.kind, f"the check could not run: {type(error).__name__}: {message}",
                             "the sample inputs may not fit the op's schema", "call the op once eagerly with them",
                             could_not_run=True)]
    lesson = learn_more(check.lesson)
    return [f if f.kind == NOTE else dataclasses.replace(f, docs=f.docs or check.docs,
                                                         learn_more=f.learn_more or lesson) for f in found]
