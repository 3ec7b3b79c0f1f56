"""How long an attendee waits for the workshop pre-flight: wall time of ``python -m labkit.preflight``.

    python -m benchmarks.preflight            # 3 runs; prints one JSON line per run, then the median
    python -m benchmarks.preflight --runs 5

Each run is a fresh ``python -m labkit.preflight`` from the lab's folder, with this Python (use the lab's
``.venv/bin/python``), timed from outside, as an attendee experiences it: imports, the widget check, the
``aot_eager`` and ``inductor`` compiles in its own process over the usual Inductor cache, and a fresh child
Python that runs a notebook's first cells over an *empty* Inductor cache (the check a crash is caught by).
``TORCHINDUCTOR_VEC_ISA_OK`` is removed from the environment: a learner's machine does not set it, so the
child checks the compiler's vector instructions, as a learner's first kernel does. The load average is
printed beside each run: on a shared machine the figure is not a laptop's.
"""

from __future__ import annotations

import pathlib

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

if __package__ != "benchmarks":  # run as a script: the lab's folder, and so tools/, is not on sys.path
    raise SystemExit(f"Run it from the lab's folder as a module: python -m benchmarks.{pathlib.Path(__file__).stem}")
from tools.repo import ROOT



def one_run() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_VEC_ISA_OK"}
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "labkit.preflight"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    wall = time.perf_counter() - start
    child = re.search(r"first Inductor compile \((\d+) s", done.stdout)
    return {"wall_s": round(wall, 1), "rc": done.returncode, "child_s": int(child.group(1)) if child else None,
            "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
            "last_line": (done.stdout.strip().splitlines() or [""])[-1]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    runs = []
    for _ in range(args.runs):
        runs.append(one_run())
        print(json.dumps(runs[-1]), flush=True)
    print(json.dumps({"median_wall_s": round(statistics.median(r["wall_s"] for r in runs), 1),
                      "min_wall_s": min(r["wall_s"] for r in runs), "max_wall_s": max(r["wall_s"] for r in runs),
                      "cpus": os.cpu_count(), "python": sys.version.split()[0],
                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}))
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
