"""``passes.pack_matmul`` (the cpu layout): a matmul by a big constant weight reads it in
column panels packed once, at compile time (``ops.matmul_packed``, the
``("matmul_packed", "panels")`` recipe): values against PyTorch through ``wb.compile`` at
widths and row counts off every tile, no copy of the weight left in the kernel; the pass's
moves and refusals (values through the interpreter); the panel layout's own errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph.builder import GraphBuilder  # noqa: E402
from workbench.graph.interpreter import run  # noqa: E402
from workbench.graph.ir import TensorType  # noqa: E402
from workbench.graph.passes.pack_matmul import pack_matmul  # noqa: E402
from workbench.ops.matmul_packed import matmul_packed, pack_columns, unpack_columns  # noqa: E402
from workbench.recipes.graph_cpu_ops import panel_width  # noqa: E402


def _compiled(model, x):
    compiled = wb.compile(model.eval(), (x,), target="cpu")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=1e-4, atol=1e-4)
    return compiled


@pytest.mark.parametrize("rows", [13, 16])
def test_a_vocabulary_head_reads_its_weight_in_panels_packed_once(rows):
    torch.manual_seed(0)
    model = nn.Linear(256, 1030, bias=False)  # 1 MB of weights, 1030 columns: padded, packed
    compiled = _compiled(model, torch.randn(rows, 256))
    (kernel,) = [k for k in compiled.kernels if k.pattern.startswith("matmul")]
    assert kernel.pattern == "matmul_packed"
    tj = panel_width(rows, 1030, 256)
    (weight,) = [v for v in compiled.graph.constants.values() if v.ndim == 3]
    assert weight.shape == (-(-1030 // tj), 256, tj)
    # the panels hold the weight's columns (the padded ones repeat the last)
    unpacked = unpack_columns(weight)
    np.testing.assert_array_equal(unpacked[:, :1030], model.weight.detach().numpy().T)
    np.testing.assert_array_equal(unpacked[:, 1030:], unpacked[:, 1029:1030].repeat(
        unpacked.shape[1] - 1030, axis=1))
    assert not any(v.shape == (256, 1030) for v in compiled.graph.constants.values())
    script = kernel.schedule.mod.script()
    assert "B_global" not in script  # no copy of B per call
    assert "T.vectorized" in script and "T.unroll" in script
    assert ("T.where" in script) == (rows % 8 != 0)  # 13 rows: 8 a tile, the last guarded


def test_an_mlp_on_three_axes_keeps_its_epilogues_in_the_panel_kernels():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(384, 768), nn.GELU(), nn.Linear(768, 511))
    compiled = _compiled(model, torch.randn(2, 5, 384))
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns[:2] == ["matmul_packed+add+gelu", "matmul_packed+add"]
    assert "pack_columns" not in [n.op for n in compiled.graph.nodes]


def test_one_row_and_a_small_weight_take_panels_too():
    torch.manual_seed(2)
    compiled = _compiled(nn.Linear(512, 768), torch.randn(1, 512))  # one row: a panel each
    assert [k.pattern for k in compiled.kernels] == ["matmul_packed+add"]
    head = nn.Linear(300, 1000)  # a classifier at batch 1: 1000 columns padded to panels
    compiled = _compiled(head, torch.randn(1, 300))
    assert [k.pattern for k in compiled.kernels] == ["matmul_packed+add", "slice"]
    (weight,) = [v for v in compiled.graph.constants.values() if v.ndim == 3]
    assert weight.shape[2] == panel_width(1, 1000, 300)
    np.testing.assert_array_equal(unpack_columns(weight)[:, :1000], head.weight.detach().numpy().T)
    compiled = _compiled(nn.Linear(64, 96), torch.randn(16, 64))  # 24 KB
    assert [k.pattern for k in compiled.kernels][0] == "matmul_packed+add"
    (weight,) = [v for v in compiled.graph.constants.values() if v.ndim == 3]
    tj = panel_width(16, 96, 64)
    assert weight.shape == (-(-96 // tj), 64, tj)


def test_a_width_two_vectors_divide_takes_them_unpadded():
    torch.manual_seed(2)
    compiled = _compiled(nn.Sequential(nn.Linear(256, 1024), nn.SiLU()), torch.randn(16, 256))
    assert [k.pattern for k in compiled.kernels] == ["matmul_packed+add+silu"]  # no slice
    (weight,) = [v for v in compiled.graph.constants.values() if v.ndim == 3]
    tj = panel_width(16, 1024, 256)
    assert weight.shape == (1024 // tj, 256, tj) and 1024 % tj == 0


def _graph(shared: bool = False, n: int = 32, variable: bool = False):
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 6, 12)))
    w = b.input("w", TensorType((12, n))) if variable else \
        b.constant("w", rng.standard_normal((12, n)).astype("float32"))
    y = b.node("matmul", [x, w])
    outputs = [y, b.node("matmul", [b.node("relu", [x]), w])] if shared else [y]
    return b.finish(outputs)


def _same_values(graph, packed):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(t.shape).astype(np.float32) for t in graph.inputs.values()]
    for got, want in zip(run(packed, *arrays), run(graph, *arrays), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_weight_two_matmuls_read_is_packed_once():
    graph = _graph(shared=True)
    packed = pack_matmul(graph, lambda m, n, k: 16)
    assert [n.op for n in packed.nodes] == ["matmul_packed", "relu", "matmul_packed"]
    assert sorted(packed.constants) == ["w_panels16"]
    assert packed.nodes[0].inputs[1] == packed.nodes[2].inputs[1] == "w_panels16"
    np.testing.assert_array_equal(packed.constants["w_panels16"][1],
                                  graph.constants["w"][:, 16:])
    _same_values(graph, packed)


def test_nothing_is_packed_off_the_panels_or_for_a_variable_weight():
    for graph, columns in ((_graph(n=40), lambda m, n, k: 16),  # 16 does not divide 40
                           (_graph(), lambda m, n, k: None),  # B small: no panels
                           (_graph(variable=True), lambda m, n, k: 16)):
        assert pack_matmul(graph, columns) is graph
    seen = []
    pack_matmul(_graph(), lambda m, n, k: seen.append((m, n, k)))
    assert seen == [(12, 32, 12)]  # the activation's leading axes are the rows


def test_a_weight_packed_at_run_time_computes_the_matmul():
    # pack_columns of a graph input (not folded): its own kernel, then the panels' matmul
    rng = np.random.default_rng(5)
    b = GraphBuilder()
    x, w = b.input("x", TensorType((9, 20))), b.input("w", TensorType((20, 32)))
    panels = b.node("pack_columns", [w], {"tj": 16})
    graph = b.finish([b.node("matmul_packed", [x, panels])])
    assert graph.type_of(panels).shape == (2, 20, 16)
    xs, ws = rng.standard_normal((9, 20), "float32"), rng.standard_normal((20, 32), "float32")
    compiled = wb.compile(graph, target="cpu")
    np.testing.assert_allclose(compiled(xs, ws), xs @ ws, rtol=1e-5, atol=1e-5)


def test_the_panel_layout_names_what_does_not_divide():
    w = np.arange(24.0).reshape(2, 12)
    np.testing.assert_array_equal(pack_columns(w, 4)[2], w[:, 8:])
    np.testing.assert_array_equal(unpack_columns(pack_columns(w, 4)), w)
    with pytest.raises(ValueError, match="pack_columns: 12 columns are not a multiple of tj=5"):
        pack_columns(w, 5)
    with pytest.raises(ValueError, match="matmul_packed: 30 columns .* tj=16"):
        matmul_packed(4, 30, 8, tj=16)
