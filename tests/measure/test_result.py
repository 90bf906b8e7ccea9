import pytest

from workbench.measure import MachinePeaks, MeasureResult, format_seconds

PEAKS = MachinePeaks(gflops=100.0, gbps=10.0)  # ridge at 10 FLOP/byte


def result(**overrides):
    fields = dict(
        name="matmul",
        target="cpu",
        median_s=2e-3,
        iqr_s=1e-4,
        repeats=4,
        times_s=(1.9e-3, 2e-3, 2e-3, 2.1e-3),
        flops=8_000_000,
        bytes=400_000,
        peaks=PEAKS,
        warmup=2,
        rotation_sets=8,
    )
    fields.update(overrides)
    return MeasureResult(**fields)


@pytest.mark.parametrize(
    "seconds, text",
    [(2.0, "2.00 s"), (0.5, "500 ms"), (1.234e-3, "1.23 ms"), (4.5e-5, "45 µs"), (7e-8, "70 ns")],
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_kernel_right_of_ridge_is_compute_bound():
    r = result()  # 8 MFLOP and 0.4 MB in 2 ms: 20 FLOP/byte, right of the ridge (10)
    assert r.gflops == pytest.approx(4.0)
    assert r.gbps == pytest.approx(0.2)
    assert r.arithmetic_intensity == pytest.approx(20.0)
    assert r.bound == "compute"
    assert r.roof_gflops == pytest.approx(100.0)
    assert r.roofline_fraction == pytest.approx(0.04)


def test_kernel_left_of_ridge_is_memory_bound():
    r = result(flops=1_000_000, bytes=1_000_000, median_s=1e-3)  # intensity 1
    assert r.arithmetic_intensity == pytest.approx(1.0)
    assert r.bound == "memory"
    assert r.roof_gflops == pytest.approx(10.0)  # 1 FLOP/byte * 10 GB/s
    assert r.gflops == pytest.approx(1.0)
    assert r.roofline_fraction == pytest.approx(0.1)


def test_copy_kernel_without_flops_is_compared_with_bandwidth():
    r = result(flops=0, bytes=5_000_000, median_s=1e-3)  # 5 GB/s of 10
    assert r.gflops is None and r.arithmetic_intensity is None
    assert r.gbps == pytest.approx(5.0)
    assert r.bound == "memory"
    assert r.roofline_fraction == pytest.approx(0.5)


def test_flops_without_bytes_is_compared_with_compute_peak():
    r = result(flops=50_000_000, bytes=None, median_s=1e-3)  # 50 GFLOP/s of 100
    assert r.bound == "compute"
    assert r.roofline_fraction == pytest.approx(0.5)


def test_no_work_no_peaks():
    r = result(flops=None, bytes=None, peaks=None)
    assert (r.gflops, r.gbps, r.bound, r.roof_gflops, r.roofline_fraction) == (None,) * 5


def test_to_frame_is_one_row():
    frame = result().to_frame()
    assert frame.shape[0] == 1
    row = frame.iloc[0]
    assert row["name"] == "matmul" and row["target"] == "cpu"
    assert row["median_s"] == 2e-3 and row["repeats"] == 4
    assert row["gflops"] == pytest.approx(4.0)
    assert row["bound"] == "compute"
    assert row["roofline_fraction"] == pytest.approx(0.04)
    assert "times_s" not in frame.columns


def test_text_and_html():
    r = result(name="<mm>")
    text = str(r)
    assert text.startswith("<mm> [cpu]: median 2 ms, IQR 100 µs, runs 4")
    assert "GFLOP/s 4.00" in text and "compute-bound, 4.0% of roof" in text
    page = r._repr_html_()
    assert "&lt;mm&gt;" in page and "<mm>" not in page
    assert "<th style='text-align:left'>GFLOP/s</th><td style='text-align:left'>4.00</td>" in page
