"""What one audit found: :class:`AuditReport`, its findings and its notes.

Not here: running the checks (:mod:`.runner`), and HTML (:func:`labkit.render.audit_html`).
"""

from __future__ import annotations

import dataclasses

from ..findings import Finding
from .vocabulary import CANNOT_SEE, EAGER


@dataclasses.dataclass
class AuditReport:
    """One audit: the op's defects (``findings``), and its ``notes``: what this audit could not check on these
    inputs (findings of kind :data:`NOTE`; ``fix`` says what to do, or torch's reason a call could not run), said
    under "not checkable here" with :data:`CANNOT_SEE`, what no audit can see."""

    op: str
    schema: str
    findings: list[Finding]
    checks_run: list[str]
    notes: list[Finding]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.findings

    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def not_checkable(self, breaks: bool = True) -> list[str]:
        """Each limit of this audit as one line (a note and its fix), then :data:`CANNOT_SEE`; ``breaks=False``
        leaves out the notes that the op broke the graph (for a report that names the break as a finding)."""
        return [note.as_note() for note in self.notes if breaks or not note.broke_in] + [CANNOT_SEE]

    @property
    def cannot_see(self) -> str:
        """The limits as one sentence, as the report prints them."""
        return "; ".join(self.not_checkable())

    @property
    def broke_in(self) -> int:
        """In how many of the compiled runs Dynamo ran the op eagerly at a graph break (0: in none)."""
        return max([note.broke_in for note in self.notes], default=0)

    @property
    def missing_backend(self) -> str:
        """The backend calling the op eagerly found no kernel for ("CPU" for a CUDA-only op on CPU inputs): this
        machine's limit, not the op's defect; "" otherwise."""
        return next((f.raised.no_kernel_for for f in self.findings
                     if f.kind == EAGER and f.raised is not None and f.raised.no_kernel_for), "")

    def __str__(self):
        head = f"audit of {self.op}: {self.schema}  ({len(self.checks_run)} checks, {self.seconds:.1f} s)"
        body = "\n".join(str(f) for f in self.findings) or "no problems found."
        return f"{head}\n{body}\nnot checkable here: {self.cannot_see}"

    __repr__ = __str__

    def _repr_html_(self):
        """How a notebook shows it: :func:`labkit.render.audit_html` draws it. Imported here, when a report is
        shown: render is the view layer above this core, which must import and run without it."""
        from ..render import audit_html

        return audit_html(self)
