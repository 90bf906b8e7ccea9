"""latency_figure / sweep_heatmap / round_frame / graph_figure: the numbers drawn."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from workbench.measure import MachinePeaks, MeasureResult  # noqa: E402
from workbench.viz.graph import GraphEdge, GraphNode, GraphView, graph_figure  # noqa: E402
from workbench.viz.perf import latency_figure, sweep_heatmap  # noqa: E402
from workbench.viz.tables import round_frame, styled_frame  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def result(name, times, flops=2_000_000, bytes_=1_000_000):
    times = tuple(times)
    return MeasureResult(name, "cpu", median_s=float(np.median(times)), iqr_s=0.0,
                         repeats=len(times), times_s=times, flops=flops, bytes=bytes_,
                         peaks=MachinePeaks(gflops=100.0, gbps=10.0))


def test_latency_figure_median_spread_and_speedup():
    naive = result("naive", [4e-3, 5e-3, 6e-3, 7e-3, 8e-3])  # median 6 ms, IQR 5..7
    tiled = result("tiled", [1e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3])  # median 2 ms, IQR 1.5..2.5
    fig = latency_figure([naive, tiled], baseline="naive")
    data = fig.latency_data
    assert [d["name"] for d in data] == ["naive", "tiled"]
    assert data[0]["median_ms"] == pytest.approx(6.0)
    assert (data[0]["q1_ms"], data[0]["q3_ms"]) == pytest.approx((5.0, 7.0))
    assert data[1]["speedup"] == pytest.approx(3.0)
    assert data[1]["gflops"] == pytest.approx(1.0)  # 2 MFLOP in 2 ms
    lat, thr = fig.axes[:2]
    assert lat.get_gid() == "latency" and thr.get_gid() == "throughput"
    widths = sorted(p.get_width() for p in lat.patches)
    assert widths == pytest.approx([2.0, 6.0])
    speedups = {t.get_gid(): t.get_text() for t in lat.texts}
    assert speedups == {"speedup:naive": "×1.00", "speedup:tiled": "×3.00"}
    calls = [line for line in lat.get_lines() if line.get_gid() == "calls:tiled"]
    np.testing.assert_allclose(sorted(calls[0].get_xdata()), [1.0, 1.5, 2.0, 2.5, 3.0])
    baseline = [line for line in thr.get_lines() if line.get_gid() == "baseline-gflops"]
    assert baseline[0].get_xdata()[0] == pytest.approx(2 / 6)  # naive: 2 MFLOP in 6 ms
    # without a baseline: no speedup labels
    assert len(latency_figure({"a": naive}).axes[0].texts) == 0


def test_sweep_heatmap_values_and_best_cell():
    frame = pd.DataFrame({"ti": [16, 16, 32, 32, 32], "tj": [16, 32, 16, 32, 32],
                          "gflops": [10.0, 20.0, 30.0, 25.0, 12.0]})
    fig = sweep_heatmap(frame, "tj", "ti", "gflops")
    ax = fig.axes[0]
    values = ax.images[0].get_array()
    np.testing.assert_array_equal(values.filled(np.nan), [[10.0, 20.0], [30.0, 25.0]])
    best = [p for p in ax.patches if p.get_gid() == "best"][0]
    assert best.get_xy() == (-0.5, 0.5)  # column tj=16, row ti=32
    assert [t.get_text() for t in ax.texts] == ["10", "20", "30", "25"]
    ms = sweep_heatmap(frame.assign(ms=1 / frame.gflops), "tj", "ti", "ms",
                       higher_is_better=False)
    best = [p for p in ms.axes[0].patches if p.get_gid() == "best"][0]
    assert best.get_xy() == (-0.5, 0.5)  # lowest time: the same cell
    holes = sweep_heatmap(frame.iloc[:3], "tj", "ti", "gflops")
    assert holes.axes[0].images[0].get_array().mask.tolist() == [[False, False], [False, True]]


def test_round_frame_rounds_what_is_shown():
    frame = pd.DataFrame({"step": [1, 2], "time ms": [1.234567, 0.000123456],
                          "GFLOP/s": [123.456, 4.56789], "speedup": [1.0, 10003.456],
                          "name": ["a", "b"]})
    rounded = round_frame(frame)
    assert rounded["time ms"].tolist() == [1.23, 0.000123]
    assert rounded["GFLOP/s"].tolist() == [123.5, 4.57]
    assert rounded["speedup"].tolist() == [1.0, 10003.46]
    assert rounded["step"].tolist() == [1, 2] and frame["time ms"][0] == 1.234567
    html = styled_frame(frame).to_html()
    assert ">1.23<" in html and ">123.5<" in html and ">4.57<" in html
    assert "white-space" in html and "nowrap" in html


def test_graph_figure_ops_types_and_fused_clusters():
    nodes = [GraphNode("x", "input", (1, 64), "float32", kind="input"),
             GraphNode("w", "const", (64, 32), "float32", kind="const"),
             GraphNode("dense", "matmul", (1, 32), "float32"),
             {"name": "relu", "op": "relu", "shape": (1, 32), "dtype": "float32",
              "kind": "output"}]
    edges = [("x", "dense"), GraphEdge("w", "dense"), ("dense", "relu", "fused")]
    g = graph_figure(nodes, edges, groups={"fused_dense_relu": ["dense", "relu"]},
                     title="mlp")
    source = g.source
    cluster = source.split("subgraph cluster_fused_dense_relu {")[1].split("}")[0]
    assert "n_dense [" in cluster and "n_relu [" in cluster and "n_x [" not in cluster
    assert 'n_x -> n_dense [label="float32[1, 64]"]' in source
    assert 'n_w -> n_dense [label="float32[64, 32]"]' in source
    assert "n_dense -> n_relu [label=fused]" in source
    assert 'n_dense [label="matmul\\ndense\\nfloat32[1, 32]"' in source
    assert 'n_w [label="w\\nfloat32[64, 32]" fillcolor="#eeeeee" shape=box' in source
    with pytest.raises(KeyError, match="no node 'y'"):
        graph_figure(nodes, [("x", "y")])
    view = GraphView(nodes, edges, groups={"fused_dense_relu": ["dense", "relu"]})
    assert repr(view).splitlines() == [
        "x = input()  : float32[1, 64]", "w = const()  : float32[64, 32]",
        "dense = matmul(x, w)  : float32[1, 32]  [fused_dense_relu]",
        "relu = relu(dense)  : float32[1, 32]  [fused_dense_relu]"]


def test_figures_are_not_tracked_by_pyplot():
    """An explorer redraws at every change: its figures must not pile up in pyplot."""
    from workbench.viz.roofline import roofline_figure

    before = plt.get_fignums()
    naive = result("naive", [4e-3, 5e-3])
    frame = pd.DataFrame({"a": [1, 2], "b": [1, 1], "v": [1.0, 2.0]})
    figures = [latency_figure([naive]), sweep_heatmap(frame, "a", "b", "v"),
               roofline_figure([naive])]
    assert plt.get_fignums() == before
    for fig in figures:
        assert type(fig.canvas).__name__ == "FigureCanvasAgg"
    assert any(line.get_gid() == "result:naive" for line in figures[2].axes[0].get_lines())
