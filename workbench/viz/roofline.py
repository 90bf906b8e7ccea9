"""The roofline plot: measured kernels against the machine's memory and compute roofs.

A kernel of arithmetic intensity I (FLOP per byte moved) can reach at most
``min(peak GFLOP/s, I * peak GB/s)``: left of the ridge point the memory roof limits it, right
of it the compute roof. Each measured kernel is a point (I, achieved GFLOP/s); its distance
below the roof is what scheduling can still win.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

from workbench.measure.peaks import MachinePeaks
from workbench.measure.result import MeasureResult

MEMORY_ROOF_GID = "memory-roof"
COMPUTE_ROOF_GID = "compute-roof"
RESULT_GID_PREFIX = "result:"
SPAN = 64.0  # the roofs extend this factor left and right of the ridge point (at least)


def _as_list(results: MeasureResult | Iterable[MeasureResult]) -> list[MeasureResult]:
    if isinstance(results, MeasureResult):
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


def plot_roofline(
    results: MeasureResult | Iterable[MeasureResult] = (),
    peaks: MachinePeaks | None = None,
    ax=None,
):
    """Plot kernels on the roofline of the machine (log-log axes).

    Parameters
    ----------
    results : MeasureResult or iterable of them
        Measured kernels; each is a labelled point at (arithmetic intensity, GFLOP/s).
        A result without both a FLOP and a byte count has no intensity and is skipped
        with a warning.
    peaks : MachinePeaks, optional
        The roofs. Default: those of the first result, else ``wb.machine_peaks()``.
    ax : matplotlib Axes, optional
        Where to draw; default a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The memory roof is the line with gid ``"memory-roof"``, the compute roof
        ``"compute-roof"``, each result the marker with gid ``"result:<name>"``.

    Example
    -------
    >>> import workbench as wb
    >>> from workbench.viz.roofline import plot_roofline
    >>> res = wb.measure(kernel, a, b, c)            # doctest: +SKIP
    >>> plot_roofline([res])                         # doctest: +SKIP
    """
    results = _as_list(results)
    peaks = _pick_peaks(results, peaks)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6.4, 4.4))

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

    low, high = roofline_extent(peaks, [r.arithmetic_intensity for r in placed])
    ridge = peaks.ridge_point
    ax.plot(
        [low, ridge],
        [low * peaks.gbps, peaks.gflops],
        color="0.2",
        linewidth=2,
        gid=MEMORY_ROOF_GID,
        label=f"memory roof {peaks.gbps:.1f} GB/s",
    )
    ax.plot(
        [ridge, high],
        [peaks.gflops, peaks.gflops],
        color="0.2",
        linewidth=2,
        linestyle="--",
        gid=COMPUTE_ROOF_GID,
        label=f"compute roof {peaks.gflops:.0f} GFLOP/s",
    )
    ax.annotate(
        f"ridge {ridge:.1f} FLOP/B",
        (ridge, peaks.gflops),
        textcoords="offset points",
        xytext=(4, -14),
        fontsize=8,
        color="0.3",
    )

    for result in placed:
        label = f"{result.name} [{result.target}]"
        x, y = result.arithmetic_intensity, result.gflops
        fraction = y / peaks.attainable_gflops(x)
        ax.plot(
            [x],
            [y],
            marker="o",
            linestyle="",
            gid=RESULT_GID_PREFIX + result.name,
            label=f"{label}: {fraction:.1%} of roof",
        )
        ax.annotate(result.name, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=9)

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="upper left")  # above the memory roof: always empty
    return ax
