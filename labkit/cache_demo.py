"""One process of the #187319 experiment: declare ``demo::bump``, compile, report as JSON.

Run as ``python -m labkit.cache_demo --declare pure --policy default`` with
``TORCHINDUCTOR_CACHE_DIR`` set. Its kernel always adds 1 to ``x`` in place; ``--declare`` says
whether it *declares* that (``mutating``) or not (``pure``); ``--registration library`` registers
it the way vLLM and pytorch #187319's reporter do (``Library.define`` + ``impl`` + ``register_fake``)
instead of with ``labkit.declare``. Two runs over one cache dir show whether the
second run gets a fresh compile or the first run's stale artifact.

:func:`run_together` starts several such processes at once, so that their imports (seconds each)
overlap; a run that shares its cache directory with an earlier one still compiles only after that
one's process has exited (``--wait``: it imports, declares, then waits for the word ``go`` on stdin),
exactly as if it had been started then. The demo's graph compiles no C++ (``torch.sort`` is handed to
ATen), so a child with a fresh cache directory has no compiler checks to pay for.

Not here: what the runs mean. The lesson (and :mod:`labkit.naming` in-process) reads the JSON; this
module is the child process and its starter, nothing a notebook runs in its own kernel.
"""

from __future__ import annotations

import argparse
import atexit
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


def experiment(declare: str, policy: str, registration: str = "labkit", ready=None) -> dict:
    """Declare, compile once, report. ``ready``, if given, is called just before the compile (and may block)."""
    import torch

    from labkit import _torch as internals
    from labkit import cache, ops

    cache.set_policy(policy)
    mutates = ("x",) if declare == "mutating" else ()
    if registration == "library":
        bump, calls = _library_bump(bool(mutates))
    else:
        bump = ops.declare(name="demo::bump", writes=("x",), mutates_args=mutates, returns="none")

    def f(x):
        bump(x)
        # real work, so Inductor compiles (and caches) a graph; an op it hands to ATen (on the CPU), so no
        # C++ compiler run per fresh cache directory (x * 2 + 1 costs one, a second or so)
        return torch.sort(x).values

    x = torch.zeros(4)
    if ready is not None:
        internals.import_compiler()  # the slow imports, before waiting: they touch no cache directory
        ready()
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


def _start(declare: str, policy: str, cache_dir: str, registration: str, wait: bool) -> subprocess.Popen:
    """A fresh Python process running :func:`experiment` over ``cache_dir``; with ``wait``, it waits for 'go'."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    env.pop("TORCH_COMPILE_CACHE_KEY_TAG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "labkit.cache_demo", "--declare", declare, "--policy", policy,
         "--registration", registration, *(["--wait"] if wait else [])],
        stdin=subprocess.PIPE if wait else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, cwd=os.path.dirname(os.path.dirname(__file__)))


def _report(process: subprocess.Popen, timeout: float) -> dict:
    """What the process printed, once it has exited; a RuntimeError with its stderr if it failed."""
    out, err = process.communicate(timeout=timeout)  # closes its stdin: a waiting process reads 'go' first
    if process.returncode != 0:
        raise RuntimeError(f"the demo process failed:\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def run_together(*runs: tuple[str, str, str], timeout: float = 300, registration: str = "labkit") -> list[dict]:
    """Run several demo processes, each ``(declare, policy, cache_dir)``; return their reports, in order.

    All start at once. Runs over different cache directories run side by side; a run whose cache
    directory an earlier run also uses compiles only once that run's process has exited (its imports
    and declaration happen before, and touch no cache): to the caches it is as if it were started then.
    """
    started, last_over = [], {}
    try:
        for declare, policy, cache_dir in runs:
            where = os.path.realpath(cache_dir)
            after = last_over.get(where)
            started.append((_start(declare, policy, cache_dir, registration, after is not None), after))
            last_over[where] = len(started) - 1
        reports = []
        for process, after in started:  # in order: a run's predecessor has been reported, so it has exited
            if after is not None:
                process.stdin.write("go\n")
            reports.append(_report(process, timeout))
        return reports
    finally:
        for process, _ in started:
            if process.poll() is None:  # an earlier run failed or timed out: stop the rest
                process.kill()
                process.communicate()


def run_in_subprocess(declare: str, policy: str, cache_dir: str, timeout: float = 300,
                      registration: str = "labkit") -> dict:
    """Run :func:`experiment` in a fresh Python process that uses ``cache_dir``."""
    return run_together((declare, policy, cache_dir), timeout=timeout, registration=registration)[0]


def _wait_for_go() -> None:
    """Block until the parent process says 'go' on stdin (see :func:`run_together`)."""
    if sys.stdin.readline().strip() != "go":
        sys.exit("cache_demo: told to wait, but the parent closed stdin without saying 'go'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--declare", choices=("pure", "mutating"), required=True)
    parser.add_argument("--policy", default="fingerprinted")
    parser.add_argument("--registration", choices=("labkit", "library"), default="labkit")
    parser.add_argument("--wait", action="store_true", help="declare, then wait for 'go' on stdin before compiling")
    args = parser.parse_args()
    print(json.dumps(experiment(args.declare, args.policy, args.registration, _wait_for_go if args.wait else None)))


def _exit_now() -> None:
    """Run the exit handlers, then leave without tearing torch's modules down (that takes a second or more,
    and the next process of :func:`run_together` waits for this one's exit). Everything is written by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(0)


if __name__ == "__main__":
    main()
    _exit_now()
