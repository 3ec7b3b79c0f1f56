"""One finding type for every check labkit runs: :func:`labkit.audit`'s and the doctor's.

A :class:`Finding` is a defect of an op (or, of kind ``"note"``, something a check could not look at on these
inputs, said beside any defects) stated for a learner and for a bug report: what is wrong, why it matters under
torch.compile, the fix, and what the compiled runs did because of it; the official page (``docs``) and the lab's
lesson (``learn_more``) come from the check that made it (a note has neither), and the doctor adds which sample
showed it. These are keywords, after ``fix``.

The facts the doctor acts on travel as fields, not as words to be read back: the error torch raised calling the op
eagerly (``raised``, a :class:`~labkit.errors.TorchError`: its kind, and the backend it found no kernel for), the
number of compiled runs in which Dynamo ran the op eagerly at a graph break (``broke_in``, on audit's note), and
whether one of audit's checks could not run at all (``could_not_run``). A sentence may change; these keep their
meaning. (Inside audit a few sentences are still built from other sentences: the compiled consequence from the
compile findings' problems, and a check's repeat of the eager failure told by its first words.)

Not here: running any check, and which page and lesson explain it (each check of :data:`labkit.auditing.CHECKS`
names them), and how it is printed (:mod:`labkit.render`, :mod:`labkit.doctor.formats`).
"""

from __future__ import annotations

import dataclasses

from .errors import TorchError


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str          # its kind ("declaration", "compile", the doctor's "fullgraph"); an opcheck finding adds
    problem: str        # its test's name, "opcheck:test_schema", and a fake-kernel one its aspect, "fake:dtype"
    why: str
    fix: str
    _: dataclasses.KW_ONLY
    compiled: str = ""  # what torch.compile got wrong because of it, where the check saw it happen
    detail: str = ""    # torch's whole message, where ``problem`` quotes it shortened (a bug report wants it all)
    docs: str = ""      # the official page that states the rule (its check's, unless it names its own)
    learn_more: str = ""          # the lab's lesson that shows it (its check's; a pointer, never the reason)
    sample: int | None = None     # which sample (0-based) showed it; None: the op itself, or a single call
    raised: TorchError | None = None   # the error torch raised calling the op, when that is the finding
    broke_in: int = 0             # a graph-break note: in how many compiled runs Dynamo ran the op eagerly
    could_not_run: bool = False   # the check itself failed on these inputs: no verdict on the op

    @property
    def kind(self) -> str:
        """The kind of check that found it: ``check`` without an opcheck test's name or a fake kernel's aspect."""
        return self.check.split(":")[0]

    def as_note(self) -> str:
        """A note (kind ``"note"``) as one line of a report's "not checkable here": what, and what to do."""
        return f"{self.problem} ({self.fix})" if self.fix else self.problem

    def __str__(self):
        text = f"[{self.check}] {self.problem}\n    why: {self.why}\n    fix: {self.fix}"
        return text + (f"\n    under torch.compile: {self.compiled}" if self.compiled else "")
