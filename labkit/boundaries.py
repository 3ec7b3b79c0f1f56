"""The boundary around a kernel, and what one call through it costs: a kernel from outside torch, loaded with
``ctypes`` (torch.compile cannot look into it, as it cannot into a vendor's C library), and the eager time of
one call through each boundary, measured on this machine.

Not here: what torch.compile makes of each boundary (``labkit.compile_and_compare`` and
``torch._dynamo.explain`` show that in the lesson), and the picture of the costs (:mod:`labkit.charts`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import subprocess
import sys
import time
import timeit
from typing import Callable

from . import _torch as internals
from .describe import brief
from .ops import LabOpError

# Where the compiled kernels live: one shared library per source, named by its digest, so running a cell again
# (or a second Run All) loads the file it compiled the first time. The user's own cache folder, not a shared /tmp
# one: a library loaded from a folder another user can write to runs their code.
KERNELS = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "labkit" / "c-kernels"

POINTERS_AND_LENGTH = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def c_kernel(name: str, source: str, argtypes: tuple = POINTERS_AND_LENGTH) -> Callable:
    """Compile ``source`` (C++ with one ``extern "C"`` function ``name``) into a shared library with the C++
    compiler Inductor uses on the CPU, load it with ``ctypes`` and return that function, its argument types set
    (by default ``(input pointer, output pointer, int64 length)``: pass ``tensor.data_ptr()`` and ``numel()``).

    The function reads and writes raw memory: it checks nothing about the tensors it is handed (dtype,
    contiguity, size), so the Python function that calls it must.

    LabOpError, in one sentence, where no C++ compiler is found, the compiler refuses the source (its first
    error line) or the library has no function ``name``.
    """
    if not isinstance(source, str):
        raise LabOpError(f"c_kernel() takes the C++ source as a str, not {brief(source)}.")
    if not isinstance(name, str) or not name.isidentifier():
        raise LabOpError(f"c_kernel() takes the C function's name, an identifier like 'softclip', not {name!r}.")
    if sys.platform == "win32":
        raise LabOpError("c_kernel() compiles with a Unix C++ compiler (g++ or clang++); on Windows, use WSL.")
    compiler = internals.cpp_compiler()
    if not compiler:
        raise LabOpError("c_kernel() found no C++ compiler (torch.compile needs one on the CPU too): install g++.")
    digest = hashlib.sha256(f"{compiler}\n{source}".encode()).hexdigest()[:16]
    library = KERNELS / f"{name}-{digest}.so"
    if not library.exists():
        _compile(compiler, source, library)
    try:
        function = getattr(ctypes.CDLL(str(library)), name)
    except OSError as error:
        raise LabOpError(f"c_kernel(): the compiled library {library.name} does not load: "
                         f"{str(error).splitlines()[0]}") from None
    except AttributeError:
        raise LabOpError(f"c_kernel(): the compiled source has no function {name!r}: declare it "
                         f'extern "C" void {name}(...), so that its name is not mangled.') from None
    function.argtypes, function.restype = list(argtypes), None
    return function


def _compile(compiler: str, source: str, library: pathlib.Path) -> None:
    """Compile ``source`` into ``library`` from files of this process's own (the source and the half-written
    library), moved into place whole: a second process compiling the same source never reads half a file."""
    KERNELS.mkdir(parents=True, exist_ok=True, mode=0o700)
    mine = library.with_name(f"{library.stem}.{os.getpid()}")
    code, partial = mine.with_suffix(".cpp"), mine.with_suffix(".partial.so")
    code.write_text(source)
    try:
        built = subprocess.run([compiler, "-shared", "-fPIC", "-O2", str(code), "-o", str(partial)],
                               capture_output=True, text=True)
        if built.returncode != 0:
            lines = built.stderr.strip().splitlines() or [f"exit status {built.returncode}"]
            first = next((ln for ln in lines if "error" in ln), lines[0]).strip().replace(str(KERNELS) + os.sep, "")
            raise LabOpError(f"c_kernel(): {compiler} refused the source: {first}")
        os.replace(partial, library)
    finally:
        code.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)


def per_call_us(functions: dict[str, Callable], *args, number: int = 1000, repeat: int = 5) -> dict[str, float]:
    """{name: microseconds per eager call of ``function(*args)``}, the fastest of ``repeat`` rounds of ``number``
    calls: the fastest round is the one least disturbed by the rest of the machine. Every function is first called
    for a quarter of a second, all of them before any is timed, so that one-off costs are not counted: a first
    dispatch, and the allocator's first large blocks (on a 4 MB tensor, timing one function before the next had
    run measured it 4x slower than after, here; warming each just before its own timing was not enough)."""
    if not isinstance(functions, dict) or not functions or not all(callable(f) for f in functions.values()):
        raise TypeError(f"per_call_us() times {{name: function}}, a dict of callables, not {brief(functions)}.")
    for function in functions.values():      # every one before any is timed: the first timed is not penalised
        warm_until = time.perf_counter() + 0.25
        while time.perf_counter() < warm_until:
            function(*args)
    times = {}
    for label, function in functions.items():
        rounds = timeit.repeat(lambda f=function: f(*args), number=number, repeat=repeat)
        times[label] = min(rounds) / number * 1e6
    return times
