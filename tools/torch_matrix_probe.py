"""The probe tools/torch_matrix.py runs in each row's own Python: each behaviour a lesson depends on, as that
torch shows it. It prints one line, ``PROBE {json}``: behaviour -> what was found (or the error, in one line).

Run by the matrix with the row's interpreter (``python tools/torch_matrix_probe.py``), never imported: it needs
nothing but torch, and its ``@probe`` functions are all called ``_`` on purpose.
"""

import json
import os
import subprocess
import sys
import tempfile

import torch

found = {}
def probe(name):
    def record(fn):
        try:
            found[name] = fn()
        except Exception as error:
            found[name] = f"error: {type(error).__name__}" + (
                "" if isinstance(error, subprocess.TimeoutExpired) else f": {str(error).splitlines()[0][:80]}")
    return record

@probe("Tag.inplace exists")
def _():
    return hasattr(torch.Tag, "inplace")

@probe("mutation lowers to")
def _():
    import labkit
    op = labkit.declare(name="matrix::bump", writes=("x",), mutates_args=("x",), returns="none")
    report = labkit.compile_and_compare(lambda x: (op(x), x * 2)[1], torch.ones(4), backend="aot_eager")
    text = "\n".join(str(g.code) if hasattr(g, "code") else str(g) for g in report.aot_graphs)
    return "auto_functionalized_v2" if "auto_functionalized_v2" in text else (
        "auto_functionalized" if "auto_functionalized" in text else "other")

@probe("seeded op, result unused, removed by Inductor")
def _():
    import labkit
    op = labkit.declare(name="matrix::seeded", returns="fresh", tags=("nondeterministic_seeded",))
    report = labkit.compile_and_compare(lambda x: (op(x), x + 1)[1], torch.ones(4), backend="inductor")
    return not report.fate("matrix::seeded")["ran"]

@probe("#187319 reproduces (stale artifact from the default cache)")
def _():
    from labkit import cache_demo
    where = tempfile.mkdtemp(prefix="matrix-cache-")
    cache_demo.run_in_subprocess("pure", "default", where)
    fixed = cache_demo.run_in_subprocess("mutating", "default", where)
    return fixed["x_after"] != [1.0] * 4

def _reverse_into(name, mutates):
    def kernel(src: torch.Tensor, dst: torch.Tensor) -> None:
        n = src.shape[0]
        for k in range(n):
            dst[n - 1 - k] = src[k]
    return torch.library.custom_op(f"matrix::{name}", kernel, mutates_args=mutates)

def _clone_then_op(op, reads_clone):
    def f(x):
        y = x.clone()
        op(y, x)
        return (y * 1.0, x * 1.0) if reads_clone else x * 1.0
    eager = f(torch.arange(8.0))
    torch.compiler.reset()
    compiled = torch.compile(f)(torch.arange(8.0))
    pairs = zip(eager, compiled) if reads_clone else [(eager, compiled)]
    return all(torch.equal(a, b) for a, b in pairs)

@probe("#198031 reproduces (y = x.clone(); op(y, x) compiled as op(x, x))")
def _():
    return not _clone_then_op(_reverse_into("reverse_dst", ("dst",)), reads_clone=False)

@probe("#198031: src declared too, y read afterwards, right")
def _():
    return _clone_then_op(_reverse_into("reverse_both", ("src", "dst")), reads_clone=True)

@probe("a clone passed as another written argument gets its result")
def _():
    def kernel(a: torch.Tensor, b: torch.Tensor) -> None:
        a.mul_(0.5).add_(1.0)
        b.mul_(2.0)
    op = torch.library.custom_op("matrix::two_states", kernel, mutates_args=("a", "b"))
    op.register_fake(lambda a, b: None)
    def f(x):
        s = x.clone()
        op(s, x)
        return s.clone()
    torch.compiler.reset()
    compiled = torch.compile(f, backend="inductor")(torch.arange(4.0))
    return torch.equal(compiled, torch.arange(4.0) * 2)

@probe("Tag.out: returning x.clone() and out.clone() leaves out holding x")
def _():
    if not hasattr(torch.Tag, "out"):
        return "no Tag.out"
    def kernel(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        torch.mul(x, 2, out=out)
        return out
    op = torch.library.custom_op("matrix::scale_out", kernel, mutates_args={"out"}, tags=(torch.Tag.out,))
    def f(x, out):
        op(x, out=out)
        return x.clone(), out.clone()
    x, out = torch.arange(1.0, 4.0), torch.zeros(3)
    torch.compiler.reset()
    torch.compile(f, backend="inductor")(x, out)
    return torch.equal(out, x)

@probe("mutates_args='unknown', a clone of the written argument as the other: x wrong")
def _():
    import labkit
    update = labkit.declare(name="matrix::update_unknown", args=("x", "stats"), writes=("stats",),
                            mutates_args="unknown", returns="none")
    def f(stats):
        x = stats.clone()
        update(x, stats)
        return x, stats * 1
    torch.compiler.reset()
    x, _ = torch.compile(f, backend="inductor")(torch.arange(4.0))
    return x.tolist() != [0.0, 1.0, 2.0, 3.0]

@probe("Tag.inplace op on a slice cut inside the compiled function: x written wrongly")
def _():
    if not hasattr(torch.Tag, "inplace"):
        return "no Tag.inplace"
    def kernel(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x
    op = torch.library.custom_op("matrix::seed_tagged", kernel, mutates_args={"x"}, tags=(torch.Tag.inplace,))
    x = torch.ones(3)
    torch.compiler.reset()
    torch.compile(lambda x: op(x[1:]) * 2, backend="inductor")(x)
    return x.tolist() != [1.0, 2.0, 2.0]

@probe("compile on a thread, then on the main thread")
def _():
    code = ("import threading, torch\n"
            "t = threading.Thread(target=lambda: torch.compile(lambda x: x.sin() + 1)(torch.ones(4)))\n"
            "t.start(); t.join()\n"
            "torch.compile(lambda x: x.cos() * 2)(torch.ones(4))\n")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="matrix-cache-"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=600)
    return "ok" if done.returncode == 0 else f"crash (exit {done.returncode})"

print("PROBE " + json.dumps(found))
