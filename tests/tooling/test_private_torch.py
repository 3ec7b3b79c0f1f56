"""Private torch APIs are touched only in ``labkit/_torch/``, the adapter (a package by subject).

When torch moves one of them, only that folder must change, and ``CHECKED_ON`` there says which
releases it was read against. This test reads every other labkit module and fails, naming the
file and line, on any private torch name outside that fence.

Strings and comments are not code: an error message may name the setting a learner types
(``torch._inductor.config.fallback_random = True``).
"""

import io
import re
import tokenize

import pytest

from repo import ROOT

LABKIT = ROOT / "labkit"
FENCE = "_torch"

PRIVATE = re.compile(
    r"\._schema\b|\._opoverload\b|\._qualified_op_name\b"
    r"|\btorch\._(?:ops|library|C|inductor|functorch|subclasses|guards|prims|higher_order_ops|export)\b"
    r"|\btorch\._dynamo\.(?!mark_dynamic\b|mark_static\b|maybe_mark_dynamic\b|reset\b)\w+"
    r"|\bfrom torch\._dynamo\b|\bimport torch\._dynamo\b"
)


def _modules():
    """Every labkit module, a subpackage's (``labkit/doctor/*.py``) included, but the fence's."""
    return sorted(p for p in LABKIT.rglob("*.py") if p.relative_to(LABKIT).parts[0] != FENCE)


def _code_lines(text: str) -> dict[int, str]:
    """Each line's code with strings and comments blanked: a message may *name* what a user types."""
    lines: dict[int, list[str]] = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.STRING, tokenize.COMMENT):
            lines.setdefault(token.start[0], []).append(token.string)
    return {number: "".join(parts) for number, parts in lines.items()}


@pytest.mark.parametrize("module", _modules(), ids=lambda p: p.relative_to(LABKIT).as_posix())
def test_no_private_torch_name_outside_the_fence(module):
    source = module.read_text()
    hits = [f"{module.relative_to(LABKIT).as_posix()}:{number}: {source.splitlines()[number - 1].strip()}"
            for number, code in _code_lines(source).items() if PRIVATE.search(code)]
    assert not hits, (f"private torch API outside labkit/{FENCE}; add a named helper there and call it:\n"
                      + "\n".join(hits))


def test_the_pattern_catches_what_it_should_and_allows_the_public_entry_points():
    for private in ("overload._schema", "op._opoverload", "torch._ops.OpOverload", "from torch._library import x",
                    "torch._inductor.config", "torch._dynamo.utils.counters", "import torch._functorch.config",
                    "from torch._dynamo.callback import callback_handler", "torch._C._dispatch_has_kernel"):
        assert PRIVATE.search(private), private
    for public in ("torch._dynamo.mark_dynamic(x, 0)", "torch._logging.set_logs(graph_code=True)",
                   "torch.library.custom_op", "torch.compiler.config.cache_key_tag", "self._declared_schema"):
        assert not PRIVATE.search(public), public


def test_the_fence_sees_code_and_not_messages():
    code = _code_lines('x = torch._C._foo()  # torch._C\ny = "torch._C is named here"\n')
    assert PRIVATE.search(code[1]) and not PRIVATE.search(code[2])


@pytest.mark.parametrize("lesson", sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py")), ids=lambda p: p.stem[:2])
def test_no_lesson_calls_the_adapter(lesson):
    """Issue 77: a lesson reaches torch's private state only through labkit's public names (or torch's own, said
    so in the cell), never through the adapter, whose names change when torch moves."""
    code = _code_lines(lesson.read_text())
    hits = [f"{lesson.name}:{n}: {line}" for n, line in code.items() if re.search(r"\b_torch(_internals)?\b", line)
            and "torch._" not in line.replace("labkit._torch", "")]
    assert not hits, "a lesson calls labkit's private-torch adapter; give it a public labkit name:\n" + "\n".join(hits)
