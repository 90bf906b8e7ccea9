"""Performance plots: latency with its spread, throughput against a baseline, sweeps.

``latency_figure(results, baseline)`` draws, per measured kernel, the median latency as a
bar with the interquartile range as an error bar and every timed call as a dot (left), and
GFLOP/s and GB/s side by side (right); against a baseline each latency bar says how many
times faster it is (``×2.5``). ``sweep_heatmap(frame, x, y, value)`` shows a measured value
(GFLOP/s, say) over two swept parameters (two tile sizes), the best cell outlined.

Example
-------
>>> import pandas as pd
>>> frame = pd.DataFrame({"ti": [16, 16, 32, 32], "tj": [16, 32, 16, 32],
...                       "gflops": [10.0, 20.0, 30.0, 25.0]})
>>> fig = sweep_heatmap(frame, "tj", "ti", "gflops")
>>> fig.axes[0].images[0].get_array().tolist()
[[10.0, 20.0], [30.0, 25.0]]
"""

from __future__ import annotations

import numpy as np

from workbench.measure.result import MeasureResult

LATENCY_GID = "latency"
THROUGHPUT_GID = "throughput"
HEATMAP_GID = "sweep"


def _named(results) -> list[MeasureResult]:
    if isinstance(results, MeasureResult):
        return [results]
    if isinstance(results, dict):
        from dataclasses import replace

        return [replace(r, name=str(name)) for name, r in results.items()]
    return list(results)


def _baseline(results: list[MeasureResult], baseline) -> MeasureResult | None:
    if baseline is None or isinstance(baseline, MeasureResult):
        return baseline
    if isinstance(baseline, int):
        return results[baseline]
    for result in results:
        if result.name == baseline:
            return result
    raise KeyError(f"no result named {baseline!r} for the baseline")


def latency_figure(results, baseline=None):
    """Median latency with spread, and GFLOP/s and GB/s, of measured kernels.

    Parameters
    ----------
    results : MeasureResult, list of them, or dict name -> MeasureResult
        In the order to show them (top to bottom).
    baseline : MeasureResult, name or index, optional
        What the others are compared with: each latency bar is labelled ``×speedup``
        (baseline median / median), and the throughput panel marks the baseline's values
        with dotted lines.

    Returns
    -------
    matplotlib.figure.Figure
        ``axes[0]`` (gid ``"latency"``): a horizontal bar per result, width the median in
        ms, error bar from the 25th to the 75th percentile, dots for each call;
        ``axes[1]`` (gid ``"throughput"``): bars of GFLOP/s and GB/s (0 where unknown).
        ``fig.latency_data`` holds the numbers drawn (a list of dicts).

    Example
    -------
    >>> fig = latency_figure([naive, tiled], baseline="naive")      # doctest: +SKIP
    """
    from workbench.viz.figures import new_figure

    results = _named(results)
    base = _baseline(results, baseline)
    n = len(results)
    fig, (lat_ax, thr_ax) = new_figure((10.0, 1.8 + 0.45 * max(n, 1)), nrows=1, ncols=2,
                                       gridspec_kw={"width_ratios": [3, 2]})
    lat_ax.set_gid(LATENCY_GID)
    thr_ax.set_gid(THROUGHPUT_GID)
    positions = np.arange(n)[::-1]
    data = []
    rng = np.random.default_rng(0)
    for pos, result in zip(positions, results, strict=True):
        times_ms = np.asarray(result.times_s or (result.median_s,)) * 1e3
        q1, q3 = np.percentile(times_ms, [25, 75])
        median = result.median_s * 1e3
        speedup = base.median_s / result.median_s if base is not None else None
        data.append({"name": result.name, "median_ms": median, "q1_ms": float(q1),
                     "q3_ms": float(q3), "gflops": result.gflops or 0.0,
                     "gbps": result.gbps or 0.0, "speedup": speedup})
        lat_ax.barh(pos, median, height=0.6, color="#9ecae1", gid=f"median:{result.name}")
        lat_ax.errorbar([median], [pos], xerr=[[median - q1], [q3 - median]], fmt="none",
                        ecolor="0.2", capsize=3, gid=f"iqr:{result.name}")
        jitter = rng.uniform(-0.18, 0.18, size=times_ms.size)
        lat_ax.plot(times_ms, pos + jitter, linestyle="", marker=".", markersize=2,
                    color="0.35", alpha=0.6, gid=f"calls:{result.name}")
        if speedup is not None:
            lat_ax.annotate(f"×{speedup:.2f}", (max(q3, median), pos),
                            textcoords="offset points", xytext=(6, 0), va="center",
                            fontsize=8, gid=f"speedup:{result.name}")
    lat_ax.set_yticks(positions, [r.name for r in results], fontsize=8)
    lat_ax.set_xlabel("latency (ms): median, IQR, each call")
    lat_ax.margins(x=0.15)
    if n and max(d["median_ms"] for d in data) > 20 * min(d["median_ms"] for d in data):
        lat_ax.set_xscale("log")

    width = 0.38
    gflops = [d["gflops"] for d in data]
    gbps = [d["gbps"] for d in data]
    thr_ax.barh(positions + width / 2, gflops, height=width, color="#fd8d3c",
                label="GFLOP/s", gid="gflops")
    thr_ax.barh(positions - width / 2, gbps, height=width, color="#74c476", label="GB/s",
                gid="gbps")
    if base is not None:
        if base.gflops:
            thr_ax.axvline(base.gflops, color="#fd8d3c", linestyle=":", linewidth=1,
                           gid="baseline-gflops")
        if base.gbps:
            thr_ax.axvline(base.gbps, color="#74c476", linestyle=":", linewidth=1,
                           gid="baseline-gbps")
    thr_ax.set_yticks(positions, [""] * n)
    thr_ax.set_xlabel("GFLOP/s and GB/s")
    handles, labels = thr_ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper right", ncol=2, frameon=False)
    title = "latency and throughput"
    if base is not None:
        title += f" (baseline: {base.name})"
    fig.suptitle(title, fontsize=10, x=0.02, ha="left")
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.88))
    fig.latency_data = data
    return fig


