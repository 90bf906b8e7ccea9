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
