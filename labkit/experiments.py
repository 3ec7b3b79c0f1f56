"""The lab's experiments and their catalogues: UI-free, so a test, a script or a widget can run them.

Each catalogue maps a label a learner sees to what it means; each experiment declares the
op a label names, runs :func:`labkit.stages.compile_and_compare` on a small program and
returns ``(op, report)``. The widgets in :mod:`labkit.widgets` only wire controls to these.

Not here: controls and HTML (:mod:`labkit.widgets`, :mod:`labkit.views`), and private torch.
"""

from __future__ import annotations

import torch

from . import naming, ops
from .ops import OpSpec
from .describe import brief
from .language import Said, said, said_together
from .lessons import notebook_about
from .stages import compile_and_compare

# What the kernel really does is the same in every case but "over-declared" and "no fake":
# it adds 1 to x in place. What changes is what it *declares*.
DECLARATIONS: dict[str, tuple[str, dict]] = {
    "correct": ("writes x and declares mutates_args=('x',)",
                dict(writes=("x",), mutates_args=("x",), returns="none")),
    "undeclared mutation": ("writes x but declares mutates_args=()",
                            dict(writes=("x",), mutates_args=(), returns="none")),
    "over-declared": ("writes nothing but declares mutates_args=('x',)",
                      dict(writes=(), mutates_args=("x",), returns="none")),
    "returns its input": ("writes x, declares it, and returns x itself",
                          dict(writes=("x",), mutates_args=("x",), returns="input")),
    "no fake kernel": ("is pure and returns a new tensor, but has no register_fake",
                       dict(writes=(), mutates_args=(), returns="fresh", fake=False)),
    '"unknown"': ("writes x and declares mutates_args='unknown': every argument written, and x is its only one",
                  dict(writes=("x",), mutates_args="unknown", returns="none")),
}
DYNAMIC_CHOICES = {"False": False, "True": True, "None": None}

DCE_DECLARATIONS: dict[str, dict] = {
    "pure, result unused": dict(returns="fresh"),
    "-> None with a Python side effect": dict(returns="none"),
    "declared mutation of x": dict(writes=("x",), mutates_args=("x",), returns="none"),
    "has_side_effect": dict(returns="none", effect="side_effect"),
    "effectful (ordered)": dict(returns="none", effect="ordered"),
}
# The ops above whose kernel does something a caller could notice besides outputs and writes: a Python side effect
# (a log line, a counter; here labkit's count of the kernel's runs). Compiled code that runs it a different number of
# times than eager differs from eager, even where outputs and inputs agree (the labs' headline says so).
PYTHON_SIDE_EFFECT = ("-> None with a Python side effect", "has_side_effect", "effectful (ordered)")
# How the op's output size is known: from the input's shape (its fake kernel says empty_like(x)), or
# only at run time (nonzero-like: the fake kernel asks for ctx.new_dynamic_size(), an unbacked size).
OP_KINDS = {"shape-following": "fresh", "data-dependent": "data-dependent"}
FULLGRAPH_CHOICES = {"False": False, "True": True}
SHAPE_SEQUENCES = {"4 → 6 → 8": (4, 6, 8), "4 → 4 → 4": (4, 4, 4), "4 → 6 → 4": (4, 6, 4)}


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in label).strip("_").lower() or "op"


def _choice(catalogue: dict, label, what: str):
    """``catalogue[label]``, or one sentence listing the labels a caller can use."""
    if not isinstance(label, str) or label not in catalogue:
        raise ValueError(f"{what} must be one of {list(catalogue)}, not {brief(label)}.")
    return catalogue[label]


def _declared(spec: OpSpec):
    """The live op for ``spec``: reused when an identical one is alive, declared otherwise."""
    live = ops.live_ops().get(spec.name)
    return live if live is not None and live.spec == spec else ops.declare(spec)


# --- small programs the lessons compile again and again ------------------------------------------


def discards_result(op):
    """``f(x)`` that calls ``op(x)``, throws the result away and returns ``x + 1``.

    The smallest program in which an op is dead code unless something keeps it alive.
    """

    def f(x):
        op(x)
        return x + 1

    f.__name__ = f"discards_{getattr(op, '__name__', 'op')}_result"
    return f


def uses_result(op):
    """``step(x)``: ``x * 2`` when ``op(x)`` returns None, else ``x + op(x)``: the declaration lab's program."""

    def step(x):
        out = op(x)
        return x * 2 if out is None else x + out

    return step


# --- the declaration experiment ----------------------------------------------------


def declaration_spec(declaration: str, namespace: str = "declab") -> OpSpec:
    _, fields = _choice(DECLARATIONS, declaration, "declaration")
    return OpSpec(name=f"{namespace}::{_slug(declaration)}", **fields)


def declaration_experiment(declaration: str, backend: str, dynamic: bool | None,
                           namespace: str = "declab", sizes=(4, 6)):
    """Declare the op ``declaration`` names, run :func:`uses_result` on two shapes, report."""
    op = _declared(declaration_spec(declaration, namespace))
    calls = [(torch.arange(float(n)),) for n in sizes]
    return op, compile_and_compare(uses_result(op), calls=calls, backend=backend, dynamic=dynamic)


# --- dead-code elimination and dynamic shapes --------------------------------------


