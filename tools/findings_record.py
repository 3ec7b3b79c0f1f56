"""Record what ``labkit.audit`` and ``labkit doctor`` report on a fixed set of ops: a refactor must change none of it.

    python tools/findings_record.py            # compare with the committed record; exit 1 naming what differs
    python tools/findings_record.py --write    # write the record (after a change that is meant to change a finding)

The record (tests/labkit/findings_record.json) holds, for each (op, sample): every finding's check, kind,
problem, why, fix and what torch.compile did, audit's checks run and its "not checkable here" text; then the
doctor's JSON report and JUnit XML on tools/findings_record_ops.py. No timings, versions or dates; memory addresses,
line numbers and this folder's path are blanked, so that a record is the same on every run of one torch.

The ops: the lab's own declarations (labkit.experiments.DECLARATIONS), the module-level ops and the broken ops
of PyTorch's opcheck tests in tests/labkit/test_audit_real_ops.py, the first sample of every op of torch's
custom_op_db, an op that breaks the graph, and the ops of tools/audit_vs_opcheck.py's packages where installed
(bitsandbytes, torchao: not in this lab's environment, so not in its record). Taken on the reference torch only:
torch's words differ between releases.
"""

import argparse
import difflib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from repo import ROOT

RECORD = ROOT / "tests" / "labkit" / "findings_record.json"
# Where the CI variable is set (GitHub Actions, this project's CI), torch 2.13 raises instead of warning when a
# custom op's output aliases an input on a compiled function's first call (torch._functorch.config
# .error_on_custom_op_aliasing), so opcheck's test_aot_dispatch_dynamic fails too. The record is of the default
# (a learner's machine); pinned before torch loads, the doctor's process inherits it.
os.environ["TORCHINDUCTOR_ERROR_ON_CUSTOM_OP_ALIASING"] = "0"
# The doctor's module runs from a fixed place: torch quotes an op's file in a message that labkit cuts at a length,
# so a longer checkout path would move the cut (CI's clean clone did).
OPS = Path(tempfile.gettempdir()) / "labkit_findings_record" / "findings_record_ops.py"
FIELDS = ("check", "problem", "why", "fix", "compiled")


