"""``make docs``: the static tutorial site is built from the committed notebooks, every page is
free of error outputs, and the explorer's widget state is embedded with local renderers."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

pytestmark = [pytest.mark.slow, pytest.mark.notebook]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("nbconvert")
    if shutil.which("npm") is None and not (ROOT / "build" / "vendor" / "requirejs").exists():
        pytest.skip("npm is needed once to fetch the widget renderer")
    import build_site

    out = tmp_path_factory.mktemp("site")
    build_site.build(out)
    return out


def test_every_notebook_has_a_page_linked_from_the_index(site):
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks and "05_explorer" in notebooks
    assert sorted(p.stem for p in site.glob("*.html") if p.stem != "index") == notebooks
    index = (site / "index.html").read_text()
    assert all(f"href='{name}.html'" in index for name in notebooks)


def test_no_page_has_an_error_output(site):
    nbformat = pytest.importorskip("nbformat")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
                  if o.output_type == "error"]
        assert not errors, f"{path.name} has an error output"
        page = (site / f"{path.stem}.html").read_text()
        assert "Traceback (most recent call last)" not in page, path.name
        assert 'data-mime-type="application/vnd.jupyter.error"' not in page, path.name


def test_explorer_widget_state_is_embedded_with_local_renderers(site):
    page = (site / "05_explorer.html").read_text()
    state = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', page, re.S)
    assert state, "no widget state in the explorer page"
    models = json.loads(state.group(1))["state"]
    classes = [m["state"].get("_dom_classes", []) for m in models.values()]
    assert any("wb-explorer" in c for c in classes)
    values = [str(m["state"].get("value", "")) for m in models.values()]
    assert any("sch.parallel" in v or "T.parallel" in v for v in values)  # the tour's last state
    assert page.count('type="application/vnd.jupyter.widget-view+json"') >= 2
    assert '<script src="vendor/requirejs/require.js">' in page
    assert "'vendor/html-manager/dist/embed-amd.js'" in page
    assert (site / "vendor/html-manager/dist/embed-amd.js").stat().st_size > 1_000_000
    assert (site / "vendor/requirejs/require.js").exists()
    assert "unpkg.com" not in page and "require.js/2.1.10" not in page


def test_the_site_reads_offline(site):
    """Issue 21 item 10: fonts resolved from the script's own folder, static pages say so,
    the index has no literal backtick, code panes in a monospace font."""
    script = (site / "vendor/html-manager/dist/embed-amd.js").read_text()
    assert "${s.origin}${s.pathname}" not in script
    assert 'new URL("vendor/html-manager/dist/",document.location).href' in script
    assert list((site / "vendor/html-manager/dist").glob("*.woff2"))
    assert "`" not in (site / "index.html").read_text()
    page = (site / "05_explorer.html").read_text()
    assert "wb-static-note" in page and "do nothing here" in page
    assert "monospace" in page


def test_the_tuning_dashboard_page_keeps_its_last_plots(site):
    """Issue 21 item 1, the static page: notebook 06 shows the dashboard widget (not a
    static figure), and its page embeds the image of its last drawing."""
    page = (site / "06_autotuning.html").read_text()
    state = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', page, re.S)
    assert state, "no widget state in the autotuning page"
    models = json.loads(state.group(1))["state"]
    images = [m for m in models.values() if "wb-dashboard-plots" in m["state"].get(
        "_dom_classes", [])]
    assert len(images) == 1 and images[0]["model_name"] == "ImageModel"
    assert images[0].get("buffers") or images[0]["state"].get("value")  # the PNG itself
    drawn = [str(m["state"].get("value", "")) for m in models.values()
             if "wb-dashboard-drawn" in m["state"].get("_dom_classes", [])]
    assert drawn and re.search(r"plots drawn with \d+ records", drawn[0])
