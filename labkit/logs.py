"""torch's own logs (``TORCH_LOGS``, ``torch._logging.set_logs``) captured as text a cell can check.

In a script you would run ``TORCH_LOGS="aot_graphs" python train.py`` and read stderr. In a
notebook cell that asserts on the log, the text has to be caught, and torch's releases differ in
*when* their log handler looks at ``sys.stderr``: up to 2.14 when ``set_logs`` runs, from 2.15 at
each message. Redirecting stderr around the whole block catches both. A lesson may write these
lines out in the open; the others call :func:`torch_logs`.

Not here: deciding what a log means (the lessons and their tests do), and private torch beyond
``torch._logging.set_logs`` and the loggers' names (the adapter keeps their state).
"""

from __future__ import annotations

import contextlib
import io
import logging
from typing import Iterator

import torch

from . import _torch as internals
from . import cache
from .env import refuse_if_compiler_unavailable


class CapturedLog(io.StringIO):
    """What torch logged inside a :func:`torch_logs` block."""

    def artifact(self, name: str) -> list[str]:
        """The lines logged for artifact ``name`` (``"aot_graphs"``, ``"graph_code"``, ...), after its tag."""
        tag = f"[__{name}]"
        return [line.split(tag, 1)[1] for line in self.getvalue().splitlines() if tag in line]


@contextlib.contextmanager
def torch_logs(**settings) -> Iterator[CapturedLog]:
    """``torch._logging.set_logs(**settings)`` for the block; yields what torch logged.

    Afterwards torch logs exactly where and what it logged before the block: each ``torch.*``
    logger gets back its own handlers, level and ``propagate``, and torch its record of which logs
    are on. (``set_logs`` alone would leave handlers bound to the block's buffer on torch <= 2.14.)
    With the ``TORCH_LOGS`` environment variable set, torch ignores ``set_logs``: nothing is captured.
    """
    text = CapturedLog()
    before = _torch_logging_now()
    try:
        with contextlib.redirect_stderr(text):  # torch <= 2.14 binds its handler here, 2.15 reads it per message
            torch._logging.set_logs(**settings)
            yield text
    finally:
        torch._logging.set_logs()  # outside the redirect: loggers new since the block get the real stderr
        _restore_torch_logging(before)


def torch_loggers() -> dict[str, logging.Logger]:
    """Every logger named ``torch`` or ``torch.*`` that exists now (audit and torch_logs both need them)."""
    return {name: logger for name, logger in logging.Logger.manager.loggerDict.items()
            if (name == "torch" or name.startswith("torch.")) and isinstance(logger, logging.Logger)}


def _torch_logging_now() -> tuple[object, dict]:
    loggers = {name: (logger, list(logger.handlers), logger.level, logger.propagate)
               for name, logger in torch_loggers().items()}
    return internals.torch_log_state(), loggers


def _restore_torch_logging(before: tuple[object, dict]) -> None:
    state, loggers = before
    internals.set_torch_log_state(state)
    for logger, handlers, level, propagate in loggers.values():
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


# --- one logger's messages, and the code Inductor generates ------------------------------------

OUTPUT_CODE = "torch._inductor.codecache.__output_code"    # the logger behind TORCH_LOGS=output_code
CUDAGRAPHS = "torch._inductor.cudagraph_utils.__cudagraphs"   # the logger behind TORCH_LOGS=cudagraphs
CODECACHE = "torch._inductor.codecache"        # the cache key's details, at DEBUG (TORCH_LOGS="+inductor")
REINPLACE = "torch._inductor.fx_passes.reinplace"   # re-inplacing's verdicts, at INFO (TORCH_LOGS="inductor")
TRITON_OP = internals.TRITON_OP_LOGGER    # triton_op's own, e.g. its WARNING where Triton is not installed


def counters(group: str = "inductor"):
    """torch's own event counters for ``group`` since :func:`clear_counters` (a copy; a missing one reads 0):
    Inductor's ``cudagraph_skips``, ``fxgraph_cache_hit``, ..."""
    return internals.torch_counters(group)


def clear_counters() -> None:
    """Zero torch's own event counters, so that the next :func:`counters` counts from here."""
    internals.clear_torch_counters()


