"""The explorer in a real browser: JupyterLab on 127.0.0.1 with a token, Debian's chromium
driven by Playwright (never ``playwright install``).

1. JupyterLab opens a copy of notebooks/05_explorer.ipynb and runs all cells; then, in the
   page, as a person would (issue 21 items 2, 9, 12):
   * a split factor picked in the matmul explorer's dropdown changes the IR pane and adds a
     measured row to the history table;
   * with the file browser open, no tab title of the explorer is cut off;
   * keys over the loop list: arrows select, ``p`` parallelizes, ``u`` undoes, ``8s``
     splits by 8, ``⇧↓`` reorders, ``v`` vectorizes, ``f`` fuses (the fused loop stays
     selected); a refused ``v`` (the reduction loop) shows its error in the fixed-height
     message box without moving any control;
   * the softmax explorer's block primitives are placed with their arguments (target loop,
     read/write buffer, scope) and ``cache_read`` with a chosen buffer adds a cache block.
2. The static site (``docs/build_site.py``) renders the explorer's saved widget state with
   every request outside the site refused (no CDN, no network) and no request failing (the
   icon font and ipyevents' script are shipped), icons drawn, the static banner shown.

Screenshots: ``tests/browser/artifacts/`` (or ``$WORKBENCH_BROWSER_ARTIFACTS``), kept on
success (the named ones below) and on failure (the whole page).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time

import pytest
from labdriver import ROOT, TIMEOUT_MS, jupyter_lab, run_until_widgets, screenshot, text

from workbench.viz.html import HIGHLIGHT_COLOR

pytestmark = [pytest.mark.slow, pytest.mark.browser]
sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
expect.set_options(timeout=60_000)  # Playwright's 5 s is short for a cold kernel


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on a copy of the notebooks; yields (base url, token)."""
    root = tmp_path / "root"
    shutil.copytree(ROOT / "notebooks", root)
    copy = root / "05_explorer.ipynb"  # run fresh: without the widget state saved by nbclient
    notebook = json.loads(copy.read_text())
    notebook["metadata"].pop("widgets", None)
    copy.write_text(json.dumps(notebook))
    with jupyter_lab(root, "05_explorer.ipynb", tmp_path / "jupyter") as server:
        yield server


def dropdown(explorer, label: str):
    """The ``<select>`` of the explorer's dropdown described ``label``."""
    return explorer.locator(".widget-dropdown").filter(
        has=explorer.page.locator("label", has_text=re.compile(rf"^{re.escape(label)}$"))
    ).locator("select")


def loop_names(loops) -> list[str]:
    """The loop list's names, outermost first (an option reads "  i_1  4  parallel")."""
    return [label.split()[0] for label in loops.locator("option").all_text_contents()]


def select_loop(loops, name: str) -> None:
    """Pick loop ``name`` in the loop list with the mouse."""
    values = loops.locator("option").evaluate_all("nodes => nodes.map(n => n.value)")
    loops.select_option(value=values[loop_names(loops).index(name)])
    expect_loop(loops, name)


def expect_loop(loops, name: str, timeout: float | None = None) -> None:
    """Wait until loop ``name`` is the selected one."""
    expect(loops.locator("option:checked")).to_have_text(re.compile(rf"^\s*{name}\s"),
                                                         timeout=timeout)


def hover_until_watched(page, widget, tries: int = 5) -> None:
    """Put the mouse over ``widget`` until ipyevents listens to its keys.

    ipyevents adds its key listener (and the class ``ipyevents-watched``) on ``mouseenter``
    and drops it on ``mouseleave``; a layout shift just after a hover (a pane redrawn by the
    kernel) can move the widget from under a still mouse, and a key pressed then is lost (a CI
    run saw ``ArrowDown`` leave the loop list on ``i``). Leave and re-enter until it is watched.
    """
    watched = re.compile(r"\bipyevents-watched\b")
    for _ in range(tries):
        widget.hover()
        try:
            expect(widget).to_have_class(watched, timeout=2_000)
            return
        except AssertionError:
            page.mouse.move(0, 0)  # leave, so the next hover enters again
    expect(widget).to_have_class(watched)


