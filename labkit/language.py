"""The language labkit speaks to a learner in: English, or one whose catalogue ships inside labkit.

English is the source of truth. A sentence a learner reads is written in English where labkit says it, and passed
through :func:`say`: ``say("computed now (seen states come back instantly)")``, or with fields,
``say("{what} must be one of {options}", what=..., options=...)``. A catalogue, ``labkit/catalogues/<language>.json``,
maps each English text to its translation, with the same ``{fields}``; a text it lacks is said in English. A lab's
options are values (what the lab computes with, and what an op is named after) shown under labels, and a label is
``say(value)``: a state is the same state in every language.

English is the default: ``import labkit`` changes nothing. A notebook asks for another language with
``labkit.use_language("zh-CN")`` (a translated notebook's first cell after Colab's does so); it changes what labkit
says, nothing of torch's, and labs built before it keep their labels.

Why a JSON file read here rather than gettext: Colab installs labkit alone (``--no-deps``) from git, so the
catalogue must travel inside the package as data and be readable by the standard library on every Python the lab
supports (3.10 has no ``tomllib``). gettext's ``.mo`` catalogues are compiled files, which would need msgfmt or Babel
(a tool and a build step more) and a generated binary in the repository; a JSON file keyed by the English text reads
in review as a diff of sentences, and tests/labkit/test_language.py holds it to the code: every entry translates a
text labkit says, with the same fields, and every text labkit marks has its entry.

Not here: what is said (each module says its own sentences), and the notebooks' prose (tools/translations.py).
"""

from __future__ import annotations

import functools
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
    no entry for it."""
    text = catalogue(current()).get(english, english)
    return text.format(**fields) if fields else text


def fields_of(text: str) -> set[str]:
    """The names of a template's ``{fields}``."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}
