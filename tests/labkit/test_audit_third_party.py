"""audit beside opcheck on bitsandbytes' and torchao's CPU operators, where they are installed (not in CI).

The comparison and its samples are tools/audit_vs_opcheck.py and tools/real_ops/; docs/audit-vs-opcheck.md
holds the measured table. Each call must agree with opcheck, or differ only where audit names opcheck's own
limit on those inputs.
"""
import importlib

import pytest


def _calls(package):
    pytest.importorskip(package)
    samples = importlib.import_module(f"real_ops.{package}_samples").SAMPLES  # tools/ is on pytest's pythonpath
    return [(name, args, kwargs) for name, calls in samples.items() for args, kwargs in calls]


@pytest.mark.parametrize("package", ["bitsandbytes", "torchao"])
def test_audit_agrees_with_opcheck_on_a_real_packages_ops(package):
    compare = importlib.import_module("audit_vs_opcheck").compare if _calls(package) else None
    rows = [compare(name, args, kwargs) for name, args, kwargs in _calls(package)]
    wrong = [f"{r['op']} ({r['inputs']}): opcheck failed {r['opcheck_failed']}\n{r['report']}"
             for r in rows if r["verdict"] == "DIFFER"]
    assert not wrong, "\n\n".join(wrong)
    more = {f.split("]")[0] + "]" for r in rows if r["verdict"] == "audit finds more" for f in r["audit_other"]}
    assert more <= {"[declaration]", "[aliasing]"}, f"audit adds findings of a kind docs/audit-vs-opcheck.md does " \
                                                    f"not account for: {more}"
