"""BatchNorm folding, layout conversion, fusion, memory planning and the pipeline, on the
tiny CNN and transformer block (outputs checked with the interpreter against torch)."""

from __future__ import annotations

import numpy as np
from graph_helpers import assert_same_outputs

from workbench.graph import GraphBuilder, TensorType, run
from workbench.graph.passes import (
    Pipeline,
    convert_layout_nhwc,
    count_transposes,
    fold_batchnorm,
    fold_constants,
    fuse,
    plan_fusion,
    plan_memory,
)


def test_fold_batchnorm_into_conv(cnn):
    model, x, graph = cnn
    folded = fold_batchnorm(graph)
    ops = [n.op for n in folded.nodes]
    assert "batch_norm" not in ops and ops.count("conv2d") == 2
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(run(folded, x.numpy())[0], expected, rtol=1e-4, atol=1e-5)


def test_layout_removes_cancelling_transposes():
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType((1, 3, 6, 6)))
    c1 = b.node("conv2d", [x, b.constant("w1", rng.standard_normal((4, 3, 3, 3), "float32"))],
                {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "groups": 1})
    r = b.node("relu", [c1])
    c2 = b.node("conv2d", [r, b.constant("w2", rng.standard_normal((2, 4, 3, 3), "float32"))],
                {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "groups": 1})
    g = b.finish([b.node("sigmoid", [c2])])
    out = convert_layout_nhwc(g)
    assert [n.op for n in out.nodes] == ["transpose", "conv2d_nhwc", "relu", "conv2d_nhwc",
                                         "sigmoid", "transpose"]
    assert count_transposes(out) == 2  # 4 inserted, 2 cancelled (1 pair), sigmoid sunk
    assert_same_outputs(g, out, rng.standard_normal((1, 3, 6, 6)).astype("float32"))


def test_fusion_groups_and_reasons(cnn, block):
    _, x, graph = cnn
    g = fold_constants(graph)  # keeps batch norms: conv+bn+relu fuses
    plan = plan_fusion(g)
    patterns = [tuple(g.node(n).op for n in group) for group in plan.groups]
    assert ("conv2d", "batch_norm", "relu") in patterns
    assert ("conv2d", "batch_norm", "silu") in patterns
    assert ("matmul", "add") in patterns
    reasons = {(r.producer, r.consumer): r.reason for r in plan.not_fused}
    assert "only elementwise consumers" in reasons[("relu", "max_pool2d")]
    fused = fuse(g, plan)
    assert [n.op for n in fused.nodes].count("fused") == 3
    assert_same_outputs(g, fused, x.numpy())

    _, xb, gb = block
    gb = fold_constants(gb)
    plan = plan_fusion(gb)
    patterns = [tuple(gb.node(n).op for n in group) for group in plan.groups]
    assert ("matmul", "add", "gelu") in patterns  # matmul + bias + gelu
    assert ("matmul", "add", "add") in patterns  # projection + bias + residual
    reasons = [r.reason for r in plan.not_fused]
    assert any("has 2 consumers" in r for r in reasons)  # the residual stream
    fused = fuse(gb, plan)
    assert_same_outputs(gb, fused, xb.numpy())
    # a fused kernel is named after its main operator, never after its last (issue 21:
    # "add" named the projection + bias + residual kernel); the graph output follows
    kernels = {n.name: n.attrs["pattern"] for n in fused.nodes if n.op == "fused"}
    assert all(name.split("_")[0] == pattern.split("+")[0] for name, pattern in kernels.items())
    assert sorted(kernels.values()).count("matmul+add+add") == 2
    last = fused.nodes[-1]
    assert fused.outputs == (last.name,) and last.name.startswith("matmul")
    assert len({n.name for n in fused.nodes} | set(fused.inputs) | set(fused.constants)) == (
        len(fused.nodes) + len(fused.inputs) + len(fused.constants))  # names stay unique


def test_fusion_reduction_with_elementwise_consumer():
    b = GraphBuilder()
    x = b.input("x", TensorType((3, 5)))
    s = b.node("softmax", [x], {"axis": 1})
    y = b.node("mul", [s, b.constant("k", np.full((5,), 3.0, "float32"))])
    g = b.finish([b.node("exp", [y])])
    fused = fuse(g)
    assert [n.op for n in fused.nodes] == ["fused"]
    assert fused.nodes[0].attrs["pattern"] == "softmax+mul+exp"
    assert_same_outputs(g, fused, np.random.default_rng(1).standard_normal((3, 5), "float32"))


def test_memory_plan_reuses_buffers(cnn):
    _, _, graph = cnn
    g = Pipeline()(graph)
    planned, unplanned = plan_memory(g), plan_memory(g, reuse=False)
    assert unplanned.bytes_with_reuse == unplanned.bytes_without_reuse
    assert planned.bytes_with_reuse < planned.bytes_without_reuse
    # no two simultaneously live values share a buffer
    steps = {n.name: i for i, n in enumerate(g.nodes)}
    last = {}
    for i, n in enumerate(g.nodes):
        for name in n.inputs:
            last[name] = i
    for a in planned.assignment:
        for b in planned.assignment:
            if a < b and planned.assignment[a] == planned.assignment[b] \
                    and g.node(b).op != "reshape" and g.node(a).op != "reshape":
                sa, sb = steps[a], steps[b]
                first, second = (a, b) if sa < sb else (b, a)
                assert last.get(first, steps[first]) <= steps[second]


def test_pipeline_is_configurable_and_steps_are_kept(cnn):
    model, x, graph = cnn
    pipeline = Pipeline().with_pass("layout_nhwc", after="fold_batchnorm")
    steps = pipeline.steps(graph)
    assert [s.name for s in steps] == ["import", *pipeline.names]
    assert "layout_nhwc" in str(pipeline)
    expected = model(x).detach().numpy()
    for step in steps:
        np.testing.assert_allclose(run(step.graph, x.numpy())[0], expected, rtol=1e-4,
                                   atol=1e-5, err_msg=step.name)
    assert "cluster_" in steps[-1].figure().source


def test_a_gather_hosts_its_elementwise_epilogue_other_layout_ops_do_not():
    """GPT-2's token embeddings plus its position embeddings: ``take`` + ``add`` is one
    kernel (the gather reads one row per output row; the add costs no second pass), while a
    transpose still takes no epilogue (``fold_views`` folds it into its consumer)."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    ids = b.input("ids", TensorType((2, 8), "int64"))
    table = b.constant("wte", rng.standard_normal((50, 16), dtype="float32"))
    rows = b.node("take", [table, ids], {"axis": 0})
    position = b.constant("wpe", rng.standard_normal((1, 8, 16), dtype="float32"))
    added = b.node("add", [rows, position])
    flipped = b.node("transpose", [added], {"perm": (0, 2, 1)})
    g = b.finish([b.node("relu", [flipped])])
    plan = plan_fusion(g)
    patterns = [tuple(g.node(n).op for n in group) for group in plan.groups]
    assert ("take", "add") in patterns and ("transpose",) in patterns
    reasons = {(r.producer, r.consumer): r.reason for r in plan.not_fused}
    assert "it takes no elementwise epilogue" in reasons[(flipped, g.nodes[-1].name)]
    fused = fuse(g, plan)
    assert [n.attrs.get("pattern", n.op) for n in fused.nodes] == ["take+add", "transpose",
                                                                   "relu"]
    assert_same_outputs(g, fused, rng.integers(0, 50, (2, 8)))
