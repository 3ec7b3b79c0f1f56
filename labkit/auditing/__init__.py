"""``labkit.audit(op, *sample_args, **sample_kwargs)``: check an op's declaration the way torch.compile uses it.

It runs, and reports as a list of findings (problem, why it matters under compile, fix, and what the
compiled runs got wrong because of it where they did):

1. the kernel against its declaration: which tensor arguments (or ``Tensor[]`` lists, or keyword
   arguments such as ``out=``) a real call changes, versus the ones the schema marks as written
   (``Tensor(a!)``, ``Tensor(a!)[]``); NaN counts as equal to NaN;
2. each output's memory against each input's (the span of bytes each strided tensor reaches, not storages), where
   the schema declares no alias between them: an output made from an input's memory in a new storage passes
   torch's own check (torch's own ops, and two outputs sharing memory with each other, are not judged);
3. every ``torch.library.opcheck`` test;
4. eager vs compiled, with ``aot_eager`` and ``inductor``, static and dynamic shapes, on a
   program that discards the op's result (the case where a wrong declaration bites), with the
   compile caches bypassed so no stale artifact can answer;
5. a clone of a written argument passed in another argument's place, compiled with Inductor
   (pytorch #198031).

These are :data:`CHECKS`, in order: a new check is one entry there, with its official page and lesson, and its
findings' kind one of the named kinds (:data:`DECLARATION`, ...). The same registry holds two checks only
``labkit doctor`` runs (``doctor_only``): ``fullgraph=True``, and the fake kernel on the meta device and a second
dtype; ``audit`` skips them. It never raises at a learner: anything that goes wrong becomes a
finding. What it cannot see — a Python side effect in a "pure" op, a write that only happens for other
inputs — it says so.

A package of one-job modules, lowest first: :mod:`.vocabulary` (the kinds, the pages, the compiled runs),
:mod:`.advice` (torch's messages into why and fix), :mod:`.report` (:class:`AuditReport`), :mod:`.calls` (a call's
inputs and the programs around it), the checks by subject (:mod:`.declaration`, :mod:`.opchecks`,
:mod:`.compiled`, :mod:`.clones`, :mod:`.doctor_checks`), :mod:`.registry` (:data:`CHECKS`, :func:`run_check`) and
:mod:`.runner` (:func:`audit`). This file gathers the public names.

Not here: running and comparing the compiled programs (:mod:`labkit.stages`), private torch
(:mod:`labkit._torch_internals`), HTML (:func:`labkit.render.audit_html` draws a report) and printing: a report
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
