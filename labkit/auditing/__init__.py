"""``labkit.audit(op, *sample_args, **sample_kwargs)``: check an op's declaration the way torch.compile uses it.

It runs the checks of :data:`CHECKS` below not marked "the doctor only", in order, and reports a list of findings
(problem, why it matters under compile, fix, and what the compiled runs got wrong because of it where they did):

.. BEGIN checks: generated from labkit.auditing.registry.CHECKS by --facts: do not edit

1. ``declaration``: the arguments a real call writes against the ones its schema declares written
2. ``memory``: each output's memory against each input's (bytes, not storages) where the schema declares no alias
3. ``opcheck``: every torch.library.opcheck test
4. ``compile``: eager against torch.compile, aot_eager and Inductor, static and dynamic shapes, on a program that
   discards the op's result, with the compile caches bypassed
5. ``aliasing``: a clone of a written argument passed in another argument's place, under Inductor
6. ``fullgraph`` (the doctor only): a graph break at the op, named with fullgraph=True instead of passed
7. ``fake`` (the doctor only): the fake kernel on the meta device and on a second dtype, which it must follow

.. END checks

The declaration check covers ``Tensor[]`` lists and keyword arguments such as ``out=`` (``Tensor(a!)``,
``Tensor(a!)[]``), with NaN equal to NaN; the memory check judges neither torch's own ops nor two outputs sharing
memory with each other. A new check is one entry in :data:`CHECKS`, with what it looks at, its official page and
lesson, and its findings' kind one of the named kinds (:data:`DECLARATION`, ...); ``labkit doctor`` runs every
check, ``audit`` skips the ``doctor_only`` ones (they compile more, and its learners meet them in lessons). It
never raises at a learner: anything that goes wrong becomes a finding. What it cannot see — a Python side effect in
a "pure" op, a write that only happens for other inputs — it says so.

A package of one-job modules, lowest first: :mod:`.vocabulary` (the kinds, the pages, the compiled runs),
:mod:`.advice` (torch's messages into why and fix), :mod:`.report` (:class:`AuditReport`), :mod:`.calls` (a call's
inputs and the programs around it), the checks by subject (:mod:`.declaration`, :mod:`.opchecks`,
:mod:`.compiled`, :mod:`.clones`, :mod:`.doctor_checks`), :mod:`.registry` (:data:`CHECKS`, :func:`run_check`) and
:mod:`.runner` (:func:`audit`). This file gathers the public names.

Not here: running and comparing the compiled programs (:mod:`labkit.stages`), private torch
(:mod:`labkit._torch`), HTML (:func:`labkit.render.audit_html` draws a report) and printing: a report
is data, with its one-paragraph text, for whoever shows it.
"""
from .advice import ABOVE_FIRST, TAGGED_RETURN
from .calls import Call, discarding_call
from .registry import CHECKS, Check, run_check
from .report import AuditReport
from .runner import audit, torch_logs_held_back
from .vocabulary import (ALIASING, CANNOT_SEE, COMPILE, COMPILE_MODES, DECLARATION, EAGER, FAKE, FAKE_DOCS, FULLGRAPH,
                         GRAPH_BREAK, GRAPH_BREAK_NOTE, GRAPH_BREAK_SOME, INPUT, INPUT_DOCS, LIBRARY_DOCS, MEMORY, NOTE,
                         OPCHECK, TUTORIAL, learn_more)
from ..findings import Finding

__all__ = ["audit", "AuditReport", "Finding", "Check", "CHECKS", "run_check", "Call", "discarding_call",
           "torch_logs_held_back", "learn_more", "ABOVE_FIRST", "TAGGED_RETURN", "CANNOT_SEE", "COMPILE_MODES",
           "GRAPH_BREAK", "GRAPH_BREAK_NOTE", "GRAPH_BREAK_SOME", "LIBRARY_DOCS", "TUTORIAL", "FAKE_DOCS", "INPUT_DOCS",
           "EAGER", "DECLARATION", "OPCHECK", "COMPILE", "ALIASING", "MEMORY", "INPUT", "NOTE", "FULLGRAPH", "FAKE"]
