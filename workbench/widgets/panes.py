"""Thin adapters from the explorer's panes to ``workbench.viz``.

Every number the explorer shows comes from a public function a user can call:
``viz.tile_footprint`` (the access tab's bytes), ``viz.schedule_warnings`` (its warnings,
the tile against this machine's caches or a GPU block's shared memory included),
``viz.cache_sizes`` (the marks on the footprint bars) and ``viz.analytic_point`` (the
roofline's hollow point), so the explorer and ``wb.tile_footprint`` / ``wb.analytic_point``
never disagree (a test asserts it). What is left here is layout: each adapter returns an
HTML string for a widget's ``value`` (saved in the notebook, readable in tests) and, where
a test wants numbers, the numbers it drew.
"""

from __future__ import annotations

import html

from workbench import viz
from workbench.ir import PrimFunc

# --- text panes --------------------------------------------------------------------------


def ir_html(func: PrimFunc, loop: str | None = None):
    """The function as highlighted TVMScript-like text (``workbench.viz.ir_html``), the line
    that opens ``loop`` marked."""
    return viz.ir_html(func, highlight=loop)


def code_html(source: str, loop: str | None = None):
    """Python (Numba or CUDA) source, highlighted (``workbench.viz.code_html``), the lines
    that make loop ``loop`` marked: its ``for loop in ...`` or, bound to a GPU axis,
    ``loop = cuda.threadIdx.x`` (what Compiler Explorer does between source and asm)."""
    import re

    lines = []
    if loop is not None:
        pattern = re.compile(rf"^\s*(for {re.escape(loop)} in |{re.escape(loop)} = cuda\.)")
        lines = [n for n, line in enumerate(source.splitlines(), 1) if pattern.search(line)]
    return viz.code_html(source, highlight_lines=lines)


def error_html(error: Exception) -> str:
    """A rendered ``ScheduleError`` (or any error's repr) for a pane."""
    render = getattr(error, "_repr_html_", None)
    if callable(render):
        return render()
    return f"<span style='color:#b00'>{html.escape(repr(error))}</span>"


def ir_diff(a: PrimFunc, b: PrimFunc):
    return viz.ir_diff(a, b)


def code_diff(a: str, b: str):
    return viz.code_diff(a, b)


# --- loop-nest drawing -------------------------------------------------------------------


def loop_nest_graph(func: PrimFunc):
    """The loop nest as a graphviz Digraph (``workbench.viz.loop_nest_graph``)."""
    return viz.loop_nest_graph(func)


def loop_nest_svg(func: PrimFunc) -> str:
    """The drawing as inline SVG, scaled to the tab's width (``viz.loopnest.fit_svg``), or a
    note when ``dot`` is missing."""
    import graphviz

    from workbench.viz.loopnest import fit_svg

    try:
        svg = loop_nest_graph(func).pipe(format="svg").decode()
    except graphviz.ExecutableNotFound:
        return "<i>install Graphviz (the dot program) to see the loop-nest drawing</i>"
    return fit_svg(svg[svg.find("<svg") :])


# --- footprints and warnings (numbers from workbench.viz) -------------------------------


def access_pane(func: PrimFunc, loop: str, target: str) -> tuple[dict, list[str], str]:
    """The access tab's text part: ``(footprint, warnings, html)`` of ``loop`` on ``target``:
    ``viz.tile_footprint(func, loop)`` and ``viz.schedule_warnings(func, target, loop=loop)``."""
    from workbench.widgets.target_views import views_for

    caches = views_for(target).capacities()
    footprint = viz.tile_footprint(func, loop)
    warnings = viz.schedule_warnings(func, target, loop=loop)
    items = "".join(f"<li>⚠ {html.escape(w)}</li>" for w in warnings) or "<li>no warning</li>"
    rows = "".join(
        f"<tr><td>{k}</td><td>{v / 1024:.1f} KiB</td></tr>" for k, v in footprint.items()
    )
    pane = (
        f"<b>one iteration of loop <code>{html.escape(loop)}</code>'s body (it and the loops "
        f"around it at their first value) touches</b><table>{rows}</table>"
        f"<ul class='wb-warnings'>{items}</ul>"
        + footprint_svg(footprint, caches)
    )
    return footprint, warnings, pane


# --- header and history table ----------------------------------------------------------


def header_html(node, target: str) -> str:
    """``matmul 512x512 · target cpu · node 3 (7 trace steps) · 1.2 ms · 230 GFLOP/s``."""
    func = node.schedule.func_before
    shape = "x".join(str(d) for d in func.params[0].shape)
    m = node.measurement
    cost = f" · {m.ms:.3f} ms · {m.result.gflops or 0:.1f} GFLOP/s" if m else ""
    return (
        f"<b>{html.escape(func.name)}</b> {shape} · target {target} · node "
        f"{node.id} ({len(node.trace)} trace steps){cost}"
    )


