"""``torch.library.opcheck``'s tests as findings, each with why and the fix.

Not here: running opcheck (:mod:`labkit.checks`), and advice (:mod:`.advice`).
"""

from __future__ import annotations

import re

from .. import checks
from ..findings import Finding
from .advice import _opcheck_advice
from .calls import Call, _holds_nan
from .vocabulary import FAKE_DOCS, NOTE, OPCHECK


def _opcheck_findings(overload, call: Call) -> list[Finding]:
    nan_inputs = [name for name, value in call.named(overload) if _holds_nan(value)]
    findings = []
    for test, (outcome, detail) in checks.opcheck_details(overload, call.args, kwargs=call.kwargs).items():
        if outcome != "ok":
            unsupported = re.search(r"not implemented for '(\w+)'", outcome)
            if unsupported:  # the op ran eagerly on these inputs: what failed is opcheck's own work around it
                findings.append(Finding(NOTE, f"opcheck's {test} cannot run on {unsupported.group(1)} inputs here: "
                                        f"an operation of the test itself has no kernel for them (torch: "
                                        f"{outcome[len('FAIL: '):][:120]}); a correct op fails it too",
                                        "a limit of opcheck, not a finding about the op", "audit again with "
                                        "inputs of a dtype every kernel has (float32) to run that test"))
                continue
            why, fix = _opcheck_advice(test, outcome, overload)
            if nan_inputs and "are different" in outcome:
                fix = (f"first rerun on inputs without NaN: {', '.join(nan_inputs)} holds NaN, and opcheck "
                       f"compares outputs with NaN != NaN, so this can be a false alarm")
            findings.append(Finding(f"{OPCHECK}:{test}", outcome[len("FAIL: "):], why, fix, detail=detail,
                                    docs=FAKE_DOCS if test == "test_faketensor" else ""))
    return findings
