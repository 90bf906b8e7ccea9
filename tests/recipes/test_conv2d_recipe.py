"""The conv2d ``blocked`` cpu recipe and the graph rule choosing it, against numpy/torch."""

from __future__ import annotations

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build
from workbench.recipes import conv2d_cpu


def _numpy_conv(data, weight, stride=1, padding=1):
    padded = np.pad(data, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, weight.shape[2:], axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]
    return np.einsum("nchwrs,kcrs->nkhw", windows, weight.astype("float64"))


@pytest.mark.parametrize(("N", "C", "HW", "K", "stride", "tk"), [
    (1, 3, 13, 24, 1, None),   # 3 input channels, 13x13
    (2, 17, 7, 8, 1, None),    # 17 input channels, 7x7, batch 2
    (1, 24, 13, 6, 2, 2),      # stride 2, a block of 2
    (1, 5, 7, 12, 1, 4),
])
def test_blocked_matches_numpy(N, C, HW, K, stride, tk):
    func = ops.conv2d_nchw(N, C, HW, HW, K, 3, 3, stride=stride, padding=1)
    sch = recipes.get("conv2d", "blocked", "cpu")(func, tk=tk)
    rng = np.random.default_rng(1)
    data = rng.standard_normal(func.params[0].shape).astype("float32")
    weight = rng.standard_normal(func.params[1].shape).astype("float32")
    out = np.full(func.params[2].shape, np.nan, "float32")
    build(sch, target="cpu")(data, weight, out)
    np.testing.assert_allclose(out, _numpy_conv(data, weight, stride), rtol=1e-4, atol=1e-4)


def test_blocked_refuses_channels_without_a_block():
    with pytest.raises(ValueError, match="17 output channels"):
        conv2d_cpu.blocked_cpu(ops.conv2d_nchw(1, 3, 7, 7, 17, 3, 3))
    with pytest.raises(ValueError, match="no conv2d_nchw block"):
        conv2d_cpu.blocked_cpu(ops.matmul(8, 8, 8))


def test_rule_leaves_small_and_odd_convolutions_to_the_generic_rules(monkeypatch):
    assert conv2d_cpu.conv2d_rule(ops.conv2d_nchw(1, 64, 14, 14, 64, 3, 3)) is None  # off
    monkeypatch.setattr(conv2d_cpu, "DEFAULT", True)
    assert conv2d_cpu.conv2d_rule(ops.conv2d_nchw(1, 3, 7, 7, 8, 3, 3)) is None  # small
    assert conv2d_cpu.conv2d_rule(ops.conv2d_nchw(1, 64, 28, 28, 17, 3, 3)) is None  # odd K
    sch = conv2d_cpu.conv2d_rule(ops.conv2d_nchw(1, 64, 14, 14, 64, 3, 3))
    assert sch is not None and "T.parallel" in sch.mod.script()


def test_compiled_model_with_the_rule_matches_torch(monkeypatch):
    torch = pytest.importorskip("torch")
    import workbench as wb

    monkeypatch.setattr(conv2d_cpu, "DEFAULT", True)
    monkeypatch.setattr(conv2d_cpu, "SMALL_WORK", 0)  # every conv of the tiny model
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 24, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(24, 16, 3, padding=1, bias=False), torch.nn.SiLU()).eval()
    x = torch.randn(1, 3, 13, 13)
    # layout=False: the cpu target's layout pass packs every conv (the packed recipe)
    compiled = wb.compile(model, (x,), jobs=1, layout=False)
    traces = [k.trace_json for k in compiled.kernels]
    assert sum('"unroll"' in t for t in traces) == 2  # both convolutions got the recipe
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x), want, rtol=1e-4, atol=1e-5)
