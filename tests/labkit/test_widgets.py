"""labkit.widgets: the labs driven from Python, as a learner's clicks would drive them (no frontend needed); the
refusals they show come from labkit's core; what every lab shares (LabWidget)."""

import itertools
import re
import sys
import types

import ipywidgets
import pytest
import torch

import labkit
from labkit import experiments as e, ops, widgets as w
from labkit.experiments import DECLARATIONS
from labkit.widgets import DeclarationLab
from repo import ROOT
from showings import SHOWINGS, widget_classes

EXPECTED = {  # declaration -> (what happens, does compiled agree with eager?)
    "correct": ("agree", True),
    "undeclared mutation": ("differ", False),
    "over-declared": ("agree", True),
    "returns its input": ("alias_return", None),
    "no fake kernel": ("missing_fake", None),
    '"unknown"': ("agree", True),
}


@pytest.fixture(scope="module")
def lab():
    widget = DeclarationLab(namespace="t_decl")
    yield widget
    ops.drop_namespace("t_decl")


@pytest.mark.parametrize("declaration, backend", list(itertools.product(DECLARATIONS, ["aot_eager", "inductor"])))
def test_every_declaration_on_every_backend(lab, declaration, backend):
    lab.set(declaration=declaration, backend=backend, dynamic="False")
    report = lab.report
    outcome, agree = EXPECTED[declaration]
    if agree is None:
        error = report.eager_error or report.error
        assert error is not None and error.kind == outcome
        assert error.message in lab.view.value.replace("&#x27;", "'").replace("&lt;", "<").replace("&gt;", ">")
    else:
        assert report.verdict.agree is agree
        assert ("agree" if agree else "DIFFER") in lab.view.value
    assert lab.schema in lab.view.value.replace("&gt;", ">")
    name = e.declaration_spec(declaration, "t_decl").name
    if declaration == "undeclared mutation":
        assert report.compiled_calls[name] == 0 and report.fate(name)["aot"] is False
    if declaration == "over-declared":  # correct but not free: the useless call is kept
        assert report.compiled_calls[name] == 2 and report.fate(name)["aot"] is True
        assert any(n.target == "copy_.default" for n in report.aot_graphs[0].nodes)
    if declaration == '"unknown"':
        assert "Tensor(a0!) x" in lab.schema


def test_the_result_matches_a_fresh_computation(lab):
    lab.set(declaration="undeclared mutation", backend="aot_eager", dynamic="None")
    cached = lab.report
    _, fresh = e.declaration_experiment("undeclared mutation", "aot_eager", None, "t_decl")
    assert cached.verdict == fresh.verdict and cached.graphs_per_call == fresh.graphs_per_call
    assert cached.compiled_calls == fresh.compiled_calls


@pytest.mark.parametrize("dynamic, graphs", [("False", [1, 1]), ("True", [1, 0]), ("None", [1, 1])])
def test_dynamic_modes_change_the_number_of_graphs(lab, dynamic, graphs):
    lab.set(declaration="correct", backend="aot_eager", dynamic=dynamic)
    assert lab.report.graphs_per_call == graphs


def test_setting_a_single_control_redraws(lab):
    lab.set(declaration="correct", backend="aot_eager", dynamic="False")
    before = lab.view.value
    lab.controls["declaration"].value = "undeclared mutation"
    assert lab.view.value != before and "DIFFER" in lab.view.value
    assert lab.state == ("undeclared mutation", "aot_eager", "False")


def test_seen_states_are_served_from_the_cache(lab):
    lab.set(declaration="correct", backend="aot_eager", dynamic="False")
    report = lab.report
    lab.set(declaration="over-declared")
    lab.set(declaration="correct")
    assert lab.report is report


def test_an_impossible_value_is_refused_by_the_control_and_the_kernel_lives(lab):
    import traitlets

    with pytest.raises(traitlets.TraitError):
        lab.controls["declaration"].value = "no such declaration"
    lab.set(declaration="correct")
    assert "agree" in lab.view.value


def test_a_failing_compute_shows_a_message_instead_of_raising():
    class Broken(DeclarationLab):
        def compute(self, state):
            raise RuntimeError("boom")

    broken = Broken(namespace="t_decl")
    assert "could not compute this state" in broken.view.value and "boom" in broken.view.value


def test_display_bundle_has_a_static_fallback(lab):
    from IPython.core.formatters import DisplayFormatter  # noqa: F401 - IPython is there
    from unittest import mock

    shown = []
    with mock.patch("IPython.display.display", lambda data, raw: shown.append(data)):
        lab._ipython_display_()
    bundle = shown[0]
    assert bundle["text/plain"].startswith("DeclarationLab(")
    assert "static view of" in bundle["text/html"]
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == lab.ui.model_id


