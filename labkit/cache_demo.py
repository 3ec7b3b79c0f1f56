"""One process of the #187319 experiment: declare ``demo::bump``, compile, report as JSON.

Run as ``python -m labkit.cache_demo --declare pure --policy default`` with
``TORCHINDUCTOR_CACHE_DIR`` set. Its kernel always adds 1 to ``x`` in place; ``--declare`` says
whether it *declares* that (``mutating``) or not (``pure``); ``--registration library`` registers
it the way vLLM and pytorch #187319's reporter do (``Library.define`` + ``impl`` + ``register_fake``)
instead of with ``labkit.declare``. Two runs over one cache dir show whether the
second run gets a fresh compile or the first run's stale artifact.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def _library_bump(mutating: bool):
    """``demo::bump`` registered with plain ``torch.library.Library``; returns (the op, its call counter)."""
    import torch

    calls = [0]

    def kernel(x):
        calls[0] += 1
        x.add_(1)

    lib = torch.library.Library("demo", "FRAGMENT")
    lib.define("bump(Tensor(a!) x) -> ()" if mutating else "bump(Tensor x) -> ()")
    lib.impl("bump", kernel, "CompositeExplicitAutograd")
    torch.library.register_fake("demo::bump", lambda x: None, lib=lib)
    _library_bump.keep = lib  # a Library that is garbage-collected takes its op with it (pytorch #139444)
    return torch.ops.demo.bump.default, calls


def experiment(declare: str, policy: str, registration: str = "labkit") -> dict:
    import torch

    from labkit import _torch_internals as internals
    from labkit import cache, ops

    cache.set_policy(policy)
    mutates = ("x",) if declare == "mutating" else ()
    if registration == "library":
        bump, calls = _library_bump(bool(mutates))
    else:
        bump = ops.declare(name="demo::bump", writes=("x",), mutates_args=mutates, returns="none")

    def f(x):
        bump(x)
        return x * 2 + 1  # real work, so Inductor compiles (and caches) a graph

    x = torch.zeros(4)
    before = internals.cache_counters()
    out = torch.compile(f, backend="inductor")(x)
    after = internals.cache_counters()
    return {
        "declare": declare, "policy": policy, "registration": registration,
        "schema": internals.schema_of(bump) if registration == "library" else bump.schema,
        "x_after": x.tolist(), "out": out.tolist(),
        "kernel_calls": calls[0] if registration == "library" else bump.calls,
        "cache": {k: after[k] - before[k] for k in after},
        "cache_key_tag": torch.compiler.config.cache_key_tag,
    }


def run_in_subprocess(declare: str, policy: str, cache_dir: str, timeout: float = 300,
                      registration: str = "labkit") -> dict:
    """Run :func:`experiment` in a fresh Python process that uses ``cache_dir``."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    env.pop("TORCH_COMPILE_CACHE_KEY_TAG", None)
    done = subprocess.run(
        [sys.executable, "-m", "labkit.cache_demo", "--declare", declare, "--policy", policy,
         "--registration", registration],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=os.path.dirname(os.path.dirname(__file__)))
    if done.returncode != 0:
        raise RuntimeError(f"the demo process failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--declare", choices=("pure", "mutating"), required=True)
    parser.add_argument("--policy", default="fingerprinted")
    parser.add_argument("--registration", choices=("labkit", "library"), default="labkit")
    args = parser.parse_args()
    print(json.dumps(experiment(args.declare, args.policy, args.registration)))


if __name__ == "__main__":
    main()
