"""Which notebook teaches a topic: the few sentences that send a learner to a lesson take its number from here.

labkit does not know the order of the curriculum. A notebook number typed into a sentence goes stale
when the notebooks are renumbered, and nothing notices (the audit once sent learners to the wrong notebook for
effects, which 05 teaches). So labkit's code names a topic, and :data:`LESSONS` says which notebook
teaches it: it is written from pyproject.toml's ``[[tool.lab.notebooks]]`` ``topics`` by
``tools/build_notebooks.py --facts``, and ``--check`` fails while it is stale.

Not here: the registry itself (pyproject.toml), and any other fact about the notebooks.
Imports nothing of labkit's.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

# Each topic a notebook's ``topics`` names -> (the notebook's stem, its title).
# BEGIN lessons: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit
LESSONS = {
    "a silent wrong result": ("00_start_here", "Start here"),
    "mutates_args": ("02_mutates_args", "`mutates_args`"),
    "aliasing": ("03_aliasing_and_views", "Aliasing and views"),
    "compile caches": ("04_names_and_caches", "Names and compile caches"),
    "effects": ("05_dce_and_dynamic_shapes", "Dead-code elimination and dynamic shapes"),
    "graph breaks": ("07_data_dependent_shapes", "Data-dependent shapes"),
    "fake kernels": ("10_beyond_the_shape", "Beyond the shape"),
}
ON_COLAB = "https://colab.research.google.com/github/torch-compile-lab/custom-ops-lab/blob/main/notebooks/"
# END lessons


class Lesson(NamedTuple):
    stem: str   # the notebook's file name without .ipynb, as LESSONS gives it
    title: str  # its title, as LESSONS gives it

    @property
    def number(self) -> str:
        """``"05"``: the number a learner sees on the notebook."""
        return self.stem[:2]

    def href(self, section: str | None = None) -> str:
        """Where a link from another notebook to this one points: the file beside it, at ``section``'s heading as
        JupyterLab and static pages name it (``<stem>.ipynb#<the heading, spaces as dashes>``). JupyterLab (4.6)
        opens it in the same window; it scrolls to the heading where the notebook is open already, but not in one
        it has just opened, which stays at its top. On Colab, where an address relative to the notebook does not
        resolve, the published notebook (Colab names a section by a cell id of its own, so at its top too)."""
        if on_colab():
            return f"{ON_COLAB}{self.stem}.ipynb"
        return f"{self.stem}.ipynb" + (f"#{section.replace(' ', '-')}" if section else "")


def on_colab() -> bool:
    """Whether this kernel is Colab's (its ``google.colab`` module is loaded there, and nowhere else)."""
    return "google.colab" in sys.modules


def notebook_about(topic: str) -> Lesson:
    """The notebook that teaches ``topic`` (a key of :data:`LESSONS`): ``notebook_about("effects").number``.
    KeyError for a topic no notebook registers: a sentence must not send a learner to a lesson that is not there."""
    return Lesson(*LESSONS[topic])