def blank(text: str) -> str:
    """``text`` without what changes between runs of the same code: addresses, line numbers, the paths of this folder,
    of the doctor's module and of the Python environment."""
    text = text.replace(str(OPS.parent), "<ops>").replace(sys.prefix, "<venv>").replace(str(ROOT), "<lab>")
    text = re.sub(r"python3\.\d+", "python3.?", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    text = re.sub(r"(\.py:|\bline )\d+\b", r"\g<1>?", text)
    return re.sub(r"/tmp/[\w./-]+", "<tmp>", text)


def _finding(finding) -> dict:
    recorded = {name: blank(str(getattr(finding, name, ""))) for name in FIELDS}
    recorded["kind"] = finding.check.split(":")[0]
    recorded["detail"] = blank(getattr(finding, "detail", "").strip().split("\n")[0])   # torch's whole message
    return recorded


def _audit(label: str, op, *args, **kwargs) -> dict:
    import labkit
    from labkit.describe import describe_value

    report = labkit.audit(op, *args, **kwargs)
    inputs = ", ".join([describe_value(a) for a in args] + [f"{k}={describe_value(v)}" for k, v in kwargs.items()])
    return {"op": label, "sample": inputs, "checks_run": report.checks_run,
            "not_checkable": blank(report.cannot_see), "findings": [_finding(f) for f in report.findings]}


def _test_module(name: str):
    """A test file of tests/labkit imported by path (its ops are defined when it is imported)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "labkit" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def audits() -> list[dict]:
    import torch

    import labkit
    from labkit.experiments import DECLARATIONS

    records = []
    for label, (_, fields) in DECLARATIONS.items():
        op = labkit.declare(name=f"rec_lab::{re.sub(r'[^a-z]+', '_', label).strip('_')}", **fields)
        records.append(_audit(f"lab declaration: {label}", op, torch.arange(1.0, 5.0)))

    real = _test_module("test_audit_real_ops")
    records.append(_audit("t_real::add_one_to_all", real.add_one_to_all, [torch.ones(2), torch.ones(3)]))
    records.append(_audit("t_real::add_one_quietly", real.add_one_quietly, [torch.ones(2), torch.ones(3)]))
    records.append(_audit("t_real::reads_all", real.reads_all, [torch.ones(2)]))
    records.append(_audit("t_real::double_into_quietly", torch.ops.t_real.double_into_quietly.default,
                          torch.arange(3.0), out=torch.zeros(3)))
    records.append(_audit("t_real::sine", real.sine, torch.arange(3.0)))
    for case, make in real.BROKEN.items():
        records.append(_audit(f"opcheck's broken op: {case}", make(), real._sample()))

    @torch.library.custom_op("rec_lab::count_over_declared", mutates_args=("x",))
    def count_over_declared(x: torch.Tensor) -> int:
        return int((x > 0).sum())

    count_over_declared.register_fake(lambda x: torch.library.get_ctx().new_dynamic_size())
    records.append(_audit("graph break: count_over_declared", count_over_declared, torch.tensor([1.0, -1.0, 2.0])))

    @torch.library.custom_op("rec_lab::reverse_into", mutates_args=("dst",))
    def reverse_into(src: torch.Tensor, dst: torch.Tensor) -> None:   # reads src while it writes dst (#198031)
        n = src.shape[0]
        for k in range(n):
            dst[n - 1 - k] = src[k]

    reverse_into.register_fake(lambda src, dst: None)
    records.append(_audit("aliasing: reverse_into", reverse_into, torch.zeros(8), torch.zeros(8)))
    records.append(_audit("refused: torch.sin", torch.sin, torch.ones(2)))

    from torch.testing._internal.custom_op_db import custom_op_db
    for info in custom_op_db:
        torch.manual_seed(0)   # its sample inputs are random
        sample = next(iter(info.sample_inputs("cpu", torch.float32, requires_grad=info.supports_autograd)))
        records.append(_audit(f"custom_op_db: {info.name}", info.op, sample.input, *sample.args, **sample.kwargs))
    return records


def doctor() -> dict:
    from labkit.doctor import formats, running

    OPS.parent.mkdir(exist_ok=True)
    shutil.copy(ROOT / "tools" / "findings_record_ops.py", OPS)
    report = running.run(str(OPS), say=None)
    data = formats.as_dict(report)
    data.pop("environment"), data.pop("seconds"), data.pop("warmup_seconds")
    data["targets"] = [blank(target) for target in data["targets"]]
    for result in data["results"]:
        result.pop("seconds")
        result["found_in"] = blank(result["found_in"])
        result["notes"] = [blank(n) for n in result["notes"]]
        for finding in result["findings"]:
            for name in list(finding):
                finding[name] = blank(finding[name]) if isinstance(finding[name], str) else finding[name]
            finding["detail"] = blank(finding["detail"].strip().split("\n")[0])
    xml = re.sub(r' time="[\d.]+"', "", formats.junit_xml(report))
    xml = re.sub(r"<properties>.*?</properties>", "<properties />", xml, flags=re.S)
    xml = re.sub(r"^torch \S+ · labkit .*$", "torch ? · labkit ?", xml, flags=re.M)   # a finding's header line
    return {"json": data, "junit_xml": blank(xml).splitlines()}


def record() -> dict:
    import torch

    import labkit

    labkit.cache.enable()
    return {"torch": torch.__version__.split("+")[0], "audit": audits(), "doctor": doctor()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the record instead of comparing with it")
    args = parser.parse_args(argv)
    now = json.dumps(record(), indent=1, ensure_ascii=False) + "\n"   # in the order the reports give
    if args.write:
        RECORD.write_text(now)
        print(f"wrote {RECORD.relative_to(ROOT)}")
        return 0
    before = RECORD.read_text()
    if json.loads(before)["torch"] != json.loads(now)["torch"]:
        print(f"the record was taken on torch {json.loads(before)['torch']}; this is {json.loads(now)['torch']}: "
              "torch's words differ between releases, so nothing is compared")
        return 0
    if now == before:
        print(f"{RECORD.relative_to(ROOT)}: every finding as recorded")
        return 0
    sys.stdout.writelines(difflib.unified_diff(before.splitlines(True), now.splitlines(True), "recorded", "now"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
