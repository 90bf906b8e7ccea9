"""Build the tutorial site: one static HTML page per committed, executed notebook.

``make docs`` runs this. Pages come from the notebooks' committed outputs (nothing is
executed) through nbconvert's ``lab`` template. Widget state saved in a notebook (nbclient's
``store_widget_state``) is embedded, so the explorer renders in the page without a kernel.
The scripts a page needs to render widgets, require.js and ``@jupyter-widgets/html-manager``,
are fetched from npm once (``npm pack``, cached in ``build/vendor``) and copied next to the
pages: the site works offline and never loads code from a CDN.

Usage: ``python docs/build_site.py [--out build/site]``.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
VENDOR_CACHE = ROOT / "build" / "vendor"
PACKAGES = {"html-manager": "@jupyter-widgets/html-manager@1.0.15", "requirejs": "requirejs@2.3.8"}
REQUIRE_JS = "vendor/requirejs/require.js"
WIDGET_RENDERER = "vendor/html-manager/dist/embed-amd.js"
MATHJAX = "vendor/no-mathjax.js"  # the tutorials use no TeX; nothing is fetched for it


def fetch_vendor(cache: Path = VENDOR_CACHE) -> Path:
    """Unpack the npm packages into ``cache`` (once); returns the folder."""
    for name, spec in PACKAGES.items():
        target = cache / name
        if (target / "package.json").exists():
            continue
        if shutil.which("npm") is None:
            raise RuntimeError(
                "npm is needed once to fetch the widget renderer (apt-get install npm)"
            )
        cache.mkdir(parents=True, exist_ok=True)
        packed = (
            subprocess.run(
                ["npm", "pack", spec, "--silent"],
                cwd=cache,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        with tarfile.open(cache / packed) as archive:
            archive.extractall(cache / f"{name}.tmp", filter="data")
        shutil.rmtree(target, ignore_errors=True)
        (cache / f"{name}.tmp" / "package").rename(target)
        shutil.rmtree(cache / f"{name}.tmp")
        (cache / packed).unlink()
    return cache


def exporter():
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    exporter.require_js_url = REQUIRE_JS
    exporter.widget_renderer_url = WIDGET_RENDERER
    exporter.mathjax_url = MATHJAX
    return exporter


def build(out: Path, notebooks: list[Path] | None = None) -> list[Path]:
    """Write ``out/index.html``, one page per notebook and ``out/vendor``; returns the pages."""
    import nbformat

    notebooks = sorted(NOTEBOOKS.glob("*.ipynb")) if notebooks is None else notebooks
    vendor = fetch_vendor()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "vendor", ignore_errors=True)
    (out / "vendor").mkdir()
    shutil.copytree(vendor / "requirejs", out / "vendor" / "requirejs")
    shutil.copytree(vendor / "html-manager" / "dist", out / "vendor" / "html-manager" / "dist")
    (out / MATHJAX).write_text("/* MathJax is not bundled: the tutorials have no TeX */\n")
    html_exporter = exporter()
    pages = []
    links = []
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        body, _ = html_exporter.from_notebook_node(
            notebook, resources={"metadata": {"name": path.stem}}
        )
        page = out / f"{path.stem}.html"
        page.write_text(body)
        pages.append(page)
        title = _title(notebook) or path.stem
        links.append(f"<li><a href='{page.name}'>{html.escape(title)}</a></li>")
    (out / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Workbench tutorials</title>"
        "</head><body><h1>Workbench tutorials</h1><ol>" + "".join(links) + "</ol></body></html>"
    )
    return pages


def _title(notebook) -> str:
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    args = parser.parse_args()
    pages = build(args.out)
    print(f"wrote {len(pages)} pages to {args.out}/ (open {args.out / 'index.html'})")


if __name__ == "__main__":
    main()
