"""Look at a notebook as a reader sees it: JupyterLab in Debian's Chromium, page after page, as PNGs.

    python tools/look.py 02                  # notebook 02 as stored (what GitHub readers and a first open show)
    python tools/look.py 02 --run            # after Run All in a fresh kernel, timed
    python tools/look.py 00 --run --pages 12 --out /tmp/look
    python tools/look.py zh-CN/00            # a translation (notebooks/zh-CN/)

The lab is served from a copy of this checkout (nothing is saved over it), with the JupyterLab settings
the lab ships (binder/postBuild), by this Python's jupyter. Screenshots of the notebook panel go to
``--out`` (``/tmp/look/NN-page-KK.png``): open them and read them as a learner would.
Needs playwright and /usr/bin/chromium (Debian's package ``chromium``), as tests/delivery/test_browser.py does.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from repo import ROOT

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PANEL = "window.jupyterapp?.shell?.currentWidget"
CURRENT = "window.jupyterapp.shell.currentWidget"   # once the panel is open (an assignment takes no ?.)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(home: pathlib.Path) -> tuple[subprocess.Popen, str]:
    copy = home / "lab"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv", "*.egg-info", "__pycache__",
                                                             "artifacts", ".pytest_cache"))
    port = _port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), JUPYTER_CONFIG_DIR=str(home / "config"))
    jupyter = pathlib.Path(sys.executable).with_name("jupyter")
    server = subprocess.Popen([str(jupyter), "lab", "--no-browser", f"--ServerApp.root_dir={copy}",
                               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--IdentityProvider.token=",
                               "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
                               "--LabApp.expose_app_in_browser=True", "--ServerApp.allow_root=True"],
                              stdout=open(home / "server.log", "w"), stderr=subprocess.STDOUT, cwd=copy, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=5)
            return server, url
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("JupyterLab did not start: " + (home / "server.log").read_text()[-2000:]) from None
            time.sleep(0.5)


def look(number: str, run: bool, pages: int, out: pathlib.Path, width: int, height: int) -> list[pathlib.Path]:
    from playwright.sync_api import sync_playwright

    folder, _, number = number.rpartition("/")                    # zh-CN/00: a translation's folder
    notebook = next((p for p in sorted((ROOT / "notebooks" / folder).glob(f"{number}_*.ipynb"))), None)
    if notebook is None or not number:
        raise SystemExit(f"No notebook {number!r} in notebooks/{folder}: give its two-digit number, e.g. 02 "
                         "(zh-CN/00 for a translation).")
    name = notebook.relative_to(ROOT / "notebooks").as_posix()
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with tempfile.TemporaryDirectory(prefix="look-") as home:
        server, url = serve(pathlib.Path(home))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(f"{url}/lab/tree/notebooks/{name}", timeout=180_000)
                page.wait_for_function(f"() => {PANEL}?.context?.path === 'notebooks/{name}'",
                                       timeout=180_000, polling=500)
                page.evaluate(f"async () => {{ await {PANEL}.context.ready; await {PANEL}.sessionContext.ready; }}")
                if run:
                    started = time.perf_counter()
                    page.evaluate("async () => { await window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
                    page.wait_for_function(f"() => {PANEL}.sessionContext.session?.kernel?.status === 'idle'",
                                           timeout=900_000, polling=500)
                    print(f"Run All: {time.perf_counter() - started:.0f} s")
                page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
                page.evaluate(f"() => {{ {CURRENT}.content.activeCellIndex = 0; }}")
                scroller = f"({CURRENT}.content.outerNode ?? {CURRENT}.content.node)"   # JupyterLab 4: the outer node
                page.evaluate(f"() => {{ {scroller}.scrollTop = 0; }}")                 # Run All ends at the bottom
                page.wait_for_timeout(800)
                for k in range(pages):
                    shot = out / f"{folder + '-' if folder else ''}{number}-page-{k + 1:02d}.png"
                    page.screenshot(path=str(shot))
                    shots.append(shot)
                    at_end = page.evaluate(f"() => {{ const n = {scroller}; const before = n.scrollTop; "
                                           f"n.scrollTop += n.clientHeight * 0.9; return n.scrollTop === before; }}")
                    page.wait_for_timeout(600)
                    if at_end:
                        break
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    return shots


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="its two-digit number, e.g. 02; zh-CN/00 for a translation")
    parser.add_argument("--run", action="store_true", help="Run All first, in a fresh kernel (timed)")
    parser.add_argument("--pages", type=int, default=8, help="how many screens to take, top down")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("/tmp/look"))
    parser.add_argument("--size", default="1280x900", help="the browser window, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    for shot in look(args.notebook, args.run, args.pages, args.out, width, height):
        print(shot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
