"""labkit doctor on code nobody here wrote: bitsandbytes 0.50.2's CPU ops, its verdicts held against opcheck's.

The doctor runs as a user runs it, ``python -m labkit doctor tools/real_ops/bitsandbytes_samples.py --json``, in a
fresh process (the samples module imports bitsandbytes, so the doctor sees every op it registers). For every
overload with samples, opcheck's verdict must be the doctor's on opcheck's tests, and everything the doctor finds
beyond them must be what docs/audit-vs-opcheck.md and docs/doctor.md account for (each judged there). The overloads
without samples (no CPU kernel in 0.50.2) must be skipped, never passed.

bitsandbytes is not in CI's environment (about 60 s on 2 cores, past CI's 10-minute budget; installing it
there must not move the reference torch): this skips there, as tests/labkit/test_audit_third_party.py does. Run it
in a throwaway venv (docs/doctor.md):

    python -m venv /tmp/ops && /tmp/ops/bin/pip install torch==2.13.0 bitsandbytes==0.50.2 -c <(echo torch==2.13.0)
    /tmp/ops/bin/pip install --no-deps -e . pytest && /tmp/ops/bin/python -m pytest --noconftest -o addopts= \\
        tests/labkit/test_doctor_third_party.py
"""
import importlib
import json
import os
import subprocess
import sys

import pytest

from repo import ROOT

# What the doctor finds beyond opcheck on bitsandbytes 0.50.2 (torch 2.13.0), per overload; docs/doctor.md says why
# each is right. Every other overload with samples: nothing beyond opcheck, which passes them all.
BEYOND_OPCHECK = {
    # declares g (and qmap1, qmap2) written, which the CPU kernel only reads; a clone of one written argument
    # passed as another written one is computed wrongly by Inductor before torch 2.15 (docs/audit-vs-opcheck.md)
    "bitsandbytes::optimizer_update_32bit.default": {"declaration", "aliasing"},
    "bitsandbytes::optimizer_update_8bit_blockwise.default": {"declaration", "aliasing"},
    # the fake kernel promises float32 whatever the dtype of stats; the CPU kernel returns float64 for float64 stats
    "bitsandbytes::int8_vectorwise_dequant.default": {"fake:dtype"},
    # threshold > 0: the number of outlier columns depends on the data (new_dynamic_size): a graph break by default
    "bitsandbytes::int8_vectorwise_quant.default": {"fullgraph"},
}
NO_SAMPLES = {  # not in SAMPLES (the first four: no CPU kernel in 0.50.2): skipped, with the sentence saying so
    "bitsandbytes::dequantize_4bit.out", "bitsandbytes::dequantize_blockwise.out", "bitsandbytes::gemv_4bit.out",
    "bitsandbytes::int8_double_quant.default", "bitsandbytes::int8_mixed_scaled_mm.default",
}


@pytest.mark.slow
def test_the_doctor_agrees_with_opcheck_on_bitsandbytes_and_finds_only_what_the_docs_account_for(tmp_path):
    bnb = pytest.importorskip("bitsandbytes")
    assert bnb.__version__ == "0.50.2", "the verdicts below were judged on bitsandbytes 0.50.2"
    import torch

    from labkit import checks

    out = tmp_path / "doctor.json"
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor", "tools/real_ops/bitsandbytes_samples.py",
                           "--json", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 1, f"findings mean exit status 1:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    report = json.loads(out.read_text())
    assert report["environment"]["torch"].startswith("2.13.0"), "installing bitsandbytes must not move torch"
    results = {r["op"]: r for r in report["results"]}
    assert {op for op, r in results.items() if r["verdict"] == "skip"} == NO_SAMPLES
    samples = importlib.import_module("real_ops.bitsandbytes_samples").SAMPLES   # tools/ is on pytest's path
    wrong = []
    for qualname, calls in samples.items():
        name = qualname if "." in qualname.partition("::")[2] else f"{qualname}.default"
        namespace, _, rest = name.partition("::")
        op_name, _, overload_name = rest.partition(".")
        overload = getattr(getattr(getattr(torch.ops, namespace), op_name), overload_name)
        opcheck_failed = sorted({test for args, kwargs in calls
                                 for test, outcome in checks.opcheck(overload, args, kwargs=kwargs).items()
                                 if outcome != "ok"})
        found = {f["check"] for f in results[name]["findings"]}
        doctor_opcheck = sorted(c.removeprefix("opcheck:") for c in found if c.startswith("opcheck:"))
        beyond = {c for c in found if not c.startswith("opcheck:")}
        if doctor_opcheck != opcheck_failed or beyond != BEYOND_OPCHECK.get(name, set()):
            wrong.append(f"{name}: opcheck failed {opcheck_failed}; the doctor found {sorted(found)}")
        expected_verdict = "fail" if opcheck_failed or BEYOND_OPCHECK.get(name) else "pass"
        if results[name]["verdict"] != expected_verdict:
            wrong.append(f"{name}: verdict {results[name]['verdict']}, expected {expected_verdict}")
    assert not wrong, "\n".join(wrong)
