"""One process of the #187319 experiment: declare ``demo::bump``, compile, report as JSON.

Run as ``python -m labkit.cache_demo --declare pure --policy default --cache-dir DIR``.
Its kernel always adds 1 to ``x`` in place; ``--declare`` says whether it *declares*
that (``mutating``) or not (``pure``). Two runs over one cache dir show whether the
second run gets a fresh compile or the first run's stale artifact.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def experiment(declare: str, policy: str) -> dict:
    import torch

    from labkit import _torch_internals as internals
    from labkit import cache, ops

    cache.set_policy(policy)
    mutates = ("x",) if declare == "mutating" else ()
    bump = ops.declare(name="demo::bump", writes=("x",), mutates_args=mutates, returns="none")

    def f(x):
        bump(x)
        return x * 2 + 1  # real work, so Inductor compiles (and caches) a graph

    x = torch.zeros(4)
    before = internals.cache_counters()
    out = torch.compile(f, backend="inductor")(x)
    after = internals.cache_counters()
    return {
        "declare": declare, "policy": policy, "schema": bump.schema,
        "x_after": x.tolist(), "out": out.tolist(), "kernel_calls": bump.calls,
        "cache": {k: after[k] - before[k] for k in after},
        "cache_key_tag": torch.compiler.config.cache_key_tag,
    }


def run_in_subprocess(declare: str, policy: str, cache_dir: str, timeout: float = 300) -> dict:
    """Run :func:`experiment` in a fresh Python process that uses ``cache_dir``."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    env.pop("TORCH_COMPILE_CACHE_KEY_TAG", None)
    done = subprocess.run(
        [sys.executable, "-m", "labkit.cache_demo", "--declare", declare, "--policy", policy],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=os.path.dirname(os.path.dirname(__file__)))
    if done.returncode != 0:
        raise RuntimeError(f"the demo process failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--declare", choices=("pure", "mutating"), required=True)
    parser.add_argument("--policy", default="fingerprinted")
    args = parser.parse_args()
    print(json.dumps(experiment(args.declare, args.policy)))


if __name__ == "__main__":
    main()