class _InterruptedOnce(DeclarationLab):
    """Ctrl-C arrives during the first compile of "undeclared mutation" (as a learner's stop button would)."""

    interrupt = False

    def compute(self, state):
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        return super().compute(state)


def test_ctrl_c_during_a_compile_shows_interrupted_and_the_next_change_recovers():
    lab = _InterruptedOnce(namespace="t_decl_int")
    try:
        lab.interrupt = True
        with pytest.raises(KeyboardInterrupt):
            lab.set(declaration="undeclared mutation")
        assert "Interrupted" in lab.view.value and "compiling" not in lab.status.value
        assert "agree" not in lab.view.value  # not the old ("correct") report
        assert "declaration='undeclared mutation'" in lab.describe()
        lab.set(backend="inductor")
        lab.set(backend="aot_eager")  # back to the interrupted state: computed now, not remembered as interrupted
        assert "DIFFER" in lab.view.value and "Interrupted" not in lab.view.value
    finally:
        lab.close()
        ops.drop_namespace("t_decl_int")


def _shown_bundle(lab):
    from unittest import mock

    shown = []
    with mock.patch("IPython.display.display", lambda data, raw: shown.append(data)):
        lab._ipython_display_()
    return shown[0]


def test_a_closed_lab_displays_one_sentence():
    lab = DeclarationLab(namespace="t_decl_closed")
    lab.close()
    bundle = _shown_bundle(lab)
    assert set(bundle) == {"text/plain"} and "closed (lab.close())" in bundle["text/plain"]
    assert lab.closed and "DeclarationLab(" in repr(lab)
    ops.drop_namespace("t_decl_closed")


def test_the_static_view_names_the_state_its_report_was_computed_with():
    """Greyed-out controls hold values the compute ignores: the static view names the values it used."""
    naming_lab = w.NamingLab(namespace="t_static_n", scheme="one shared name", typed_name="mine::ignored")
    dynamic_lab = w.DynamicLab(namespace="t_static_d", declaration="has_side_effect", op_kind="data-dependent")
    try:
        for lab in (naming_lab, dynamic_lab):
            html_view = _shown_bundle(lab)["text/html"].replace("&#x27;", "'")
            used = ", ".join(f"{name}={value!r}" for name, value in zip(lab.controls, lab.state))
            assert f"static view of: {used};" in html_view
        assert "ignored" not in _shown_bundle(naming_lab)["text/html"]
        assert "data-dependent" not in _shown_bundle(dynamic_lab)["text/html"].split("</p>")[0]
    finally:
        naming_lab.close()
        dynamic_lab.close()
        ops.drop_namespace("t_static_n")
        ops.drop_namespace("t_static_d")


def test_since_the_previous_state_names_what_the_learner_sees_and_no_toggle_that_did_not_move():
    """The line under a lab's controls names each control by its label and only the controls whose shown value
    changed: never an internal name (op_kind, typed_name, scheme), never a greyed-out toggle the learner did not
    touch. A toggle greyed out shows the value the lab computes with."""
    dynamic_lab = w.DynamicLab(namespace="t_since_d", op_kind="data-dependent")
    naming_lab = w.NamingLab(namespace="t_since_n", scheme="a name I type", typed_name="mylab::my_op")
    try:
        dynamic_lab.set(declaration="has_side_effect")
        assert dynamic_lab.controls["op_kind"].disabled and dynamic_lab.controls["op_kind"].value == "shape-following"
        moved = dynamic_lab.changes.value
        assert "the op: pure, result unused → has_side_effect" in moved and "output size: data-dependent → " \
            "shape-following" in moved, moved
        dynamic_lab.set(declaration="pure, result unused")
        back = dynamic_lab.changes.value
        assert "the op: has_side_effect → pure, result unused" in back and "output size" not in back, back
        naming_lab.set(typed_name="myop")
        assert "your name: mylab::my_op → myop" in naming_lab.changes.value, naming_lab.changes.value
        naming_lab.set(scheme="one shared name")
        assert "names: a name I type → one shared name" in naming_lab.changes.value, naming_lab.changes.value
        for lab in (dynamic_lab, naming_lab):
            assert not any(name in lab.changes.value for name in ("op_kind", "typed_name", "scheme"))
    finally:
        for lab, namespace in ((dynamic_lab, "t_since_d"), (naming_lab, "t_since_n")):
            lab.close()
            ops.drop_namespace(namespace)


