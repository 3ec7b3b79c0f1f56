"""Widgets: a control changes a value, the core (:mod:`labkit.experiments`) recomputes, the view redraws.

Every widget here can be driven from Python — set a control's ``.value`` (or call ``set``)
and read ``.report`` or ``.view.value`` — which is how the tests use them. The view is
redrawn by assigning ``view.value``, never by printing inside an ``Output`` widget, so
nothing leaks into a cell's stored output. The one ``Output`` a lab has, ``lesson_link``, holds the link to a
lesson its story names (JupyterLab opens a link drawn there beside the notebook); it too is assigned.

Not here: HTML (:mod:`labkit.views` draws every view, title and status line), and the experiments
(:mod:`labkit.experiments` runs them, UI-free).
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Iterator

import ipywidgets as widgets

from . import cache, language, naming, views
from .language import say
from .lessons import on_colab
from .describe import brief
from .experiments import (
    DCE_DECLARATIONS, DECLARATIONS, DYNAMIC_CHOICES, FULLGRAPH_CHOICES, OP_KINDS, PYTHON_SIDE_EFFECT, SHAPE_SEQUENCES,
    dce_experiment,
    declaration_experiment,
    declaration_lesson, declaration_spec, devices, naming_story,
)

TEXT_SAMPLES = ("", "mylab::my_op", "not a name")  # what every_state() types into a free-text field


DROPDOWN, TOGGLES = widgets.Dropdown, widgets.ToggleButtons


def _selection(kind, options, value, description: str, parameter: str | None = None):
    """A Dropdown or ToggleButtons on ``value``, or ValueError with one sentence, naming the constructor's
    ``parameter``, when it is not an option (ipywidgets would raise a bare TraitError).

    Each option is a (label, value) pair: the value is what the lab computes with and names its op after, the label
    what a learner reads, ``say(value)`` in the language labkit speaks (:mod:`labkit.language`)."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(say("{name} must be one of {options}, not {value}.", name=parameter or description,
                             options=list(options), value=brief(value)))
    return kind(options=[(say(option), option) for option in options], value=value, description=description)


def _options(control: widgets.Widget) -> list | None:
    """The values a selection control accepts (None for free-text and other controls)."""
    if not hasattr(control, "options"):
        return None
    return [o if isinstance(o, str) else o[1] for o in control.options]


def _shown(control: widgets.Widget, value) -> str:
    """A control's value as the learner reads it: its option's label where the options are (label, value) pairs."""
    for option in getattr(control, "options", ()):
        if not isinstance(option, str) and option[1] == value:
            return str(option[0])
    return str(value)


