"""What a learner reads in each notebook, counted: the measure of "story in front, proof behind".

    python tools/lesson_metrics.py                 # the stored notebooks of this checkout, one row each
    python tools/lesson_metrics.py --at a531288    # the notebooks of another commit (git show)
    python tools/lesson_metrics.py --json          # the same as JSON (benchmarks keep it)
    python tools/lesson_metrics.py --language zh-CN  # the notebooks of a translation (notebooks/zh-CN/)

Counted per notebook, from the stored .ipynb (what a reader opens):

- words: the prose, i.e. the words of the markdown cells, less the navigation cells the builder adds (in a
  translation, the words written in Latin letters: API names, numbers);
- characters (only where the prose has Chinese characters: a translation, ``--language zh-CN``): its Chinese
  characters, punctuation left out; tools/facts.py times them at the language's characters_per_minute;
- visible code lines: lines (blank ones too) of code cells a reader sees (not collapsed: ``jupyter.source_hidden``);
- visible asserts: ``assert`` statements in those visible cells (a check belongs in a collapsed cell);
- claims asserted: every ``assert`` and ``torch.testing.assert_close`` in any code cell, collapsed ones too;
- pictures: outputs that are images (``image/png``, ``image/svg+xml``), widgets' static views included;
- visible releases: mentions of a torch release (``2.9`` … ``2.19``, with or without a patch number) in the
  prose outside "Further reading" and in visible code, i.e. where a reader meets them.
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re
import subprocess
import sys

import nbformat

from repo import ROOT

RELEASE = re.compile(r"(?<![\w.])2\.(?:9|1\d)(?:\.\d+)?(?![\w.]*\d)")
NAVIGATION = re.compile(r"^\[(?:!\[Open In Colab\]|←|All notebooks|全部笔记本)")
FURTHER = re.compile(r"^#+\s*(?:Further reading|延伸阅读)", re.M)
# Chinese characters (CJK Unified Ideographs, extension A, compatibility ideographs), punctuation left out.
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def _asserts(source: str) -> int:
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return source.count("assert ")
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            count += 1
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "assert_close", "check", "expect"):
            count += 1
    return count


def _bare_asserts(source: str) -> int:
    try:
        return sum(isinstance(n, ast.Assert) for n in ast.walk(ast.parse(_without_magics(source))))
    except SyntaxError:
        return source.count("assert ")


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _prose(cells) -> list[str]:
    return [cell.source for cell in cells if cell.cell_type == "markdown" and not NAVIGATION.match(cell.source)]


def _pictures(cells) -> int:
    return sum(1 for cell in cells if cell.cell_type == "code" for output in cell.get("outputs", [])
               if {"image/png", "image/svg+xml"} & set(output.get("data", {})))


def measure(nb) -> dict:
    prose = _prose(nb.cells)
    text = "\n\n".join(prose)
    reading = FURTHER.split(text)[0]
    visible = [cell.source for cell in nb.cells if cell.cell_type == "code" and not hidden(cell)]
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    row = {
        "words": len(re.findall(r"[A-Za-z0-9][\w'’.-]*", HAN.sub(" ", text))),
        "visible code lines": sum(len(source.rstrip().splitlines()) for source in visible),
        "visible asserts": sum(_bare_asserts(source) for source in visible),
        "claims asserted": sum(_asserts(source) for source in code),
        "pictures": _pictures(nb.cells),
        "visible releases": len(RELEASE.findall(reading)) + sum(len(RELEASE.findall(s)) for s in visible),
    }
    characters = len(HAN.findall(text))
    return {**row, "characters": characters} if characters else row


def notebooks(at: str | None, language: str | None = None) -> dict[str, object]:
    """{stem: notebook}: the stored notebooks (of a language's folder, notebooks/zh-CN/), or a commit's."""
    if at is None:
        folder = ROOT / "notebooks" / (language or "")
        return {p.stem: nbformat.read(p, as_version=4) for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}
    folder = f"notebooks/{language}/" if language else "notebooks/"
    names = subprocess.run(["git", "ls-tree", "--name-only", at, folder], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return {pathlib.Path(n).stem: nbformat.reads(subprocess.run(["git", "show", f"{at}:{n}"], cwd=ROOT,
                                                                capture_output=True, text=True, check=True).stdout,
                                                 as_version=4)
            for n in names if re.fullmatch(re.escape(folder) + r"\d\d_\w+\.ipynb", n)}


def table(rows: dict[str, dict]) -> str:
    keys = list(next(iter(rows.values())))
    total = {k: sum(r[k] for r in rows.values()) for k in keys}
    lines = ["| notebook | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    lines += [f"| {name[:2]} | " + " | ".join(str(r[k]) for k in keys) + " |" for name, r in rows.items()]
    return "\n".join(lines + ["| all | " + " | ".join(str(total[k]) for k in keys) + " |"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", help="a commit: measure its stored notebooks instead")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--language", help="a translation's notebooks (notebooks/<language>/), e.g. zh-CN")
    args = parser.parse_args(argv)
    rows = {name: measure(nb) for name, nb in notebooks(args.at, args.language).items()}
    if not rows:
        print(f"No notebooks in notebooks/{args.language or ''}", file=sys.stderr)
        return 1
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
