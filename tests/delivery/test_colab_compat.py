"""labkit works with the ipywidgets Colab ships (7.7), not only with ipywidgets 8.

Colab has shipped ipywidgets 7.7, and its install cell must not upgrade it (ipywidgets 8 broke
even core widgets there). So the widgets use only what 7.7 and 8.x share; this test proves it
by driving every lab widget, and its display bundle, with ipywidgets 7.7.1 in a subprocess.
"""

import os
import subprocess
import sys

import pytest

from repo import ROOT

COLAB_WIDGETS = ["ipywidgets==7.7.1", "widgetsnbextension~=3.6.0", "jupyterlab_widgets~=1.1",
                 "ipython_genutils==0.2.0"]

DRIVE = r"""
import ipywidgets
assert ipywidgets.__version__ == "7.7.1", ipywidgets.__file__
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
import labkit
from labkit import widgets as lw
from showings import widget_classes

shell = InteractiveShell.instance()
lab = lw.DeclarationLab(namespace="colab77")
assert lab.report.verdict.agree
assert not lab.set(declaration="undeclared mutation").report.verdict.agree
import sys, types
sys.modules["google.colab"] = types.ModuleType("google.colab")   # as in Colab's kernel: its links are absolute
naming = lw.NamingLab(namespace="colab77n")   # the story names a lesson: linked in the view, absolute, a new tab
assert f"<a href='{labkit.lessons.ON_COLAB}02_mutates_args.ipynb' target='_blank'" in naming.view.value
assert naming.lesson_link.outputs == ()
naming.lesson_link.outputs = ({"output_type": "display_data", "metadata": {}, "data": {"text/plain": "an output"}},)
assert "belongs to torch itself" in naming.set(scheme="a name I type", typed_name="aten::add").outcome.problem
assert naming.lesson_link.outputs == ()
dynamic = lw.DynamicLab(namespace="colab77d", dynamic="True")
assert dynamic.report.graphs_per_call == [1, 0, 0]
shown = {type(w) for w in (lab, naming, dynamic)}
assert shown == set(widget_classes()), f"a widget the lab shows is not driven here: {widget_classes()}"
for widget in (lab, naming, dynamic):
    with capture_output() as shown:
        widget._ipython_display_()
    data = shown.outputs[0].data
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(data), data.keys()
    assert "static view of" in data["text/html"]
    assert widget.title in widget.ui.children[0].value  # the live title
alive = len(ipywidgets.Widget.widgets)
for widget in (lab, naming, dynamic):
    widget.close()
assert len(ipywidgets.Widget.widgets) < alive - 3 * 15, (alive, len(ipywidgets.Widget.widgets))
print("ok with ipywidgets", ipywidgets.__version__)
"""


@pytest.fixture(scope="module")
def colab_widgets(tmp_path_factory):
    target = tmp_path_factory.mktemp("ipywidgets77")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--target", str(target), *COLAB_WIDGETS],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        if os.environ.get("LAB_CI") == "1":
            pytest.fail(f"could not install ipywidgets 7.7.1: {done.stderr[-1000:]}")
        pytest.skip("ipywidgets 7.7.1 could not be installed here (no package index?)")
    return target


def test_every_widget_works_with_colabs_ipywidgets(colab_widgets):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(colab_widgets), str(ROOT), str(ROOT / "tools")]))
    done = subprocess.run([sys.executable, "-c", DRIVE], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok with ipywidgets 7.7.1" in done.stdout
