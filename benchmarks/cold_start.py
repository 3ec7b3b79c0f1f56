"""How long a learner waits for the first Inductor compile, with and without labkit's warm-up.

The warm-up runs synchronously in ``labkit.setup()`` (never on a thread: pytorch #105943).

    python -m benchmarks.cold_start          # prints one JSON line per scenario

Each scenario runs in a fresh Python process (a fresh kernel), over the machine's usual
Inductor cache directory (as a learner's second notebook would) or an empty one (a learner's
very first notebook on a new machine).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

SCENARIO = r"""
import json, sys, time
t0 = time.perf_counter()
import torch, labkit
t1 = time.perf_counter()
warm = sys.argv[1] == "warm"
if warm:
    labkit.warmup.run()                     # what labkit.setup() does, with its progress line
op = labkit.declare(name="bench::bump", writes=("x",), mutates_args=("x",), returns="none")
def f(x):
    op(x)
    return x * 2
t2 = time.perf_counter()
labkit.compile_and_compare(f, torch.ones(8), backend="inductor")
t3 = time.perf_counter()
labkit.compile_and_compare(lambda x: (op(x), x + 1)[1], torch.ones(8), backend="inductor")
t4 = time.perf_counter()
print(json.dumps({"import_s": round(t1 - t0, 2), "warmup_s": round(t2 - t1, 2), "first_inductor_s": round(t3 - t2, 2),
                  "second_inductor_s": round(t4 - t3, 2)}))
"""


def run(label: str, warm: bool, reading_s: float, cache_dir: str | None) -> dict:
    env = None
    if cache_dir:
        import os
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", SCENARIO, "warm" if warm else "cold", str(reading_s)],
                         capture_output=True, text=True, env=env, check=True).stdout
    result = {"scenario": label, **json.loads(out.strip().splitlines()[-1])}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    empty = tempfile.mkdtemp(prefix="bench-cache-")
    run("empty cache dir, no warm-up", False, 0, empty)
    run("empty cache dir, setup()'s warm-up", True, 0, tempfile.mkdtemp(prefix="bench-cache-"))
    run("usual cache dir, no warm-up", False, 0, None)
    run("usual cache dir, setup()'s warm-up", True, 0, None)
