"""Convolutions as matrix products on the GPU (``passes.conv_gemm``, ``CONV_AS_GEMM``):
the graph's ``im2col`` against ``torch.nn.functional.unfold``, and a residual conv model
compiled for cuda (the simulator) against PyTorch, its activations kept CNHW between the
convolutions (no transpose kernel but the last)."""

import numpy as np
import pytest

import workbench as wb
from workbench.graph.ir import TensorType
from workbench.graph.ops import evaluate, infer_type

torch = pytest.importorskip("torch")
nn = torch.nn


@pytest.mark.parametrize("kernel, stride, padding, dilation, layout", [
    ((3, 3), (1, 1), (1, 1), (1, 1), "NCHW"),
    ((3, 2), (2, 1), (1, 0), (1, 2), "NCHW"),
    ((7, 7), (2, 2), (3, 3), (1, 1), "CNHW"),
    ((1, 1), (2, 2), (0, 0), (1, 1), "CNHW"),
])
def test_im2col_is_unfold_with_the_images_side_by_side(rng, kernel, stride, padding,
                                                       dilation, layout):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation,
             "layout": layout}
    data = x.transpose(1, 0, 2, 3).copy() if layout == "CNHW" else x
    got = evaluate("im2col", [data], attrs)
    unfolded = nn.functional.unfold(torch.from_numpy(x), kernel, dilation=dilation,
                                    padding=padding, stride=stride)
    want = unfolded.permute(1, 0, 2).reshape(unfolded.shape[1], -1).numpy()
    np.testing.assert_array_equal(got, want)
    assert infer_type("im2col", [TensorType(data.shape)], attrs).shape == want.shape


class _Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = nn.Conv2d(8, 12, 3, stride=2, padding=1)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.c2(y) + y)
        return nn.functional.max_pool2d(self.c3(y), 2)


@pytest.mark.cuda
def test_a_residual_model_runs_its_convolutions_as_matmuls(monkeypatch):
    from workbench.graph.passes import conv_gemm

    torch.manual_seed(0)
    model = _Residual().eval()
    with torch.no_grad():
        model.b1.running_mean.uniform_(-1, 1)
        model.b1.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 7, 9)
    monkeypatch.setattr(conv_gemm, "CONV_AS_GEMM", True)
    compiled = wb.compile(model, (x,), target="cuda")
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns.count("im2col") == 3 and "conv2d" not in " ".join(patterns)
    # bias (the folded batch norm), the residual and the relu in the matmul's epilogue;
    # the pool on the CNHW value; one transpose, at the end
    assert "matmul+add+add+relu" in patterns and patterns.count("transpose") == 1
    assert patterns[-1] == "transpose"
    layouts = [k.func.params[0].shape for k in compiled.kernels if k.pattern == "im2col"]
    assert layouts[1] == (8, 2, 7, 9)  # the second conv reads the first's output as CNHW
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_the_rewrite_is_on_by_default_below_the_window_cap(monkeypatch):
    from workbench.graph.passes import conv_gemm

    assert conv_gemm.CONV_AS_GEMM is True
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 5, 2, stride=2)).eval()
    x = torch.randn(2, 3, 6, 5)
    patterns = [k.pattern for k in wb.compile(model, (x,), target="cuda").kernels]
    assert patterns.count("im2col") == 2 and "conv2d" not in " ".join(patterns)
    # the first window matrix: 27 x 60 floats (6480 bytes), the second 16 x 12 (768)
    monkeypatch.setattr(conv_gemm, "MAX_WINDOW_BYTES", 1000)
    compiled = wb.compile(model, (x,), target="cuda")
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns.count("im2col") == 1 and patterns[0] == "conv2d+relu"
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
def test_a_pointwise_convolution_is_a_matmul_of_its_input_with_no_window_matrix(
        monkeypatch):
    """A 1 x 1 conv (stride 1, no padding) reads the CNHW activation as its ``(C, N * H * W)``
    matrix: after a convolution no copy at all, on the model's input one transpose; the
    window cap does not apply (there is no window matrix)."""
    from workbench.graph.passes import conv_gemm

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 6, 1),
                          nn.ReLU(), nn.Conv2d(6, 5, 1)).eval()
    x = torch.randn(2, 3, 6, 5)
    compiled = wb.compile(model, (x,), target="cuda")
    assert [k.pattern for k in compiled.kernels] == [
        "im2col", "matmul+add+relu", "matmul+add+relu", "matmul+add", "transpose"]
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)

    first = nn.Sequential(nn.Conv2d(3, 8, 1), nn.ReLU()).eval()
    monkeypatch.setattr(conv_gemm, "MAX_WINDOW_BYTES", 16)
    compiled = wb.compile(first, (x,), target="cuda")
    assert [k.pattern for k in compiled.kernels] == ["transpose", "matmul+add+relu",
                                                     "transpose"]
    np.testing.assert_allclose(compiled(x), first(x).detach().numpy(), rtol=1e-4, atol=1e-5)


