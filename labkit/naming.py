"""The naming experiment: two declarations, one name or two, and the compile caches.

An op's qualified name is its identity in torch's dispatcher. Declare ``ns::op`` as pure,
compile, then declare the same name as mutating and compile again: what does each Python
handle report, what runs, and does the compiled code come from the cache? This module runs
that story with plain ``torch.library.custom_op`` and ``torch.compile`` — no labkit in the
way — inside a chosen cache policy and a fresh cache directory, and reports what happened.

Not here: the cache policies themselves (:mod:`labkit.cache`), and the table a learner sees
(:func:`labkit.views.naming_html`).
"""

from __future__ import annotations

import dataclasses

import torch

from .describe import brief
from . import _torch as internals
from . import cache, ops
from .env import compiler_unavailable

SCHEMES = ("one shared name", "distinct names", "a name I type")
ORDERS = ("pure first, then mutating", "mutating first, then pure")
DECLARED = ("pure", "mutating")   # the two declarations a step makes, in the first order


@dataclasses.dataclass(frozen=True)
class Step:
    """One declaration followed by one compiled call."""

    name: str
    declared: str  # "pure" or "mutating"
    schema_now: str  # what this step's handle reports after *both* declarations
    kernel_calls: int  # real kernel runs during the compiled call
    x_after: list  # x started at zeros; the kernel adds 1
    x_after_eager: list
    cache_hits: int  # FX-graph + AOTAutograd cache hits of this compile
    tag: str = ""  # torch.compiler.config.cache_key_tag when it compiled: part of every cache key

    @property
    def correct(self) -> bool:
        return self.x_after == self.x_after_eager

    @property
    def stale(self) -> bool:
        return self.cache_hits > 0


@dataclasses.dataclass(frozen=True)
class NamingResult:
    scheme: str
    order: str
    policy: str
    steps: tuple[Step, ...] = ()
    problem: str | None = None  # a refused name: why


def name_pair(scheme: str, namespace: str, typed: str = "") -> tuple[str, str] | str:
    """The two qualified names a scheme uses, or a sentence saying why they cannot be used.

    The experiment needs names nobody holds: it refuses any that exist already (yours, labkit's
    or torch's), so it never replaces an op it did not create.
    """
    if scheme != "a name I type" and not isinstance(namespace, str):
        return f"The namespace must be text such as 'mylab', not {brief(namespace)}."
    if scheme == "one shared name":
        names = (f"{namespace}::op", f"{namespace}::op")
    elif scheme == "distinct names":
        names = (f"{namespace}::op_v1", f"{namespace}::op_v2")
    else:
        names = (typed, typed)
    problem = ops.name_problem(names[0])
    if problem:
        return problem
    for name in names:
        if ops.exists(name):
            fix = "type a new name" if scheme == "a name I type" else "pick another namespace"
            return f"{name} already exists in this kernel; {fix} so no other op is replaced."
    return names


def _declare(name: str, mutating: bool):
    """A custom op whose kernel always adds 1 to ``x``; only its declaration changes.

    Plain ``torch.library.custom_op`` as a learner writes it, through labkit's ownership registry.
    """

    def kernel(x: torch.Tensor) -> None:
        kernel.calls += 1
        x.add_(1)

    kernel.calls = 0
    opdef = ops.custom_op(name, kernel, mutates_args=("x",) if mutating else ())
    if not mutating:
        opdef.register_fake(lambda x: None)
    return opdef, kernel


def _refusal(scheme, order, policy) -> str | None:
    if compiler_unavailable() is not None:
        return compiler_unavailable()
    for value, allowed, what in ((scheme, SCHEMES, "scheme"), (order, ORDERS, "order"),
                                 (policy, cache.POLICIES, "policy")):
        if not isinstance(value, str) or value not in allowed:
            return f"The {what} must be one of {allowed}, not {brief(value)}."
    return None


def run(scheme: str, order: str, policy: str, namespace: str = "naming", typed: str = "") -> NamingResult:
    """Declare, compile, redeclare, compile; report each step. Frees its names afterwards.

    Never raises for a bad scheme, order, policy, namespace or name: the result's ``problem``
    says why nothing ran. Calls ``torch.compiler.reset()`` before each compile and at the end,
    because the bug it shows survives a reset: that also forgets your own compiled functions.
    """
    problem = _refusal(scheme, order, policy)
    names = problem or name_pair(scheme, namespace, typed)
    if isinstance(names, str):
        return NamingResult(str(scheme)[:60], str(order)[:60], str(policy)[:60], problem=names)
    kinds = DECLARED if order == ORDERS[0] else DECLARED[::-1]
    handles, kernels, raw = [], [], []
    try:
        with cache.using(policy):
            for name, kind in zip(names, kinds):
                opdef, kernel = _declare(name, kind == "mutating")
                handles.append(opdef)
                kernels.append(kernel)
                cache.refresh()

                def f(x, op=opdef):
                    op(x)
                    # real work, so Inductor compiles (and caches) a graph; an op it hands to ATen (on the CPU), so no
                    # C++ compiler run per fresh cache directory (x * 2 + 1 costs one, a second or so)
                    return torch.sort(x).values

                cache.reset_compiler()
                before = internals.cache_counters()
                kernel.calls = 0
                x = torch.zeros(2)
                tag = torch.compiler.config.cache_key_tag
                torch.compile(f, backend="inductor")(x)
                after = internals.cache_counters()
                hits = after["fxgraph_hit"] - before["fxgraph_hit"] + after["aot_hit"] - before["aot_hit"]
                calls = kernel.calls
                eager = torch.zeros(2)
                f(eager)
                raw.append((name, kind, calls, x.tolist(), eager.tolist(), hits, tag))
        # the first handle dangles now; its schema is a Python copy taken when it was made (safe to read)
        steps = tuple(Step(name, kind, internals.schema_of(internals.overload_of(handle)), calls, x_after,
                           x_eager, hits, tag)
                      for (name, kind, calls, x_after, x_eager, hits, tag), handle in zip(raw, handles))
        return NamingResult(scheme, order, policy, steps)
    finally:
        for name in set(names):
            if ops.owns(name):
                ops.drop(name)
        cache.reset_compiler()
