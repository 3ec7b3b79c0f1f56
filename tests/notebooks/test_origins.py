"""The two reports the lab grew from are named where their subject is taught: the CI test
``DISABLED test_custom_op_dce_dynamic_shapes_cuda`` in 05's section on dynamic shapes, beside a live check of what
its name stands for; pytorch #187319 named in words in 04's section on the caches and linked under its further
reading, with the state the lab measured, not one it cannot check offline."""

import json

from repo import ROOT


def _sections(stem: str) -> dict[str, list[dict]]:
    """A notebook's cells, grouped under its "## " headings (the heading's text: its cells, markdown and code)."""
    notebook = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    sections, current = {}, ""
    for cell in notebook["cells"]:
        text = "".join(cell["source"])
        for line in text.splitlines():
            if cell["cell_type"] == "markdown" and line.startswith("## "):
                current = line[3:].strip()
        sections.setdefault(current, []).append(cell)
    return sections


def _markdown(cells) -> str:
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _code(cells) -> str:
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_05_names_the_disabled_test_where_dce_under_dynamic_shapes_is_taught_and_checks_it_live():
    section = next(cells for title, cells in _sections("05_dce_and_dynamic_shapes").items()
                   if title.startswith("3. Static and dynamic shapes"))
    prose = " ".join(_markdown(section).split())
    assert "`DISABLED test_custom_op_dce_dynamic_shapes_cuda (__main__.DynamicShapesCodegenGPUTests)`" in prose
    assert "We could not find its source" in prose, "what could not be found is said plainly"
    assert 'backend="inductor", dynamic=True' in _code(section), "what its name stands for runs live, with Inductor"


def test_04_names_187319_where_the_stale_cache_is_taught_and_under_further_reading_as_measured():
    sections = _sections("04_names_and_caches")
    caches = next(cells for title, cells in sections.items() if title.startswith("2. The caches remember"))
    assert "stale artifacts after a changed `mutates_args` (its issue: Further reading)" in \
        " ".join(_markdown(caches).split()), "named in words where it is the subject (the number: Further reading)"
    link = "[pytorch #187319](https://github.com/pytorch/pytorch/issues/187319)"
    reading = " ".join(_markdown(sections["Further reading"]).split())
    assert link in reading and "reproduces on every release this lab ran, 2.10.0 to 2.15.0" in reading
    assert "open when this was written" not in reading and "(closed)" not in reading, \
        "no state of an issue or pull request the lab cannot check offline"
