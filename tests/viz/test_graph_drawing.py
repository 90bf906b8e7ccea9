"""The graph drawing of notebooks 07 and 08 (issue 21 item 11): a fused group is one cluster
labelled by its pattern and its kernel's name (the main operator's, never "relu_relu" or the
last member's), and every edge's tensor type is tied to its own edge."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.graph import GraphBuilder, TensorType
from workbench.graph.draw import graph_drawing
from workbench.graph.passes import fuse

pytest.importorskip("graphviz")


def test_a_fused_group_is_one_cluster_named_after_its_main_operator():
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType((4, 8)))
    m = b.node("matmul", [x, b.constant("w", rng.standard_normal((8, 5)).astype("float32"))])
    y = b.node("add", [m, b.constant("bias", rng.standard_normal(5).astype("float32"))])
    graph = fuse(b.finish([b.node("relu", [y])]))
    (kernel,) = graph.nodes
    # named after its main operator; "matmul" is the member's own name, so the next number
    assert kernel.name == "matmul_1" and graph.outputs == ("matmul_1",)
    source = graph_drawing(graph, title="fused").source
    assert 'label="fused matmul+add+relu -> matmul_1"' in source
    assert source.count("subgraph cluster_") == 1 and "relu_relu" not in source
    assert "decorate=true" in source  # an edge label is joined to its edge by a line


def test_a_wide_drawing_is_scaled_to_the_output_area():
    from workbench.viz import graph_figure
    from workbench.viz.loopnest import MAX_WIDTH_PT, dot_available

    if not dot_available():
        pytest.skip("Graphviz's dot is missing")
    nodes = [(f"n{i}", "relu") for i in range(24)]
    g = graph_figure(nodes, [("n0", f"n{i}") for i in range(1, 24)])
    raw = g.pipe(format="svg", encoding="utf-8")
    width = float(raw.split('<svg width="')[1].split("pt")[0])
    assert width > MAX_WIDTH_PT  # wide as drawn
    shown = g._repr_mimebundle_()["image/svg+xml"]
    assert float(shown.split('<svg width="')[1].split("pt")[0]) == pytest.approx(MAX_WIDTH_PT)
