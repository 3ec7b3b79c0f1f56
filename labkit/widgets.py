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

from . import cache, naming, ops, render, scenarios
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


_HIT = "<b style='color:#b00020'>hit: reused</b>"


class NamingLab(LabWidget):
    """One name or two, declaration order, cache policy: what the caches hand back."""

    title = "Naming lab"

    def __init__(self, namespace: str = "naminglab", scheme: str = "one shared name",
                 order: str = naming.ORDERS[0], policy: str = "default", typed_name: str = ""):
        self.namespace = namespace
        super().__init__({
            "scheme": widgets.ToggleButtons(options=list(naming.SCHEMES), value=scheme, description="names"),
            "typed_name": widgets.Text(value=typed_name, placeholder="mylab::my_op", description="your name",
                                       continuous_update=False),
            "order": widgets.Dropdown(options=list(naming.ORDERS), value=order, description="order"),
            "policy": widgets.ToggleButtons(options=list(cache.POLICIES), value=policy, description="cache"),
        })
        self.controls["scheme"].style.button_width = "150px"
        self.controls["policy"].style.button_width = "110px"
        self.controls["scheme"].observe(self._typed_name_only_when_used, names="value")
        self._typed_name_only_when_used()

    def _typed_name_only_when_used(self, _change=None) -> None:
        """The name field counts only for "a name I type"; grey it out otherwise."""
        self.controls["typed_name"].disabled = self.controls["scheme"].value != "a name I type"

    @property
    def state(self) -> tuple:
        scheme, typed, order, policy = super().state
        return scheme, (typed.strip() if scheme == "a name I type" else ""), order, policy

    def compute(self, state):
        scheme, typed, order, policy = state
        return naming.run(scheme, order, policy, namespace=self.namespace, typed=typed)

    @property
    def outcome(self) -> naming.NamingResult:
        return self.result()

    def render(self, result) -> str:
        if result.problem:
            return f"<p style='color:#b00020'><b>That name cannot be used:</b> {html.escape(result.problem)}</p>"
        rows = "".join(
            f"<tr><td>{i + 1}. declare <code>{html.escape(s.name)}</code> as <b>{s.declared}</b>, compile</td>"
            f"<td><code>{html.escape(s.schema_now)}</code></td><td>{s.kernel_calls}</td>"
            f"<td>{s.x_after} (eager {s.x_after_eager})</td>"
            f"<td>{_HIT if s.stale else 'miss: compiled'}</td></tr>"
            for i, s in enumerate(result.steps))
        table = ("<table><tr><th>step</th><th>this step's handle reports now</th><th>kernel runs</th>"
                 "<th>x after the compiled call</th><th>FX/AOT cache</th></tr>" + rows + "</table>")
        return (f"<p>The kernel always adds 1 to <code>x</code> (zeros); only the declaration changes. "
                f"Cache policy <code>{html.escape(result.policy)}</code>, in a fresh cache directory.</p>"
                + table + f"<p>{html.escape(naming_story(result))}</p>")


def naming_story(result: naming.NamingResult) -> str:
    """One sentence that says what the table shows."""
    if result.problem:
        return result.problem
    first, second = result.steps
    if second.stale:
        luck = ("the answer still looks right only because the old artifact happens to call the op."
                if second.correct else "so the second compile is silently wrong.")
        return (f"The second compile got the first one's artifact from the cache (#187319): it was built "
                f"for '{first.declared}', {luck}")
    if first.name == second.name:
        return ("Same name, but the cache could not confuse them: "
                + ("the fingerprint of the declarations is part of the key." if result.policy == "fingerprinted"
                   else "the caches are off."))
    return "Different names give different graphs, so different cache keys: no confusion."


# --- dead-code elimination and dynamic shapes ----------------------------------------------------

DCE_DECLARATIONS: dict[str, dict] = {
    "pure, result unused": dict(returns="fresh"),
    "-> None with a Python side effect": dict(returns="none"),
    "declared mutation of x": dict(writes=("x",), mutates_args=("x",), returns="none"),
    "has_side_effect": dict(returns="none", effect="side_effect"),
    "effectful (ordered)": dict(returns="none", effect="ordered"),
}
SHAPE_SEQUENCES = {"4 → 6 → 8": (4, 6, 8), "4 → 4 → 4": (4, 4, 4), "4 → 6 → 4": (4, 6, 4)}


def devices() -> list[str]:
    """The devices a learner can pick: the CPU always, CUDA only when a GPU is present."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def dce_experiment(declaration: str, dynamic: bool | None, shapes=(4, 6, 8), device: str = "cpu",
                   backend: str = "inductor", namespace: str = "dcelab"):
    """Call an op whose result nobody uses, on a sequence of shapes; report its fate."""
    if device not in devices():
        raise ValueError(f"device {device!r} is not available here; pick one of {devices()}.")
    spec = OpSpec(name=f"{namespace}::{_slug(declaration)}", **DCE_DECLARATIONS[declaration])
    live = ops.live_ops().get(spec.name)
    op = live if live is not None and live.spec == spec else ops.declare(spec)

    calls = [(torch.ones(n, device=device),) for n in shapes]
    return op, compile_and_compare(scenarios.discards_result(op), calls=calls, backend=backend, dynamic=dynamic)


class DynamicLab(LabWidget):
    """Dynamic mode × declaration × shapes × device: is the unused op removed, and how often do we compile?"""

    title = "Dynamic-shapes and DCE lab"

    def __init__(self, namespace: str = "dcelab", declaration: str = "pure, result unused",
                 dynamic: str = "None", shapes: str = "4 → 6 → 8", device: str = "cpu"):
        self.namespace = namespace
        super().__init__({
            "dynamic": widgets.ToggleButtons(options=list(DYNAMIC_CHOICES), value=dynamic, description="dynamic"),
            "declaration": widgets.Dropdown(options=list(DCE_DECLARATIONS), value=declaration,
                                            description="the op"),
            "shapes": widgets.ToggleButtons(options=list(SHAPE_SEQUENCES), value=shapes, description="shapes"),
            "device": widgets.ToggleButtons(options=devices(), value=device, description="device"),
        })
        self.controls["shapes"].style.button_width = "110px"

    def compute(self, state):
        dynamic, declaration, shapes, device = state
        op, report = dce_experiment(declaration, DYNAMIC_CHOICES[dynamic], SHAPE_SEQUENCES[shapes], device,
                                    namespace=self.namespace)
        return op, report

    @property
    def report(self):
        return self.result()[1]

    def render(self, result) -> str:
        op, report = result
        sizes = " | ".join(", ".join(g.input_shapes) for g in report.dynamo_graphs)
        return (f"<p><code>def unused_result(x): op(x); return x + 1</code> — the op's result is never used.<br>"
                f"schema <code>{html.escape(op.schema)}</code>; torch says removable: "
                f"<b>{'yes' if op.dce_safe else 'no'}</b><br>"
                f"graphs compiled per call: <b>{report.graphs_per_call}</b> (recompiles: {report.recompiles}); "
                f"input shapes each graph was built for: <code>{html.escape(sizes)}</code></p>"
                + render.to_html(report, [op.name]))
