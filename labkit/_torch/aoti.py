"""AOTInductor: torch's documented entry points live in ``torch._inductor``.

Not here: building, loading and reading a package for the lesson (:mod:`labkit.packages`).
"""

from __future__ import annotations

import torch


# --- AOTInductor: torch's documented entry points live in torch._inductor ------------------------


def aoti_compile_and_package(exported, package_path: str) -> str:
    """``torch._inductor.aoti_compile_and_package``: compile an ExportedProgram ahead of time into a .pt2."""
    return torch._inductor.aoti_compile_and_package(exported, package_path=package_path)


def aoti_load_package(package_path: str):
    """``torch._inductor.aoti_load_package``: load a .pt2 package; its custom ops are looked up by name now."""
    return torch._inductor.aoti_load_package(package_path)