def _picture_tones(report, op_name: str, removal: str | None) -> list[str]:
    from matplotlib.colors import to_hex

    from labkit import pictures
    fig = pictures.draw_fate(report, op_name, title=False, removal=removal)
    return [to_hex(patch.get_facecolor()) for patch in fig.axes[0].patches]


@pytest.mark.parametrize("lab_class, options, tone", [
    (w.DynamicLab, {}, "ok"),                                                       # dead code: nothing to see
    (w.DynamicLab, {"declaration": "-> None with a Python side effect"}, "bad"),   # its side effect is lost
    (DeclarationLab, {"declaration": "undeclared mutation", "backend": "inductor"}, "bad"),   # a write lost
])
def test_a_removal_takes_the_headlines_tone_in_the_table_and_the_picture(lab_class, options, tone):
    """"removed" (and a kernel that did not run) is red where the removal is the bug and green under a green
    "removed as dead code" headline: one tone for the whole panel, its table and its picture."""
    from labkit import pictures, render, views
    from panel_check import Panel

    lab = lab_class(namespace="t_tone", **options)
    try:
        report = lab.report
        op_name = (lab.result()[0].name if lab_class is w.DynamicLab
                   else e.declaration_spec(lab.state[0], lab.namespace).name)
        panel = Panel(lab.view.value)
        assert panel.headline_colour == render.COLOURS[tone], lab.view.value
        removed = [colour for text, colour in panel.colours if text == "removed"]
        assert removed and set(removed) == {render.COLOURS[tone]}, panel.colours
        marks = [*render.stage_marks(report, op_name).values(), render.ran_mark(report, op_name)]
        boxes = dict(zip(marks, _picture_tones(report, op_name, tone)))
        assert boxes["removed"] == boxes["no"] == pictures.PALETTE[tone], boxes
        assert views.fate_picture_html(report, op_name, (tone, "")) in lab.view.value   # the picture drawn so
    finally:
        lab.close()
        ops.drop_namespace("t_tone")


def test_the_naming_labs_link_to_its_lesson_is_drawn_where_jupyterlab_opens_it_beside_the_notebook(monkeypatch):
    """A link in a widget's HTML view is the browser's: JupyterLab's address + "02_mutates_args.ipynb" opens a second
    JupyterLab in a new tab, at 02's top, leaving the learner's kernel behind. So the naming lab's link to the
    lesson its story names is an output of an ``Output`` widget, which JupyterLab's renderer draws: a relative link
    there opens the notebook beside this one (tests/delivery/test_browser.py clicks it), its fragment the section's
    heading. On Colab, the published notebook, linked in the view itself."""
    import html as html_module

    from labkit import lessons
    lab = w.NamingLab(namespace="t_link")
    try:
        (shown,) = lab.lesson_link.outputs
        link = re.search(r"<a href='([^']*)'([^>]*)>([^<]*)</a>", shown["data"]["text/html"])
        href, attributes, words = html_module.unescape(link.group(1)), link.group(2), link.group(3)
        assert "<a " not in lab.view.value, "a link in the widget's own HTML opens a second JupyterLab"
        assert words in html_module.unescape(lab.view.value), "the link's words are those the story says"
        stem, fragment = href.split("#")
        assert "target=" not in attributes and not href.startswith(("http", "/")), href
        headings = [line[len("# ## "):] for line in (ROOT / "lessons" / stem.replace(".ipynb", ".py")).read_text()
                    .splitlines() if line.startswith("# ## ")]
        assert fragment in [h.replace(" ", "-") for h in headings], (fragment, headings)   # JupyterLab's ids
        assert fragment.startswith(words.split("section ")[1] + "."), (words, fragment)
        lab.set(order="mutating first, then pure")   # stale, right by luck: no step wrong for its declaration
        assert lab.lesson_link.outputs == () and "section" not in lab.view.value
        lab.set(scheme="a name I type", typed_name="aten::add")   # refused: no story, no link
        assert lab.lesson_link.outputs == ()
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
        lab.set(scheme="one shared name", order=lab.choices()["order"][0])   # on Colab: absolute, in the view
        assert f"href='{lessons.ON_COLAB}02_mutates_args.ipynb' target='_blank'" in lab.view.value, lab.view.value
        assert "(opens in a new tab)" in lab.view.value and lab.lesson_link.outputs == ()
    finally:
        lab.close()
        ops.drop_namespace("t_link")


# --- the refusals a widget shows come from labkit's core, and are asked again, never remembered -------------