def kernel_idle(page):
    """The notebook's kernel indicator once it reads idle (every comm message the kernel
    handles turns it busy, then idle)."""
    return page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")


def explorer_state(explorer) -> tuple:
    """What any one-key edit or selection changes: the loop list (names, annotations, the
    selected loop), the error line, the history's rows."""
    loops = explorer.locator(".widget-select select").first
    return (loops.inner_text(), loops.locator("option:checked").text_content(),
            explorer.locator(".wb-error").first.text_content(),
            explorer.locator(".wb-history tbody tr").count())


def press_watched(page, widget, explorer, name: str) -> None:
    """Press key ``name`` over ``widget`` once the kernel is idle and ipyevents listens.

    A CI run lost an ``ArrowDown`` pressed with the list watched (the loop list stayed on
    ``i`` for 60 s): the kernel was still redrawing the panes after the selection, and a
    redraw can move the widget from under the mouse between the hover and the key. Every
    key here but a digit changes ``explorer_state``; one that changed nothing in 15 s while
    the kernel sat idle was lost, not late (the kernel turns busy for each message and
    publishes its updates before it reads idle again): it is pressed once more. A digit
    changes nothing visible and is pressed once.
    """
    expect(kernel_idle(page)).to_have_count(1, timeout=TIMEOUT_MS)
    before = explorer_state(explorer)
    hover_until_watched(page, widget)
    page.keyboard.press(name)
    if name.isdigit():
        return
    deadline = time.monotonic() + 15
    while explorer_state(explorer) == before and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    expect(kernel_idle(page)).to_have_count(1, timeout=TIMEOUT_MS)
    if explorer_state(explorer) == before:
        hover_until_watched(page, widget)
        page.keyboard.press(name)


def cut_titles(labels) -> list[str]:
    """The visible tab titles whose text is wider than their label (cut off)."""
    return labels.evaluate_all(
        "nodes => nodes.filter(n => n.offsetParent !== null && n.scrollWidth > n.clientWidth + 1)"
        ".map(n => `${n.textContent}: ${n.scrollWidth} > ${n.clientWidth}`)")


def control_positions(explorer) -> dict:
    """Where the controls under the message box are: (x, y) of each in the explorer."""
    boxes = {
        "loop list": explorer.locator(".widget-select select").first,
        "split by": dropdown(explorer, "split by"),
        "parallel": explorer.locator(".widget-toggle-button", has_text="parallel").first,
        "undo": explorer.locator("button", has_text=re.compile(r"^\s*undo$")).first,
        "tabs": explorer.locator(".lm-TabBar").first,
    }
    origin = explorer.bounding_box()  # positions in the explorer: a page scroll moves all
    return {name: (round(b.bounding_box()["x"] - origin["x"]),
                   round(b.bounding_box()["y"] - origin["y"])) for name, b in boxes.items()}


def test_explorer_runs_in_jupyterlab_and_a_control_changes_ir_and_table(lab, browser_page):
    base, token = lab
    page = browser_page
    page.goto(f"{base}/lab/tree/05_explorer.ipynb?token={token}")
    expect(page.locator(".jp-Notebook")).to_be_visible()
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
        1, timeout=TIMEOUT_MS)
    final = page.locator(".jp-OutputArea", has_text="Explorer: softmax, target cpu, node 3")
    run_until_widgets(page, final, ".wb-explorer", expect)
    explorer = page.locator(".wb-explorer").first
    expect(explorer.locator(".wb-status")).to_contain_text("measured", timeout=TIMEOUT_MS)
    ir_before = text(explorer.locator(".wb-IR"))
    history_before = text(explorer.locator(".wb-history"))
    rows_before = explorer.locator(".wb-history tbody tr").count()

    split = dropdown(explorer, "split by")
    options = split.locator("option").all_text_contents()
    factor = options[1]  # the smallest divisor of the selected loop's extent
    split.select_option(label=factor)

    expect(explorer.locator(".wb-history tbody tr")).to_have_count(rows_before + 1)
    expect(explorer.locator(".wb-status")).to_contain_text("measured:", timeout=TIMEOUT_MS)
    ir_after = text(explorer.locator(".wb-IR"))
    assert ir_after != ir_before
    assert f"factors=[None, {factor}]" in text(explorer.locator(".wb-history"))
    new_row = explorer.locator(".wb-history tbody tr").last
    expect(new_row).not_to_contain_text("…", timeout=TIMEOUT_MS)  # measured numbers arrived
    cells = new_row.locator("td").all_text_contents()
    assert float(cells[3]) > 0  # ms median
    assert _text_changed(explorer.locator(".wb-history"), history_before)

    check_tab_titles_with_the_file_browser_open(page, explorer)
    check_keys_and_a_refused_edit_that_moves_nothing(page, explorer)
    check_block_primitives_of_the_softmax_explorer(page, page.locator(".wb-explorer").nth(1))


