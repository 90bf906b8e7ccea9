"""flops and compulsory bytes of every library operator, against counts made by hand."""

import pytest

from workbench import ops
from workbench.ir.analysis import block_flops, flops, min_bytes

SPECS = {spec.name: spec for spec in ops.LIBRARY}


def _hand_counts():
    M, N, K = 16, 12, 8
    b = 2
    f32 = 4
    conv = SPECS["conv2d_nchw"].shapes  # 1x3x7x7, 4 filters 3x3, stride 2, padding 1 -> 4x4
    P = Q = 4
    return {
        "matmul": (2 * M * N * K, f32 * (M * K + K * N + M * N)),
        "batch_matmul": (2 * b * 8 * 6 * 4, f32 * b * (8 * 4 + 4 * 6 + 8 * 6)),
        "matmul_bias_relu": (2 * 8 * 12 * 6 + 2 * 8 * 12, f32 * (8 * 6 + 6 * 12 + 12 + 8 * 12)),
        "conv2d_nchw": (2 * 4 * P * Q * 3 * 3 * 3,
                        f32 * (conv["C"] * 7 * 7 + 4 * 3 * 3 * 3 + 4 * P * Q)),
        # 6x6x3 input, 4 filters 3x3 dilation 2 padding 2 stride 1 -> 6x6x4
        "conv2d_nhwc": (2 * 6 * 6 * 4 * 3 * 3 * 3, f32 * (6 * 6 * 3 + 3 * 3 * 3 * 4 + 6 * 6 * 4)),
        "depthwise_conv2d_nchw": (2 * 4 * 6 * 6 * 3 * 3, f32 * (4 * 6 * 6 + 4 * 9 + 4 * 6 * 6)),
        # 7x7 -> 4x4 with a 3x3 window: one max per window element
        "max_pool2d": (3 * 4 * 4 * 9, f32 * (3 * 7 * 7 + 3 * 4 * 4)),
        "avg_pool2d": (3 * 4 * 4 * 4 + 3 * 4 * 4, f32 * (3 * 8 * 8 + 3 * 4 * 4)),
        # max: 1, expsum: sub exp add, norm: sub exp div
        "softmax": (7 * 6 * 10, f32 * 2 * 6 * 10),
        # mean: add; var: (sub mul) twice, mul, add; norm: sub mul, mul add rsqrt, mul mul, add
        "layernorm": (15 * 6 * 10, f32 * (2 * 6 * 10 + 2 * 10)),
        # sq_sum: mul add; norm: mul add rsqrt mul mul
        "rmsnorm": (7 * 6 * 10, f32 * (2 * 6 * 10 + 10)),
        "add": (60, f32 * 3 * 60),
        "multiply": (60, f32 * 3 * 60),
        "relu": (60, f32 * 2 * 60),
        "gelu": (5 * 60, f32 * 2 * 60),  # mul mul add erf mul
        "add_mul_gelu": (7 * 60, f32 * 4 * 60),
        "transpose": (0, f32 * 2 * 60),
        "reduce_sum": (60, f32 * (60 + 6)),
        "reduce_mean": (60 + 10, f32 * (60 + 10)),  # axis 0: 10 outputs
        "reduce_max": (60, f32 * (60 + 6)),
        # scores 2SSD; max: mul max; expsum: mul sub exp add; norm: mul sub exp div; out 2SSD
        "attention": (2 * (2 * 1 * 2 * 6 * 6 * 4) + 10 * 1 * 2 * 6 * 6, f32 * 4 * (1 * 2 * 6 * 4)),
    }


@pytest.mark.parametrize("name", list(SPECS))
def test_flops_and_bytes_by_hand(name):
    expected_flops, expected_bytes = _hand_counts()[name]
    func = SPECS[name].func()
    assert flops(func) == expected_flops
    assert min_bytes(func) == expected_bytes


def test_padding_bounds_test_is_not_counted_as_flops():
    counts = block_flops(ops.conv2d_nchw(1, 2, 5, 5, 3, 3, 3, padding=1))
    assert counts["pad_temp"] == 0
    assert counts["conv2d_nchw"] == 2 * 3 * 5 * 5 * 2 * 9
