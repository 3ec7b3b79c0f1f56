"""Every widget in a real JupyterLab, driven in a real Chromium: what a learner clicks is what the core says.

For each notebook with a widget: start JupyterLab on loopback (on a copy of the notebooks, so
nothing is saved over them), open the notebook, clear it and run all cells (no cell may fail),
then flip the widget's controls one at a time. After each flip the test reads the whole state
back from the page, asks labkit's core — in this test process — what the view must say for that
state, and waits until the page says exactly that. Screenshots go to ``tests/artifacts/browser/``.

Needs playwright (``tests/requirements.txt``; never ``playwright install``: it uses the system
Chromium at /usr/bin/chromium, Debian's package ``chromium``). Without them the test skips with
that sentence, except when ``LAB_CI=1`` (set by ``.ci/run``), where it fails.
``LAB_UPDATE_SCREENSHOTS=1`` also copies one screenshot per widget to ``docs/screenshots/`` (the
README shows those).
"""

from __future__ import annotations

import html
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts" / "browser"
CHROMIUM = os.environ.get("LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r tests/requirements.txt)"
    if not pathlib.Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


if _missing():
    if os.environ.get("LAB_CI") == "1":
        raise RuntimeError(f"the browser test is required here, but {_missing()}")
    pytest.skip(_missing(), allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402

import labkit  # noqa: E402
from labkit import widgets as lw  # noqa: E402

# notebook → (how the notebook builds its widget, the flips to make: (control, value), ...)
FLIPS = {
    "02_mutates_args": (
        lambda: lw.DeclarationLab(namespace="nb02w"),
        [("declaration", "undeclared mutation"), ("backend", "aot_eager"), ("dynamic", "True"),
         ("declaration", "no fake kernel")]),
    "03_aliasing_and_names": (
        lambda: lw.NamingLab(namespace="nb03w"),
        [("scheme", "one shared name"), ("policy", "default"), ("order", "mutating first, then pure"),
         ("scheme", "a name I type"), ("typed_name", "aten::add"), ("typed_name", "mine::op")]),
    "04_dce_and_dynamic_shapes": (
        lambda: lw.DynamicLab(namespace="nb04w"),
        [("dynamic", "True"), ("declaration", "has_side_effect"), ("shapes", "4 → 4 → 4")]
        + ([("device", "cuda")] if "cuda" in lw.devices() else [])),
}

# the screenshot the README shows for each widget: (step, file name in docs/screenshots/)
SHOWCASE = {"02_mutates_args": (1, "declaration-lab.png"), "03_aliasing_and_names": (2, "naming-lab.png"),
            "04_dce_and_dynamic_shapes": (1, "dynamic-lab.png")}

_TAG = re.compile(r"<[^>]+>")


def words(text: str) -> str:
    return " ".join(text.split())


def expected_view(widget: lw.LabWidget) -> str:
    """The view's text as the core renders it for the widget's state (what textContent shows)."""
    return words(html.unescape(_TAG.sub("", widget.render(widget.result()))))


# --- the server -------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(folder: pathlib.Path) -> None:
    """No news pop-up; every cell rendered (no windowing), so the widget's DOM is always there."""
    for plugin, values in {"apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
                           "notebook-extension/tracker": {"windowingMode": "none"}}.items():
        path = folder / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    home = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", home / "notebooks", ignore=shutil.ignore_patterns("src"))
    _settings(home / "settings")
    port = _free_port()
    log = open(home / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
         "--ServerApp.disable_check_xsrf=True", "--LabApp.expose_app_in_browser=True",
         "--ServerApp.allow_root=True", "--ServerApp.open_browser=False", f"--ServerApp.root_dir={home}",
         f"--LabServerApp.user_settings_dir={home / 'settings'}",
         f"--LabServerApp.workspaces_dir={home / 'workspaces'}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=home)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/lab", timeout=5)
                break
            except OSError:
                assert server.poll() is None, (home / "server.log").read_text()[-3000:]
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# --- the page ---------------------------------------------------------------------------------

NOTEBOOK = "window.jupyterapp.shell.currentWidget"
# Done when every code cell has run, or when a cell failed (JupyterLab then stops the run).
RUN_DONE = f"""() => {{
  const nb = {NOTEBOOK};
  const kernel = nb?.sessionContext?.session?.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  const code = nb.content.widgets.filter(c => c.model.type === 'code');
  return code.every(c => c.model.executionCount !== null)
    || code.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
}}"""
ERRORS = f"""() => {NOTEBOOK}.content.widgets.filter(c => c.model.type === 'code')
  .flatMap(c => c.model.outputs.toJSON()).filter(o => o.output_type === 'error')
  .map(o => o.ename + ': ' + o.evalue)"""


def run_all(page, url: str, name: str) -> None:
    # a workspace of its own, reset: JupyterLab would otherwise reopen the previous notebook too
    page.goto(f"{url}/lab/workspaces/{name}/tree/notebooks/{name}.ipynb?reset")
    page.wait_for_function(f"""() => {NOTEBOOK}?.context?.path === 'notebooks/{name}.ipynb'
                               && {NOTEBOOK}.sessionContext?.session?.kernel?.status === 'idle'""",
                           timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(RUN_DONE, timeout=600_000, polling=1000)
    assert page.evaluate(ERRORS) == [], f"{name}: cells failed in JupyterLab"


def widget_area(page):
    return page.locator(".jp-OutputArea-child:has(.widget-html-content)").first


def control(area, widget: lw.LabWidget, name: str):
    """The DOM element of one control, found by its description label."""
    box = {"Dropdown": ".widget-dropdown", "ToggleButtons": ".widget-toggle-buttons", "Text": ".widget-text"}
    kind = type(widget.controls[name]).__name__
    label = widget.controls[name].description
    return area.locator(f"{box[kind]}:has(.widget-label:text-is('{label}'))")


def read_state(area, widget: lw.LabWidget) -> dict:
    state = {}
    for name, ctl in widget.controls.items():
        element = control(area, widget, name)
        kind = type(ctl).__name__
        if kind == "Dropdown":
            state[name] = element.locator("select").evaluate("s => s.options[s.selectedIndex].textContent")
        elif kind == "ToggleButtons":
            state[name] = element.locator("button.mod-active").inner_text().strip()
        else:
            state[name] = element.locator("input").input_value()
    return {name: value.replace("\xa0", " ") for name, value in state.items()}  # labels use no-break spaces


def flip(area, widget: lw.LabWidget, name: str, value: str) -> None:
    element = control(area, widget, name)
    kind = type(widget.controls[name]).__name__
    if kind == "Dropdown":
        element.locator("select").select_option(label=value)
    elif kind == "ToggleButtons":
        element.locator("button", has_text=value).first.click()
    else:
        element.locator("input").fill(value)
        element.locator("input").press("Enter")


def wait_for_view(page, area, expected: str, timeout_s: float = 300) -> str:
    view = area.locator(".widget-html-content").last
    deadline = time.monotonic() + timeout_s
    shown = ""
    while time.monotonic() < deadline:
        shown = words(view.evaluate("e => e.textContent"))
        if shown == expected:
            return shown
        page.wait_for_timeout(500)
    return shown


@pytest.mark.parametrize("name", list(FLIPS))
def test_widget_in_jupyterlab_shows_what_the_core_computes(name, lab_url, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    make_widget, flips = FLIPS[name]
    core = make_widget()
    page = browser.new_page(viewport={"width": 1300, "height": 2200})
    page.set_default_timeout(60_000)
    try:
        run_all(page, lab_url, name)
        area = widget_area(page)
        area.wait_for()
        for step, change in enumerate([None, *flips]):
            if change:
                flip(area, core, *change)
                page.wait_for_timeout(300)
            state = read_state(area, core)
            if change:
                assert state[change[0]] == change[1], f"the page did not take {change}: {state}"
            expected = expected_view(core.set(**state))
            shown = wait_for_view(page, area, expected)
            assert shown == expected, f"{name} after {change}: the page shows\n{shown}\nthe core says\n{expected}"
            area.screenshot(path=str(ARTIFACTS / f"{name}-{step}.png"))
        page.screenshot(path=str(ARTIFACTS / f"{name}-page.png"))
        if os.environ.get("LAB_UPDATE_SCREENSHOTS") == "1":
            step, target = SHOWCASE[name]
            (ROOT / "docs" / "screenshots").mkdir(parents=True, exist_ok=True)
            shutil.copy(ARTIFACTS / f"{name}-{step}.png", ROOT / "docs" / "screenshots" / target)
    finally:
        page.screenshot(path=str(ARTIFACTS / f"{name}-last.png"))  # what the page showed at the end
        page.evaluate(f"() => {NOTEBOOK}?.sessionContext?.shutdown()")  # free the kernel's memory
        page.close()
        labkit.drop_namespace(core.namespace)
