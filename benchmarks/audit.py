"""How long ``labkit.audit(op, *inputs)`` takes: the first call in a fresh process, and warm calls.

    python -m benchmarks.audit          # prints one JSON line per scenario

Each scenario runs in a fresh Python process (a fresh kernel) over the machine's usual Inductor
cache directory, with and without ``labkit.setup()``'s warm-up (notebook 06 calls setup() first).
``first_s`` is the first audit, ``warm_s`` the median of three more audits of other fresh ops
(audit always recompiles: it bypasses the compile caches).
"""

from __future__ import annotations

import json
import subprocess
import sys

SCENARIO = r"""
import json, statistics, sys, time
import torch, labkit
if sys.argv[1] == "setup":
    labkit.warmup.run()                     # what labkit.setup() does
def op(i, **fields):
    return labkit.declare(name=f"bench_audit::op{i}", **fields)
kind = dict(correct=dict(writes=("x",), mutates_args=("x",), returns="none"),
            undeclared=dict(writes=("x",), returns="none"))[sys.argv[2]]
t0 = time.perf_counter()
labkit.audit(op(0, **kind), torch.randn(4))
first = time.perf_counter() - t0
warm = []
for i in range(1, 4):
    t0 = time.perf_counter()
    labkit.audit(op(i, **kind), torch.randn(4))
    warm.append(time.perf_counter() - t0)
print(json.dumps({"first_s": round(first, 2), "warm_s": round(statistics.median(warm), 2)}))
"""


def run(warmup: str, kind: str) -> dict:
    out = subprocess.run([sys.executable, "-c", SCENARIO, warmup, kind], capture_output=True, text=True,
                         check=True).stdout
    result = {"scenario": f"{kind} op, {'after setup() warm-up' if warmup == 'setup' else 'no warm-up'}",
              **json.loads(out.strip().splitlines()[-1])}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    for warmup in ("none", "setup"):
        for kind in ("correct", "undeclared"):
            run(warmup, kind)