def history_html(frame, history) -> str:
    """The history table (3 significant digits, "…" until measured) and the tree as text."""
    table = frame.drop(columns=["current"]).to_html(
        index=False, float_format=lambda v: f"{v:.3g}", na_rep="…", classes="wb-history"
    )
    return table + "<pre>" + html.escape(str(history)) + "</pre>"


# --- figures (inline SVG, drawn directly: a matplotlib figure takes ~1 s here) -------------


def _svg(width: int, height: int, body: list[str], gid: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"id='{gid}' font-family='sans-serif' font-size='10'>" + "".join(body) + "</svg>"
    )


def footprint_svg(footprint: dict[str, int], caches: dict[str, int]) -> str:
    """Horizontal bars of each buffer's footprint (KiB, log scale) with L1/L2 marks."""
    import math

    width, left, bar = 420, 70, 18
    height = 30 + bar * max(len(footprint), 1) + 20
    top_kib = max([v / 1024 for v in footprint.values()]
                  + [caches.get(level, 0) / 1024 for level in ("L2", "shared")] + [1.0])
    scale = (width - left - 20) / math.log10(top_kib * 2 + 1)

    def x(kib: float) -> float:
        return left + scale * math.log10(kib + 1)

    body = []
    for row, (name, size) in enumerate(footprint.items()):
        y = 20 + row * bar
        body.append(
            f"<text x='4' y='{y + 12}'>{html.escape(name)}</text>"
            f"<rect class='footprint-bar' data-bytes='{size}' x='{left}' y='{y}' "
            f"width='{x(size / 1024) - left:.1f}' height='{bar - 4}' fill='#4c72b0'/>"
            f"<text x='{x(size / 1024) + 3:.1f}' y='{y + 12}'>{size / 1024:.1f} KiB</text>"
        )
    for level, colour in (("L1d", "#c44e52"), ("L1", "#c44e52"), ("L2", "#dd8452"),
                          ("shared", "#8172b2")):
        if level in caches:
            cx = x(caches[level] / 1024)
            body.append(
                f"<line x1='{cx:.1f}' x2='{cx:.1f}' y1='14' y2='{height - 16}' "
                f"stroke='{colour}' stroke-dasharray='4 3'/>"
                f"<text x='{cx + 2:.1f}' y='11' fill='{colour}'>{level} "
                f"{caches[level] // 1024} KiB</text>"
            )
    body.append(f"<text x='{left}' y='{height - 4}'>KiB one iteration of the loop's body "
                "touches (log)</text>")
    return _svg(width, height, body, "wb-footprint")


def _decades(low: float, high: float) -> list[float]:
    """Powers of ten from ``low`` to ``high`` (the tick values of a log axis)."""
    import math

    return [10.0**e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
            if low <= 10.0**e <= high]


def _tick(value: float) -> str:
    """``0.1``, ``10``, ``1000``; ``1e+06`` past five digits."""
    return f"{value:g}"