def devices() -> list[str]:
    """The devices a learner can pick: the CPU always, CUDA only when a GPU is present."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def dce_experiment(declaration: str, dynamic: bool | None, shapes=(4, 6, 8), device: str = "cpu",
                   backend: str = "inductor", namespace: str = "dcelab", op_kind: str = "shape-following",
                   fullgraph: bool = False):
    """Call an op whose result nobody uses, on a sequence of shapes; report its fate.

    ``op_kind="data-dependent"`` (for the pure op only) gives it a nonzero-like output size:
    under ``fullgraph=False`` Dynamo breaks the graph at it and its kernel runs eagerly; under
    ``fullgraph=True`` it is captured, and its unbacked size's runtime assert keeps it alive.
    """
    if device not in devices():
        raise ValueError(f"device {brief(device)} is not available here; pick one of {devices()}.")
    fields = dict(_choice(DCE_DECLARATIONS, declaration, "declaration"))
    name = _slug(declaration)
    if _choice(OP_KINDS, op_kind, "op_kind") == "data-dependent":
        if fields.get("returns") != "fresh":
            raise ValueError("op_kind='data-dependent' describes an op that returns a new tensor: use it with "
                             "the declaration 'pure, result unused'.")
        fields["returns"], name = "data-dependent", name + "_dd"
    op = _declared(OpSpec(name=f"{namespace}::{name}", **fields))
    calls = [(torch.ones(n, device=device),) for n in shapes]
    return op, compile_and_compare(discards_result(op), calls=calls, backend=backend, dynamic=dynamic,
                                   fullgraph=fullgraph)


# --- the naming experiment ----------------------------------------------------


# The section of the mutates_args notebook that runs an op declared pure whose kernel writes its input: where a row of
# the naming lab that is wrong for its declaration, not its name, is explained (a test checks the heading is there).
DECLARATION_SECTION = "6. Four ways to get it wrong, each one run"


def declaration_lesson() -> tuple[str, str, str]:
    """(words, link, heading): the lesson that explains a pure declaration over a kernel that writes ``x``, as the
    naming lab's sentence names it, the address its link opens (:meth:`labkit.lessons.Lesson.href`: the notebook
    beside this one, its fragment that section; on Colab, the published notebook), and the section's heading."""
    lesson = notebook_about("mutates_args")
    number, heading = DECLARATION_SECTION.split(". ", 1)
    return said("notebook {number}, section {section}", number=lesson.number, section=number), \
        lesson.href(DECLARATION_SECTION), heading


def _wrong_for_its_declaration(steps) -> Said | None:
    """One sentence on the steps whose compiled x differs from eager's without a cache hit: not the name's doing.
    Where such a step was declared pure and its kernel never ran compiled, it says why (the kernel, which writes x,
    was removed); any other such step is named without a why."""
    wrong = [(i + 1, s) for i, s in enumerate(steps) if not s.correct and not s.stale]
    removed = [n for n, s in wrong if s.declared == "pure" and s.kernel_calls == 0]
    sentences = []
    if removed:
        sentences.append(said("{steps} differs from eager for a reason no name or cache can fix: declared pure "
                              "(mutates_args=()), the kernel writes x, so torch.compile removed the call ({lesson})."
                              if len(removed) == 1 else
                              "{steps} differ from eager for a reason no name or cache can fix: declared pure "
                              "(mutates_args=()), the kernel writes x, so torch.compile removed the call ({lesson}).",
                              steps=_steps(removed), lesson=declaration_lesson()[0]))
    others = [n for n, _ in wrong if n not in removed]
    if others:
        sentences.append(said("{steps} differs from eager, with no cache hit." if len(others) == 1 else
                              "{steps} differ from eager, with no cache hit.", steps=_steps(others)))
    if len(sentences) == 2:
        return said("{first} {second}", first=sentences[0], second=sentences[1])
    return sentences[0] if sentences else None


def _steps(numbers) -> Said:
    """"Step 1" or "Step 1 and step 2" (the naming lab has two steps), said in the view's language."""
    if len(numbers) == 2:
        return said("Step {first} and step {second}", first=numbers[0], second=numbers[1])
    return said_together([said("Step {n}" if i == 0 else "step {n}", n=n) for i, n in enumerate(numbers)],
                         " and ", " and ")


def naming_story(result: naming.NamingResult) -> str:
    """What a :func:`labkit.naming.run` table shows, in a sentence or two: first any step that is wrong for its
    declaration (not its name), then what the cache did. :func:`declaration_lesson`'s words name the lesson. English
    (:class:`~labkit.language.Said`): the lab's view says it in its language."""
    if result.problem:
        return result.problem
    first, second = result.steps
    if second.stale:
        cache = said("The second compile got the first one's artifact from the cache, whose key holds the op's name "
                     "but not its declaration: it was built for '{declared}', the answer still looks right only "
                     "because the old artifact happens to call the op." if second.correct else
                     "The second compile got the first one's artifact from the cache, whose key holds the op's name "
                     "but not its declaration: it was built for '{declared}', so the second compile is silently "
                     "wrong.", declared=said(first.declared))
    elif first.name == second.name:
        cache = said("Same name, but the cache could not confuse them: the fingerprint of the declarations is part "
                     "of the key." if result.policy == "fingerprinted" else
                     "Same name, but the cache could not confuse them: the caches are off.")
    else:
        cache = said("Different names give different graphs, so different cache keys: no confusion.")
    wrong = _wrong_for_its_declaration(result.steps)   # None when no step is wrong for its declaration
    return said("{wrong} As for the cache: {cache}", wrong=wrong, cache=cache) if wrong else cache