@contextlib.contextmanager
def logged(logger_name: str, level: int = logging.DEBUG) -> Iterator[list[str]]:
    """Collect what one of torch's loggers emits inside the block, at ``level`` and above, without printing it.

    The logger's level, handlers and ``propagate`` are restored afterwards. ``TORCH_LOGS=<name>`` would print the
    same messages to stderr.
    """
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    logger, handler = logging.getLogger(logger_name), Keep(level)
    old_level, old_propagate = logger.level, logger.propagate
    logger.setLevel(level)
    logger.propagate = False            # keep the messages out of torch's own stderr handler
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def inductor_code(fn, *args, **compile_options) -> str:
    """Compile ``fn`` with Inductor from a reset, run it once on ``args``, and return the code Inductor generated:
    what ``TORCH_LOGS=output_code`` prints (every graph's module, in order).

    The FX-graph and AOTAutograd caches are bypassed, so the code is this compile's own, not an artifact stored
    by an earlier one. ``compile_options`` go to ``torch.compile`` (``mode=``, ``fullgraph=``, ...).
    """
    refuse_if_compiler_unavailable()
    cache.reset_compiler()
    with internals.graph_caches_off(), logged(OUTPUT_CODE) as messages:
        torch.compile(fn, **compile_options)(*args)
    return "\n".join(m for m in messages if m.startswith("Output code:"))


def code_lines(code: str, text: str) -> list[str]:
    """The lines of generated code that contain ``text``, stripped; comment lines left out."""
    return [line.strip() for line in code.splitlines() if text in line and not line.strip().startswith("#")]


def buffer_reuse(code: str) -> list[str]:
    """Where Inductor's generated code reuses a buffer for later work: each ``bufN = bufM; del bufM  # reuse`` line,
    stripped, and the line after it (the work written into the reused buffer)."""
    lines = [line.strip() for line in code.splitlines()]
    return [line for i, line in enumerate(lines) if "# reuse" in line or (i and "# reuse" in lines[i - 1])]


def call_steps(code: str) -> list[tuple[str, str]]:
    """What the ``call`` function of Inductor's code does, in order: ``("kernel", ...)`` for a kernel Inductor
    generated (or an extern one), ``("op", ...)`` for a custom op called by name, ``("alloc", ...)`` for a buffer it
    allocates. Each comes with the line's call, shortened (``mylab.scale(arg0_1)``); asserts, ``del`` and comments
    are left out."""
    import re

    kernels = set(re.findall(r"^(\w+) = async_compile\.\w+\(", code, re.M))
    steps, inside = [], False
    for raw in code.splitlines():
        line = raw.strip()
        if line.startswith("def call("):
            inside = True
            continue
        if not inside or line.startswith(("#", "assert", "del ")):
            continue
        if line.startswith("return") or (raw[:1] not in " \t" and line):
            inside = False
            continue
        allocation = re.match(r"(\w+) = empty_strided\w*\(", line)
        op = re.search(r"torch\.ops\.(\w+)\.(\w+)\.default\((.*)\)$", line)
        kernel = re.match(r"(?:\w+ = )?(\w+)(?:\.run)?\((.*)\)$", line)
        extern = re.search(r"extern_kernels\.(\w+)\((.*)\)$", line)
        if allocation:
            steps.append(("alloc", f"allocate {allocation.group(1)}"))
        elif op:
            steps.append(("op", f"{op.group(1)}.{op.group(2)}({_short_args(op.group(3))})"))
        elif extern:
            steps.append(("kernel", f"extern {extern.group(1)}({_short_args(extern.group(2))})"))
        elif kernel and kernel.group(1) in kernels:
            steps.append(("kernel", f"{kernel.group(1)}({_short_args(kernel.group(2))})"))
    return steps


def _short_args(args: str, limit: int = 34) -> str:
    return args if len(args) <= limit else args[: limit - 1] + "…"


# --- TORCH_TRACE and tlparse, on a program run in a child process ---------------------------------------


class ToolMissing(RuntimeError):
    """A command-line tool the lesson runs is not installed. Shown in Jupyter as its one sentence."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return [f"ToolMissing: {self}"]


def tlparse_command() -> str | None:
    """Where ``tlparse`` is: on PATH, or beside this kernel's Python (a venv not on PATH); None when absent."""
    import pathlib
    import shutil
    import sys

    beside = pathlib.Path(sys.executable).with_name("tlparse")
    return shutil.which("tlparse") or (str(beside) if beside.exists() else None)


