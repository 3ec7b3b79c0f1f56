"""Run every notebook on several torch releases and write the table of what passed.

    python tools/torch_matrix.py 2.11.0 2.13.0 2.15.0 --colab
    python tools/torch_matrix.py 2.12.1 --keep-venvs --venv-root /scratch/venvs
    python tools/torch_matrix.py 2.11.0 2.13.0 --doctor mypkg.ops --doctor-pip mypkg==1.2 [--doctor-out r.json]
    python tools/torch_matrix.py 2.15.0 --notebooks 02 03

For each release: a throwaway virtual environment (under --venv-root, deleted afterwards
unless --keep-venvs; one that already holds that torch is reused), that torch from PyPI
(machine-wide pip constraints are ignored so the release asked for is the one installed),
the lab's requirements, nbval and labkit; then every notebook under ``pytest --nbval-lax``
from an empty Inductor cache, and a probe of the behaviours the lessons depend on.
``--colab`` adds the Colab row: Python 3.13, torch 2.11.0, ipywidgets 7.7.1 and labkit
installed with ``--no-deps``, as the notebooks' Colab cell does.

``--doctor MODULE`` runs ``labkit doctor MODULE`` instead of the notebooks, in each release's environment (plus
the packages of ``--doctor-pip``, installed with that torch pinned as a constraint so they cannot move it), and
prints one row per release: the doctor's exit status and verdicts, and the ops with findings; ``--doctor-out``
writes every release's JSON report to one file. It writes nothing under docs/.

``--notebooks 02 03`` (numbers or names) runs only those notebooks, and the probe, on each release: a partial
run prints its result and writes nothing under docs/, because the lab's supported range is computed from rows
that ran every notebook.

Results accumulate in docs/torch-versions.json (one entry per row, replaced when re-run);
docs/torch-versions.md is rewritten from it, and labkit's CHECKED_ON must match the releases
whose notebooks all passed there (tests/labkit/test_env.py checks).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from repo import ROOT

RESULTS = ROOT / "docs" / "torch-versions.json"
TABLE = ROOT / "docs" / "torch-versions.md"
COLAB = {"python": "/root/.pyenv/versions/3.13.0/bin/python3", "torch": "2.11.0", "ipywidgets": "7.7.1"}

# Findings the table's columns stand for, written under it.
NOTES = """
## What the behaviour columns mean, and what was found

- **compile on a thread, then on the main thread**: an Inductor compile on a background thread
  (joined), then any compile on the main thread, in a fresh process with an empty Inductor cache.
  Where it says *crash (exit -11)*, the process segfaults in `FakeTensorMode.__enter__`, inside
  `torch._C._ensureCUDADeviceGuardSet()`. Root cause (c10/core/impl/DeviceGuardImplInterface.cpp):
  when CUDA has no usable device (a CUDA build on a CPU-only machine), that function stores into
  the *process-wide* device-guard registry a pointer to a no-op guard owned by a **thread_local**
  `unique_ptr`. When the thread that first entered fake mode exits, its thread-locals are
  destroyed and the registry keeps a dangling pointer; the next fake-mode entry on any thread calls
  `p->deviceCount()` through it. This is why labkit (since the fix for issue 12) compiles only on the
  kernel's main thread, on every torch: its old background warm-up thread was exactly that first
  thread, and killed notebooks 00, 02, 03 and 04 on torch 2.11.
