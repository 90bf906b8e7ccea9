import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from workbench.measure import MachinePeaks, MeasureResult  # noqa: E402
from workbench.measure import peaks as peaks_module  # noqa: E402
from workbench.viz.roofline import (  # noqa: E402
    analytic_point,
    place_labels,
    plot_roofline,
    roofline_extent,
)

PEAKS = MachinePeaks(gflops=100.0, gbps=10.0)  # ridge at 10 FLOP/byte


def result(name, flops, bytes_, median_s, peaks=PEAKS):
    return MeasureResult(
        name=name,
        target="cpu",
        median_s=median_s,
        iqr_s=0.0,
        repeats=1,
        times_s=(median_s,),
        flops=flops,
        bytes=bytes_,
        peaks=peaks,
    )


def line(ax, gid):
    found = [artist for artist in ax.get_lines() if artist.get_gid() == gid]
    assert len(found) == 1, f"expected one line with gid {gid!r}"
    return found[0]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_roofs_and_points_have_the_expected_coordinates():
    naive = result("naive", flops=2_000_000, bytes_=1_000_000, median_s=1e-3)  # AI 2, 2 GFLOP/s
    tiled = result("tiled", flops=64_000_000, bytes_=1_000_000, median_s=1e-3)  # AI 64, 64 GFLOP/s
    ax = plot_roofline([naive, tiled])

    low, high = 10 / 64, 10 * 64  # SPAN = 64 around the ridge (AI 64 * 4 = 256 fits)
    memory = line(ax, "memory-roof")
    np.testing.assert_allclose(memory.get_xdata(), [low, 10.0])
    np.testing.assert_allclose(memory.get_ydata(), [low * 10.0, 100.0])
    compute = line(ax, "compute-roof")
    np.testing.assert_allclose(compute.get_xdata(), [10.0, high])
    np.testing.assert_allclose(compute.get_ydata(), [100.0, 100.0])

    point = line(ax, "result:naive")
    np.testing.assert_allclose(point.get_xydata(), [[2.0, 2.0]])
    assert point.get_label() == "naive [cpu]: 10.0% of roof"  # roof at AI 2 is 20 GFLOP/s
    point = line(ax, "result:tiled")
    np.testing.assert_allclose(point.get_xydata(), [[64.0, 64.0]])
    assert point.get_label() == "tiled [cpu]: 64.0% of roof"

    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    np.testing.assert_allclose(ax.get_xlim(), [low, high])
    assert ax.get_xlabel() == "arithmetic intensity (FLOP/byte)"
    assert ax.get_ylabel() == "GFLOP/s"
    assert [t.get_text() for t in ax.texts] == ["ridge 10.0 FLOP/B", "", "naive", "tiled"]
    arrow = next(t for t in ax.texts if t.get_gid() == "step-arrow:1")
    assert arrow.xy == (64.0, 64.0) and arrow.xyann == (2.0, 2.0)  # from naive to tiled


def test_explicit_peaks_and_axes():
    other = MachinePeaks(gflops=1000.0, gbps=50.0)  # ridge 20
    fig, ax = plt.subplots()
    returned = plot_roofline(result("k", 10**6, 10**6, 1e-3), peaks=other, ax=ax)
    assert returned is ax
    np.testing.assert_allclose(line(ax, "compute-roof").get_ydata(), [1000.0, 1000.0])
    np.testing.assert_allclose(
        line(ax, "memory-roof").get_xdata(), [1 / 4, 20.0]
    )  # AI 1 / 4 < 20 / 64
    assert line(ax, "result:k").get_label() == "k [cpu]: 2.0% of roof"  # 1 of 50 GFLOP/s


def test_result_without_intensity_is_skipped_with_a_warning():
    copy = result("copy", flops=0, bytes_=10**6, median_s=1e-3)
    with pytest.warns(UserWarning, match="'copy' has no FLOP and byte count"):
        ax = plot_roofline([copy])
    assert [a.get_gid() for a in ax.get_lines()] == ["memory-roof", "compute-roof"]


def test_extent_widens_for_points_outside_the_span():
    assert roofline_extent(PEAKS, []) == (10 / 64, 640.0)
    assert roofline_extent(PEAKS, [0.01, 5000.0]) == (0.0025, 20000.0)


def test_analytic_point_of_matmul():
    from workbench import ops

    point = analytic_point(ops.matmul(64, 64, 64), PEAKS)
    assert point.flops == 2 * 64**3 and point.bytes == 3 * 64 * 64 * 4
    assert point.intensity == pytest.approx(2 * 64**3 / (3 * 64 * 64 * 4))  # 10.67 > ridge 10
    assert point.bound == "compute" and point.attainable_gflops == 100.0
    assert point.min_time_s == pytest.approx(2 * 64**3 / 100e9)
    add = analytic_point(ops.add(256), PEAKS)  # 1 FLOP per 12 bytes: memory-bound
    assert add.bound == "memory"
    assert add.attainable_gflops == pytest.approx(10.0 * 256 / (3 * 256 * 4))


def test_analytic_points_move_with_arrows():
    first = analytic_point_like("a", intensity=1.0)
    second = analytic_point_like("b", intensity=20.0)
    ax = plot_roofline([], PEAKS, analytic=[first, second])
    np.testing.assert_allclose(line(ax, "analytic:a").get_xydata(), [[1.0, 10.0]])
    np.testing.assert_allclose(line(ax, "analytic:b").get_xydata(), [[20.0, 100.0]])
    assert line(ax, "analytic:a").get_markerfacecolor() == "none"  # hollow: not measured
    arrow = next(t for t in ax.texts if t.get_gid() == "analytic-arrow:1")
    assert arrow.xyann == (1.0, 10.0) and arrow.xy == (20.0, 100.0)
    assert arrow.arrow_patch.get_linestyle() == "dashed"