def test_the_naming_widget_gets_the_refusal_from_the_core():
    """Widgets only pass the namespace on; the sentence comes from naming.run."""
    @torch.library.custom_op("t_adv::op", mutates_args=())
    def mine(x: torch.Tensor) -> torch.Tensor:
        return x + 100

    from labkit.widgets import NamingLab

    lab = NamingLab(namespace="t_adv", scheme="one shared name")
    assert "already exists" in lab.outcome.problem and not lab.outcome.steps
    assert mine(torch.zeros(1)).item() == 100.0


def test_the_declaration_widget_gets_the_refusal_from_the_core():
    from labkit.widgets import DeclarationLab

    DeclarationLab(namespace="t_adv", declaration="correct")  # learn the name it declares
    (name,) = labkit.drop_namespace("t_adv")
    torch.library.custom_op(name, lambda x: x + 100, mutates_args=(), schema="(Tensor x) -> Tensor")
    lab = DeclarationLab(namespace="t_adv", declaration="correct")
    assert "labkit did not create it" in lab.view.value
    namespace, op = name.split("::")
    assert getattr(getattr(torch.ops, namespace), op)(torch.zeros(1)).item() == 100.0


def test_a_declaration_lab_refuses_none_in_one_sentence():
    lab = w.DeclarationLab(namespace="t_adv_w")
    with pytest.raises(ValueError, match="declaration must be one of"):
        lab.set(declaration=None)
    with pytest.raises(ValueError, match="declaration must be one of"):
        e.declaration_experiment(None, "aot_eager", False)
    assert "Declaration lab" in lab.ui.children[0].value  # the live title
    lab.close()


def test_a_refused_name_is_asked_again_not_remembered():
    """"already exists" may stop being true (the name is freed), so NamingLab never caches a refusal."""
    lab = w.NamingLab(namespace="t_adv_n", scheme="a name I type", typed_name="")
    labkit.declare(name="t_adv_taken::op", returns="none")
    lab.set(typed_name="t_adv_taken::op")
    first = lab.outcome
    assert "already exists" in first.problem and lab.state not in lab._cache
    assert lab.outcome is not first and lab.outcome == first  # computed again, from the kernel as it is now
    lab.close()


# --- what every lab shares (LabWidget): set, every_state, close, on a lab whose compute is free -------------


class Cheap(w.LabWidget):
    """A lab whose compute is free, to exercise the plumbing many times."""

    title = "Cheap lab"

    def __init__(self, a="x", text=""):
        super().__init__({"a": ipywidgets.ToggleButtons(options=["x", "y"], value=a, description="a"),
                          "text": ipywidgets.Text(value=text, description="text")})

    def compute(self, state):
        return state

    def render(self, result):
        return f"<p>{result}</p>"


def _alive() -> int:
    return len(ipywidgets.Widget._active_widgets if hasattr(ipywidgets.Widget, "_active_widgets")
               else ipywidgets.Widget.widgets)


def test_set_is_all_or_nothing():
    lab = Cheap()
    view = lab.view.value
    for bad in (dict(a="y", text=None), dict(a=None), dict(nope=1), dict(a="z", text="ok")):
        with pytest.raises(ValueError):
            lab.set(**bad)
        assert lab.state == ("x", "") and lab.view.value == view
    lab.set(a="y", text="t")
    assert lab.view.value == "<p>('y', 't')</p>"


def test_every_state_covers_every_combination():
    states = list(Cheap().every_state())
    assert len(states) == 2 * 3 and {"a": "y", "text": "mylab::my_op"} in states


def test_closing_many_labs_leaves_no_widgets_alive():
    before = _alive()
    labs = [Cheap() for _ in range(150)]
    assert _alive() > before + 150
    for lab in labs:
        lab.close()
    assert _alive() == before


def test_every_widget_showing_matches_its_notebook_and_every_widget_is_shown():
    """tools/showings.py's SHOWINGS is what the browser test, the screenshots and the Colab check read: each entry's
    call is in its notebook's source, once, and every LabWidget subclass of labkit.widgets is shown somewhere."""
    import inspect

    from repo import ROOT

    for showing in SHOWINGS:
        source = (ROOT / "lessons" / f"{showing.notebook}.py").read_text()
        assert source.count(showing.call) == 1, \
            f"{showing}: its whole call, every argument as written, is not once in {showing.notebook}'s source"
        assert showing.screenshot is None or showing.screenshot_after <= len(showing.flips), showing
    classes = {obj for _, obj in inspect.getmembers(w, inspect.isclass)
               if issubclass(obj, w.LabWidget) and obj is not w.LabWidget and obj.__module__ == w.__name__}
    assert classes == set(widget_classes()), f"widgets no notebook shows: {classes - set(widget_classes())}"
    assert len({s.page for s in SHOWINGS}) == len(SHOWINGS), "one showing per notebook (the browser test's id)"
