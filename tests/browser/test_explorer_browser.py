"""The explorer in a real browser: JupyterLab on 127.0.0.1 with a token, Debian's chromium
driven by Playwright (never ``playwright install``).

1. JupyterLab opens a copy of notebooks/05_explorer.ipynb, runs all cells, then the test
   picks a split factor in the matmul explorer's dropdown and asserts from the DOM that the
   IR pane and the measured history table changed.
2. The static site (``docs/build_site.py``) renders the explorer's saved widget state with
   every request outside the site refused (no CDN, no network).

Screenshots of failures are saved under ``tests/browser/artifacts/`` (or
``$WORKBENCH_BROWSER_ARTIFACTS``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("WORKBENCH_BROWSER_ARTIFACTS", ROOT / "tests/browser/artifacts"))
LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
TIMEOUT_MS = 240_000  # a cold kernel on two shared cores: the whole notebook runs in this

pytestmark = [pytest.mark.slow, pytest.mark.browser]
sync_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM.exists():
    pytest.skip("Debian's chromium is missing (make setup installs it)", allow_module_level=True)
sync_api.expect.set_options(timeout=60_000)  # Playwright's 5 s is short for a cold kernel


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_settings(settings: Path) -> None:
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
            {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
            {"autoStartDefaultKernel": True, "windowingMode": "none"},
    }
    for name, value in files.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def _request(url: str, token: str, data: dict | None = None) -> dict:
    body = json.dumps(data).encode() if data is not None else None
    req = urllib.request.Request(url, data=body, method="POST" if data is not None else "GET",
                                 headers={"Authorization": f"token {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as response:
        return json.loads(response.read() or b"{}")


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on a copy of the notebooks; yields (base url, token)."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "notebooks", root)
    copy = root / "05_explorer.ipynb"  # run fresh: without the widget state saved by nbclient
    notebook = json.loads(copy.read_text())
    notebook["metadata"].pop("widgets", None)
    copy.write_text(json.dumps(notebook))
    home = tmp_path / "jupyter"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    _write_settings(home / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
         "--allow-root"],
        env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "lab.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                _request(f"{base}/api/status", token)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError((tmp_path / "lab.log").read_text()[-2000:]) from None
                time.sleep(0.5)
        _request(f"{base}/api/sessions", token, {
            "path": "05_explorer.ipynb", "name": "05_explorer.ipynb", "type": "notebook",
            "kernel": {"name": "python3"}})
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture
def browser_page(request):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(TIMEOUT_MS)
        yield page
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        browser.close()


def _text(locator) -> str:
    return locator.first.evaluate("node => node.textContent")


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click()


def _until(action, check, tries: int = 3) -> None:
    """Do ``action`` until ``check`` passes: seen here twice under load, a menu click that
    JupyterLab did not act on (the outputs stayed, or "Run All" ran nothing)."""
    for attempt in range(tries):
        action()
        try:
            check()
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def _clear_and_run_all(page, final) -> None:
    """Clear every output, run all cells, wait until the last cell printed its state."""
    expect = sync_api.expect
    busy = page.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']")
    _until(lambda: _menu(page, "Edit", "Clear Outputs of All Cells"),
           lambda: expect(final).to_have_count(0, timeout=20_000))  # committed outputs gone
    _until(lambda: _menu(page, "Run", "Run All Cells"),
           lambda: expect(busy).to_have_count(1, timeout=30_000))  # the kernel started
    # the last cell prints the softmax explorer's state: everything before it has run
    try:
        expect(final).to_have_count(1, timeout=TIMEOUT_MS)
    except AssertionError as err:  # name the cell that stopped "Run All", if one did
        errors = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
        ).all_text_contents()
        raise AssertionError(f"the notebook did not finish; error outputs: {errors[:3]}") from err


def test_explorer_runs_in_jupyterlab_and_a_control_changes_ir_and_table(lab, browser_page):
    base, token = lab
    page = browser_page
    expect = sync_api.expect
    page.goto(f"{base}/lab/tree/05_explorer.ipynb?token={token}")
    expect(page.locator(".jp-Notebook")).to_be_visible()
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
        1, timeout=TIMEOUT_MS)
    final = page.locator(".jp-OutputArea", has_text="Explorer: softmax, target cpu, node 3")
    # Seen here: now and then the widget manager is not ready when "Run All" starts, and
    # JupyterLab shows the explorers' text/plain form instead of the widgets. The page is
    # then reloaded (a fresh widget manager on the same kernel) and run again: in a CI run
    # under pytest-xdist the first attempt failed this way, the second passed.
    attempts = 3
    for attempt in range(attempts):
        _clear_and_run_all(page, final)
        try:
            expect(page.locator(".wb-explorer")).not_to_have_count(0, timeout=60_000)
            break
        except AssertionError:
            if attempt == attempts - 1:
                raise
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"explorer_text_only_run_{attempt}.png"))
            page.reload()
            expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']"))\
                .to_have_count(1, timeout=TIMEOUT_MS)
    explorer = page.locator(".wb-explorer").first
    expect(explorer.locator(".wb-status")).to_contain_text("measured", timeout=TIMEOUT_MS)
    ir_before = _text(explorer.locator(".wb-IR"))
    history_before = _text(explorer.locator(".wb-history"))
    rows_before = explorer.locator(".wb-history tbody tr").count()

    split = explorer.locator(".widget-dropdown", has_text="split by").locator("select")
    options = split.locator("option").all_text_contents()
    factor = options[1]  # the smallest divisor of the selected loop's extent
    split.select_option(label=factor)

    expect(explorer.locator(".wb-history tbody tr")).to_have_count(rows_before + 1)
    expect(explorer.locator(".wb-status")).to_contain_text("measured:", timeout=TIMEOUT_MS)
    ir_after = _text(explorer.locator(".wb-IR"))
    assert ir_after != ir_before
    assert f"factors=[None, {factor}]" in _text(explorer.locator(".wb-history"))
    new_row = explorer.locator(".wb-history tbody tr").last
    expect(new_row).not_to_contain_text("…", timeout=TIMEOUT_MS)  # measured numbers arrived
    cells = new_row.locator("td").all_text_contents()
    assert float(cells[3]) > 0  # ms median
    assert _text(explorer.locator(".wb-history")) != history_before

    # issue 21 items 2, 9, 12: block primitives are placed, the messages box has a fixed
    # height, and an arrow key in the loop list selects the next loop
    expect(explorer.locator("button", has_text="compute_at").first).to_be_visible()
    messages = explorer.locator(".wb-messages").first
    loops = explorer.locator(".widget-select select").first
    def below_messages() -> float:  # the loop list's distance from the messages box
        return loops.bounding_box()["y"] - messages.bounding_box()["y"]

    top_before = below_messages()
    selected = loops.evaluate("node => node.value")
    explorer.locator(".widget-select").first.hover()  # ipyevents takes keys under the mouse
    page.keyboard.press("j")  # the next loop
    expect(loops).not_to_have_value(selected, timeout=60_000)
    assert messages.bounding_box()["height"] == pytest.approx(84, abs=2)
    assert below_messages() == pytest.approx(top_before, abs=1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    explorer.screenshot(path=str(ARTIFACTS / "explorer_jupyterlab.png"))


def test_static_site_renders_the_explorer_offline(tmp_path, browser_page):
    sys.path.insert(0, str(ROOT / "docs"))
    import build_site

    site = tmp_path / "site"
    build_site.build(site, [ROOT / "notebooks" / "05_explorer.ipynb"])
    page = browser_page
    refused = []

    def only_local(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    failed = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.goto((site / "05_explorer.html").as_uri())
    explorer = page.locator(".wb-explorer").first
    expect = sync_api.expect
    expect(explorer).to_be_visible(timeout=60_000)
    expect(explorer.locator(".wb-IR")).to_contain_text("i_0")
    expect(explorer.locator(".wb-history tbody tr").first).to_be_attached()
    assert not [u for u in refused if "require" in u or "html-manager" in u]
    # issue 21 item 10: the icon font loads (file:// paths), the page says it is static
    expect(page.locator(".wb-static-note")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert not [u for u in failed if re.search(r"\.(woff2?|ttf|eot|svg)$", u)], failed
    assert "monospace" in explorer.locator(".wb-IR pre").first.evaluate(
        "node => getComputedStyle(node).fontFamily")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "static_site_explorer.png"), full_page=False)

