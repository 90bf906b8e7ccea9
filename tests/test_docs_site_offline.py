"""The static site works from ``file://`` (issue 21 item 10): icon fonts found, controls
marked as a saved picture, no literal backticks in the index (fast: no site is built)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

import build_site  # noqa: E402


def test_the_renderer_finds_its_fonts_next_to_it_on_a_file_page():
    script = "o=new URL(r.uri,document.location);s.p=`${o.origin}${o.pathname}`,x"
    assert build_site.patch_public_path(script) == (
        'o=new URL(r.uri,document.location);s.p=`${new URL("vendor/html-manager/dist/",'
        'document.location).href}`,x')


def test_pages_say_they_are_static_and_titles_have_no_backticks():
    page = build_site.mark_static("<html><head></head><body class='x'><p>hi</p></body></html>")
    assert page.index("wb-static-note") > page.index("<body class='x'>")
    assert "do nothing here" in page and "cursor: not-allowed" in page
    assert build_site.inline_markdown("`wb.explore` <b>") == (
        "<code>wb.explore</code> &lt;b&gt;")


def test_widget_modules_outside_jupyter_widgets_are_shipped_and_found_by_require():
    """ipyevents (the explorer's keys) comes from its Python package's AMD bundle, and the
    page tells require.js where it is: no CDN request for it (issue 21 item 10)."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "a": {"model_module": "ipyevents", "state": {"_view_module": "ipyevents"}},
        "b": {"model_module": "@jupyter-widgets/controls", "state": {}},
    }}}
    bundles = build_site.widget_modules(notebook)
    assert list(bundles) == ["ipyevents"]
    assert bundles["ipyevents"].read_text().startswith('define(["@jupyter-widgets/base"]')
    page = build_site.with_module_paths(
        f'<head><script src="{build_site.REQUIRE_JS}"></script></head>', ["ipyevents"])
    assert 'require.config({paths: {"ipyevents": "vendor/ipyevents/index"}});' in page
    assert page.index("require.config") > page.index(build_site.REQUIRE_JS)
