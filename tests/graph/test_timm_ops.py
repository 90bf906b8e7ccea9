"""The ops timm's models brought in (tests/graph/test_zoo2_timmz.py), each against PyTorch on
random inputs at odd shapes, compiled for the cpu (Numba, default schedules) and numpy:
average pooling's ``ceil_mode`` / ``count_include_pad=False`` / ``divisor_override``
(ResNet-D's average-pool shortcut, PoolFormer's token mixer), ``linalg_vector_norm``
(``F.normalize`` in XCiT's and EdgeNeXt's cross-covariance attention) and ``torch.div`` with
a ``rounding_mode`` (on run-time tensors, and folded where its inputs are constants).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.graph import from_torch  # noqa: E402
from workbench.graph.frontends.pool_windows import pool_plan  # noqa: E402

F = torch.nn.functional


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _pools(x):
    return (F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),  # PoolFormer
            F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=False),  # ResNet-D
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(x, (3, 2), (2, 3), (1, 0), ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(x, 3, 2, 1, divisor_override=4),
            F.avg_pool1d(x[0], 3, 2, 1, ceil_mode=True, count_include_pad=False))


def _norms(x):
    return (F.normalize(x, dim=-1), F.normalize(x, p=1.0, dim=1),
            torch.linalg.vector_norm(x, float("inf"), (0, 2)),
            torch.linalg.vector_norm(x, -float("inf"), 2, keepdim=True),
            torch.linalg.vector_norm(x * (x > 0), 0, 1), torch.linalg.vector_norm(x, 3.0, keepdim=True),
            x.norm(dim=(1, 2)))


def _divs(x, y):
    y = y.abs() + 0.25
    return (torch.div(x * 7, y, rounding_mode="floor"), torch.div(x * 7, y, rounding_mode="trunc"),
            torch.div(x * 7, 2, rounding_mode="floor"), (x * 9).long() // 4,
            torch.div((x * 9).long(), -4, rounding_mode="trunc"))


CASES = {"pools": (_pools, [(2, 3, 7, 13)]), "norms": (_norms, [(2, 7, 13)]),
         "divs": (_divs, [(3, 13), (3, 13)])}


@pytest.mark.parametrize("target", ["cpu", "numpy"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_timm_ops_match_torch(name, target):
    fn, shapes = CASES[name]
    gen = torch.Generator().manual_seed(3)
    inputs = tuple(torch.randn(*s, generator=gen) for s in shapes)
    model = _Fn(fn).eval()
    with torch.no_grad():
        expected = [e.numpy() for e in model(*inputs)]
    got = wb.compile(model, inputs, target=target)(*[x.numpy() for x in inputs])
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_rounding_div_of_constants_is_folded_at_import():
    def positions(x):  # EdgeNeXt's / XCiT's Fourier positional encoding
        dim_t = torch.arange(8, dtype=torch.float32)
        return x * 10000 ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / 8)

    x = torch.randn(3, 8)
    graph = from_torch(_Fn(positions).eval(), (x,))
    assert [node.op for node in graph.nodes] == ["mul"]
    with torch.no_grad():
        expected = positions(x).numpy()
    np.testing.assert_allclose(wb.compile(graph, target="numpy")(x.numpy()), expected,
                               rtol=1e-6)


def test_pool_plan_matches_torch_output_sizes():
    for size, kernel, stride, pad in [(7, 3, 2, 1), (13, 2, 2, 0), (5, 3, 3, 1), (6, 4, 3, 2)]:
        x = torch.zeros(1, 1, size, size)
        extra, _ = pool_plan((size, size), (kernel,) * 2, (stride,) * 2, (pad,) * 2, True)
        out = F.avg_pool2d(x, kernel, stride, pad, ceil_mode=True).shape[-1]
        assert (size + 2 * pad + extra[0] - kernel) // stride + 1 == out


def test_onnx_average_pools_match_torch():
    """AveragePool's ``count_include_pad`` (ONNX's default 0) and ``ceil_mode``."""
    onnx = pytest.importorskip("onnx")
    import io

    def pools(x):
        return _pools(x)[:4]

    x = torch.randn(2, 3, 7, 13, generator=torch.Generator().manual_seed(4))
    buffer = io.BytesIO()
    torch.onnx.export(_Fn(pools).eval(), (x,), buffer, dynamo=False)
    proto = onnx.load_from_string(buffer.getvalue())
    assert {"AveragePool"} <= {node.op_type for node in proto.graph.node}
    with torch.no_grad():
        expected = [e.numpy() for e in pools(x)]
    got = wb.compile(proto, target="numpy")(x.numpy())
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