- **Where the probes run**: from an empty working folder, never from the Inductor cache directory. Until
  2026-12-02 they ran from the cache directory, whose hash-named subfolders Python imports as packages: a
  folder `z3` there shadowed the z3 solver, and rows showed *crash (exit 1)* and *other* at random. The rows
  of that day were probed again in their environments (`--probes-only`; the JSON's `probed`).
- **#198031 reproduces**: `reverse_into(src, dst)` (mutates `dst`, reads `src` element by element) called as
  `y = x.clone(); reverse_into(y, x)` under `torch.compile`: Inductor removes the clone and calls the op with one
  buffer twice, so the compiled result differs from eager (notebook 03 §4). 2.15.0 keeps a clone of a graph input
  the graph writes (`remove_noop_ops`' "keep a real copy of a storage that is mutated in this graph"), which fixes
  this program; the reinplacing fix proposed for the issue (PR #198260) is not in any release measured here.
  2.15.0 fixed the clone of a graph input only: with `x` computed inside the compiled function (`inp * 2`) and the
  program returning `x`, Inductor is still wrong there (notebook 03 §4; see its section below). What the program
  does with `x` afterwards matters: returning `x * 1.0` from such an intermediate kept two buffers and was right
  on 2.13.0.
  **src declared too: y right**: with `mutates_args=("src", "dst")` the program above is right on every release,
  but a program that also returns `y * 1.0` gets `y` wrong on 2.14.1 (Inductor swaps the roles of the clone and
  `x`); a kernel that copies `src` when it shares storage with `dst` is right everywhere.
- **clone as other written arg: wrong**: an op that declares and writes both `a` and `b`, called as
  `s = x.clone(); op(s, x); return s.clone()`, returns `b`'s result (2x) in the clone's place under Inductor
  (bitsandbytes' `optimizer_update_32bit` meets it; docs/audit-vs-opcheck.md).
- **Tag.out buffer reused: wrong**: a `Tag.out` op in a program returning `x.clone(), out.clone()` leaves `out`
  holding `x`: Inductor reuses the op's buffer for the clone while the op's result still aliases it (notebook 09 §5).
- **#187319 reproduces**: two processes share the default compile cache; the second declares the
  op's mutation and still gets the first process's artifact (which drops the mutation).
- **mutation lowers to**: what AOTAutograd wraps a custom op that declares `mutates_args` in.
- **seeded op, result unused, removed by Inductor**: a `nondeterministic_seeded` custom op whose
  result is unused is dead-code eliminated (notebook 05 asserts it).
- **Tag.inplace exists**: `torch.Tag.inplace` (notebook 02 branches on it).
- **Notebook 02 across releases**: `torch.Tag.inplace` (§5) exists from 2.13 on. On 2.11 and 2.12 the §5 cell
  says the tag is missing and skips, and its check asserts that the tag is absent; on 2.13 and later it asserts
  the tagged op's schema `(Tensor(a0!) x) -> Tensor(a0!)`, compiled == eager, and torch's refusal of the tag on
  an op that writes its second argument. Every other claim of 02 (the undeclared write in `read_then_bump`:
  eager 8, compiled 10, the op launched before the fused kernel) was asserted unchanged on every row above
  dated 2026-12-06 (2.11.0 to 2.15.0 and the Colab stack).
  §4, `mutates_args="unknown"` on `update(x, stats)` (writes `stats`) called as `x = stats.clone(); update(x,
  stats); return x, stats * 1` under Inductor: `x` comes back holding `stats`' new values on 2.11.0, 2.12.1,
  2.13.0 and 2.14.1 (and the Colab stack); right on 2.15.0, with `stats` an input (and with it computed inside,
  `inp * 2`, measured for 41cf2eb); the truthful `("stats",)` is right on all five (the *'unknown' + clone*
  probe, and notebook 02 in the rows of 2026-12-06).
- **Notebook 04 across releases**: no claim differs on 2.11.0 to 2.15.0 or the Colab stack (the rows of 2026-12-06):
  the stale artifact after a changed `mutates_args` (#187319) comes back in one process and across two, and
  the fixed fake kernel of §4 still gets the buggy one's artifact (#160472). Both checks fail with "torch may
  have fixed …" the day a release changes that.
- **Why the minimum is 2.11, not 2.10**: on 2.10.0, notebook 03's lesson on the runtime aliasing
  check fails: `torch._functorch.config.error_on_custom_op_aliasing`, which the lesson sets and
  asserts, does not exist there. On 2.9, `import labkit` also lacked
  `torch._library.utils.is_impure`; the gate now names the minimum instead.

## Notebook 10: beyond the shape

What notebook 10's check cells assert per release (each side asserted; CPU builds and CUDA builds on a CPU):

- **`opcheck` and wrong CPU strides**: from 2.13.0 `test_faketensor` compares the strides of CPU outputs
  (pytorch PR #183002) and fails a fake that promises column-major for a contiguous result; on 2.11.0 and 2.12.1
  it passes it (it compared strides on CUDA only).
- **A fake with the wrong dtype, under Inductor**: on 2.11.0 to 2.13.0 no error; where Inductor's own code
  reads the op's buffer (a sum) the result is wrong (float32 bytes read as bfloat16), and the op's output
  returned as is has the right values (seen on 2.11.0, 2.12.1 and 2.13.0). From 2.14.1 the generated code checks
  the dtype after the call and raises `expected dtype torch.bfloat16 but got torch.float32`, in both programs.
- The same on every release measured (2.11.0 to 2.15.0, the rows of 2026-12-06): a `Library.define` op with no autograd
  formula gives `x.grad = 2` eagerly and `None` under `aot_eager`, with a warning only, where `custom_op`
  raises; `custom_op` adds `pt2_compliant_tag`; a `custom_op` schema `(Tensor(a) x) -> Tensor(a)` is accepted
  and runs eagerly, and `torch.compile` refuses it; under CPU autocast a custom op's kernel sees autocast on
  (bf16 `a @ b`) eagerly and with `backend="eager"`, off with `aot_eager` and `inductor`; `register_autocast`
  leaves float64 inputs alone and raises `Custom ops do not support kwargs yet` on a call that passes a
  keyword argument; the default layout constraint is `needs_exact_strides`.
- **Found, not in the notebook**: `register_autocast` called after the op was compiled under autocast is not
  seen by a later Inductor compile of the same function, even after `torch.compiler.reset()`: the compile cache
  hands back the float32 artifact (2.11.0, 2.13.0, 2.15.0; with `TORCHINDUCTOR_FX_GRAPH_CACHE=0
  TORCHINDUCTOR_AUTOGRAD_CACHE=0` the new compile casts). labkit's cache tag does not cover it either; notebook 10
  registers autocast on a fresh op, before its first compile.

## Notebook 11: export, AOTInductor and the profiler

What notebook 11's check cells assert per release:

- **The profiler and the `custom_op` object**: on 2.11.0 to 2.13.0, calling the object `swish(x)` records an
  event `nb11::swish` with the kernel's aten ops beneath it, as `torch.ops.nb11.swish(x)` does; from 2.14.1 the
  object's call records only the aten ops (no parent). Compiled with Inductor, up to 2.13.0 the op is an event
  beneath `## Call CompiledFxGraph … ##`; from 2.14.1 its aten ops sit right beneath the graph's call.
  `torch.ops.ns.name(...)`, an AOTInductor package's call and `torch.profiler.record_function` inside the
  kernel name the op on every release measured.
- **A package loaded where its Python op is not registered**: `Could not find schema for nb11::silu.` on every
  release; from 2.13.0 the message goes on to say that a `custom_op` cannot run via AOTI without Python.
- The same on 2.11.0, 2.13.0 and 2.15.0: a mutating op that returns nothing exports without a registered fake
  kernel; after `run_decompositions()` a mutating op is wrapped in `auto_functionalized_v2` and an op with an
  ordered effect in `with_effects`, with a `TOKEN` input and output; `torch.export.load` of a saved program
  raises (`We ran into an error when deserializing the saved file`) until its custom ops are registered; a
  package loaded before its op's signature changed crashed the process at its next call (signal 11).

## Notebook 01: what each stage hands an op, and the fake-tensor fallback

Checked by notebook 01's check cells under `pytest --nbval-lax` on 2.11.0 to 2.15.0 and the Colab stack (the
rows of 2026-12-06), and strict nbval on 2.13.0 (`./lab test`): no release differs.

- One Inductor compile of `peek(x) + 1` calls the op's fake kernel 5 times, always with fake tensors: Dynamo
  once, AOTAutograd twice, Inductor twice (`labkit.stages.calling_stage` reads the stage from the call stack);
  the kernel itself runs only on real data, eagerly and compiled.
- A `custom_op` without a fake kernel never has its body run while tracing: compiling stops with "There was no
  fake impl registered". An op defined with `torch.library.Library` (`define` + `impl`, no fake kernel) in a
  namespace on fake tensors' fallback list (on 2.13.0: `aten`, `debugprims`, `prims`, `quantized`,
  `torchaudio`, `torchtext`, `vision`, `xla`) has its *real* kernel run while tracing, on zero-filled inputs
  (3 calls under `aot_eager`). Off the list (`nb01lib`), `fullgraph=False` breaks the graph at it (the kernel
  runs eagerly, on real data) and `fullgraph=True` refuses to compile.

## Notebook 06: where a data-dependent op breaks the graph

Checked the same way, on the same releases: no release differs.

- An op whose fake kernel calls `torch.library.get_ctx().new_dynamic_size()`, returning a tensor
  (`positives`) or an `int` (`count_positives`): with default settings and `fullgraph=False`, one graph break
  at the op (`torch._dynamo.explain`: "output shape depends on input Tensor data"), and its kernel runs
  eagerly. `torch._dynamo.config.capture_dynamic_output_shape_ops=True` captures both in one graph (with an
  `_assert_scalar` on the size); `capture_scalar_outputs=True` alone does **not** capture the `-> int` op;
  `fullgraph=True` captures it.

## Notebook 03: the clone that vanishes

What notebook 03's §4 check cells assert per release (the *#198031 reproduces* column above is the same probe):

- `y = x.clone(); reverse_into(y, x); return x` compiled with Inductor, `x` an input of the compiled function: on
  2.11.0 to 2.14.1 the generated code calls the op with one buffer as both arguments and the result differs from
  eager; on 2.15.0 the clone is kept and compiled agrees with eager. With `x` computed inside it (`inp * 2`), the
  result differs on every release measured (2.11.0, 2.13.0, 2.14.1, 2.15.0: `--notebooks 03`, 2026-12-06). Each
  side is asserted, so a release that changes one fails the check cell, naming the lesson to update.
  `labkit.audit` makes both calls and says which went wrong: on 2.15.0 it reports the op for the computed `x`
  and says the call with an input `x` was right.
- §3, an op tagged `Tag.inplace` whose body is `x.add_(1); return x`, then `* 2` on its result, compiled with
  Inductor: right on a whole tensor; on `x[1:]` cut inside the compiled function, the product lands in `x` (the
  returned values are right) on 2.13.0, 2.14.1 and 2.15.0 (`--notebooks 03`, 2026-12-06); the check cell asserts
  it wherever the tag exists, and on 2.13 also the cause in the generated code (the op's returned buffer reused
  for the `* 2`). Before 2.13 there is no tag.

## Notebook 08: a backward formula that calls the op

What notebook 08's Exercise 2 asserts per release: in one compiled (`aot_eager`) training step whose backward
formula calls the pure op again, AOTAutograd's common-subexpression elimination merges the two calls on the same
input into one kernel run on 2.11.0 to 2.13.0; on 2.14.1 and 2.15.0 the compiled step runs the kernel twice, as
eager does. With `torch._functorch.config.patch(cse=False)` it runs twice everywhere.
"""

# Run by the row's own Python: each behaviour a lesson depends on, as torch shows it there.
PROBE = r'''
import json, os, subprocess, sys, tempfile
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
'''


def sh(command: list[str], log, **kwargs) -> int:
    log.write(f"\n$ {' '.join(command)}\n")
    log.flush()
    return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, **kwargs).returncode


def python_version(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def installed_torch(venv: Path) -> str | None:
    done = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def install(venv: Path, python: str, torch_version: str, colab: bool, log) -> bool:
    """Make ``venv`` with that torch and the lab; False when pip failed."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    env = dict(os.environ, PIP_CONSTRAINT="/dev/null")  # the release asked for, whatever the machine caps
    have = installed_torch(venv)
    if not (have and have.split("+")[0] == torch_version):
        if sh(pip + [f"torch=={torch_version}"], log, env=env):
            return False
    if colab:  # what the Colab cell does: Colab's own packages, then labkit and tlparse alone
        steps = [pip + [f"ipywidgets=={COLAB['ipywidgets']}", "matplotlib", "ipykernel", "nbval"],
                 pip + ["--no-deps", "--force-reinstall", str(ROOT), "tlparse>=0.4"]]
    else:
        steps = [pip + ["-r", str(ROOT / "requirements.txt"), "nbval"],
                 pip + ["--no-deps", "--force-reinstall", str(ROOT)]]
    return all(sh(step, log, env=env) == 0 for step in steps)


def notebook_results(junit: Path) -> dict[str, str]:
    """Per notebook: 'pass', or 'FAIL: cell N (first line of the error)'."""
    results: dict[str, str] = {}
    if not junit.exists():
        return results
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        notebook = Path(case.get("file") or case.get("classname", "").replace(".", "/")).stem
        notebook = notebook or case.get("classname", "?")
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None and results.get(notebook, "pass") == "pass":
            text = re.sub(r"(\x1b|#x1B)\[[0-9;]*m", "", problem.text or problem.get("message") or "")
            errors = re.findall(r"^\s*(\w+(?:Error|Exception|Interrupt)\b.*|.*[Kk]ernel died.*)$", text, re.M)
            detail = errors[-1].strip() if errors else "see the log"
            results[notebook] = f"FAIL: {case.get('name')} ({detail[:110]})"
        results.setdefault(notebook, "pass")
    return results


@contextlib.contextmanager
def cold_dirs():
    """An empty working directory and an environment whose Inductor cache is another empty directory; both
    are removed afterwards.

    The two are apart on purpose: Inductor names its cache's subfolders after hash prefixes (``z3``, ``ok``,
    ...), and a ``python -c`` started in that folder imports them as packages (a folder ``z3`` shadowed the
    z3 solver and broke every compile of the thread probe, at random)."""
    cache_dir = tempfile.mkdtemp(prefix="torch-matrix-inductor-")
    work_dir = tempfile.mkdtemp(prefix="torch-matrix-run-")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    try:
        yield work_dir, env
    finally:
        for folder in (cache_dir, work_dir):
            shutil.rmtree(folder, ignore_errors=True)


def run_probe(venv_python: str, env: dict[str, str], work_dir: str, log) -> dict:
    probe = subprocess.run([venv_python, "-c", PROBE], capture_output=True, text=True, env=env, cwd=work_dir)
    log.write(probe.stdout + probe.stderr)
    line = next((ln for ln in probe.stdout.splitlines() if ln.startswith("PROBE ")), None)
    return json.loads(line[6:]) if line else {"probe": f"crashed (exit {probe.returncode})"}


def venv_for(torch_version: str, python: str, colab: bool, venv_root: Path) -> Path:
    return venv_root / f"torch-{torch_version}-py{python_version(python)}{'-colab' if colab else ''}"


def reprobe_row(row: dict, python: str, venv_root: Path) -> dict:
    """Only the behaviour probes again, in the row's kept environment; its notebook results stay."""
    venv = venv_for(row["torch"], python, row["colab"], venv_root)
    if not (venv / "bin" / "python").exists():
        raise SystemExit(f"no kept environment for the {row['row']} row at {venv}: run the row again instead")
    with cold_dirs() as (work_dir, env), open(row["log"], "a") as log:
        behaviours = run_probe(str(venv / "bin" / "python"), env, work_dir, log)
    print(f"[{row['row']}] probes again: {behaviours}", flush=True)
    return {**row, "behaviours": behaviours, "probed": f"{time.strftime('%Y-%m-%d')} ({current_commit()})"}


def run_row(label: str, torch_version: str, python: str, colab: bool, venv_root: Path, keep: bool,
            notebooks: list[Path] | None = None) -> dict:
    """One release's row: install, run ``notebooks`` (every notebook when None) under nbval-lax from a cold
    Inductor cache, then the probe. A row of named notebooks says so (``partial``): it is never saved."""
    venv = venv_for(torch_version, python, colab, venv_root)
    log_path = Path(tempfile.gettempdir()) / f"torch-matrix-{venv.name}.log"
    row = {"row": label, "torch": torch_version, "python": python_version(python), "colab": colab,
           "date": time.strftime("%Y-%m-%d"), "commit": current_commit(), "log": str(log_path)}
    with open(log_path, "w") as log:
        print(f"[{label}] installing into {venv} (log: {log_path})", flush=True)
        if not install(venv, python, torch_version, colab, log):
            row["result"] = "install failed"
            print(f"[{label}] install failed", flush=True)
            return row
        venv_python = str(venv / "bin" / "python")
        row["torch_build"] = installed_torch(venv)
        with cold_dirs() as (work_dir, env):
            junit = Path(work_dir) / "junit.xml"
            paths = [str(p) for p in (notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")))]
            print(f"[{label}] running {len(paths)} notebooks under nbval-lax (cold Inductor cache)", flush=True)
            started = time.perf_counter()
            sh([venv_python, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider",
                "-o", "addopts=", "-o", "junit_family=xunit1", "--rootdir", work_dir, f"--junitxml={junit}",
                *paths], log, env=env, cwd=work_dir)
            row["notebooks_s"] = round(time.perf_counter() - started)
            row["notebooks"] = notebook_results(junit)
            print(f"[{label}] probing behaviours", flush=True)
            row["behaviours"] = run_probe(venv_python, env, work_dir, log)
            passed = bool(row["notebooks"]) and all(v == "pass" for v in row["notebooks"].values())
            if notebooks:
                row["partial"] = True
                row["result"] = "the named notebooks pass" if passed else "notebooks fail"
            else:
                row["result"] = "all notebooks pass" if passed else "notebooks fail"
    if not keep:
        shutil.rmtree(venv, ignore_errors=True)
    print(f"[{label}] {row['result']}", flush=True)
    return row


def run_doctor_row(torch_version: str, python: str, venv_root: Path, keep: bool, module: str, pip_specs: list[str],
                   cwd: Path) -> dict:
    """``labkit doctor MODULE --json`` in a fresh environment with this torch (and the project's packages): one row."""
    venv = venv_for(torch_version, python, False, venv_root)
    log_path = Path(tempfile.gettempdir()) / f"torch-matrix-doctor-{venv.name}.log"
    row = {"torch": torch_version, "date": time.strftime("%Y-%m-%d"), "log": str(log_path)}
    with open(log_path, "w") as log:
        print(f"[doctor {torch_version}] installing into {venv} (log: {log_path})", flush=True)
        ok = install(venv, python, torch_version, False, log)
        if ok and pip_specs:
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pin:
                pin.write(f"torch=={torch_version}\n")   # the project's packages must not move this torch
            ok = sh([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                     "-c", pin.name, *pip_specs], log, env=dict(os.environ, PIP_CONSTRAINT="/dev/null")) == 0
            os.unlink(pin.name)
        row["torch_build"] = installed_torch(venv)
        if not ok or not (row["torch_build"] or "").startswith(torch_version):
            row["result"] = f"install failed (torch {row['torch_build']})"
            print(f"[doctor {torch_version}] {row['result']}", flush=True)
            return row
        with cold_dirs() as (work_dir, env):
            out = Path(work_dir) / "doctor.json"
            env["PYTHONPATH"] = str(cwd)
            print(f"[doctor {torch_version}] labkit doctor {module} (cold Inductor cache)", flush=True)
            status = sh([str(venv / "bin" / "python"), "-m", "labkit", "doctor", module, "--json", str(out)], log,
                        env=env, cwd=cwd)
            report = json.loads(out.read_text()) if out.exists() else None
    if not keep:
        shutil.rmtree(venv, ignore_errors=True)
    row["exit_status"] = status
    if report is None:
        row["result"] = f"the doctor wrote no report (exit {status}: see the log)"
    else:
        row["counts"] = report["counts"]
        row["findings"] = {r["op"]: sorted({f["check"] for f in r["findings"]}) for r in report["results"]
                           if r["verdict"] == "fail"}
        row["report"] = report
        row["result"] = {0: "clean", 1: "findings"}.get(status, f"nothing checked or stopped (exit {status}: "
                                                                 "see the log)")
    print(f"[doctor {torch_version}] {row['result']}", flush=True)
    return row


def doctor_table(rows: list[dict]) -> str:
    lines = ["| torch | exit | passed / with findings / skipped | ops with findings |", "|---|---|---|---|"]
    for row in rows:
        counts = row.get("counts", {})
        found = "; ".join(f"`{op}`: {', '.join(checks)}" for op, checks in row.get("findings", {}).items())
        lines.append(f"| {row.get('torch_build') or row['torch']} | {row.get('exit_status', '—')} | "
                     f"{counts.get('pass', '—')} / {counts.get('fail', '—')} / {counts.get('skip', '—')} | "
                     f"{found or row['result']} |")
    return "\n".join(lines)


def named_notebooks(names: list[str]) -> list[Path]:
    """The notebooks ``--notebooks`` names, by number (``02``) or name (``02_mutates_args``, with or without
    ``.ipynb``), in the lab's order. ValueError, in one sentence that lists them, for a name that is none of them."""
    lab = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    chosen = []
    for name in names:
        stem = Path(name).name.removesuffix(".ipynb")
        match = [p for p in lab if stem in (p.stem, p.stem[:2])]
        if not match:
            raise ValueError(f"--notebooks: {name!r} is not one of the lab's notebooks; give a number or a name "
                             f"({', '.join(p.stem for p in lab) or 'none are built: build them first'})")
        chosen += [p for p in match if p not in chosen]
    return sorted(chosen)


def partial_report(row: dict) -> str:
    """What a partial run found, printed instead of written: per notebook, then the probe."""
    lines = [f"[{row['row']}] {row.get('torch_build') or row['torch']}: {row['result']} "
             "(a partial run: nothing written under docs/)"]
    lines += [f"  {nb}: {result}" for nb, result in sorted(row.get("notebooks", {}).items())]
    lines += [f"  {SHORT.get(k, k)}: {v}" for k, v in row.get("behaviours", {}).items()]
    return "\n".join(lines)


def load() -> list[dict]:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else []


def save(row: dict) -> list[dict]:
    """Add ``row`` (replacing an older run of it) to the results; safe with several runs at once. A partial row
    (named notebooks only) is refused: the supported range is computed from rows that ran every notebook."""
    if row.get("partial"):
        raise ValueError(f"the {row['row']} row ran named notebooks only: it is printed, never saved")
    with open(RESULTS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = [r for r in load() if (r["row"], r["python"]) != (row["row"], row["python"])] + [row]
        RESULTS.write_text(json.dumps(rows, indent=1) + "\n")
        write_table(rows)
    return rows


def version_key(row: dict) -> tuple:
    return (row["colab"], tuple(int(p) for p in row["torch"].split(".")), row["python"])


SHORT = {  # column headers for the probe's behaviours
    "#198031 reproduces (y = x.clone(); op(y, x) compiled as op(x, x))": "#198031 reproduces",
    "#198031: src declared too, y read afterwards, right": "#198031, src declared too: y right",
    "#187319 reproduces (stale artifact from the default cache)": "#187319 reproduces",
    "a clone passed as another written argument gets its result": "clone as other written arg: wrong",
    "Tag.out: returning x.clone() and out.clone() leaves out holding x": "Tag.out buffer reused: wrong",
    "compile on a thread, then on the main thread": "compile on a thread, then main",
    "seeded op, result unused, removed by Inductor": "unused seeded op removed",
    "mutates_args='unknown', a clone of the written argument as the other: x wrong": "'unknown' + clone: wrong",
    "Tag.inplace op on a slice cut inside the compiled function: x written wrongly": "Tag.inplace on a slice: wrong",
}


def current_commit() -> str:
    """The lab's commit the row ran (uncommitted changes marked), so a table says what it measured."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)docs/torch-versions.*"],          # this tool's own output
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return commit + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def current_notebooks() -> list[str]:
    return sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def ran_current_notebooks(row: dict, notebooks: list[str] | None = None) -> bool:
    """Only a row that ran today's notebooks (or those named) speaks for them (older rows stay, marked)."""
    return sorted(row.get("notebooks", {})) == sorted(current_notebooks() if notebooks is None else notebooks)


def write_table(rows: list[dict]) -> None:
    notebooks = current_notebooks()
    behaviours = sorted({b for row in rows for b in row.get("behaviours", {})})
    lines = [
        "# torch versions the lab runs on",
        "",
        "Measured by `python tools/torch_matrix.py` (do not edit by hand: it rewrites this file from",
        "`docs/torch-versions.json`). Each row: a fresh virtual environment with that torch from PyPI",
        "(CUDA builds, run on a CPU-only machine, except 2.13.0+cpu), every notebook under",
        "`pytest --nbval-lax` from an empty Inductor cache, then a probe of the behaviours the lessons",
        "depend on. The *Colab stack* row is Python 3.13 + ipywidgets 7.7.1 + labkit installed with",
        f"`--no-deps`, as the notebooks' Colab cell does. Columns {notebooks[0][:2]}–{notebooks[-1][:2]}: today's "
        "notebooks (a row run on",
        "an earlier set of notebooks says so, and does not count below); then the",
        "behaviours, explained below the table.",
        "",
        "| row | torch | Python | result | " + " | ".join(nb[:2] for nb in notebooks) + " | "
        + " | ".join(SHORT.get(b, b) for b in behaviours) + " | date |",
        "|---" * (5 + len(notebooks) + len(behaviours)) + "|",
    ]
    for row in sorted(rows, key=version_key):
        result = row["result"] if ran_current_notebooks(row) else (
            f"earlier notebook set ({len(row.get('notebooks', {}))} notebooks): {row['result']}")
        cells = [row["row"], row.get("torch_build") or row["torch"], row["python"], result]
        cells += [row.get("notebooks", {}).get(nb, "—") for nb in notebooks]
        cells += [str(row.get("behaviours", {}).get(b, "—")) for b in behaviours]
        cells.append(f"{row['date']} ({row.get('commit', 'commit not recorded')})")
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    passing = checked_on(rows)
    lines += ["", f"Every notebook passes on: {', '.join(passing) or 'none'}; the oldest of these is the lab's",
              "minimum (`labkit.env.MINIMUM_TORCH`, pyproject's `[tool.lab] minimum_torch`).", NOTES]
    TABLE.write_text("\n".join(lines))


def checked_on(rows: list[dict], notebooks: list[str] | None = None) -> list[str]:
    """Releases whose (non-Colab) row passed every notebook (of notebooks/, or those named): labkit's
    CHECKED_ON, which tools/build_notebooks.py --facts writes from this, for pyproject's registered notebooks."""
    good = {row["torch"] for row in rows if not row["colab"] and row["result"] == "all notebooks pass"
            and ran_current_notebooks(row, notebooks)}
    return sorted(good, key=lambda v: tuple(int(p) for p in v.split(".")))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", help="torch releases, e.g. 2.11.0 2.13.0")
    parser.add_argument("--colab", action="store_true", help="add the Colab stack row (Python 3.13, torch 2.11.0)")
    parser.add_argument("--python", default=sys.executable, help="Python for the rows (default: this one)")
    parser.add_argument("--colab-python", default=COLAB["python"])
    parser.add_argument("--venv-root", type=Path, default=Path(tempfile.gettempdir()) / "torch-matrix-venvs")
    parser.add_argument("--keep-venvs", action="store_true", help="keep each environment (they take GBs)")
    parser.add_argument("--table-only", action="store_true", help="rewrite the table from the JSON, run nothing")
    parser.add_argument("--probes-only", action="store_true",
                        help="re-run only the behaviour probes of the named rows, in their kept environments")
    parser.add_argument("--doctor", metavar="MODULE",
                        help="run labkit doctor MODULE per release instead of the notebooks (writes nothing in docs/)")
    parser.add_argument("--doctor-pip", action="append", default=[], metavar="SPEC",
                        help="a package the doctor's module needs (pip spec), installed with torch pinned; repeatable")
    parser.add_argument("--doctor-cwd", type=Path, default=Path.cwd(),
                        help="the folder the doctor runs in (the project's root; default: here)")
    parser.add_argument("--doctor-out", type=Path, help="write every release's doctor report (JSON) to this file")
    parser.add_argument("--notebooks", nargs="+", metavar="NN",
                        help="run only these notebooks (numbers or names); the result is printed, not written")
    args = parser.parse_args(argv)
    if args.notebooks is not None:
        if args.doctor or args.table_only or args.probes_only:
            parser.error("--notebooks runs named notebooks on releases: it does not go with --doctor, "
                         "--table-only or --probes-only")
        try:
            args.notebooks = named_notebooks(args.notebooks)
        except ValueError as error:
            parser.error(str(error))
    if args.doctor:
        if not args.versions:
            parser.error("--doctor: name the torch releases to run it on, e.g. 2.11.0 2.13.0")
        args.venv_root.mkdir(parents=True, exist_ok=True)
        rows = [run_doctor_row(v, args.python, args.venv_root, args.keep_venvs, args.doctor, args.doctor_pip,
                               args.doctor_cwd.resolve()) for v in args.versions]
        if args.doctor_out:
            args.doctor_out.write_text(json.dumps(rows, indent=1) + "\n")
        print(doctor_table(rows))
        raise SystemExit(0 if all(r.get("exit_status") == 0 for r in rows) else 1)
    if not args.versions and not args.colab and not args.table_only:
        parser.error("name at least one torch release, or --colab, or --table-only")
    args.venv_root.mkdir(parents=True, exist_ok=True)
    rows = load()
    todo, failed = [(v, v, args.python, False) for v in args.versions], False
    if args.colab:
        todo.append(("Colab stack", COLAB["torch"], args.colab_python, True))
    for label, version, python, colab in ([] if args.table_only else todo):
        if args.probes_only:
            old = next((r for r in rows if r["row"] == label), None)
            if old is None:
                parser.error(f"--probes-only: no {label} row in {RESULTS.name} yet")
            rows = save(reprobe_row(old, python, args.venv_root))
            continue
        row = run_row(label, version, python, colab, args.venv_root, args.keep_venvs, args.notebooks)
        if args.notebooks:
            print(partial_report(row), flush=True)
            failed = failed or row["result"] != "the named notebooks pass"
            continue
        rows = save(row)
    if args.notebooks:
        raise SystemExit(1 if failed else 0)
    write_table(rows)
    table = TABLE.relative_to(ROOT) if TABLE.is_relative_to(ROOT) else TABLE
    print(f"wrote {table}; every notebook passes on: {', '.join(checked_on(rows))}")


if __name__ == "__main__":
    main()