def torch_trace_report(program: str):
    """Run ``program`` (Python source) as ``TORCH_TRACE=<folder>/trace python program.py`` in a new process (torch
    reads ``TORCH_TRACE`` when it starts), with an empty Inductor cache, then ``tlparse`` on the log it wrote.
    Returns the report's folder (``index.html``, ``compile_directory.json``, one file per entry). Safe to stop
    and run again: each run uses a new temporary folder.

    ``tlparse`` comes with the lab's requirements (and with the Colab cell); where it is missing this raises
    :class:`ToolMissing` naming the install, instead of downloading anything while the lesson runs."""
    import os
    import pathlib
    import subprocess
    import sys
    import tempfile

    command = tlparse_command()
    if command is None:
        raise ToolMissing("tlparse is not installed beside this kernel's Python: run `%pip install tlparse` "
                          "in a cell, then this cell again")
    work = pathlib.Path(tempfile.mkdtemp(prefix="torch-trace-"))
    (work / "program.py").write_text(program)
    env = dict(os.environ, TORCH_TRACE=str(work / "trace"), TORCHINDUCTOR_CACHE_DIR=str(work / "cache"),
               **internals.vec_isa_settled_env())    # this kernel's check of the CPU, not repeated (5-15 s)
    subprocess.run([sys.executable, str(work / "program.py")], env=env, check=True, capture_output=True)
    (log,) = (work / "trace").glob("*.log")
    subprocess.run([command, str(log), "-o", str(work / "report"), "--no-browser", "--overwrite"], check=True,
                   capture_output=True)
    return work / "report"


# --- what dead-code elimination erased, and what it kept ----------------------------------------


class DeadCodeRun:
    """One compile of a program through AOTAutograd: its forward ``graphs`` (``torch.fx.GraphModule``) and the
    names of the nodes torch's dead-code elimination ``erased``, sorted, as its own log says."""

    def __init__(self, graphs: list, erased: list[str]):
        self.graphs, self.erased = graphs, erased

    @property
    def nodes(self) -> dict[str, bool]:
        """Each call left in the first forward graph, with ``node.is_impure()``: ``{name: impure}``."""
        return {n.name: n.is_impure() for n in self.graphs[0].graph.nodes if n.op == "call_function"}

    @property
    def outputs(self) -> list[str]:
        """The names of what the first forward graph returns."""
        return [str(a) for a in self.graphs[0].graph.output_node().args[0]]

    def targets(self, impure_only: bool = False) -> list[str]:
        """What every call left in the forward graphs calls (``mylab.positives.default``, ``aten.add.Tensor``)."""
        return [str(n.target) for g in self.graphs for n in g.graph.nodes
                if n.op == "call_function" and (n.is_impure() or not impure_only)]


def inductor_keeps_input_mutations() -> bool:
    """Whether Inductor asks AOTAutograd to keep a write back into a mutated input in its graph (a ``copy_`` node,
    ``keep_inference_input_mutations=True``), as :func:`dead_code_run`'s backend does: read in this torch's code."""
    return internals.inductor_keeps_input_mutations()


def dead_code_run(fn, *args, fullgraph: bool = True) -> DeadCodeRun:
    """Compile ``fn`` through AOTAutograd as Inductor gets it and call it once on ``args``.

    Returns the forward graphs AOTAutograd produced (each pass of dead-code elimination has run on them) and the
    nodes those passes erased, read from torch's own log: ``TORCH_LOGS="+torch.fx.graph"``, where each pass logs
    "The following nodes were dead code eliminated". The compiler is reset first, and the AOTAutograd cache is off
    for the call, so the graphs are this call's own.
    """
    import re

    refuse_if_compiler_unavailable()
    graphs: list = []
    backend = internals.aot_forward_as_inductor_gets_it(graphs.append)
    torch.compiler.reset()
    with internals.config_patches(functorch={"enable_autograd_cache": False}), \
            torch_logs(modules={"torch.fx.graph": logging.INFO}) as log:
        torch.compile(fn, backend=backend, fullgraph=fullgraph)(*args)
    erased = {name for line in log.getvalue().splitlines() if "dead code eliminated" in line
              for name in re.findall(r"'(\w+)'", line)}
    return DeadCodeRun(graphs, sorted(erased))


def dynamo_graph_calls(fn, *args, **compile_options) -> list[list[str]]:
    """Compile ``fn`` with ``compile_options`` and call it once; for each graph Dynamo hands the backend, what its
    calls call (``mylab.positives.default``, ``aten._assert_scalar.default``, ...). The compiler is reset first."""
    refuse_if_compiler_unavailable()
    graphs: list[list[str]] = []

    def recording(gm, example_inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method")])
        return gm.forward

    torch.compiler.reset()
    torch.compile(fn, backend=recording, **compile_options)(*args)
    return graphs
