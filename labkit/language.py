"""The language labkit speaks to a learner in: English, or one whose catalogue ships inside labkit.

English is the source of truth. A sentence a learner reads is written in English where labkit says it, and passed
through :func:`say`: ``say("computed now (seen states come back instantly)")``, or with fields,
``say("{what} must be one of {options}", what=..., options=...)``. A catalogue, ``labkit/catalogues/<language>.json``,
maps each English text to its translation, with the same ``{fields}``; a text it lacks is said in English. A lab's
options are values (what the lab computes with, and what an op is named after) shown under labels, and a label is
``say(value)``: a state is the same state in every language.

English is the default: ``import labkit`` changes nothing. A notebook asks for another language with
``labkit.use_language("zh-CN")`` (a translated notebook's first cell after Colab's does so); it changes what labkit
says, nothing of torch's.

Why a JSON file read here rather than gettext (which the standard library also reads): Colab installs labkit
alone, from git, with ``--no-deps``; gettext reads compiled ``.mo`` files, so either a generated binary is committed
beside its ``.po`` source and kept in step by a check, or pip compiles it at install time with a build hook and Babel
as a build requirement (a download and a step more on every learner's install). A JSON file is read as it is
shipped, by the standard library on every Python the lab supports, and reads in review as a diff of sentences; the
catalogue holds a few hundred whole sentences (a plural is its own sentence), so gettext's plural and context
machinery is not missed.
tests/labkit/test_language.py holds it to the code: every entry translates a text labkit says, with the same
``{fields}``, and every text labkit marks has its entry.

A lab keeps the language it was built in (:meth:`labkit.widgets.LabWidget`, ``speaking``): its labels and every
later redraw of its panel agree, whatever a later ``use_language`` says.

Not here: what is said (each module says its own sentences), and the notebooks' prose (tools/translations.py).
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
import pathlib
import string

from .describe import brief

CATALOGUES = pathlib.Path(__file__).with_name("catalogues")
ENGLISH = "en"
_current = {"language": ENGLISH}


def available() -> list[str]:
    """The languages labkit can speak: English and each catalogue shipped in labkit/catalogues/."""
    return [ENGLISH, *sorted(path.stem for path in CATALOGUES.glob("*.json"))]


def use_language(language: str) -> str:
    """Speak ``language`` from now on (``"zh-CN"``; ``"en"``, the default, goes back to English); returns it.

    ValueError, in one sentence naming the languages there are, for one labkit has no catalogue of.
    """
    if not isinstance(language, str) or language not in available():
        raise ValueError(f"labkit speaks {', '.join(repr(code) for code in available())}, not {brief(language)}: "
                         f"use_language takes one of those.")
    _current["language"] = language
    return language


def current() -> str:
    """The language labkit speaks now."""
    return _current["language"]


@functools.lru_cache(maxsize=None)
def catalogue(language: str) -> dict[str, str]:
    """{English text: its translation} of a language (empty for English)."""
    if language == ENGLISH:
        return {}
    return json.loads((CATALOGUES / f"{language}.json").read_text(encoding="utf-8"))


def say(english: str, **fields) -> str:
    """``english`` in the language labkit speaks now, its ``{fields}`` filled in; English where the catalogue has
    no entry for it. A literal brace is written twice, ``{{``, with fields or without. A :class:`Said` (a sentence
    the core made in English, :func:`said`) is said again from its template, its fields said too."""
    if isinstance(english, Said) and not fields:
        return english.again()
    return catalogue(current()).get(english, english).format_map(fields)


def say_html(english: str, **html_fields) -> str:
    """:func:`say` for HTML: the sentence escaped, then ``html_fields`` (already HTML: escape what is text) put in."""
    return html.escape(catalogue(current()).get(english, english), quote=False).format_map(html_fields)


class Said(str):
    """A sentence the core made, in English, that remembers how: a template and its fields (:func:`said`), or
    parts and the words between them (:func:`said_together`).

    Why: the core's findings are facts other code reads (``"DIFFER" in sentence``, a test, a notebook's assert), so
    they are English, whatever the learner reads; a view says them in its language at the last moment,
    ``say(sentence)``. It is a ``str``: everything that read the English sentence reads it still.
    """

    def __new__(cls, template: str, fields: dict | None = None, parts: tuple = (), between: tuple = ()):
        self = super().__new__(cls, _render(template, fields or {}, parts, between, say_it=False))
        self.template, self.fields, self.parts, self.between = template, dict(fields or {}), tuple(parts), between
        return self

    def again(self) -> str:
        """This sentence in the language labkit speaks now."""
        return _render(self.template, self.fields, self.parts, self.between, say_it=True)

    def __reduce__(self):
        return Said, (self.template, self.fields, self.parts, self.between)


def _render(template, fields, parts, between, say_it: bool) -> str:
    word = say if say_it else (lambda text: str.__str__(text))
    if parts or between:
        separator, last = (word(text) for text in between)
        said = [word(part) if isinstance(part, Said) else str(part) for part in parts]
        return said[0] if len(said) == 1 else separator.join(said[:-1]) + last + said[-1] if said else ""
    text = catalogue(current()).get(template, template) if say_it else template
    return text.format_map({key: word(value) if isinstance(value, Said) else value for key, value in fields.items()})


def said(template: str, **fields) -> Said:
    """``template`` filled in, in English, remembering how (:class:`Said`): ``say`` says it later in a language.
    A field that is itself :class:`Said` is said with it; any other (a name, a shape, a number) as it is."""
    return Said(template, fields)


def said_together(parts, separator: str = ", ", last: str = " and ") -> Said:
    """Parts in one sentence, ``"a, b and c"`` in English; each part that is :class:`Said`, and the words between
    (``separator``, ``last``), said later in the language of the view."""
    return Said("", None, tuple(parts), (separator, last))


def translation_of(text) -> str | None:
    """``text`` (a literal sentence, or a :class:`Said`) in the language labkit speaks now, or None where that
    language has no words for it: a caller then says the whole line as it was written, never half of it."""
    if current() == ENGLISH or text == "":
        return text.again() if isinstance(text, Said) else str(text)
    if isinstance(text, Said):
        return text.again() if text.template in catalogue(current()) or (not text.template and text.parts) else None
    return catalogue(current()).get(text)


def translated(english: str) -> bool:
    """Whether the language labkit speaks now says ``english`` in its own words (English: always)."""
    return current() == ENGLISH or english in catalogue(current())


@contextlib.contextmanager
def speaking(language: str):
    """Speak ``language`` inside the block, then the language spoken before (a lab redraws in its own)."""
    before = current()
    use_language(language)
    try:
        yield
    finally:
        _current["language"] = before


def fields_of(text: str) -> list[str]:
    """The fields of a template, in order: a name each, "" for a positional ``{}`` (which :func:`say` refuses)."""
    return [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