def sweep_heatmap(frame, x: str, y: str, value: str, *, ax=None, fmt: str = "{:.3g}",
                  higher_is_better: bool = True):
    """A measured value over two swept parameters, one cell per (x, y), best outlined.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per measurement; several rows with the same (x, y) keep the best.
    x, y : str
        Columns of the two parameters (columns and rows of the map, sorted).
    value : str
        The column to colour by (GFLOP/s, ms...).
    ax : matplotlib Axes, optional
    fmt : str
        Format of the number written in each cell.
    higher_is_better : bool
        Whether the best cell has the highest value (GFLOP/s) or the lowest (ms).

    Returns
    -------
    matplotlib.figure.Figure
        Its first axes' image holds the pivoted values (NaN where not measured); the best
        cell has a rectangle with gid ``"best"``; ``fig.sweep_table`` is the pivot table.
    """
    import matplotlib
    from matplotlib.patches import Rectangle

    from workbench.viz.figures import new_figure

    table = frame.pivot_table(index=y, columns=x, values=value,
                              aggfunc="max" if higher_is_better else "min")
    table = table.sort_index().sort_index(axis=1)
    if ax is None:
        fig, ax = new_figure((1.2 + 0.8 * len(table.columns), 1.0 + 0.6 * len(table.index)))
    fig = ax.figure
    values = table.to_numpy(dtype=float)
    cmap = matplotlib.colormaps["viridis" if higher_is_better else "viridis_r"].with_extremes(
        bad="#eeeeee")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, aspect="auto", gid=HEATMAP_GID)
    ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [str(r) for r in table.index])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    finite = np.isfinite(values)
    if finite.any():
        middle = np.nanmin(values) + 0.5 * (np.nanmax(values) - np.nanmin(values))
        for (row, col), v in np.ndenumerate(values):
            if np.isfinite(v):
                dark = v < middle if higher_is_better else v > middle
                ax.text(col, row, fmt.format(v), ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
        flat = np.where(finite, values, -np.inf if higher_is_better else np.inf)
        best = np.unravel_index(np.argmax(flat) if higher_is_better else np.argmin(flat),
                                values.shape)
        ax.add_patch(Rectangle((best[1] - 0.5, best[0] - 0.5), 1, 1, fill=False,
                               edgecolor="red", linewidth=2, gid="best"))
    fig.colorbar(image, ax=ax, label=value)
    ax.set_title(f"{value} over {y} × {x}", fontsize=10)
    fig.sweep_table = table
    return fig