def _text_changed(locator, before: str) -> bool:
    return text(locator) != before


def check_tab_titles_with_the_file_browser_open(page, explorer) -> None:
    """Issue 21 item 9: the file browser takes width from the notebook; every visible tab
    title of the explorer is still whole (its text fits its label)."""
    browser = page.locator("#filebrowser")
    if not browser.is_visible():
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']").click()
    expect(browser).to_be_visible()
    explorer.scroll_into_view_if_needed()
    labels = explorer.locator(".lm-TabBar-tabLabel")
    expect(labels.first).to_be_visible()
    cut = cut_titles(labels)
    assert not cut, f"tab titles cut off with the file browser open: {cut}"
    assert "IR diff" in labels.all_text_contents()
    screenshot(explorer, "explorer_file_browser_open.png")


def check_keys_and_a_refused_edit_that_moves_nothing(page, explorer) -> None:
    """Issue 21 items 12 and 9: one-key edits over the loop list, from the start node."""
    status = explorer.locator(".wb-status")
    dropdown(explorer, "node").select_option(index=0)  # the start node: loops i, j, k
    loops = explorer.locator(".widget-select select").first
    expect(loops.locator("option")).to_have_count(3)
    # the IR pane follows the loop list a moment later: read it once it shows the start's loops
    # (read at once, a loaded CI machine still had the previous node's tiled IR here)
    expect(explorer.locator(".wb-IR")).to_have_text(re.compile(r"for i, j, k in T\.grid\("),
                                                    timeout=TIMEOUT_MS)
    start_ir = text(explorer.locator(".wb-IR"))
    select_loop(loops, "i")
    loop_list = explorer.locator(".widget-select").first

    def key(name: str, selected: str | None = None) -> None:
        press_watched(page, loop_list, explorer, name)
        if selected is not None:
            expect_loop(loops, selected)

    key("ArrowDown", "j")
    key("ArrowUp", "i")
    key("p")  # parallel i
    expect(loops.locator("option").first).to_contain_text("parallel")
    expect(status).to_contain_text("measured", timeout=TIMEOUT_MS)
    key("u")  # undo: back to the start node
    expect(loops.locator("option").first).not_to_contain_text("parallel")
    expect(explorer.locator(".wb-IR")).to_have_text(start_ir)
    key("8")
    key("s")  # split i by 8
    expect(loops.locator("option")).to_have_count(4)
    assert loop_names(loops) == ["i_0", "i_1", "j", "k"]
    expect(explorer.locator("div.wb-history")).to_contain_text("factors=[None, 8]")
    select_loop(loops, "k")
    expect(status).to_contain_text("measured", timeout=TIMEOUT_MS)

    # a refused edit: the error shows in the message box, no control moves
    messages = explorer.locator(".wb-messages").first
    before = control_positions(explorer)
    messages_box = messages.bounding_box()
    key("v")  # k is the reduction loop
    expect(explorer.locator(".wb-error")).to_contain_text("reduction loop")
    assert control_positions(explorer) == before
    assert messages.bounding_box()["height"] == pytest.approx(messages_box["height"], abs=1)
    messages.scroll_into_view_if_needed()
    screenshot(page, "explorer_refused_key.png")  # the error line above the same controls

    key("ArrowUp", "j")
    key("Shift+ArrowDown")  # move j in: the order becomes i_0, i_1, k, j
    expect(loops.locator("option").last).to_contain_text("j")
    expect_loop(loops, "j")
    key("v")  # vectorize the innermost, spatial loop
    expect(loops.locator("option").last).to_contain_text("vectorized")
    expect(explorer.locator(".wb-error")).to_have_text("")
    assert control_positions(explorer) == before  # the error went: still nothing moved
    select_loop(loops, "i_0")
    # the kernel has taken the selection once the IR pane marks i_0's line (on a loaded CI
    # run, 'f' pressed before that fused the previously selected innermost j: refused)
    marked = explorer.locator(f'.wb-IR span[style*="background-color: {HIGHLIGHT_COLOR}"]')
    expect(marked.first).to_contain_text("i_0", timeout=TIMEOUT_MS)
    key("f", "i_0_i_1_fused")  # fuse i_0 with i_1: the selection stays on the fused loop
    assert loop_names(loops) == ["i_0_i_1_fused", "k", "j"]
    expect(status).to_contain_text("measured", timeout=TIMEOUT_MS)
    screenshot(explorer, "explorer_jupyterlab.png")


