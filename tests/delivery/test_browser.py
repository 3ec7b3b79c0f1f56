"""The lab in a real JupyterLab, driven in a real Chromium: a learner's first run, and every widget.

The server is ``./lab``'s own (``./lab open --no-browser``, so JupyterLab gets the settings the lab
ships: binder/postBuild), run on a copy of the repository so that nothing is saved over it.

- First run: notebook 00 opened where ``./lab`` opens it, the file browser's top level, Run All: no
  cell may fail and no news pop-up may appear; a screenshot (the README shows it).
- A GPU cell of notebook 09, run in JupyterLab on this machine after the cells it needs: the page shows the
  recording with the label labkit gives it, and no diff of the recorded code; a screenshot (the README shows it).
- Widgets: for each notebook with a widget, run its setup cell and its widget cell, then flip the
  widget's controls one at a time. After each flip the test reads the whole state back from the page,
  asks labkit's core, in this test process, what the view must say for that state, and waits until
  the page says exactly that. (nbval runs every cell of every notebook; here only the widget's.)
- A lab's link to a lesson (04's naming lab → 02, section 6), clicked: JupyterLab opens 02 beside 04 in the same
  browser tab, 04 staying open; clicked again, with 02 open, it shows that heading.

Every wait is on an event JupyterLab reports (its documents ready, its run-all promise resolved, the
view's text), never on a guessed delay, and each deadline is generous: a loaded machine is slow,
not wrong. Screenshots go to ``tests/artifacts/browser/``.

Needs playwright (``tests/requirements.txt``; never ``playwright install``: it uses the system
Chromium at /usr/bin/chromium, Debian's package ``chromium``). Without them the test skips with
that sentence, except when ``LAB_CI=1`` (set by ``.ci/run``), where it fails.
``LAB_UPDATE_SCREENSHOTS=1`` also copies the README's screenshots to ``docs/screenshots/`` and writes
what each one shows to ``docs/screenshots/manifest.json`` (``tools/screenshots.py`` does both, and
``tests/delivery/test_screenshots.py`` fails once a screenshot is older than what it shows).
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

from repo import ROOT

pytestmark = pytest.mark.slow  # a JupyterLab server and a browser: minutes

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
from labkit import recordings, views  # noqa: E402
from labkit import widgets as lw  # noqa: E402
from panel_check import contradictions  # noqa: E402

import screenshots  # noqa: E402
from showings import SHOWINGS  # noqa: E402

# notebook → where it shows a widget (tools/showings.py: how it builds it, the flips to make, its screenshot)
FLIPS = {showing.page: showing for showing in SHOWINGS}

FIRST_RUN = "00_start_here"
# what the file browser must show a learner at the top, and must not (maintainers' folders)
SHOWN = {"README.md", "INSTRUCTORS.md", "notebooks", "labkit", "lessons"}
HIDDEN = {"tools", "tests", "benchmarks", "binder", "src"}
NEWS = "official Jupyter news"  # JupyterLab's pop-up: "Would you like to get notified about official Jupyter news?"

_TAG = re.compile(r"<[^>]+>")


def words(text: str) -> str:
    return " ".join(text.split())


def expected_view(widget: lw.LabWidget) -> str:
    """The view's text as the core renders it for the widget's state (what textContent shows), in its language."""
    with labkit.language.speaking(widget.speaking):
        return words(html.unescape(_TAG.sub("", widget.render(widget.result()))))


# --- the server: ./lab's own --------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_of_the_repository(home: pathlib.Path) -> pathlib.Path:
    """The lab as a learner has it, minus what is not part of it: JupyterLab autosaves into the copy."""
    copy = home / "lab"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv", "*.egg-info", "__pycache__",
                                                             "artifacts", ".pytest_cache"))
    return copy


def _environment_is_current() -> bool:
    """./lab reinstalls when requirements.txt or pyproject.toml changed since its last install; run from
    the copy, that would point labkit's editable install at the copy. ./lab test never leaves it stale."""
    stamp = subprocess.run("cat requirements.txt pyproject.toml | cksum", shell=True, cwd=ROOT,
                           capture_output=True, text=True).stdout
    installed = pathlib.Path(sys.prefix, ".lab-installed")
    return installed.exists() and installed.read_text() == stamp


