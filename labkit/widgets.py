"""Widgets: a control changes a value, the core recomputes (cached per state), the view redraws.

Every widget here can be driven from Python — set a control's ``.value`` (or call ``set``)
and read ``.report`` or ``.view.value`` — which is how the tests use them. The view is
redrawn by assigning ``view.value``, never by printing inside an ``Output`` widget, so
nothing leaks into a cell's stored output.
"""

from __future__ import annotations

import contextlib
import html

import ipywidgets as widgets
import torch

from . import ops, render
from .ops import OpSpec
from .stages import compile_and_compare

# What the kernel really does is the same in every case but "over-declared" and "no fake":
# it adds 1 to x in place. What changes is what it *declares*.
DECLARATIONS: dict[str, tuple[str, dict]] = {
    "correct": ("writes x, declares mutates_args=('x',)",
                dict(writes=("x",), mutates_args=("x",), returns="none")),
    "undeclared mutation": ("writes x, declares mutates_args=()",
                            dict(writes=("x",), mutates_args=(), returns="none")),
    "over-declared": ("writes nothing, declares mutates_args=('x',)",
                      dict(writes=(), mutates_args=("x",), returns="none")),
    "returns its input": ("writes x, declares it, and returns x itself",
                          dict(writes=("x",), mutates_args=("x",), returns="input")),
    "no fake kernel": ("pure, returns a new tensor, no register_fake",
                       dict(writes=(), mutates_args=(), returns="fresh", fake=False)),
    '"unknown"': ("writes x, declares mutates_args='unknown'",
                  dict(writes=("x",), mutates_args="unknown", returns="none")),
}
DYNAMIC_CHOICES = {"False": False, "True": True, "None": None}


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in label).strip("_").lower() or "op"


def declaration_spec(declaration: str, namespace: str = "declab") -> OpSpec:
    _, fields = DECLARATIONS[declaration]
    return OpSpec(name=f"{namespace}::{_slug(declaration)}", **fields)


def declaration_experiment(declaration: str, backend: str, dynamic: bool | None,
                           namespace: str = "declab", sizes=(4, 6)):
    """The core of the declaration widget: declare the op, run ``step`` on two shapes, report."""
    spec = declaration_spec(declaration, namespace)
    live = ops.live_ops().get(spec.name)
    op = live if live is not None and live.spec == spec else ops.declare(spec)

    def step(x):
        out = op(x)
        return x * 2 if out is None else x + out

    calls = [(torch.arange(float(n)),) for n in sizes]
    return op, compile_and_compare(step, calls=calls, backend=backend, dynamic=dynamic)


class LabWidget:
    """Shared plumbing: controls -> state -> cached compute -> view."""

    title = ""

    def __init__(self, controls: dict[str, widgets.Widget]):
        self.controls = controls
        self.status = widgets.HTML()
        self.view = widgets.HTML()
        self._cache: dict = {}
        self._holding = False
        for control in controls.values():
            control.observe(self._changed, names="value")
        for control in controls.values():
            if isinstance(control, widgets.ToggleButtons):
                control.style.button_width = "86px"
            control.style.description_width = "90px"
        self.ui = widgets.VBox([widgets.VBox(list(controls.values())), self.status, self.view])
        self.update()

    # -- state ------------------------------------------------------------------------------
    @property
    def state(self) -> tuple:
        return tuple(control.value for control in self.controls.values())

    def set(self, **values) -> "LabWidget":
        """Set several controls at once, recomputing only once."""
        with self._hold():
            for name, value in values.items():
                self.controls[name].value = value
        self.update()
        return self

    @contextlib.contextmanager
    def _hold(self):
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

    def _changed(self, _change) -> None:
        if not self._holding:
            self.update()

    # -- compute and draw -------------------------------------------------------------------
    def compute(self, state: tuple):  # pragma: no cover - each widget defines it
        raise NotImplementedError

    def render(self, result) -> str:  # pragma: no cover
        raise NotImplementedError

    def result(self, state: tuple | None = None):
        state = self.state if state is None else state
        if state not in self._cache:
            self._cache[state] = self.compute(state)
        return self._cache[state]

    def update(self) -> None:
        fresh = self.state not in self._cache
        if fresh:
            self.status.value = "<i>⏳ compiling this state for the first time…</i>"
        try:
            self.view.value = self.render(self.result())
            self.status.value = "" if not fresh else "<i>computed now (seen states come back instantly)</i>"
        except Exception as error:  # noqa: BLE001 - a widget must never kill a learner's kernel
            self.status.value = ""
            self.view.value = (f"<p style='color:#b00020'><b>labkit could not compute this state</b>: "
                               f"{html.escape(type(error).__name__)}: {html.escape(str(error)[:500])}</p>")

    # -- display ----------------------------------------------------------------------------
    def _ipython_display_(self):
        from IPython.display import display

        bundle = {
            "text/plain": repr(self),
            "text/html": f"<div><p><b>{html.escape(self.title)}</b> (static view of: "
                         f"{html.escape(self.describe())}; run the notebook to use the controls)</p>"
                         f"{self.view.value}</div>",
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2, "version_minor": 0, "model_id": self.ui.model_id},
        }
        display(bundle, raw=True)

    def describe(self) -> str:
        return ", ".join(f"{name}={control.value!r}" for name, control in self.controls.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class DeclarationLab(LabWidget):
    """Pick a declaration, a backend and a dynamic mode; see what torch.compile makes of it."""

    title = "Declaration lab"

    def __init__(self, namespace: str = "declab", declaration: str = "correct",
                 backend: str = "aot_eager", dynamic: str = "False"):
        self.namespace = namespace
        super().__init__({
            "declaration": widgets.Dropdown(options=list(DECLARATIONS), value=declaration,
                                            description="declaration"),
            "backend": widgets.ToggleButtons(options=["aot_eager", "inductor"], value=backend,
                                             description="backend"),
            "dynamic": widgets.ToggleButtons(options=list(DYNAMIC_CHOICES), value=dynamic,
                                             description="dynamic"),
        })

    def compute(self, state):
        declaration, backend, dynamic = state
        op, report = declaration_experiment(declaration, backend, DYNAMIC_CHOICES[dynamic], self.namespace)
        return op.schema, report

    @property
    def report(self):
        return self.result()[1]

    @property
    def schema(self) -> str:
        return self.result()[0]

    def render(self, result) -> str:
        schema, report = result
        declaration = self.controls["declaration"].value
        meaning = DECLARATIONS[declaration][0]
        op_name = declaration_spec(declaration, self.namespace).name
        return (f"<p><b>{html.escape(declaration)}</b>: the kernel {html.escape(meaning)}.<br>"
                f"schema: <code>{html.escape(schema)}</code><br>"
                f"<code>def step(x): out = op(x); return x * 2 if out is None else x + out</code>, "
                f"called on x of shapes {html.escape(' then '.join(report.shapes))}</p>"
                + render.to_html(report, [op_name]))
