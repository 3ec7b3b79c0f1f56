"""Reading a lab panel (the HTML a widget or ``labkit.show`` draws) as a learner does, and the contradictions a
panel may not hold: a mark nobody is told about, "kept" beside printed code that lacks the op, "removed" beside
code that holds it, a mark of a stage that did not run beside that stage's printed code, a bare call index, a
"removed" in another colour than the headline's (red under a green "removed as dead code", or green under red).
Used by tests/labkit/test_widgets_states.py (every state, against plain-torch replicas) and
tests/delivery/test_browser.py (the page JupyterLab really shows)."""

import re
from html.parser import HTMLParser

from labkit.language import catalogue

COLUMNS = ("op", "kernel runs, eager", "kernel runs, compiled", "Dynamo graph", "AOTAutograd graph", "Inductor code")
CODE = {"Dynamo graph": "Dynamo graph", "AOTAutograd graph": "AOTAutograd graph", "Inductor code": "Inductor code"}
NAMING_COLUMNS = ("step", "this step's handle reports now", "kernel runs, compiled", "x after the compiled call",
                  "FX/AOT cache")   # the naming lab's table
OLD_NAMES = {"calls eager": "kernel runs, eager", "calls compiled": "kernel runs, compiled"}  # read a531288's too
MARKS = {"kept", "removed", "torch raised here", "not reached", "not used", "no graph",
         "in no graph (a graph break): ran eagerly"}


def in_english(language: str) -> dict[str, str]:
    """{a table's word or a code section's title in ``language``: the English word}: a panel in another language is
    read, cell by cell, as the English one is (the words a learner reads are checked in their language elsewhere)."""
    words = {*COLUMNS, *MARKS, *CODE.values(), "AOTAutograd backward graph", *NAMING_COLUMNS, "hit: reused",
             "miss: compiled"}
    said = {catalogue(language).get(word, word): word for word in words}
    assert len(said) == len(words), f"two of a panel's words read the same in {language}"
    return said


class Panel(HTMLParser):
    """What a panel shows: its tables (rows of cell texts), its code sections (summary -> text), its text; the
    cells and code titles of a panel in another ``language`` read back as their English words."""

    def __init__(self, page: str, language: str = "en"):
        super().__init__()
        self._english = in_english(language)
        self.tables, self.code, self.text = [], {}, []
        self.colours = []           # (a table cell's text, its colour): the tone a learner sees
        self.headline_colour = None  # the colour of the panel's bold headline (the verdict's or the lab's)
        self._cell = self._summary = self._pre = self._colour = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell, self._colour = [], _colour(attrs)
        elif tag == "p" and "font-weight:bold" in dict(attrs).get("style", "") and self.headline_colour is None:
            self.headline_colour = _colour(attrs)
        elif tag == "summary":
            self._summary = []
        elif tag == "pre":
            self._pre = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            cell = "".join(self._cell).strip()
            self.tables[-1][-1].append(self._english.get(cell, cell))
            self.colours.append((self.tables[-1][-1][-1], self._colour))
            self._cell = None
        elif tag == "summary" and self._summary is not None:
            title = "".join(self._summary).strip()
            self._last_summary, self._summary = self._english.get(title, title), None
        elif tag == "pre" and self._pre is not None:
            self.code[getattr(self, "_last_summary", "")] = "".join(self._pre)
            self._pre = None

    def handle_data(self, data):
        for part in (self._cell, self._summary, self._pre):
            if part is not None:
                part.append(data)
        self.text.append(data)

    def row(self, op: str) -> dict[str, str]:
        for table in self.tables:
            if table and table[0][:1] == ["op"]:
                for cells in table[1:]:
                    if cells and cells[0] == op:
                        header = [OLD_NAMES.get(h, h) for h in table[0]]
                        cells = cells + [cells[-1]] * (len(header) - len(cells))  # a colspan mark fills the rest
                        return dict(zip(header, cells))
        raise AssertionError(f"the panel has no row for {op}")




def _colour(attrs) -> str | None:
    found = re.search(r"(?:^|;)\s*color:\s*([^;]+)", dict(attrs).get("style") or "")
    return found.group(1).strip() if found else None


def contradictions(page: str, op_name: str, state, language: str = "en") -> list[str]:
    """What the panel says that its own printed graphs and code, or its own words, contradict."""
    panel, found = Panel(page, language), []
    said = " ".join("".join(panel.text).split())
    if "(calls " in said or re.search(r"calls \d", said):
        found.append(f"{state}: a bare call index beside kernel-run counts")
    row = panel.row(op_name)
    for column, title in CODE.items():
        mark, code = row.get(column, ""), panel.code.get(title)
        namespace, name = op_name.split("::")
        holds = code is not None and (f"{namespace}.{name}." in code)
        if mark not in MARKS:
            found.append(f"{state}: {column} shows {mark!r}, not a mark a learner is told about")
        elif mark == "kept" and not holds:
            found.append(f"{state}: {column} says kept, but the printed {title} lacks the op")
        elif mark == "removed" and (code is None or holds):
            found.append(f"{state}: {column} says removed, but the printed {title} " +
                         ("is missing" if code is None else "holds the op"))
        elif mark not in ("kept", "removed") and code is not None and not mark.startswith("in no graph"):
            found.append(f"{state}: {column} says {mark!r}, yet the panel prints a {title}")
    for text, colour in panel.colours:
        if text == "removed" and colour != panel.headline_colour:
            found.append(f"{state}: 'removed' is coloured {colour} under a headline coloured {panel.headline_colour}")
    return found
