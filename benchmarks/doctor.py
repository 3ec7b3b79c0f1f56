"""How long ``labkit doctor`` takes per op overload, with ``torch.library.opcheck``'s time on the same inputs beside it.

    python -m benchmarks.doctor                 # eight small overloads of every kind, in a fresh process
    python -m benchmarks.doctor --bitsandbytes  # bitsandbytes' CPU ops (where it is installed: a throwaway venv)
    python -m benchmarks.doctor --cold          # over an empty Inductor cache directory (CI's first run)

Each run is a fresh Python process over the machine's usual Inductor cache directory. It prints one JSON line:
the Inductor warm-up the doctor pays once (``warmup_s``), the median and the slowest seconds the doctor spent per
overload once warm (``doctor_median_s``, ``doctor_max_s``), and opcheck's median on the same samples
(``opcheck_median_s``: its four default tests, run after the doctor, so warm too). Target: a median of at most
2 s per overload on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

if __package__ != "benchmarks":  # run as a script: the lab's folder, and so tools/, is not on sys.path
    raise SystemExit(f"Run it from the lab's folder as a module: python -m benchmarks.{pathlib.Path(__file__).stem}")

from tools.repo import ROOT  # noqa: E402

OPS = '''
import torch

lib = torch.library.Library("bench_doctor", "FRAGMENT")

@torch.library.custom_op("bench_doctor::scale", mutates_args=())
def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha

scale.register_fake(lambda x, alpha: torch.empty_like(x))

@torch.library.custom_op("bench_doctor::bump", mutates_args=("x",))
def bump(x: torch.Tensor) -> None:
    x.add_(1)

@torch.library.custom_op("bench_doctor::undeclared", mutates_args=())
def undeclared(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x)

@torch.library.custom_op("bench_doctor::matmul_bias", mutates_args=())
def matmul_bias(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    return a @ b + (0 if bias is None else bias)

matmul_bias.register_fake(lambda a, b, bias=None: a.new_empty(a.shape[0], b.shape[1]))

@torch.library.custom_op("bench_doctor::into", mutates_args=("out",))
def into(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x.sin())

lib.define("twice(Tensor x) -> Tensor")
lib.define("twice.scaled(Tensor x, float s) -> Tensor")
lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
lib.impl("twice.scaled", lambda x, s: x * s, "CompositeExplicitAutograd")
torch.library.register_fake("bench_doctor::twice", lambda x: torch.empty_like(x), lib=lib)
torch.library.register_fake("bench_doctor::twice.scaled", lambda x, s: torch.empty_like(x), lib=lib)

@torch.library.custom_op("bench_doctor::rows", mutates_args=())
def rows(x: torch.Tensor) -> torch.Tensor:
    return x.sum(1)

rows.register_fake(lambda x: x.new_empty(x.shape[0]))

SAMPLES = {
    scale: [((torch.randn(8), 2.0), {})],
    bump: [((torch.randn(8),), {})],
    undeclared: [((torch.randn(8), torch.zeros(8)), {})],
    matmul_bias: [((torch.randn(4, 3), torch.randn(3, 5)), {"bias": torch.randn(5)})],
    into: [((torch.randn(8), torch.zeros(8)), {})],
    "bench_doctor::twice": [((torch.randn(8),), {})],
    "bench_doctor::twice.scaled": [((torch.randn(8), 3.0), {})],
    rows: [((torch.randn(4, 6),), {})],
}
'''

SCENARIO = r"""
import json, statistics, sys, time
import torch
from labkit import doctor
module = sys.argv[1]
start = time.perf_counter()
report = doctor.run([module], say=None)
total = time.perf_counter() - start
opcheck = []
for result in report.results:
    if result.verdict == "skip" or not result.samples:
        continue
    qualname, _, name = result.op.partition(".")
    ns, op = qualname.split("::")
    overload = getattr(getattr(getattr(torch.ops, ns), op), name)
    t0 = time.perf_counter()
    for sample in result.samples:
        try:
            torch.library.opcheck(overload, sample.args, sample.kwargs)
        except Exception:
            pass
    opcheck.append(time.perf_counter() - t0)
checked = [r.seconds for r in report.results if r.verdict != "skip"]
print(json.dumps({
    "overloads": len(report.results), "checked": len(checked), "counts": report.counts(),
    "warmup_s": round(report.warmup_seconds or 0, 2), "doctor_total_s": round(total, 1),
    "doctor_median_s": round(statistics.median(checked), 2), "doctor_max_s": round(max(checked), 2),
    "opcheck_median_s": round(statistics.median(opcheck), 3),
    "per_overload": {r.op: [r.verdict, round(r.seconds, 2)] for r in report.results}}))
"""


def run(module: str, cwd: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([cwd, str(ROOT), str(ROOT / "tools")]))
    if "--cold" in sys.argv:
        env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="doctor-bench-cache-")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCENARIO, module], capture_output=True, text=True, env=env,
                          cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"the scenario failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = round(time.perf_counter() - started, 1)
    result["load_before"] = os.getloadavg()[0]
    result["date"] = time.strftime("%Y-%m-%d")
    result["inductor_cache"] = "empty" if "--cold" in sys.argv else "the machine's"
    return result


if __name__ == "__main__":
    if "--bitsandbytes" in sys.argv:
        print(json.dumps({"scenario": "bitsandbytes 0.50.2's CPU ops",
                          **run("real_ops.bitsandbytes_samples", str(ROOT / "tools"))}))
    else:
        with tempfile.TemporaryDirectory() as folder:
            (pathlib.Path(folder) / "bench_doctor_ops.py").write_text(OPS)
            print(json.dumps({"scenario": "eight small overloads of every kind", **run("bench_doctor_ops", folder)}))