class _Excite(nn.Module):
    """A squeeze-excitation block (efficientnet's): the conv's output scaled by a per-channel
    value computed from it, an operand of the scale that is not transposed."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.squeeze = nn.Conv2d(6, 6, 1, groups=6)  # depthwise: stays a conv

    def forward(self, x):
        y = nn.functional.silu(self.conv(x))
        scale = torch.sigmoid(self.squeeze(nn.functional.adaptive_avg_pool2d(y, 1)))
        return y * scale


@pytest.mark.cuda
def test_a_transpose_moved_past_a_scale_does_not_move_back():
    """``mul(swap(a), s)`` becomes ``swap(mul(a, swap(s)))`` once: the inserted ``swap(s)``
    does not move ``mul`` back (the rewrite once looped without end on efficientnet)."""
    torch.manual_seed(0)
    model = _Excite().eval()
    x = torch.randn(2, 3, 5, 6)
    compiled = wb.compile(model, (x,), target="cuda")
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns.count("im2col") == 1 and any("matmul" in p for p in patterns)
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
def test_the_planes_schedule_of_im2col_has_no_division_and_equals_torch(monkeypatch):
    """``IM2COL_SCHEDULE = "planes"`` (the default): every ``im2col`` kernel (NCHW and CNHW data, strides,
    padding, dilation, 7 x 7 and 1 x 1 windows) split by its annotated ``(C, R, S, N, P, Q)``
    so the generated index math has no ``//`` or ``%``; the model still equals torch, and the
    annotation survives printing and parsing."""
    from workbench.recipes import graph_cuda_ops
    from workbench.recipes.graph_cuda_ops import RULES

    monkeypatch.setattr(graph_cuda_ops, "IM2COL_SCHEDULE", "planes")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 7, stride=2, padding=3), nn.ReLU(),
                          nn.Conv2d(4, 6, 3, padding=2, dilation=2), nn.ReLU(),
                          nn.Conv2d(6, 5, 1, stride=2), nn.ReLU(),
                          nn.Conv2d(5, 4, 3, padding=1)).eval()
    x = torch.randn(2, 3, 13, 11)
    compiled = wb.compile(model, (x,), target="cuda")
    columns = [k for k in compiled.kernels if k.pattern == "im2col"]
    assert len(columns) == 4
    for kernel in columns:
        assert next(r.__name__ for r in RULES if r(kernel.func) is not None) == "im2col_planes"
        body = kernel.source[kernel.source.index("# block T_im2col"):]
        body = body[:body.index("# launch")]
        assert "//" not in body and "%" not in body
        assert wb.from_source(kernel.func.script()).script() == kernel.func.script()
    assert columns[0].func.script().count('T.block_attr({"im2col_dims": (3, 7, 7, 2, 7, 6)})') == 1
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
def test_im2col_gets_planes_by_default_and_v4_on_request(monkeypatch):
    """The default ``IM2COL_SCHEDULE`` is ``"planes"``; ``"v4"`` hands the same kernel to
    ``elementwise_v4`` (the schedule timed before), and both equal torch."""
    from workbench.recipes import graph_cuda_ops
    from workbench.recipes.graph_cuda_ops import RULES

    assert graph_cuda_ops.IM2COL_SCHEDULE == "planes"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)).eval()
    x = torch.randn(2, 3, 8, 16)
    compiled = wb.compile(model, (x,), target="cuda")
    (second,) = [k for k in compiled.kernels if k.pattern == "im2col"][1:]
    assert next(r.__name__ for r in RULES if r(second.func) is not None) == "im2col_planes"
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    monkeypatch.setattr(graph_cuda_ops, "IM2COL_SCHEDULE", "v4")
    assert graph_cuda_ops.im2col_planes(second.func) is None
    assert graph_cuda_ops.elementwise_v4(second.func) is not None
    again = wb.compile(model, (x,), target="cuda")
    assert "store4(T_im2col" in [k for k in again.kernels if k.pattern == "im2col"][1].source
    np.testing.assert_allclose(again(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
