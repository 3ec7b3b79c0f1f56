"""The AOTInductor lesson's steps around a package: build it (a long compile, announced, safe to stop), load
it, read what it holds, and try it in a fresh Python. Each wraps torch's own call, named in its docstring.

Not here: private torch (the adapter holds ``torch._inductor``'s AOTInductor entry points), and the lesson's
conclusions: it prints only what a long step is doing, and returns what it found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile

from . import _torch as internals


class NoPackage(RuntimeError):
    """The package has not been built (its cell was not run, or was stopped). Shown as one sentence."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return [f"NoPackage: {self}"]


def build(exported, path: str, about: str = "about 25 s on a 2-core CPU") -> str:
    """``torch._inductor.aoti_compile_and_package(exported, package_path=path)``, saying what it does first.
    ``path`` ends in ``.pt2``.

    The package is written under a temporary name and renamed once complete: a cell stopped halfway leaves no
    package behind, and running it again starts over.
    """
    print(f"AOTInductor: compiling the exported program to C++ and building {os.path.basename(path)} "
          f"({about}) ...", flush=True)
    start, partial = time.perf_counter(), path[:-len(".pt2")] + ".partial.pt2"
    if os.path.exists(path):
        os.remove(path)
    internals.aoti_compile_and_package(exported, partial)
    os.replace(partial, path)
    print(f"done in {time.perf_counter() - start:.0f} s.", flush=True)
    return path


def require(path: str | None) -> str:
    """``path``, or :class:`NoPackage` (one sentence) when the cell that builds the package has not run to its end."""
    if not path or not os.path.exists(path):
        raise NoPackage("there is no package yet: run the cell that builds the package first (section 3).")
    return path


def load(path: str | None):
    """``torch._inductor.aoti_load_package(path)``: the package's callable, its custom ops looked up by name now.

    Raises :class:`NoPackage` (one sentence) when the cell that builds it has not run to its end.
    """
    return internals.aoti_load_package(require(path))


def op_calls(path: str | None) -> list[dict]:
    """The custom-op calls the package describes in its JSON, each ``{"target": "ns::name", "inputs": [names]}``,
    with ``"via proxy executor"``: whether the generated C++ makes its calls through the proxy executor."""
    with zipfile.ZipFile(require(path)) as archive:
        files = {name: archive.read(name).decode(errors="replace") for name in archive.namelist()
                 if name.endswith((".cpp", ".json"))}
    cpp = "".join(text for name, text in files.items() if name.endswith(".cpp"))
    proxy = "aoti_torch_proxy_executor_call_function" in cpp
    nodes = [node["node"] for name, text in files.items() if name.endswith(".json") and '"nodes"' in text
             for node in json.loads(text)["nodes"]]
    return [{"target": node["target"], "inputs": [arg["name"] for arg in node["inputs"]], "via proxy executor": proxy}
            for node in nodes]


def in_a_fresh_python(package: str, exported: str, op_name: str, timeout: float = 120) -> tuple[list[str], int]:
    """Run six numbered steps in a new Python process (a crash there cannot take this kernel down): load the
    saved ExportedProgram ``exported`` and the package before ``op_name`` (the SiLU custom op they call, ``x *
    sigmoid(x)``, added to 1 by the program) exists; define it; load and run both; redefine it with one more
    argument; load the package again; call the one loaded before the change. Returns the lines it printed and its
    exit status (negative: killed by that signal)."""
    script = _FRESH_PYTHON.format(package=require(package), exported=exported, op_name=op_name)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
    return result.stdout.splitlines(), result.returncode


# What in_a_fresh_python runs: numbered lines, one per step (torch's private names in a string run elsewhere).
_FRESH_PYTHON = """
import warnings
import torch
warnings.filterwarnings("ignore")
def attempt(label, step):
    try:
        step()
    except Exception as error:
        print(label, "ERROR:", str(error).splitlines()[0], flush=True)
attempt("1 export.load, op not registered:", lambda: torch.export.load({exported!r}))
attempt("2 aoti_load_package, op not registered:", lambda: torch._inductor.aoti_load_package({package!r}))
@torch.library.custom_op({op_name!r}, mutates_args=())
def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)
silu.register_fake(lambda x: torch.empty_like(x))
x = torch.randn(2, 8)
print("3 op defined, export.load runs:", torch.allclose(torch.export.load({exported!r}).module()(x), silu(x) + 1))
runner = torch._inductor.aoti_load_package({package!r})
print("4 op defined, the package runs:", torch.allclose(runner(x), silu(x) + 1), flush=True)
@torch.library.custom_op({op_name!r}, mutates_args=())
def silu(x: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    return x * torch.sigmoid(x) * alpha
fresh = torch._inductor.aoti_load_package({package!r})
print("5 signature changed, a package loaded now runs:", torch.allclose(fresh(x), silu(x) + 1), flush=True)
runner(x)
print("6 the package loaded before the change ran", flush=True)
"""


def registered_now(calls: list[dict]) -> dict[str, str | None]:
    """For each op a package calls: the schema registered under its name in this process now, or None."""
    found = {}
    for call in calls:
        overload = internals.find_overload(call["target"])
        found[call["target"]] = internals.schema_of(overload) if overload is not None else None
    return found
