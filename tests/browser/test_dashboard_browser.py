"""The tuning dashboard in a real browser (issue 21 item 1): its plots update while it tunes.

JupyterLab (one server for this module) runs a two-cell notebook that shows a
``TuningDashboard`` of a 32x32x32 matmul (4 random trials, 2 per batch). The test clicks
**Tune** as a person would and reads the plot image's bytes from the page: a picture with
some records drawn while the tune still runs differs from the empty one, and the final
picture (every record) differs from that one. The notebook is then saved with its widget
state, built into the static site and opened offline: the page shows the same final
picture. Screenshots of the moments are kept under ``tests/browser/artifacts/``.
"""

from __future__ import annotations

import re
import sys
import time

import nbformat
import pytest
from labdriver import ROOT, TIMEOUT_MS, jupyter_lab, menu, run_until_widgets, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.browser]
sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
expect.set_options(timeout=60_000)

TRIALS = 4
NOTEBOOK = "dashboard.ipynb"
CELLS = [
    "from workbench import ops\n"
    "from workbench.widgets.tuning_dashboard import TuningDashboard\n\n"
    f"dash = TuningDashboard(ops.matmul(32, 32, 32), db='records.jsonl', strategy='random',\n"
    f"                       trials={TRIALS}, batch_size=2)\n"
    "dash",
    "print('dashboard shown')",
]
PICTURE = """async img => {
    try {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        let hash = 2166136261;
        for (const b of bytes) hash = Math.imul(hash ^ b, 16777619) >>> 0;
        return `${bytes.length}:${hash}`;
    } catch (err) {
        return null;  // the blob URL was replaced (and revoked) while it was read
    }
}"""
"""The image's bytes as "length:FNV-1a hash" (the src is a fresh blob URL per value), or
None when the picture changed under the read."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("dashboard")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, root / NOTEBOOK)
    with jupyter_lab(root, NOTEBOOK, root.parent / "dashboard_jupyter") as (base, token):
        yield root, base, token


def _state(page, dashboard) -> dict:
    """What the dashboard shows now: records drawn in the plots, stage line, picture."""
    drawn = dashboard.locator(".wb-dashboard-drawn").inner_text()
    count = re.search(r"plots drawn with (\d+) records?", drawn)
    return {"drawn": int(count.group(1)) if count else -1,
            "stage": dashboard.locator(".wb-dashboard-stage").inner_text(),
            # the busy mark: a CSS ring drawn with a size (the hourglass emoji was a box)
            "busy": dashboard.locator(".wb-dashboard-stage .wb-spinner").evaluate_all(
                "nodes => nodes.filter(n => n.getBoundingClientRect().width > 4).length"),
            "picture": dashboard.locator("img.wb-dashboard-plots").evaluate(PICTURE)}


def _wait_for(page, dashboard, condition, what: str, timeout_s: float = TIMEOUT_MS / 1000):
    """Poll the dashboard until ``condition(state)`` holds; returns that state."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = _state(page, dashboard)
        if condition(state):
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last state {state}")
        page.wait_for_timeout(100)  # the next poll, not a guess at how long tuning takes


def test_the_plots_update_while_it_tunes_and_the_static_page_keeps_the_last(lab, browser_page,
                                                                            tmp_path):
    root, base, token = lab
    page = browser_page
    page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
        1, timeout=TIMEOUT_MS)
    final = page.locator(".jp-OutputArea", has_text="dashboard shown")
    run_until_widgets(page, final, ".wb-dashboard", expect)
    dashboard = page.locator(".wb-dashboard").first
    empty = _wait_for(page, dashboard, lambda s: s["drawn"] == 0 and s["picture"],
                      "the empty plots")
    screenshot(dashboard, "dashboard_0_before.png")

    dashboard.locator("button", has_text="Tune").click()
    during = _wait_for(page, dashboard,
                       lambda s: 0 < s["drawn"] < TRIALS and s["picture"]
                       and not s["stage"].startswith("done"),
                       "plots with some records while tuning")
    screenshot(dashboard, "dashboard_1_while_tuning.png")
    assert during["busy"] == 1 and "\u23f3" not in during["stage"]
    last = _wait_for(page, dashboard,
                     lambda s: s["drawn"] == TRIALS and s["picture"]
                     and s["stage"].startswith("done"),
                     "the plots of every record after the tune")
    screenshot(dashboard, "dashboard_2_done.png")
    assert empty["picture"] != during["picture"] != last["picture"]
    expect(dashboard.locator(".wb-dashboard-status")).to_contain_text(f"{TRIALS} records, best")
    assert last["busy"] == 0  # done: no busy mark

    # saved with its widget state, the notebook's static page shows the last picture
    menu(page, "File", "Save Notebook")
    deadline = time.monotonic() + 60
    while "widgets" not in _saved_metadata(root / NOTEBOOK):
        assert time.monotonic() < deadline, "the notebook was not saved with its widget state"
        page.wait_for_timeout(200)
    sys.path.insert(0, str(ROOT / "docs"))
    import build_site

    site = tmp_path / "site"
    build_site.build(site, [root / NOTEBOOK])
    failed = []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        ("file://", "blob:")) else route.abort())
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.goto((site / "dashboard.html").as_uri())
    static = page.locator(".wb-dashboard").first
    expect(static.locator("img.wb-dashboard-plots")).to_be_visible()
    expect(static.locator(".wb-dashboard-drawn")).to_contain_text(
        f"plots drawn with {TRIALS} records")
    assert _state(page, static)["picture"] == last["picture"]
    page.wait_for_load_state("networkidle")
    assert not failed, failed
    screenshot(page, "dashboard_static_page.png")


def _saved_metadata(path) -> dict:
    """The notebook's metadata as saved, or {} while JupyterLab is still writing the file
    (a CI run read it empty mid-save: ``NotJSONError``)."""
    try:
        return nbformat.read(path, as_version=4).metadata
    except (nbformat.reader.NotJSONError, ValueError, OSError):
        return {}
