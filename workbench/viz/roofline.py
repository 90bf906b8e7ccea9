"""The roofline plot: measured kernels against the machine's memory and compute roofs.

A kernel of arithmetic intensity I (FLOP per byte moved) can reach at most
``min(peak GFLOP/s, I * peak GB/s)``: left of the ridge point the memory roof limits it, right
of it the compute roof. Each measured kernel is a point (I, achieved GFLOP/s); its distance
below the roof is what scheduling can still win.

A schedule's **analytic point** (``analytic_point``) is computed from the IR alone: FLOPs over
the compulsory bytes (``min_bytes``) gives the intensity, the roof there the best it can do
and which roof binds. Given the steps of a schedule in order, ``plot_roofline`` draws the
measured points and the analytic points, each joined to the step before by an arrow.

Layout rules (what a first reading in JupyterLab showed): the legend sits outside the axes,
right of them, so it never covers the memory roof or the ridge label; point labels are
placed around their point avoiding each other and the axes' edges (``place_labels``); when
they still collide (every step of one schedule has the same intensity, so its points stack
in one column), the points are numbered and the legend lists them (``3 · name``).

When a measured point lies above a roof (``peaks_consistent``), the roofs were measured on
a busy machine: when they are this machine's measured peaks, ``plot_roofline`` measures them
again once (``refresh_if_inconsistent``) and draws against the best roofs seen.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from workbench.measure.peaks import MachinePeaks, refresh_if_inconsistent
from workbench.measure.result import MeasureResult

MEMORY_ROOF_GID = "memory-roof"
COMPUTE_ROOF_GID = "compute-roof"
RESULT_GID_PREFIX = "result:"
ANALYTIC_GID_PREFIX = "analytic:"
STEP_ARROW_GID_PREFIX = "step-arrow:"
ANALYTIC_ARROW_GID_PREFIX = "analytic-arrow:"
LABEL_GID_PREFIX = "label:"
RIDGE_GID = "ridge-label"
SPAN = 64.0  # the roofs extend this factor left and right of the ridge point (at least)
LABEL_FONTSIZE = 8


@dataclass(frozen=True)
class AnalyticPoint:
    """Where a function sits on the roofline by the IR alone.

    Attributes
    ----------
    name : str
    flops, bytes : int
        Work and compulsory traffic of one call (``analysis.flops`` / ``min_bytes``).
    intensity : float
        ``flops / bytes`` (FLOP/byte).
    attainable_gflops : float
        The roof at that intensity: the best any schedule can do.
    bound : str
        ``"memory"`` or ``"compute"``.
    min_time_s : float
        ``flops / attainable``: the fastest a call can be.
    """

    name: str
    flops: int
    bytes: int
    intensity: float
    attainable_gflops: float
    bound: str
    min_time_s: float

    def __str__(self) -> str:
        return (f"{self.name}: {self.intensity:.3g} FLOP/B, {self.bound}-bound, "
                f"at most {self.attainable_gflops:.3g} GFLOP/s "
                f"(>= {self.min_time_s * 1e3:.3g} ms)")


def analytic_point(func, peaks: MachinePeaks | None = None, *,
                   name: str | None = None) -> AnalyticPoint:
    """The analytic roofline point of a PrimFunc, Schedule or Kernel (IR only, no run).

    Example
    -------
    >>> from workbench import ops
    >>> p = analytic_point(ops.matmul(64, 64, 64), MachinePeaks(gflops=100.0, gbps=10.0))
    >>> round(p.intensity, 3), round(p.attainable_gflops, 2), p.bound
    (10.667, 100.0, 'compute')
    """
    from workbench.ir.analysis import flops, min_bytes
    from workbench.viz.html import _function_of

    function = _function_of(func)
    if peaks is None:
        from workbench.measure.peaks import machine_peaks

        peaks = machine_peaks()
    work, traffic = flops(function), min_bytes(function)
    intensity = work / traffic if traffic else math.inf
    attainable = peaks.attainable_gflops(intensity) if traffic else peaks.gflops
    return AnalyticPoint(name or function.name, work, traffic, intensity, attainable,
                         peaks.bound(intensity), work / (attainable * 1e9) if work else 0.0)


def _as_list(results) -> list:
    if isinstance(results, (MeasureResult, AnalyticPoint)):
        return [results]
    return list(results)


def _pick_peaks(results: list[MeasureResult], peaks: MachinePeaks | None) -> MachinePeaks:
    if peaks is not None:
        return peaks
    for result in results:
        if result.peaks is not None:
            return result.peaks
    from workbench.measure.peaks import machine_peaks

    return machine_peaks()


def roofline_extent(peaks: MachinePeaks, intensities: list[float]) -> tuple[float, float]:
    """The x range (FLOP/byte) of the plot: ``SPAN`` times around the ridge point, widened
    to show every point with a factor 4 of margin.

    Example
    -------
    >>> roofline_extent(MachinePeaks(gflops=100.0, gbps=10.0), [0.01])
    (0.0025, 640.0)
    """
    ridge = peaks.ridge_point
    low = min([ridge / SPAN] + [i / 4 for i in intensities])
    high = max([ridge * SPAN] + [i * 4 for i in intensities])
    return low, high


# ---------------------------------------------------------------- label placement

_OFFSETS = ((6, 4, "left", "bottom"), (6, -4, "left", "top"), (-6, 4, "right", "bottom"),
            (-6, -4, "right", "top"), (0, 10, "center", "bottom"), (0, -10, "center", "top"))
# farther out, tried after the six above: short labels (numbers) of stacked points fan out
_OFFSETS += tuple((sx * d, sy * 4, "left" if sx > 0 else "right", "bottom" if sy > 0 else "top")
                  for d in (16, 26, 36) for sx in (1, -1) for sy in (1, -1))


def _box(x: float, y: float, dx: float, dy: float, ha: str, va: str, width: float,
         height: float) -> tuple[float, float, float, float]:
    left = x + dx - (width if ha == "right" else width / 2 if ha == "center" else 0)
    bottom = y + dy - (height if va == "top" else 0)
    return left, bottom, left + width, bottom + height


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(points: Sequence[tuple[float, float]], texts: Sequence[str],
                 bounds: tuple[float, float, float, float],
                 fontsize: float = LABEL_FONTSIZE, dpi: float = 100.0
                 ) -> list[tuple[float, float, str, str]]:
    """For each point (in pixels), the label offset (points) and alignment that overlaps
    the other labels, the points and the axes' edges least (greedy, in the given order).

    Returns
    -------
    list of (dx, dy, ha, va)
        ``dx, dy`` in typographic points, for ``annotate(textcoords="offset points")``.

    Example
    -------
    >>> place_labels([(10, 10), (10, 10)], ["a", "b"], (0, 0, 200, 200))
    [(6, 4, 'left', 'bottom'), (0, 10, 'center', 'bottom')]
    """
    scale = dpi / 72.0
    placed: list[tuple[float, float, float, float]] = []
    markers = [(x - 4, y - 4, x + 4, y + 4) for x, y in points]
    out = []
    for (x, y), text in zip(points, texts, strict=True):
        width, height = 0.6 * fontsize * len(text) * scale, 1.2 * fontsize * scale
        best, best_cost = None, math.inf
        for dx, dy, ha, va in _OFFSETS:
            box = _box(x, y, dx * scale, dy * scale, ha, va, width, height)
            cost = sum(_overlap(box, other) for other in placed)
            cost += sum(_overlap(box, m) for m in markers) * 0.5
            outside = (max(0.0, bounds[0] - box[0]) + max(0.0, box[2] - bounds[2])
                       + max(0.0, bounds[1] - box[1]) + max(0.0, box[3] - bounds[3]))
            cost += outside * height * 4
            if cost < best_cost - 1e-9:
                best, best_cost = (dx, dy, ha, va), cost
        placed.append(_box(x, y, best[0] * scale, best[1] * scale, best[2], best[3], width,
                           height))
        out.append(best)
    return out


# ---------------------------------------------------------------- the plot


def _arrow(ax, start, end, gid: str, style: str, color: str) -> None:
    if start == end:
        return
    ax.annotate("", xy=end, xytext=start, gid=gid, annotation_clip=False,
                arrowprops={"arrowstyle": "->", "color": color, "linestyle": style,
                            "linewidth": 1.0, "shrinkA": 4, "shrinkB": 4})


def plot_roofline(
    results: MeasureResult | Iterable[MeasureResult] = (),
    peaks: MachinePeaks | None = None,
    ax=None,
    *,
    analytic: AnalyticPoint | Iterable[AnalyticPoint] = (),
    arrows: bool | None = None,
    remeasure: bool | Callable[[], MachinePeaks] | str = "auto",
):
    """Plot kernels on the roofline of the machine (log-log axes).

    Parameters
    ----------
    results : MeasureResult or iterable of them
        Measured kernels, in step order; each is a labelled point at (arithmetic
        intensity, GFLOP/s). A result without both a FLOP and a byte count has no
        intensity and is skipped with a warning.
    peaks : MachinePeaks, optional
        The roofs. Default: those of the first result, else ``wb.machine_peaks()``.
    ax : matplotlib Axes, optional
        Where to draw; default a new figure (wide enough for the legend on the right).
    analytic : AnalyticPoint or iterable of them
        IR-only points (hollow markers on the roof), in step order.
    arrows : bool, optional
        Join each point to the previous step's by an arrow; default when there are two
        or more points of a kind.
    remeasure : "auto", bool or callable
        What to do when a result lies above a roof: measure the peaks again (``True``,
        or a callable returning fresh peaks) and draw against the best roofs seen.
        ``"auto"`` (default): when the roofs are this machine's measured peaks (their
        ``key`` is ``machine_key()``), not hand-made ones.

    Returns
    -------
    matplotlib.axes.Axes
        Artists by gid: the lines ``"memory-roof"`` and ``"compute-roof"``, each result's
        marker ``"result:<name>"``, each analytic marker ``"analytic:<name>"``, arrows
        ``"step-arrow:<i>"`` / ``"analytic-arrow:<i>"`` (to point i), point labels
        ``"label:<name>"`` and the ridge label ``"ridge-label"``. ``ax.roofline_peaks``
        holds the roofs drawn.

    Example
    -------
    >>> import workbench as wb
    >>> from workbench.viz.roofline import plot_roofline
    >>> res = wb.measure(kernel, a, b, c)            # doctest: +SKIP
    >>> plot_roofline([res], analytic=analytic_point(sch))   # doctest: +SKIP
    """
    results = _as_list(results)
    analytic = _as_list(analytic)
    peaks = _pick_peaks(results, peaks)

    placed = []
    for result in results:
        if result.arithmetic_intensity is None:
            warnings.warn(
                f"plot_roofline: {result.name!r} has no FLOP and byte count, so no "
                "arithmetic intensity; it is not plotted",
                stacklevel=2,
            )
            continue
        placed.append(result)

    if remeasure == "auto":
        from workbench.measure.peaks import machine_key

        remeasure = bool(peaks.key) and peaks.key == machine_key()
    if remeasure and placed:
        peaks, _ = refresh_if_inconsistent(placed, peaks,
                                           remeasure if callable(remeasure) else None)

    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8.4, 4.4))
        fig.subplots_adjust(left=0.09, right=0.62, bottom=0.12, top=0.92)

    finite = [a for a in analytic if math.isfinite(a.intensity)]
    intensities = [r.arithmetic_intensity for r in placed] + [a.intensity for a in finite]
    low, high = roofline_extent(peaks, intensities)
    ridge = peaks.ridge_point
    ax.plot([low, ridge], [low * peaks.gbps, peaks.gflops], color="0.2", linewidth=2,
            gid=MEMORY_ROOF_GID, label=f"memory roof {peaks.gbps:.1f} GB/s")
    ax.plot([ridge, high], [peaks.gflops, peaks.gflops], color="0.2", linewidth=2,
            linestyle="--", gid=COMPUTE_ROOF_GID,
            label=f"compute roof {peaks.gflops:.0f} GFLOP/s")

    values = [r.gflops for r in placed] + [a.attainable_gflops for a in finite]
    y_low = min([low * peaks.gbps] + [v / 2 for v in values])
    y_high = max([peaks.gflops * 2.5] + [v * 2.5 for v in values])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(y_low, y_high)

    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, peaks.gflops), textcoords="offset points",
                xytext=(4, 5), fontsize=LABEL_FONTSIZE, color="0.3", gid=RIDGE_GID)

    colors = _colors(len(placed))
    labelled: list[tuple[tuple[float, float], str]] = []
    for index, (point, color) in enumerate(zip(finite, _colors(len(finite)), strict=True)):
        xy = (point.intensity, point.attainable_gflops)
        ax.plot([xy[0]], [xy[1]], marker="o", markersize=8, linestyle="", markerfacecolor="none",
                markeredgecolor=color if len(placed) == 0 else "0.35",
                gid=ANALYTIC_GID_PREFIX + point.name,
                label=f"{point.name} (analytic): {point.bound}-bound, "
                      f"≤ {point.attainable_gflops:.3g} GFLOP/s")
        if arrows or (arrows is None and len(finite) > 1):
            if index:
                prev = finite[index - 1]
                _arrow(ax, (prev.intensity, prev.attainable_gflops), xy,
                       ANALYTIC_ARROW_GID_PREFIX + str(index), "dashed", "0.45")
        if not placed:
            labelled.append((xy, point.name))

    for index, (result, color) in enumerate(zip(placed, colors, strict=True)):
        x, y = result.arithmetic_intensity, result.gflops
        fraction = y / peaks.attainable_gflops(x)
        ax.plot([x], [y], marker="o", linestyle="", color=color,
                gid=RESULT_GID_PREFIX + result.name,
                label=f"{result.name} [{result.target}]: {fraction:.1%} of roof")
        if (arrows or (arrows is None and len(placed) > 1)) and index:
            prev = placed[index - 1]
            _arrow(ax, (prev.arithmetic_intensity, prev.gflops), (x, y),
                   STEP_ARROW_GID_PREFIX + str(index), "solid", color)
        labelled.append(((x, y), result.name))

    _label_points(ax, labelled)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    # outside the axes, right of them: never over the memory roof or the ridge label
    ax.legend(fontsize=LABEL_FONTSIZE, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0, frameon=False)
    ax.roofline_peaks = peaks
    return ax


def _colors(n: int) -> list:
    import matplotlib

    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return [cycle[i % len(cycle)] for i in range(n)]


def label_boxes(points: Sequence[tuple[float, float]], texts: Sequence[str],
                offsets: Sequence[tuple[float, float, str, str]],
                fontsize: float = LABEL_FONTSIZE, dpi: float = 100.0) -> list[tuple]:
    """The pixel boxes ``(x0, y0, x1, y1)`` of labels placed by ``place_labels``."""
    scale = dpi / 72.0
    return [_box(x, y, dx * scale, dy * scale, ha, va, 0.6 * fontsize * len(text) * scale,
                 1.2 * fontsize * scale)
            for (x, y), text, (dx, dy, ha, va) in zip(points, texts, offsets, strict=True)]


def labels_collide(boxes: Sequence[tuple]) -> bool:
    """Whether two of the label ``boxes`` overlap."""
    return any(_overlap(a, b) > 0 for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _label_points(ax, labelled: list[tuple[tuple[float, float], str]]) -> None:
    """Label each point with its name; when names cannot be placed apart (points of one
    intensity, the usual case along a schedule's steps), with numbers instead, the legend
    entry of each point then starting with its number (``3 · name``)."""
    if not labelled:
        return
    transform = ax.transData
    pixels = [tuple(transform.transform(xy)) for xy, _ in labelled]
    bbox = ax.get_window_extent()
    bounds = (bbox.x0, bbox.y0, bbox.x1, bbox.y1)
    texts = [text for _, text in labelled]
    offsets = place_labels(pixels, texts, bounds, dpi=ax.figure.dpi)
    if labels_collide(label_boxes(pixels, texts, offsets, dpi=ax.figure.dpi)):
        texts = [str(n) for n in range(1, len(labelled) + 1)]
        offsets = place_labels(pixels, texts, bounds, dpi=ax.figure.dpi)
        by_gid = {line.get_gid(): line for line in ax.lines}
        for number, (_, name) in zip(texts, labelled, strict=True):
            for prefix in (RESULT_GID_PREFIX, ANALYTIC_GID_PREFIX):
                line = by_gid.get(prefix + name)
                if line is not None and not line.get_label().startswith(f"{number} · "):
                    line.set_label(f"{number} · {line.get_label()}")
    for (xy, name), text, (dx, dy, ha, va) in zip(labelled, texts, offsets, strict=True):
        ax.annotate(text, xy, textcoords="offset points", xytext=(dx, dy), ha=ha, va=va,
                    fontsize=LABEL_FONTSIZE, gid=LABEL_GID_PREFIX + name,
                    annotation_clip=True, clip_on=True)


def roofline_figure(results=(), peaks: MachinePeaks | None = None, **options):
    """``plot_roofline`` on a new figure outside pyplot (``figures.new_figure``); returns
    the Figure, which a notebook displays once, when returned (explorer panes use this)."""
    from workbench.viz.figures import new_figure

    fig, ax = new_figure((8.4, 4.4))
    fig.subplots_adjust(left=0.09, right=0.62, bottom=0.12, top=0.92)
    plot_roofline(results, peaks, ax=ax, **options)
    return fig
