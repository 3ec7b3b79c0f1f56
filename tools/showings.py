"""Where the lab shows each widget: one ``Showing`` per notebook that shows one, in ``SHOWINGS``.

The browser test (tests/delivery/test_browser.py: the flips), the README screenshots (tools/screenshots.py), the
Colab check (tests/delivery/test_colab_compat.py), the widget tests (tests/labkit/test_widgets*.py) and
benchmarks/widgets.py read it: showing a widget in a notebook, or a new widget, is one entry here. It lives in
tools/, not in labkit: the library a learner installs names no notebook.
"""

from __future__ import annotations

from labkit.experiments import devices
from labkit.language import speaking
from labkit.widgets import DeclarationLab, DynamicLab, LabWidget, NamingLab


class Showing:
    """One place the lab shows a widget: the notebook, the widget and the arguments its cell passes, the
    (control, value) flips the browser test makes there (``gpu_flips`` only where CUDA is present), and the
    README's screenshot, taken after ``screenshot_after`` flips (0: as the notebook builds it). ``language``: the
    notebook's translation it is shown in (its page is ``notebooks/<language>/<notebook>.ipynb``, its cell the
    English source's, the widget speaking that language); English where left out.

    The browser test, the screenshots, the Colab check, the widget tests and the benchmark read
    ``SHOWINGS``, so a new widget, or a notebook showing one, is one entry there."""

    def __init__(self, notebook: str, widget: type, options: dict, flips=(), gpu_flips=(),
                 screenshot: str | None = None, screenshot_after: int = 0, language: str = "en"):
        self.notebook, self.widget, self.options = notebook, widget, dict(options)
        self.flips, self.gpu_flips = tuple(flips), tuple(gpu_flips)
        self.screenshot, self.screenshot_after, self.language = screenshot, screenshot_after, language

    @property
    def page(self) -> str:
        """The notebook it is shown in, under notebooks/: ``02_mutates_args``, or ``zh-CN/02_mutates_args``."""
        return self.notebook if self.language == "en" else f"{self.language}/{self.notebook}"

    def build(self) -> LabWidget:
        """The widget as the notebook's cell builds it, in the notebook's language."""
        with speaking(self.language):
            return self.widget(**self.options)

    @property
    def call(self) -> str:
        """The notebook's call, as its source spells it: ``DynamicLab(namespace="nb07w", op_kind="data-dependent")``."""
        arguments = ", ".join(f'{name}="{value}"' for name, value in self.options.items())
        return f"{self.widget.__name__}({arguments})"

    def flips_here(self) -> list[tuple[str, str]]:
        return [*self.flips, *(self.gpu_flips if "cuda" in devices() else ())]

    def __repr__(self) -> str:
        return f"Showing({self.page}: {self.call}…)"


SHOWINGS = (
    Showing("02_mutates_args", DeclarationLab, {"namespace": "nb02w"},
            [("declaration", "undeclared mutation"), ("backend", "inductor"), ("dynamic", "True"),
             ("declaration", "no fake kernel")], screenshot="declaration-lab.png", screenshot_after=2),
    Showing("02_mutates_args", DeclarationLab, {"namespace": "nb02w"},
            [("declaration", "undeclared mutation"), ("backend", "inductor"), ("declaration", "no fake kernel")],
            screenshot="declaration-lab-zh-CN.png", screenshot_after=2, language="zh-CN"),
    Showing("04_names_and_caches", NamingLab, {"namespace": "nb04w"},
            [("policy", "fingerprinted"), ("order", "mutating first, then pure"), ("scheme", "distinct names"),
             ("scheme", "a name I type"), ("typed_name", "aten::add"), ("typed_name", "mine::op")],
            screenshot="naming-lab.png"),
    Showing("05_dce_and_dynamic_shapes", DynamicLab, {"namespace": "nb05w"},
            [("dynamic", "True"), ("declaration", "has_side_effect"), ("shapes", "4 → 4 → 4")],
            gpu_flips=[("device", "cuda")], screenshot="dynamic-lab.png", screenshot_after=1),
    Showing("07_data_dependent_shapes", DynamicLab,
            {"namespace": "nb07w", "op_kind": "data-dependent", "fullgraph": "True"},
            [("fullgraph", "False"), ("op_kind", "shape-following"), ("op_kind", "data-dependent"),
             ("declaration", "has_side_effect")], screenshot="data-dependent-lab.png", screenshot_after=1),
)


def widget_classes() -> list[type]:
    """Every widget the lab shows, once each, in the order of their first showing."""
    return list(dict.fromkeys(showing.widget for showing in SHOWINGS))