def analytic_point_like(name, intensity):
    from workbench.viz.roofline import AnalyticPoint

    attainable = PEAKS.attainable_gflops(intensity)
    return AnalyticPoint(name, 100, int(100 / intensity), intensity, attainable,
                         PEAKS.bound(intensity), 100 / (attainable * 1e9))


def test_legend_is_outside_the_axes_and_labels_inside():
    """A new user saw the legend cover the memory roof and labels run past the axes."""
    points = [result(f"step{i}", flops=2_000_000 * (i + 1), bytes_=1_000_000, median_s=1e-3)
              for i in range(5)]  # close together: labels would collide at one offset
    ax = plot_roofline(points)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes_box = ax.get_window_extent(renderer)
    legend_box = ax.get_legend().get_window_extent(renderer)
    assert legend_box.x0 >= axes_box.x1  # right of the axes: covers no roof
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("label:")]
    assert [t.get_text() for t in labels] == [f"step{i}" for i in range(5)]
    boxes = [t.get_window_extent(renderer) for t in labels]
    for box in boxes:
        assert axes_box.x0 - 1 <= box.x0 and box.x1 <= axes_box.x1 + 1
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            assert not boxes[a].overlaps(boxes[b]), (labels[a].get_text(), labels[b].get_text())
    ridge = next(t for t in ax.texts if t.get_gid() == "ridge-label")
    assert not ridge.get_window_extent(renderer).overlaps(legend_box)


def test_place_labels_avoids_edges_and_each_other():
    offsets = place_labels([(195, 100), (195, 100)], ["long label", "other"], (0, 0, 200, 200))
    assert offsets[0][2] == "right"  # near the right edge: text goes left of the point
    assert offsets[1] != offsets[0]


def test_point_above_the_roof_remeasures_the_peaks():
    low = MachinePeaks(gflops=10.0, gbps=1.0)  # measured while the machine was busy
    fast = result("fast", flops=50_000_000, bytes_=1_000_000, median_s=1e-3, peaks=low)
    calls = []

    def remeasure():
        calls.append(1)
        return MachinePeaks(gflops=100.0, gbps=10.0)

    ax = plot_roofline([fast], remeasure=remeasure)
    assert calls == [1]
    assert ax.roofline_peaks.gflops == 100.0 and ax.roofline_peaks.gbps == 10.0
    np.testing.assert_allclose(line(ax, "compute-roof").get_ydata(), [100.0, 100.0])
    assert line(ax, "result:fast").get_label() == "fast [cpu]: 50.0% of roof"


def test_this_machines_peaks_are_remeasured_when_a_point_is_above(monkeypatch):
    """Notebook 02 passes ``peaks=wb.machine_peaks()``: those are re-measured too."""
    from workbench.measure.peaks import machine_key

    cached = MachinePeaks(gflops=41.0, gbps=8.6, key=machine_key())  # measured while busy
    quiet = MachinePeaks(gflops=470.0, gbps=40.0, key=machine_key())
    calls = []
    monkeypatch.setattr(peaks_module, "machine_peaks",
                        lambda refresh=False, **kw: calls.append(refresh) or quiet)
    point = result("tiled", flops=200_000_000, bytes_=1_000_000, median_s=1e-3, peaks=cached)
    ax = plot_roofline([point], peaks=cached)  # 200 GFLOP/s above the 41 GFLOP/s roof
    assert calls == [True]
    assert (ax.roofline_peaks.gflops, ax.roofline_peaks.gbps) == (470.0, 40.0)


def test_point_under_the_roof_or_hand_made_peaks_do_not_remeasure(monkeypatch):
    def fail():
        raise AssertionError("must not measure")

    monkeypatch.setattr(peaks_module, "machine_peaks", lambda **kw: fail())
    ok = result("ok", flops=1_000_000, bytes_=1_000_000, median_s=1e-3)
    plot_roofline([ok])  # 1 GFLOP/s at AI 1: under the 10 GFLOP/s memory roof
    above = result("above", flops=500_000_000, bytes_=1_000_000, median_s=1e-3)  # 500 > 100
    with pytest.warns(UserWarning, match="above the roofs"):
        plot_roofline([above], remeasure=lambda: MachinePeaks(gflops=20.0, gbps=2.0))
    ax = plot_roofline([above], peaks=PEAKS)  # hand-made peaks (no machine key): as given
    assert ax.roofline_peaks is PEAKS


def test_points_of_one_intensity_are_numbered_and_listed_in_the_legend():
    """Issue 21 item 8: notebook 02's steps share an intensity; their names stacked."""
    points = [result(f"step {i} with a long name", flops=2_000_000, bytes_=1_000_000,
                     median_s=1e-3 / (1 + 0.05 * i)) for i in range(8)]
    ax = plot_roofline(points, PEAKS, remeasure=False)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("label:")]
    assert [t.get_text() for t in labels] == [str(n) for n in range(1, 9)]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("3 · step 2 with a long name [cpu]") for t in legend)
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not any(boxes[a].overlaps(boxes[b]) for a in range(8) for b in range(a + 1, 8))
