"""Eager against compiled: the op in a program that discards its result, with aot_eager and Inductor, static and
dynamic shapes.

Not here: telling other findings what the compiled runs did (:mod:`.runner`).
"""

from __future__ import annotations

import re

from .. import _torch as internals
from ..cache import TORCH_OP_NAMESPACES
from ..findings import Finding
from ..stages import compile_and_compare
from .advice import MESSAGE_ADVICE, _alias_annotation_advice
from .calls import Call, discarding_call
from .vocabulary import COMPILE, COMPILE_MODES, GRAPH_BREAK_NOTE, GRAPH_BREAK_SOME, NOTE


def _compile_findings(overload, call: Call) -> list[Finding]:
    names, values = zip(*call.named(overload)) if call.args or call.kwargs else ((), ())
    discards_result = discarding_call(overload, names, len(call.args), list(call.kwargs))

    failures: dict[str, list[str]] = {}
    details: dict[str, str] = {}   # each compile error's whole message, as torch raised it
    qualname, held = internals.qualname_of(overload), []
    for backend, dynamic in COMPILE_MODES:
        report = compile_and_compare(discards_result, *values, backend=backend, dynamic=dynamic)
        label = f"{backend}, dynamic={dynamic}"
        if report.ok:
            held.append((label, bool(report.fate(qualname)["dynamo"])))
        if report.error is not None:
            problem = f"torch.compile raised {report.error.type_name}: {report.error.message}"
            failures.setdefault(problem, []).append(label)
            details.setdefault(problem, report.error.full)
        elif report.verdict is not None and not report.verdict.agree:
            problem = f"compiled result differs from eager: {'; '.join(report.verdict.problems)}"
            failures.setdefault(problem, []).append(label)
    found = [Finding(COMPILE, f"{problem} ({' / '.join(labels)})",
                     "this is what a user of the op would see under torch.compile",
                     _alias_annotation_advice(overload)[1] if re.search(MESSAGE_ADVICE[0][0], problem) else
                     "fix the declaration findings; a compile error usually means a missing or wrong fake kernel",
                     detail=details.get(problem, ""))
             for problem, labels in failures.items()]
    torch_own = qualname.partition("::")[0] in TORCH_OP_NAMESPACES
    broke = [label for label, kept in held if not kept]
    if not failures and broke and not torch_own:   # torch's own ops are not counted by name
        note = GRAPH_BREAK_NOTE if len(broke) == len(COMPILE_MODES) else GRAPH_BREAK_SOME.format(
            k=len(broke), n=len(COMPILE_MODES), runs=" / ".join(broke))
        found.append(Finding(NOTE, note, "", "compile with fullgraph=True to see why", broke_in=len(broke)))
    return found