def roofline_svg(points: list[tuple[str, float, float, bool]], peaks) -> str:
    """A log-log roofline zoomed to the explorer's points ``(label, intensity, GFLOP/s,
    measured)``, with decade ticks; measured points joined by arrows in step order.

    Each point is tagged with its label (``[3]``), placed by ``viz.place_labels`` so tags
    never sit on each other, and listed under the plot with its numbers (points of one
    intensity, the usual case while scheduling, stay readable there).
    """
    import math

    width, height, left, bottom, top, right = 520, 300, 56, 40, 12, 16
    shown = [p for p in points if p[2] > 0 and p[1] > 0 and math.isfinite(p[1])]
    xs = [p[1] for p in shown] or [peaks.ridge_point]
    ys = [p[2] for p in shown] or [peaks.gflops]
    x_low, x_high = min(xs) / 3, max(xs) * 3  # zoomed to the points
    y_low = min(ys) / 3
    y_high = max(ys + [min(peaks.gflops, x_high * peaks.gbps)]) * 2
    x0, x1, y0, y1 = (math.log10(v) for v in (x_low, x_high, y_low, y_high))

    def px(v: float) -> float:
        return left + (math.log10(v) - x0) / (x1 - x0) * (width - left - right)

    def py(v: float) -> float:
        return height - bottom - (math.log10(v) - y0) / (y1 - y0) * (height - bottom - top)

    ridge = peaks.ridge_point
    roof = [(x_low, min(peaks.gflops, x_low * peaks.gbps))]
    if x_low < ridge < x_high:
        roof.append((ridge, peaks.gflops))
    roof.append((x_high, min(peaks.gflops, x_high * peaks.gbps)))
    path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in roof)
    body = [
        "<defs><marker id='wb-arrow' markerWidth='8' markerHeight='8' refX='7' refY='3' "
        "orient='auto'><path d='M0,0 L7,3 L0,6' fill='none' stroke='#555'/></marker>"
        f"<clipPath id='wb-roofline-clip'><rect x='{left}' y='{top}' "
        f"width='{width - left - right}' height='{height - top - bottom}'/></clipPath></defs>",
        f"<polyline class='roof' points='{path}' fill='none' stroke='#333' stroke-width='2' "
        "clip-path='url(#wb-roofline-clip)'/>",
        f"<rect x='{left}' y='{top}' width='{width - left - right}' "
        f"height='{height - top - bottom}' fill='none' stroke='#999'/>",
    ]
    if x_low < ridge < x_high:
        body.append(f"<text x='{px(ridge) + 3:.1f}' y='{py(peaks.gflops) - 4:.1f}' fill='#555'>"
                    f"{peaks.gflops:.0f} GFLOP/s · {peaks.gbps:.0f} GB/s</text>")
    else:
        bound = "compute" if x_low >= ridge else "memory"
        body.append(f"<text x='{left + 4}' y='{top + 12}' fill='#555'>{bound} roof: "
                    f"{peaks.gflops:.0f} GFLOP/s · {peaks.gbps:.0f} GB/s</text>")
    for value in _decades(x_low, x_high):
        x = px(value)
        body.append(f"<line class='x-tick' x1='{x:.1f}' x2='{x:.1f}' y1='{height - bottom}' "
                    f"y2='{height - bottom + 4}' stroke='#999'/><text x='{x:.1f}' "
                    f"y='{height - bottom + 15}' text-anchor='middle'>{_tick(value)}</text>")
    for value in _decades(y_low, y_high):
        y = py(value)
        body.append(f"<line class='y-tick' x1='{left - 4}' x2='{left}' y1='{y:.1f}' "
                    f"y2='{y:.1f}' stroke='#999'/><text x='{left - 6}' y='{y + 3:.1f}' "
                    f"text-anchor='end'>{_tick(value)}</text>")
    body += [
        f"<text x='{(width + left) / 2:.0f}' y='{height - 6}' text-anchor='middle'>"
        "FLOP / byte (log)</text>",
        f"<text x='12' y='{height / 2:.0f}' transform='rotate(-90 12 {height / 2:.0f})' "
        "text-anchor='middle'>GFLOP/s (log)</text>",
    ]
    measured = [p for p in shown if p[3]]
    for a, b in zip(measured, measured[1:], strict=False):
        body.append(f"<line x1='{px(a[1]):.1f}' y1='{py(a[2]):.1f}' x2='{px(b[1]):.1f}' "
                    f"y2='{py(b[2]):.1f}' stroke='#c44e52' marker-end='url(#wb-arrow)'/>")
    for index, (name, x, y, is_measured) in enumerate(shown):
        colour = "#c44e52" if is_measured else "#8c8c8c"
        last = is_measured and index == len(shown) - 1
        body.append(
            f"<circle class='{'measured' if is_measured else 'analytic'}-point' "
            f"data-intensity='{x:.4g}' data-gflops='{y:.4g}' cx='{px(x):.1f}' cy='{py(y):.1f}' "
            f"r='{5 if last else 3.5}' fill='{colour if is_measured else 'white'}' "
            f"stroke='{colour}'><title>{html.escape(name)}: {y:.4g} GFLOP/s at "
            f"{x:.3g} FLOP/B</title></circle>"
        )
    texts = [p[0] for p in shown]
    offsets = viz.place_labels([(px(p[1]), height - py(p[2])) for p in shown], texts,
                               (left, bottom, width - right, height - top), fontsize=10,
                               dpi=72)
    for (name, x, y, _), (dx, dy, ha, va) in zip(shown, offsets, strict=True):
        anchor = {"left": "start", "right": "end", "center": "middle"}[ha]
        baseline = -dy + (0 if va == "bottom" else 10)
        body.append(f"<text class='point-label' x='{px(x) + dx:.1f}' "
                    f"y='{py(y) + baseline:.1f}' text-anchor='{anchor}'>"
                    f"{html.escape(name)}</text>")
    listing = "".join(
        f"<li>{html.escape(name)} {'measured' if m else 'analytic (IR), at most'} "
        f"{y:.4g} GFLOP/s at {x:.3g} FLOP/B</li>" for name, x, y, m in shown
    )
    return (_svg(width, height, body, "wb-roofline")
            + f"<ul class='wb-roofline-points' style='margin:2px 0'>{listing}</ul>")


def analytic_point(func: PrimFunc, peaks) -> tuple[float, float]:
    """``(intensity, GFLOP/s)`` of ``viz.analytic_point(func, peaks)``: FLOPs over the
    compulsory bytes, and the roof there (the best any schedule of ``func`` can do)."""
    point = viz.analytic_point(func, peaks)
    return point.intensity, point.attainable_gflops
