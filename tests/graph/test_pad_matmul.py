"""``passes.pad_matmul`` (the cpu layout): a matmul by a constant whose columns no register
tile divides (1000 classes, 10, 1000 hidden units) padded to the tile, its epilogue carried
into the padded shape, the output sliced back: values against PyTorch through ``wb.compile``
at odd sizes, every matmul on the register tile; the pass's moves and refusals on graphs
(values through the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph.builder import GraphBuilder  # noqa: E402
from workbench.graph.interpreter import run  # noqa: E402
from workbench.graph.ir import TensorType  # noqa: E402
from workbench.graph.passes.pad_matmul import pad_matmul  # noqa: E402
from workbench.recipes.graph_cpu_ops import matmul_columns, matmul_panels, row_tile  # noqa: E402


def test_row_tile_takes_the_most_rows_that_divide():
    assert [row_tile(m, 8) for m in (512, 7, 12, 511, 509, 3, 1)] == [8, 7, 6, 7, 8, 3, None]
    assert [row_tile(m, 4) for m in (30, 7, 511)] == [3, 4, 4]  # 7, 511: the last tile guarded
    assert matmul_columns(1, 1000, 64) is not None  # one row: panels too (a tile of 1 row)
    assert matmul_columns(1, 16, 16) is None  # too little work: the generic schedule


@pytest.mark.parametrize("rows", [7, 12, 13])
def test_a_classifier_of_odd_widths_runs_on_the_panel_tile(rng, rows):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(48, 1000), nn.GELU(), nn.Linear(1000, 10)).eval()
    x = torch.randn(rows, 48)
    compiled = wb.compile(model, (x,), target="cpu")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=1e-4, atol=1e-5)
    matmuls = [k for k in compiled.kernels if k.pattern.startswith("matmul")]
    assert [k.pattern for k in matmuls] == ["matmul_packed+add+gelu", "matmul_packed+add"]
    for kernel in matmuls:  # padded to the panels (1000 and 10 columns: 3 vectors each)
        assert matmul_panels(kernel.schedule.func_before) is not None, kernel.node
        assert kernel.schedule.func_before.params[1].shape[-1] == matmul_columns(rows, 10, 1000)
    assert [k.pattern for k in compiled.kernels].count("slice") == 2


def test_a_prime_row_count_takes_the_panel_tile_with_its_last_rows_guarded():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1000, 300), nn.ReLU()).eval()  # B of 1.2 MB: panels
    x = torch.randn(13, 1000)
    compiled = wb.compile(model, (x,), target="cpu")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=1e-4, atol=1e-5)
    (kernel,) = [k for k in compiled.kernels if k.pattern.startswith("matmul")]
    assert kernel.pattern == "matmul_packed+add+relu"  # 300 columns padded to the panels
    tj = matmul_columns(13, 300, 1000)
    assert (-(-300 // tj), 1000, tj) in [v.shape for v in compiled.graph.constants.values()]
    assert "* 8 + i_1 < 13)" in kernel.schedule.mod.script()  # 8 rows a tile, guarded


def _linear(n: int = 20, readers=("add", "relu"), extra_reader: bool = False):
    """``x @ W`` (W constant ``(12, n)``) then ``readers`` (``add`` with a bias of ``n``)."""
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", TensorType((6, 12)))
    value = b.node("matmul", [x, b.constant("w", rng.standard_normal((12, n), "float32"))])
    outputs = []
    for op in readers:
        if op == "add":
            value = b.node("add", [value, b.constant("bias", rng.standard_normal(n, "float32"))])
        elif op == "mul_input":
            value = b.node("mul", [value, b.input("y", TensorType((6, n)))])
        else:
            value = b.node(op, [value])
        if extra_reader:
            outputs.append(b.node("neg", [value]))
            extra_reader = False
    return b.finish([value, *outputs])


def _arrays(graph, rng):
    return [rng.standard_normal(t.shape).astype(np.float32) for t in graph.inputs.values()]


def _same_values(graph, padded, rng):
    arrays = _arrays(graph, rng)
    for got, want in zip(run(padded, *arrays), run(graph, *arrays), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _ops(graph):
    return [(n.op, n.type.shape[-1]) for n in graph.nodes]


def test_the_epilogue_moves_into_the_padded_shape(rng):
    graph = _linear()
    padded = pad_matmul(graph, lambda m, n, k: 16)
    assert _ops(padded) == [("matmul", 32), ("add", 32), ("relu", 32), ("slice", 20)]
    assert padded.outputs == graph.outputs
    assert sorted(padded.constants) == ["bias_add_in1_padded", "w_matmul_padded"]
    weight = padded.constants[padded.nodes[0].inputs[1]]
    np.testing.assert_array_equal(weight[:, 20:], np.repeat(weight[:, 19:20], 12, axis=1))
    _same_values(graph, padded, rng)


def test_the_slice_stays_above_what_cannot_move(rng):
    # a non-constant operand spanning the columns: the slice comes before it
    graph = _linear(readers=("add", "mul_input"))
    padded = pad_matmul(graph, lambda m, n, k: 16)
    assert _ops(padded) == [("matmul", 32), ("add", 32), ("slice", 20), ("mul", 20)]
    _same_values(graph, padded, rng)
    # a value read twice: the slice right after it
    graph = _linear(readers=("add", "relu"), extra_reader=True)
    padded = pad_matmul(graph, lambda m, n, k: 16)
    assert _ops(padded)[:3] == [("matmul", 32), ("add", 32), ("slice", 20)]
    _same_values(graph, padded, rng)


def test_nothing_moves_where_the_columns_divide_or_no_tile_applies():
    graph = _linear(n=32)
    assert pad_matmul(graph, lambda m, n, k: 16) is graph
    assert pad_matmul(_linear(), lambda m, n, k: None) is not None
    untouched = _linear()
    assert pad_matmul(untouched, lambda m, n, k: None) is untouched
    b = GraphBuilder()  # B not a constant: nothing to pad once
    x, w = b.input("x", TensorType((6, 12))), b.input("w", TensorType((12, 20)))
    variable = b.finish([b.node("matmul", [x, w])])
    assert pad_matmul(variable, lambda m, n, k: 16) is variable
