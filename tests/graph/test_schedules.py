"""Default schedules by rule (cpu): the library's recipes for matmul, softmax, layernorm,
the generic rules for the rest; values checked against the graph interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.backends import build
from workbench.graph import GraphBuilder, TensorType, run
from workbench.graph.lower import lower_graph
from workbench.graph.passes import fuse
from workbench.recipes.graph_cpu import default_schedule

RNG = np.random.default_rng(3)


def _r(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _scheduled_kernel_matches(graph):
    inputs = [_r(*t.shape) for t in graph.inputs.values()]
    values = run(graph, *inputs, keep=True)
    (kernel,) = lower_graph(graph)
    sch = default_schedule(kernel.func, "cpu")
    args = [np.ascontiguousarray(values[name]) for name in kernel.inputs]
    out = np.empty(graph.node(kernel.node).type.shape, "float32")
    build(sch, target="cpu")(*kernel.bind(args + [out]))
    np.testing.assert_allclose(out, values[kernel.node], rtol=1e-4, atol=1e-4)
    return str(sch.trace), sch.mod.script()


def _linear_gelu(rows, k, n):
    b = GraphBuilder()
    x = b.input("x", TensorType((2, rows // 2, k)))
    m = b.node("matmul", [x, b.constant("w", _r(k, n))])
    y = b.node("add", [m, b.constant("bias", _r(n))])
    return fuse(b.finish([b.node("gelu", [y])]))


def test_a_linear_gets_a_register_tile_with_its_epilogue_in_the_write_back():
    trace, script = _scheduled_kernel_matches(_linear_gelu(128, 64, 128))
    assert "cache_write" in trace and "cache_read" not in trace  # B small: no packing
    assert "reverse_compute_inline" in trace  # gelu(x + b) written from the register tile
    assert 'T.block("out")' not in script and "T.parallel" in script


def test_a_linear_with_a_big_weight_gets_the_packed_recipe():
    trace, script = _scheduled_kernel_matches(_linear_gelu(8, 512, 512))
    assert "cache_read" in trace and "transform_layout" in trace  # B packed in panels
    assert "reverse_compute_inline" in trace


def test_parallel_false_keeps_every_kernel_serial():
    graph = _linear_gelu(128, 64, 128)
    (kernel,) = lower_graph(graph)
    assert "T.parallel" not in default_schedule(kernel.func, "cpu", parallel=False).mod.script()


def test_a_small_linear_gets_the_generic_rules():
    trace, script = _scheduled_kernel_matches(_linear_gelu(4, 8, 6))
    assert "cache_read" not in trace and "reverse_compute_at" in trace
    assert "T.parallel" not in script  # too small for the thread pool


@pytest.mark.parametrize("op, attrs, inputs", [
    ("softmax", {"axis": -1}, [(4, 3, 32)]),
    ("layer_norm", {"eps": 1e-5, "ndim": 1}, [(4, 3, 64), (64,), (64,)]),
])
def test_row_operators_get_their_fused_recipe(op, attrs, inputs):
    b = GraphBuilder()
    x = b.input("x", TensorType(inputs[0]))
    rest = [b.constant(f"c{i}", _r(*s)) for i, s in enumerate(inputs[1:])]
    y = b.node(op, [x, *rest], attrs)
    graph = fuse(b.finish([b.node("relu", [b.node("mul", [y, b.constant("s", _r(1))])])]))
    trace, script = _scheduled_kernel_matches(graph)
    assert "compute_at" in trace  # the row statistics computed in the row loop
    assert "T.vectorized" in script
