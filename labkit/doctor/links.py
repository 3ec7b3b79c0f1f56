"""Where each kind of doctor finding is explained: the official page that states the rule (a finding's ``docs``)
and the lab's lesson that shows it (its ``learn_more``: a pointer, never the reason).

Not here: the findings themselves (:mod:`labkit.doctor.report`), and finding anything.
"""

from __future__ import annotations

import dataclasses

from .. import auditing
from ..lessons import notebook_about

LIBRARY_DOCS = "https://docs.pytorch.org/docs/stable/library.html"
TUTORIAL = "https://docs.pytorch.org/tutorials/advanced/custom_ops_landing_page.html"

# A finding's kind -> (the official page that states the rule, the lab's topic that shows it: "learn more").
DOCS = {
    auditing.DECLARATION: (f"{LIBRARY_DOCS}#torch.library.custom_op", "mutates_args"),
    auditing.EAGER: (f"{LIBRARY_DOCS}#torch.library.custom_op", "mutates_args"),
    auditing.OPCHECK: (f"{LIBRARY_DOCS}#torch.library.opcheck", "a silent wrong result"),
    auditing.COMPILE: (TUTORIAL, "a silent wrong result"),
    auditing.ALIASING: ("https://github.com/pytorch/pytorch/issues/198031", "mutates_args"),
    auditing.MEMORY: (f"{LIBRARY_DOCS}#torch.library.custom_op", "aliasing"),
    auditing.INPUT: (f"{LIBRARY_DOCS}#torch.library.opcheck", None),
    "fullgraph": (TUTORIAL, "graph breaks"),
    "fake": (f"{LIBRARY_DOCS}#torch.library.register_fake", "fake kernels"),
    "cache": ("https://github.com/pytorch/pytorch/issues/187319", "compile caches"),
    "samples": (f"{LIBRARY_DOCS}#torch.library.opcheck", None),
    "doctor": ("https://github.com/torch-compile-lab/custom-ops-lab/issues", None),
}
FAKE_DOCS = f"{LIBRARY_DOCS}#torch.library.register_fake"


def learn_more(topic: str | None) -> str:
    """The lab's notebook that teaches ``topic``, as a finding's "learn more" line ("" for no topic)."""
    if topic is None:
        return ""
    lesson = notebook_about(topic)
    return f"the torch.compile × custom ops lab, notebook {lesson.number} ({lesson.title})"


def with_learn_more(finding):
    """``finding`` (a :class:`labkit.findings.Finding`) with the lesson of its kind, where it has none yet."""
    topic = DOCS.get(finding.kind, (None, None))[1]
    return finding if finding.learn_more or topic is None else dataclasses.replace(finding,
                                                                                 learn_more=learn_more(topic))
