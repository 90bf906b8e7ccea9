"""Build the tutorial site: one static HTML page per committed, executed notebook.

``make docs`` runs this. Pages come from the notebooks' committed outputs (nothing is
executed) through nbconvert's ``lab`` template. Widget state saved in a notebook (nbclient's
``store_widget_state``) is embedded, so the explorer renders in the page without a kernel.
The scripts a page needs to render widgets, require.js and ``@jupyter-widgets/html-manager``,
are fetched from npm once (``npm pack``, cached in ``build/vendor``) and copied next to the
pages: the site works offline and never loads code from a CDN.

Offline details (issue 21 item 10): the renderer computes where its icon font lives from
``location.origin``, which is ``"null"`` on a ``file://`` page, so the copied script is
patched to use the folder's full URL (``patch_public_path``); every page says, at its top,
that its controls are a saved picture (``STATIC_NOTE``) and draws them as inactive; the
index's titles turn Markdown code spans into ``<code>``. Widget modules from other packages
(ipyevents: the explorer's keyboard) are AMD bundles shipped inside their Python package
(``<module>/nbextension/static/index.js``): each one a page's saved state names is copied to
``vendor/<module>/`` and require.js is told where it is (``widget_modules``), else the
renderer asks a CDN for it (one failed request per page offline).

Usage: ``python docs/build_site.py [--out build/site]``.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import re
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
STATIC_NOTE = (
    "<div class='wb-static-note' style='position:sticky;top:0;z-index:100;background:#fff8e1;"
    "border-bottom:1px solid #e0c060;padding:6px 12px;font-family:sans-serif;font-size:13px'>"
    "A static page: widgets show the state saved when the notebook ran; their buttons, "
    "dropdowns and sliders do nothing here. Open the notebook in Jupyter to use them.</div>"
)
STATIC_CSS = (
    "<style>.jupyter-widgets button, .jupyter-widgets select, .jupyter-widgets input,"
    " .jupyter-widgets textarea, .widget-toggle-button, .widget-dropdown select"
    " {cursor: not-allowed !important; opacity: 0.75;}</style>"
)


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
    for name in ("embed-amd.js", "embed.js", "libembed-amd.js"):
        script = out / "vendor" / "html-manager" / "dist" / name
        if script.exists():
            script.write_text(patch_public_path(script.read_text()))
    (out / MATHJAX).write_text("/* MathJax is not bundled: the tutorials have no TeX */\n")
    html_exporter = exporter()
    pages = []
    links = []
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        body, _ = html_exporter.from_notebook_node(
            notebook, resources={"metadata": {"name": path.stem}}
        )
        modules = widget_modules(notebook)
        for module, bundle in modules.items():
            target = out / "vendor" / module / "index.js"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bundle, target)
        page = out / f"{path.stem}.html"
        page.write_text(mark_static(with_module_paths(body, list(modules))))
        pages.append(page)
        title = _title(notebook) or path.stem
        links.append(f"<li><a href='{page.name}'>{inline_markdown(title)}</a></li>")
    (out / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Workbench tutorials</title>"
        "</head><body><h1>Workbench tutorials</h1><ol>" + "".join(links) + "</ol></body></html>"
    )
    return pages


def widget_modules(notebook) -> dict[str, Path]:
    """The AMD bundle of every widget module outside ``@jupyter-widgets`` that the
    notebook's saved widget state names, by module name, found in its Python package."""
    state = notebook.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    names = {m.get("model_module") for m in state.values()}
    names |= {m.get("state", {}).get("_view_module") for m in state.values()}
    bundles = {}
    for name in sorted(n for n in names if n and not n.startswith("@jupyter-widgets/")):
        spec = importlib.util.find_spec(name)
        bundle = (Path(spec.origin).parent / "nbextension" / "static" / "index.js"
                  if spec is not None and spec.origin else None)
        if bundle is None or not bundle.exists():
            raise RuntimeError(f"widget module {name!r}: no AMD bundle found "
                               f"(<package>/nbextension/static/index.js); is it installed?")
        bundles[name] = bundle
    return bundles


def with_module_paths(page: str, modules: list[str]) -> str:
    """``page`` with require.js told that each of ``modules`` is ``vendor/<module>/index``
    (a script right after require.js, before the widget renderer asks for them)."""
    if not modules:
        return page
    paths = json.dumps({name: f"vendor/{name}/index" for name in modules})
    tag = f'<script src="{REQUIRE_JS}"></script>'
    if tag not in page:
        raise RuntimeError(f"the page has no {tag}: cannot point require.js at {modules}")
    return page.replace(tag, f"{tag}<script>require.config({{paths: {paths}}});</script>", 1)


def patch_public_path(script: str) -> str:
    """The renderer's asset folder (its icon fonts) as the vendored folder's full URL,
    ``file:///.../vendor/html-manager/dist/``, instead of ``origin + pathname`` of its module
    name (``null/...`` on a ``file://`` page: every icon font failed to load)."""
    folder = WIDGET_RENDERER.rsplit("/", 1)[0] + "/"
    return re.sub(r"\$\{(\w+)\.origin\}\$\{\1\.pathname\}",
                  f'${{new URL("{folder}",document.location).href}}', script)


def mark_static(page: str) -> str:
    """The page with ``STATIC_NOTE`` at the top of its body and its controls drawn inactive."""
    page = page.replace("</head>", STATIC_CSS + "</head>", 1)
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + STATIC_NOTE, page, count=1)


def inline_markdown(text: str) -> str:
    """Escaped ``text`` with Markdown code spans as ``<code>`` (no literal backticks).

    Example
    -------
    >>> inline_markdown("05 · `wb.explore` & co")
    '05 · <code>wb.explore</code> &amp; co'
    """
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


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