class LabWidget:
    """Shared plumbing: controls -> state -> cached compute -> view.

    ``close()`` closes every ipywidget the lab made; a notebook that builds many labs should
    close the ones it no longer shows, or their widgets stay alive in the kernel.
    """

    title = ""

    def __init__(self, controls: dict[str, widgets.Widget]):
        # The language the lab was built in (labkit.use_language): its labels, and every later redraw, speak it.
        self.speaking = language.current()
        self.controls = controls
        self.heading = widgets.HTML(views.lab_heading_html(say(self.title)))  # as in the static view
        self.status = widgets.HTML()
        self.changes = widgets.HTML()    # what changed since the previous state: not part of a state's view
        self.view = widgets.HTML()
        self.lesson_link = widgets.Output()   # the lesson the view's story names: see views.lesson_link_html
        self._cache: dict = {}
        self._holding = False
        self._last: tuple | None = None  # (state, facts, the controls' values) of the state shown before this one
        for control in controls.values():
            control.observe(self._changed, names="value")
        self._labels = {}
        for name, control in controls.items():   # one label style for every control: a label, then the control
            self._labels[name] = widgets.Label(say(control.description or name), layout=widgets.Layout(width="110px"))
            control.description = ""
            if isinstance(control, widgets.ToggleButtons):
                control.style.button_width = control.style.button_width or "86px"
        self._rows = [widgets.HBox([self._labels[name], control]) for name, control in controls.items()]
        self._controls_box = widgets.VBox(self._rows)
        self.ui = widgets.VBox([self.heading, self._controls_box, self.status, self.changes, self.view,
                                self.lesson_link])
        self.update()

    # -- state ------------------------------------------------------------------------------
    @property
    def state(self) -> tuple:
        return tuple(control.value for control in self.controls.values())

    def problem(self, name: str, value) -> str | None:
        """Why control ``name`` cannot take ``value`` (one sentence), or None when it can."""
        if name not in self.controls:
            return say("{lab} has no control {name}; its controls are {controls}.", lab=type(self).__name__,
                       name=repr(name), controls=list(self.controls))
        options = _options(self.controls[name])
        if options is not None and (not isinstance(value, str) or value not in options):
            labelled = [option[1] for option in self.controls[name].options
                        if isinstance(option, tuple) and option[0] == value and option[0] != option[1]]
            if labelled:   # a label the learner reads, given where the value goes
                return say("{name}: {label} is the label of {value}; set() takes the value, {value}.", name=name,
                           label=repr(value), value=repr(labelled[0]))
            return say("{name} must be one of {options}, not {value}.", name=name, options=options, value=brief(value))
        if options is None and not isinstance(value, type(self.controls[name].value)):
            return say("{name} must be a {kind}, not {given} ({value}).", name=name,
                       kind=type(self.controls[name].value).__name__, given=type(value).__name__, value=brief(value))
        return None

    def set(self, **values) -> "LabWidget":
        """Set several controls at once, recomputing once; all or nothing.

        Every value is checked first: one bad value raises ValueError (naming the choices)
        and changes nothing, so the view always shows the controls' state.
        """
        problems = [p for name, value in values.items() if (p := self.problem(name, value))]
        if problems:
            raise ValueError(" ".join(problems))
        with self._hold():
            for name, value in values.items():
                self.controls[name].value = value
        self.update()
        return self

    def choices(self) -> dict[str, list]:
        """Every value a learner can give each control (free text: its value and a few samples)."""
        out = {}
        for name, control in self.controls.items():
            options = _options(control)
            if options is None and isinstance(control.value, bool):
                options = [False, True]
            elif options is None and isinstance(control.value, str):
                options = list(dict.fromkeys((control.value,) + TEXT_SAMPLES))
            out[name] = options if options is not None else [control.value]
        return out

    def every_state(self) -> Iterator[dict]:
        """Every combination of :meth:`choices`, as keyword arguments for :meth:`set`."""
        choices = self.choices()
        for values in itertools.product(*choices.values()):
            yield dict(zip(choices, values))

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

    def facts(self, result) -> dict[str, str]:
        """The state's outcome as short facts ("kernel runs, compiled": "0"): what "since the previous state"
        compares. Each widget names its own; none by default."""
        return {}

    def cacheable(self, result) -> bool:
        """Whether ``result`` stays true while the state is unchanged (override when it may not)."""
        return True

    def lesson(self, result) -> tuple[str, str, str] | None:
        """The lesson the view's story names for ``result``, as (words, href, heading), linked under the view; none
        by default."""
        return None

    def result(self, state: tuple | None = None):
        state = self.state if state is None else state
        if state in self._cache:
            return self._cache[state]
        result = self.compute(state)
        if self.cacheable(result):
            self._cache[state] = result
        return result

    def update(self) -> None:
        """Redraw the view for the controls' state, in the lab's language. A failing compute shows its one sentence;
        Ctrl-C (KeyboardInterrupt) shows an "interrupted" view, never the old report under "compiling…",
        and is raised on; the next change computes again (an interrupted state is not cached)."""
        with language.speaking(self.speaking):
            self._update()

    def _update(self) -> None:
        state = self.state
        fresh = state not in self._cache
        if fresh:
            self.status.value = views.compiling_html()
        try:
            result = self.result(state)
            self._show(state, self.render(result), self.lesson(result))
            self.status.value = "" if not fresh else views.computed_now_html()
            self._note_changes(state, self.facts(result))
        except Exception as error:  # noqa: BLE001 - a widget must never kill a learner's kernel
            self.status.value = ""
            self._show(state, views.could_not_compute_html(error), None)
        except KeyboardInterrupt:
            self.status.value = ""
            self._show(state, views.interrupted_html(), None)
            raise

    def _note_changes(self, state: tuple, facts: dict[str, str]) -> None:
        """Say which controls changed since the state shown before, and which facts changed with them."""
        visible = LabWidget.state.fget(self)      # what the controls show, not the state a lab computes from
        if self._last is not None and self._last[0] != state:
            flipped = [(self._labels[name].value, _shown(self.controls[name], old), _shown(self.controls[name], new))
                       for name, old, new in zip(self.controls, self._last[2], visible) if old != new]
            self.changes.value = views.changes_html(flipped, self._last[1], facts)
        elif self._last is None:
            self.changes.value = ""
        self._last = (state, facts, visible)

    def _show(self, state: tuple, view_html: str, lesson: tuple[str, str, str] | None) -> None:
        """Draw ``view_html`` and the link to ``lesson``, and remember the state they show (what the static view and
        repr name). On Colab the link, absolute there, goes into the view itself: a link in a widget's HTML opens
        in a new tab, as it says, where Colab's widget manager has not always drawn an ``Output`` widget."""
        inline = lesson is not None and on_colab()
        self._shown_state, self._shown_lesson = state, lesson
        self.view.value = view_html + (views.lesson_link_html(*lesson) if inline else "")
        self.lesson_link.outputs = () if inline else views.lesson_link_output(lesson)

    # -- display and lifetime ---------------------------------------------------------------
    def _ipython_display_(self):
        from IPython.display import display

        if self.closed:
            display({"text/plain": f"{self!r}: closed (lab.close()); build a new one to use it again."},
                    raw=True)
            return
        with language.speaking(self.speaking):
            static = views.static_view_html(say(self.title), self._described_for_the_reader(), self.view.value + (
                views.lesson_link_html(*self._shown_lesson) if self.lesson_link.outputs else ""))
        bundle = {
            "text/plain": repr(self),
            "text/html": static,
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2, "version_minor": 0, "model_id": self.ui.model_id},
        }
        display(bundle, raw=True)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (or the frontend closed the lab's box): it can no longer be shown."""
        return self.ui.comm is None

    def all_widgets(self) -> list[widgets.Widget]:
        """Every ipywidget this lab made: controls, heading, status, view, their boxes, layouts and styles."""
        made = [*self.controls.values(), *self._labels.values(), *self._rows, self.heading, self.status,
                self.changes, self.view, self.lesson_link, self._controls_box, self.ui]
        parts = [part for widget in made for part in (getattr(widget, "layout", None), getattr(widget, "style", None))
                 if isinstance(part, widgets.Widget)]
        return made + parts

    def close(self) -> None:
        """Close every widget this lab made, so the kernel and the frontend can free them."""
        for control in self.controls.values():
            control.unobserve_all()
        for widget in self.all_widgets():
            widget.close()
        self._cache.clear()

    def describe(self) -> str:
        """The state the view shows (what its report was computed with), control by control; a
        control the state ignores (greyed out) reads as the value actually used."""
        shown = getattr(self, "_shown_state", self.state)
        return ", ".join(f"{name}={value!r}" for name, value in zip(self.controls, shown))

    def _described_for_the_reader(self) -> str:
        """:meth:`describe` as the panel reads: in English the values (what set() takes); in another language each
        control's label and the label of its value, as the controls show them."""
        if self.speaking == language.ENGLISH:
            return self.describe()
        shown = getattr(self, "_shown_state", self.state)
        return ", ".join(f"{self._labels[name].value}={_shown(self.controls[name], value)}"
                         for name, value in zip(self.controls, shown))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class DeclarationLab(LabWidget):
    """Pick a declaration, a backend and a dynamic mode; see what torch.compile makes of it."""

    title = "Declaration lab"

    def __init__(self, namespace: str = "declab", declaration: str = "correct",
                 backend: str = "aot_eager", dynamic: str = "False"):
        self.namespace = namespace
        super().__init__({
            "declaration": _selection(DROPDOWN, list(DECLARATIONS), declaration, "declaration"),
            "backend": _selection(TOGGLES, ["aot_eager", "inductor"], backend, "backend"),
            "dynamic": _selection(TOGGLES, list(DYNAMIC_CHOICES), dynamic, "dynamic"),
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
        declaration = self._shown_declaration()
        return views.declaration_view_html(say(declaration), say(DECLARATIONS[declaration][0]), schema, report,
                                            declaration_spec(declaration, self.namespace).name)

    def _shown_declaration(self) -> str:
        return self.controls["declaration"].value

    def facts(self, result) -> dict[str, str]:
        return views.report_facts(result[1], declaration_spec(self._shown_declaration(), self.namespace).name)


class NamingLab(LabWidget):
    """One name or two, declaration order, cache policy: what the caches hand back."""

    title = "Naming lab"

    def __init__(self, namespace: str = "naminglab", scheme: str = "one shared name",
                 order: str = naming.ORDERS[0], policy: str = "default", typed_name: str = ""):
        self.namespace = namespace
        if not isinstance(typed_name, str):
            raise ValueError(f"typed_name must be text such as 'mylab::my_op', not {brief(typed_name)}.")
        super().__init__({
            "scheme": _selection(TOGGLES, list(naming.SCHEMES), scheme, "names", "scheme"),
            "typed_name": widgets.Text(value=typed_name, placeholder="mylab::my_op", description="your name",
                                       continuous_update=False),
            "order": _selection(DROPDOWN, list(naming.ORDERS), order, "order"),
            "policy": _selection(TOGGLES, list(cache.POLICIES), policy, "cache", "policy"),
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

    def cacheable(self, result) -> bool:
        """A refused name is not remembered: "already exists" stops being true once the name is freed."""
        return not result.problem

    @property
    def outcome(self) -> naming.NamingResult:
        return self.result()

    def render(self, result) -> str:
        if result.problem:
            return views.name_refused_html(result.problem)
        return views.naming_html(result, naming_story(result))

    def lesson(self, result) -> tuple[str, str, str] | None:
        """The section on a wrong declaration (:func:`declaration_lesson`), where the story names it."""
        link = declaration_lesson()
        return link if not result.problem and link[0] in naming_story(result) else None

    def facts(self, result) -> dict[str, str]:
        if result.problem:
            return {"outcome": "name refused"}
        return {f"step {i + 1} {what}": value for i, s in enumerate(result.steps)
                for what, value in (("cache", "hit: reused" if s.stale else "miss: compiled"),
                                    ("kernel runs", str(s.kernel_calls)), ("x after", str(s.x_after)))}


class DynamicLab(LabWidget):
    """Dynamic mode × op × op kind × fullgraph × shapes × device: is the unused op removed, how often do we compile?"""

    title = "Dynamic-shapes and DCE lab"

    def __init__(self, namespace: str = "dcelab", declaration: str = "pure, result unused",
                 dynamic: str = "None", shapes: str = "4 → 6 → 8", device: str = "cpu",
                 op_kind: str = "shape-following", fullgraph: str = "False"):
        self.namespace = namespace
        super().__init__({
            "dynamic": _selection(TOGGLES, list(DYNAMIC_CHOICES), dynamic, "dynamic"),
            "declaration": _selection(DROPDOWN, list(DCE_DECLARATIONS), declaration, "the op", "declaration"),
            "op_kind": _selection(TOGGLES, list(OP_KINDS), op_kind, "output size", "op_kind"),
            "fullgraph": _selection(TOGGLES, list(FULLGRAPH_CHOICES), fullgraph, "fullgraph"),
            "shapes": _selection(TOGGLES, list(SHAPE_SEQUENCES), shapes, "shapes"),
            "device": _selection(TOGGLES, devices(), device, "device"),
        })
        self.controls["shapes"].style.button_width = "110px"
        self.controls["op_kind"].style.button_width = "130px"
        self.controls["declaration"].observe(self._op_kind_only_when_used, names="value")
        self._op_kind_only_when_used()

    def _op_kind_only_when_used(self, _change=None) -> None:
        """A data-dependent size belongs to the op that returns a tensor; grey the control out otherwise, showing
        the size the lab then computes with (a toggle left on "data-dependent" would show a state not computed)."""
        unused_result = self.controls["declaration"].value == "pure, result unused"
        self.controls["op_kind"].disabled = not unused_result
        if not unused_result:
            self.controls["op_kind"].value = "shape-following"

    @property
    def state(self) -> tuple:
        dynamic, declaration, op_kind, fullgraph, shapes, device = super().state
        if declaration != "pure, result unused":
            op_kind = "shape-following"
        return dynamic, declaration, op_kind, fullgraph, shapes, device

    def compute(self, state):
        dynamic, declaration, op_kind, fullgraph, shapes, device = state
        return dce_experiment(declaration, DYNAMIC_CHOICES[dynamic], SHAPE_SEQUENCES[shapes], device,
                              namespace=self.namespace, op_kind=op_kind, fullgraph=FULLGRAPH_CHOICES[fullgraph])

    @property
    def report(self):
        return self.result()[1]

    def render(self, result) -> str:
        op, report = result
        return views.dce_view_html(op.schema, op.name, report, self.state[1] in PYTHON_SIDE_EFFECT)

    def facts(self, result) -> dict[str, str]:
        op, report = result
        return views.report_facts(report, op.name, self.state[1] in PYTHON_SIDE_EFFECT)
