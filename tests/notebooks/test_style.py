"""The notebook style rules of docs/notebook-style.md, checked on every lessons/NN_*.py.

(a) an op a notebook declares lives in its namespace ``nbNN`` (or ``nbNN<word>``);
(b) one reset spelling, ``torch.compiler.reset()`` — never ``torch._dynamo.reset()``;
(c) an ``assert`` has a message and asserts one claim (no top-level ``and``); or use
    ``torch.testing.assert_close``;
(d) a code cell has at most 20 lines (blank lines inside count; trailing blank lines and the
    ``# %%`` marker do not; Colab's install cell is added by the builder and is not in a source).
"""

import ast
import re

import jupytext

from repo import ROOT, starts_a_cell

# Every lesson's source, a new one too from its first line (facts.py refuses one without its registry entry).
SOURCES = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
MAX_LINES = 20
# Calls that name an op (first argument or name=) or, for the Library ones, a namespace.
DECLARES = {"custom_op", "triton_op", "declare", "scoped", "OpSpec", "define", "impl", "register_fake",
            "register_kernel", "register_autograd", "register_torch_dispatch", "register_vmap"}
NAMESPACES = {"Library", "_scoped_library"}


def code_cells(path):
    """(cell index, line of its '# %%' marker, source) for each code cell, read with jupytext."""
    markers = [n for n, line in enumerate(path.read_text().splitlines(), 1) if starts_a_cell(line)]
    cells = jupytext.read(path).cells
    assert len(markers) == len(cells), f"{path.name}: every cell must start with a '# %%' line"
    return [(i, line, cell.source) for i, (line, cell) in enumerate(zip(markers, cells))
            if cell.cell_type == "code"]


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _text(node):
    """A string argument's text (an f-string's leading constant part), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return node.values[0].value
    return None


def _named(call):
    name = next((k.value for k in call.keywords if k.arg in ("name", "qualname", "ns")), None)
    return _text(call.args[0] if call.args else name) if (call.args or name) else None


def cell_problems(source, number):
    """(line in the cell, problem, fix) for each rule this cell's code breaks."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    found, nb, tree = [], f"nb{number}", ast.parse(code)
    allowed = re.compile(rf"{nb}[a-z]*")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = _dotted(node.func)
            last = func.rsplit(".", 1)[-1]
            text = _named(node) if last in DECLARES | NAMESPACES else None
            if text is not None:
                ns = text if last in NAMESPACES else text.split("::")[0] if "::" in text else None
                if ns is not None and not allowed.fullmatch(ns):
                    found.append((node.lineno, f"(a) {func}() declares in the namespace {ns!r}",
                                  f"rename it to {nb}::… (or {nb}<word> for a second namespace)"))
            if func.endswith("_dynamo.reset"):
                found.append((node.lineno, "(b) torch._dynamo.reset()", "call torch.compiler.reset()"))
        if isinstance(node, ast.Assert):
            if node.msg is None:
                found.append((node.lineno, "(c) an assert without a message",
                              'add one: assert claim, "what it shows" (a trailing comment makes a good one)'))
            if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And):
                found.append((node.lineno, "(c) an assert that chains claims with 'and'",
                              "split it: one assert per claim, each with its message"))
    lines = len(source.rstrip().splitlines())
    if lines > MAX_LINES:
        found.append((1, f"(d) a code cell of {lines} lines", f"split it at a natural point into cells of "
                                                             f"≤ {MAX_LINES} lines (prose first)"))
    return found


def problems(path):
    """One sentence per broken rule: notebook, cell, line, the problem and its fix."""
    out, number = [], path.name[:2]
    for index, marker, source in code_cells(path):
        found = cell_problems(source, number)
        out += [f"{path.name} cell {index}, line {marker + line}: {what}; fix: {fix}" for line, what, fix in found]
    return out


def test_every_converted_notebook_source_follows_the_style_guide():
    assert SOURCES, "no notebook sources found"
    found = [problem for path in SOURCES for problem in problems(path)]
    assert not found, "docs/notebook-style.md:\n" + "\n".join(found)


BAD = '''# %% [markdown]
# # 42 · a bad notebook

# %%
import torch

@torch.library.custom_op("mylib::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2

lib = torch.library.Library("elsewhere", "FRAGMENT")
op = labkit.declare(name=f"nb41::{'x'}")
fine = labkit.declare(name="nb42::fine")
torch._dynamo.reset()
torch.compiler.reset()
assert scale(torch.ones(1)).sum() == 2
assert op and fine, "two claims"
assert fine, "one claim"

# %%
''' + "x = 1\n" * (MAX_LINES + 1)


def test_each_rule_fires_on_a_bad_source(tmp_path):
    path = tmp_path / "42_bad.py"
    path.write_text(BAD)
    found = problems(path)
    text = "\n".join(found)
    assert "'mylib'" in text, text
    assert "'elsewhere'" in text, text
    assert "'nb41'" in text, text
    assert "nb42" not in text.replace("nb42::…", "").replace("nb42<word>", ""), text
    assert "(b) torch._dynamo.reset()" in text, text
    assert "42_bad.py cell 1, line 16: (c) an assert without a message" in text, text
    assert "42_bad.py cell 1, line 17: (c) an assert that chains claims" in text, text
    assert "42_bad.py cell 2, line 21: (d) a code cell of 21 lines" in text, text
    assert len(found) == 7, text