def check_block_primitives_of_the_softmax_explorer(page, explorer) -> None:
    """Issue 21 item 2: block primitives with their arguments, applied from the page."""
    explorer.scroll_into_view_if_needed()
    dropdown(explorer, "block").select_option("T_softmax_norm")
    expect(dropdown(explorer, "block")).to_have_value("T_softmax_norm")
    for name in ("compute_at", "reverse_compute_at", "compute_inline", "cache_read",
                 "cache_write", "set_scope", "transform_layout"):
        expect(explorer.locator("button", has_text=re.compile(rf"^{name}$"))).to_be_visible()
    at_loop = dropdown(explorer, "at loop")
    assert "i2" in at_loop.locator("option").all_text_contents()
    assert {"local", "shared", "global"} <= set(
        dropdown(explorer, "scope").locator("option").all_text_contents())
    read = dropdown(explorer, "read")
    expect(read.locator("option")).to_have_count(3)  # A, T_softmax_maxelem, T_softmax_expsum
    read.select_option(label="1: T_softmax_maxelem")
    expect(read).to_have_value(re.compile(".+"))
    cache_read = explorer.locator("button", has_text=re.compile(r"^cache_read$"))
    expect(cache_read).to_be_enabled(timeout=TIMEOUT_MS)  # the legality table arrived
    cache_read.click()
    expect(explorer.locator("div.wb-history")).to_contain_text(
        "cache_read T_softmax_norm 1 'local'", timeout=TIMEOUT_MS)
    expect(dropdown(explorer, "block").locator("option", has_text="T_softmax_maxelem_local"))\
        .to_have_count(1)
    screenshot(explorer, "explorer_softmax_block_primitives.png")


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
    expect(explorer).to_be_visible(timeout=60_000)
    expect(explorer.locator(".wb-IR")).to_contain_text("i_0")
    expect(explorer.locator(".wb-history tbody tr").first).to_be_attached()
    # issue 21 item 10: the static banner, no failed request (fonts, ipyevents), icons drawn
    expect(page.locator(".wb-static-note")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert not failed and not refused, (failed, refused)
    fonts = page.evaluate(
        "document.fonts.ready.then(() => [...document.fonts].filter(f => f.status == 'loaded')"
        ".map(f => f.family))")
    icon = explorer.locator("i.fa").first.evaluate(
        "node => getComputedStyle(node, '::before').fontFamily")
    assert icon.strip('"') in fonts, (icon, fonts)
    labels = explorer.locator(".lm-TabBar-tabLabel")
    assert "loop nest" in labels.all_text_contents() and not cut_titles(labels)
    assert "monospace" in explorer.locator(".wb-IR pre").first.evaluate(
        "node => getComputedStyle(node).fontFamily")
    screenshot(page, "static_site_explorer.png")
