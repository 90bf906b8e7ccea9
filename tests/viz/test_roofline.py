import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from workbench.measure import MachinePeaks, MeasureResult  # noqa: E402
from workbench.viz.roofline import plot_roofline, roofline_extent  # noqa: E402

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
    assert [t.get_text() for t in ax.texts] == ["ridge 10.0 FLOP/B", "naive", "tiled"]


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