PRINTED: dict[str, str] = {}   # the lab's URL -> the URL ./lab open printed for it


def _printed_url(log: pathlib.Path, port: int) -> str:
    """The URL Jupyter printed for a learner to open (what --no-browser leaves them with), once it is logged."""
    pattern = re.compile(rf"http://127\.0\.0\.1:{port}/\S*")
    deadline = time.monotonic() + 60
    while not (found := pattern.findall(log.read_text())) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert found, f"./lab open printed no URL: {log.read_text()[-2000:]}"
    return found[-1]


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    if not _environment_is_current():
        pytest.fail("This environment predates requirements.txt or pyproject.toml: run ./lab test, which updates it.")
    home = tmp_path_factory.mktemp("lab")
    copy = _copy_of_the_repository(home)
    port = _free_port()
    # The environment this test runs in stands for ./lab's .venv (it is that venv under ./lab test).
    # The user settings and workspaces are empty folders: no one's own settings hide the lab's.
    env = dict(os.environ, LAB_VENV=sys.prefix, JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), JUPYTER_CONFIG_DIR=str(home / "config"))
    log = open(home / "server.log", "w")
    server = subprocess.Popen(
        ["bash", str(copy / "lab"), "open", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--IdentityProvider.token=",
         "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True", "--LabApp.expose_app_in_browser=True",
         "--ServerApp.allow_root=True"],
        stdout=log, stderr=subprocess.STDOUT, cwd=home, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=10)
                break
            except OSError:
                assert server.poll() is None, (home / "server.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the server did not answer in 5 minutes"
                time.sleep(0.5)
        PRINTED[url] = _printed_url(home / "server.log", port)
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

# window.jupyterapp appears only once JupyterLab has loaded its extensions, which can be well after the
# page's load event on a busy machine; a wait that read window.jupyterapp.shell threw a TypeError then,
# and Playwright fails a wait_for_function at its predicate's first exception instead of retrying.
NOTEBOOK = "window.jupyterapp?.shell?.currentWidget"
ERRORS = f"""() => Array.from({NOTEBOOK}.model.cells).filter(c => c.type === 'code')
  .flatMap(c => c.toJSON().outputs).filter(o => o.output_type === 'error')
  .map(o => o.ename + ': ' + o.evalue)"""


def open_notebook(page, url: str, path: str) -> None:
    """Open PATH in the lab and wait until JupyterLab says its document and its kernel are ready.

    Waiting on the notebook's own promises, not on the cells the page happens to show: JupyterLab
    renders cells in batches, and a check over a half-rendered notebook passes on too few cells.
    """
    page.goto(f"{url}/lab/tree/{path}", wait_until="domcontentloaded", timeout=300_000)
    page.wait_for_function(f"() => {NOTEBOOK}?.context?.path === '{path}'", timeout=300_000, polling=500)
    page.evaluate(f"""async () => {{
        const nb = {NOTEBOOK};
        await nb.context.ready;
        await nb.sessionContext.ready;
        await nb.revealed;
    }}""")
    page.wait_for_function(f"() => {NOTEBOOK}.sessionContext.session?.kernel?.status === 'idle'",
                           timeout=300_000, polling=500)


def run(page, command: str, cells: list[int] | None = None, timeout_s: float = 900) -> None:
    """Run JupyterLab's COMMAND (on CELLS, each in turn) and wait for the promise it returns, which
    JupyterLab resolves when the kernel has replied for every cell it ran."""
    page.evaluate(f"""(cells) => {{
        const app = window.jupyterapp, nb = {NOTEBOOK};
        window.labTestDone = undefined;
        const each = async () => {{
            for (const i of cells ?? [null]) {{
                if (i !== null) nb.content.activeCellIndex = i;
                await app.commands.execute('{command}');
            }}
        }};
        each().then(() => {{ window.labTestDone = 'done'; }}, e => {{ window.labTestDone = String(e); }});
    }}""", cells)
    page.wait_for_function("() => window.labTestDone !== undefined", timeout=timeout_s * 1000, polling=500)
    assert page.evaluate("() => window.labTestDone") == "done"


def cell_index(page, needle: str) -> int:
    """The index of the first code cell whose source contains NEEDLE."""
    index = page.evaluate(f"""(needle) => Array.from({NOTEBOOK}.model.cells)
        .findIndex(c => c.type === 'code' && c.sharedModel.getSource().includes(needle))""", needle)
    assert index >= 0, needle
    return index


def widget_area(page):
    return page.locator(".jp-OutputArea-child:has(.widget-html-content)").first


def control(area, widget: lw.LabWidget, name: str):
    """The DOM element of one control, found by the label in front of it (every control's row: label, control)."""
    box = {"Dropdown": ".widget-dropdown", "ToggleButtons": ".widget-toggle-buttons", "Text": ".widget-text"}
    kind = type(widget.controls[name]).__name__
    label = widget._labels[name].value
    return area.locator(f".widget-hbox:has(> .widget-label:text-is('{label}')) {box[kind]}")


def op_of(widget: lw.LabWidget) -> str | None:
    """The op whose row the widget's panel shows (the naming lab has none)."""
    if isinstance(widget, lw.DeclarationLab):
        return lw.declaration_spec(widget.state[0], widget.namespace).name
    if isinstance(widget, lw.DynamicLab):
        return widget.result()[0].name
    return None


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
    shown = {name: value.replace("\xa0", " ") for name, value in state.items()}  # labels use no-break spaces
    return {name: _value_of(widget.controls[name], label) for name, label in shown.items()}


def _value_of(ctl, label: str):
    """The value a selection control shows under ``label`` (a lab's option is a (label, value) pair: the label is
    what a learner reads, in the language labkit speaks; the value is the state); free text is its own value."""
    for option in getattr(ctl, "options", ()):
        if isinstance(option, tuple) and option[0] == label:
            return option[1]
    return label


def flip(area, widget: lw.LabWidget, name: str, value: str) -> None:
    """Set control NAME to VALUE as a learner does: by clicking the label it shows that value under."""
    element = control(area, widget, name)
    kind = type(widget.controls[name]).__name__
    label = lw._shown(widget.controls[name], value)
    if kind == "Dropdown":
        element.locator("select").select_option(label=label)
    elif kind == "ToggleButtons":
        element.locator("button", has_text=label).first.click()
    else:
        element.locator("input").fill(value)
        element.locator("input").press("Enter")


def wait_for_state(area, widget: lw.LabWidget, name: str, value: str, timeout_s: float = 60) -> dict:
    """The page's state once control NAME shows VALUE (the view redraws the control after the click)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = read_state(area, widget)
        if state[name] == value or time.monotonic() > deadline:
            return state
        area.page.wait_for_timeout(200)


def wait_for_view(page, area, expected: str, timeout_s: float = 600) -> str:
    view = area.locator(".widget-html-content").last
    deadline = time.monotonic() + timeout_s
    shown = ""
    while time.monotonic() < deadline:
        shown = words(view.evaluate("e => e.textContent"))
        if shown == expected:
            return shown
        page.wait_for_timeout(500)
    return shown


def new_page(browser):
    page = browser.new_page(viewport={"width": 1300, "height": 2200})
    page.set_default_timeout(300_000)  # for locators: the widget is there once its cell has run
    return page


def close(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}-last.png"))  # what the page showed at the end
    page.evaluate(f"() => {NOTEBOOK}?.sessionContext?.shutdown()")  # free the kernel's memory
    page.close()


def updating_screenshots() -> bool:
    return os.environ.get("LAB_UPDATE_SCREENSHOTS") == "1"


def showcase(source: pathlib.Path, target: str, file_browser: dict | None = None) -> None:
    """Copy a README screenshot to docs/screenshots/ with its manifest entry (LAB_UPDATE_SCREENSHOTS=1)."""
    if updating_screenshots():
        screenshots.SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, screenshots.SCREENSHOTS / target)
        screenshots.record(target, file_browser)


# The folder JupyterLab's file browser shows (its breadcrumbs, "" for the root) and the names it lists.
FILE_BROWSER = """() => ({
    folder: Array.from(document.querySelectorAll('.jp-FileBrowser .jp-BreadCrumbs-item'))
        .map(e => e.textContent.trim()).filter(t => t && t !== '/').join('/'),
    names: Array.from(document.querySelectorAll('.jp-FileBrowser .jp-DirListing-content .jp-DirListing-itemText'))
        .map(e => e.textContent.trim())})"""


def file_browser(page, timeout_s: float = 120) -> dict:
    """What the file browser shows once its listing has stopped changing (it loads after the notebook)."""
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        shown = page.evaluate(FILE_BROWSER)
        if shown["names"] and shown == last:
            return {"folder": shown["folder"], "names": sorted(shown["names"])}
        last = shown
        page.wait_for_timeout(1000)
    raise AssertionError(f"the file browser's listing did not settle: {last}")


def test_the_url_lab_open_prints_opens_notebook_00(lab_url, browser):
    """./lab open --no-browser leaves a learner with a URL: it must land on notebook 00, not the Launcher."""
    page = new_page(browser)
    try:
        page.goto(PRINTED[lab_url], wait_until="domcontentloaded", timeout=300_000)
        page.wait_for_function(f"() => {NOTEBOOK}?.context?.path === 'notebooks/{FIRST_RUN}.ipynb'",
                               timeout=300_000, polling=500)
    finally:
        page.close()


def test_first_run_opens_notebook_00_and_runs_all_without_a_popup_or_an_error(lab_url, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    top = json.load(urllib.request.urlopen(f"{lab_url}/api/contents/", timeout=60))
    names = {item["name"] for item in top["content"]}
    assert SHOWN <= names and not names & HIDDEN, f"the file browser shows {sorted(names)}"
    settings = json.load(urllib.request.urlopen(
        f"{lab_url}/lab/api/settings/@jupyterlab/apputils-extension:notification", timeout=60))
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false", "the lab's settings are not applied"

    page = new_page(browser)
    try:
        open_notebook(page, lab_url, f"notebooks/{FIRST_RUN}.ipynb")  # where ./lab opens it
        run(page, "notebook:run-all-cells")
        assert page.evaluate(ERRORS) == [], "cells failed in JupyterLab"
        executed = page.evaluate(f"""() => Array.from({NOTEBOOK}.model.cells)
            .filter(c => c.type === 'code').map(c => c.executionCount)""")
        assert executed and None not in executed, executed
        assert NEWS not in page.evaluate("() => document.body.innerText")
        page.evaluate(f"""() => {{  // to the top, for the README's screenshot
            const nb = {NOTEBOOK};
            nb.content.activeCellIndex = 0;
            nb.node.querySelectorAll('.jp-WindowedPanel-outer').forEach(e => {{ e.scrollTop = 0; }});
        }}""")
        colab = page.locator(".jp-InputPlaceholder").first  # Colab's cell, collapsed to its first line
        assert "Colab only" in colab.inner_text() and colab.is_visible()
        shown = file_browser(page)
        if updating_screenshots():  # the manifest's listing is the repository's (git's), not this copy's
            assert shown["names"] == screenshots.listing(shown["folder"]), \
                f"the file browser lists files the repository does not have (remove them first): {shown}"
        page.screenshot(path=str(ARTIFACTS / "first-run.png"))
        showcase(ARTIFACTS / "first-run.png", "first-run.png", shown)
    finally:
        close(page, FIRST_RUN)


@pytest.mark.parametrize("name", list(FLIPS))
def test_widget_in_jupyterlab_shows_what_the_core_computes(name, lab_url, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    showing = FLIPS[name]
    flips = showing.flips_here()
    core = showing.build()
    page = new_page(browser)
    try:
        open_notebook(page, lab_url, f"notebooks/{name}.ipynb")
        run(page, "notebook:clear-all-cell-outputs")
        setup = ([cell_index(page, "labkit.use_language("), cell_index(page, "labkit.setup(")]  # a translation's
                 if showing.language != "en" else [cell_index(page, "import labkit")])
        run(page, "notebook:run-cell", [*setup, cell_index(page, core.namespace)])
        assert page.evaluate(ERRORS) == [], f"{name}: the widget's cells failed in JupyterLab"
        area = widget_area(page)
        area.wait_for()
        state = {}
        for step, change in enumerate([None, *flips]):
            if change:
                assert state[change[0]] != change[1], f"{name}: {change} flips nothing: the control shows it already"
                flip(area, core, *change)
                state = wait_for_state(area, core, *change)
                assert state[change[0]] == change[1], f"the page did not take {change}: {state}"
            else:
                state = read_state(area, core)
            expected = expected_view(core.set(**state))
            shown = wait_for_view(page, area, expected)
            assert shown == expected, f"{name} after {change}: the page shows\n{shown}\nthe core says\n{expected}"
            if op_of(core) is not None:   # the page's table against the graphs and code on the same page
                on_page = area.locator(".widget-html-content").last.evaluate("e => e.innerHTML")
                found = contradictions(on_page, op_of(core), state, showing.language)
                assert found == [], f"{name} after {change}: the page contradicts itself: {found}"
            area.screenshot(path=str(ARTIFACTS / f"{name}-{step}.png"))
        page.screenshot(path=str(ARTIFACTS / f"{name}-page.png"))
        if showing.screenshot:
            showcase(ARTIFACTS / f"{name}-{showing.screenshot_after}.png", showing.screenshot)
    finally:
        close(page, name)
        labkit.drop_namespace(core.namespace)


LINKING = "04_names_and_caches"   # where a lab's story links to another notebook's section
# Whether the heading JupyterLab gave this id is on screen, in the notebook the shell shows (JupyterLab names a
# heading by data-jupyter-id, its sanitizer keeping id attributes off the page).
ON_SCREEN = f"""(id) => {{
    const named = CSS.escape(id), nb = {NOTEBOOK};
    const heading = nb?.node.querySelector(`[data-jupyter-id="${{named}}"], [id="${{named}}"]`);
    if (!heading) return false;
    const box = heading.getBoundingClientRect();
    return box.height > 0 && box.top >= 0 && box.bottom <= window.innerHeight;
}}"""


def test_a_labs_link_to_a_lesson_opens_it_beside_the_notebook(lab_url, browser):
    """The naming lab's story names notebook 02, section 6; its link opens 02 in this JupyterLab, beside 04 (no second
    browser tab, no second JupyterLab: 04 and its kernel stay). JupyterLab 4.6 scrolls to the heading only in a
    notebook already open, so the test clicks twice: the second click, from 04 again, must show that heading."""
    core = FLIPS[LINKING].build()
    words, href, _ = core.lesson(core.result())
    fragment = href.split("#")[1]
    page = new_page(browser)
    try:
        open_notebook(page, lab_url, f"notebooks/{LINKING}.ipynb")
        linking = page.evaluate(f"() => {NOTEBOOK}.id")
        run(page, "notebook:run-cell", [cell_index(page, "import labkit"), cell_index(page, core.namespace)])
        assert page.evaluate(ERRORS) == [], f"{LINKING}: the widget's cells failed in JupyterLab"
        link = page.locator(f"[id='{linking}'] .jp-OutputArea-child:has(.widget-html-content) a", has_text=words)
        for click in ("opens", "reveals"):
            link.click()
            page.wait_for_function(f"() => {NOTEBOOK}?.context?.path === '{views_path(href)}'", timeout=120_000)
            assert len(page.context.pages) == 1 and page.url.startswith(lab_url), "the link left this JupyterLab"
            open_documents = page.evaluate("() => Array.from(window.jupyterapp.shell.widgets('main'))"
                                           ".map(w => w.context?.path)")
            assert f"notebooks/{LINKING}.ipynb" in open_documents, open_documents
            if click == "reveals":
                page.wait_for_function(ON_SCREEN, arg=fragment, timeout=120_000, polling=500)
                page.screenshot(path=str(ARTIFACTS / f"{LINKING}-link.png"))
            page.evaluate(f"() => window.jupyterapp.shell.activateById('{linking}')")
    finally:
        page.evaluate("() => window.jupyterapp.serviceManager.sessions.shutdownAll()")   # 04's kernel and 02's
        page.close()
        labkit.drop_namespace(core.namespace)


def views_path(href: str) -> str:
    """The path JupyterLab opens for a link from a notebook in notebooks/ (``02_….ipynb#…``)."""
    return "notebooks/" + href.split("#")[0]


GPU_NOTEBOOK, GPU_CELL = "09_gpu_kernels", "CUDA graphs skip an op that mutates an input"


def test_a_gpu_cell_shows_its_recording_labelled_in_jupyterlab(lab_url, browser):
    """A GPU cell of 09, run here after the cells it needs: a CPU reader sees the recording, labelled with how the
    code it ran relates to this cell's (the status the stored notebook shows), and no diff of the two."""
    import record_gpu

    source = ROOT / "lessons" / f"{GPU_NOTEBOOK}.py"
    cells = record_gpu.titled(source)
    needed = recordings.closure(GPU_CELL, cells.get)
    status = recordings.status(GPU_CELL, cells.get)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = new_page(browser)
    try:
        open_notebook(page, lab_url, f"notebooks/{GPU_NOTEBOOK}.ipynb")
        index = cell_index(page, recordings.GPU_CELL + GPU_CELL)
        order = sorted(cell_index(page, needed[name].split("\n", 1)[0]) for name in needed)
        run(page, "notebook:run-cell", order)
        assert page.evaluate(ERRORS) == [], "cells failed in JupyterLab"
        output = page.evaluate(f"(i) => {NOTEBOOK}.content.widgets[i].node.querySelector('.jp-OutputArea').innerText",
                               index)
        label, printed = views._gpu_recording_parts(status, recordings.why_no_gpu())
        assert words(" ".join(label + printed)) in words(output), "the label and the recorded output, as labkit says"
        assert not any(line in output for line in status.diff if line[:1] in "+-"), "no maintainer's diff"
        # the cell's prose (the cell before) down to its output, scrolled to the top of the panel, the file
        # browser folded away; laid out after two frames
        clip = page.evaluate(f"""async (i) => {{
            const nb = {NOTEBOOK}, heading = nb.content.widgets[i - 1].node, cell = nb.content.widgets[i].node;
            window.jupyterapp.shell.collapseLeft();
            nb.content.activeCellIndex = i;
            await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
            heading.scrollIntoView({{block: 'start'}});
            const top = heading.getBoundingClientRect(), bottom = cell.getBoundingClientRect();
            const left = Math.min(top.left, bottom.left), right = Math.max(top.right, bottom.right);
            return {{x: left, y: top.top, width: right - left, height: bottom.bottom - top.top}};
        }}""", index)
        page.screenshot(path=str(ARTIFACTS / "09_gpu_recording.png"), clip=clip)
        page.evaluate("() => window.jupyterapp.shell.expandLeft()")  # as the other tests expect it
        showcase(ARTIFACTS / "09_gpu_recording.png", "09_gpu_recording.png")
    finally:
        close(page, GPU_NOTEBOOK)
