"""The numpy references of the operator library, checked against naive loops and
compositions (so the references the library is tested against are themselves right)."""

import math

import numpy as np
import pytest

from workbench import ops


def test_conv_reference_against_naive_loops(rng):
    data = rng.uniform(-1, 1, (1, 2, 5, 6))
    weight = rng.uniform(-1, 1, (3, 2, 3, 2))
    stride, padding, dilation = 2, 1, 2
    padded = np.pad(data, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    P = (5 + 2 * padding - dilation * 2 - 1) // stride + 1
    Q = (6 + 2 * padding - dilation * 1 - 1) // stride + 1
    naive = np.zeros((1, 3, P, Q))
    for k in range(3):
        for y in range(P):
            for x in range(Q):
                for c in range(2):
                    for r in range(3):
                        for s in range(2):
                            naive[0, k, y, x] += (padded[0, c, y * stride + r * dilation,
                                                         x * stride + s * dilation] * weight[k, c, r, s])
    got = ops.reference.conv2d_nchw(data, weight, stride=stride, padding=padding, dilation=dilation)
    np.testing.assert_allclose(got, naive, rtol=1e-12)
    nhwc = ops.reference.conv2d_nhwc(data.transpose(0, 2, 3, 1), weight.transpose(2, 3, 1, 0),
                                     stride=stride, padding=padding, dilation=dilation)
    np.testing.assert_allclose(nhwc, naive.transpose(0, 2, 3, 1), rtol=1e-12)


def test_depthwise_reference_is_a_grouped_conv(rng):
    data = rng.uniform(-1, 1, (1, 3, 5, 5))
    weight = rng.uniform(-1, 1, (3, 1, 3, 3))
    got = ops.reference.depthwise_conv2d_nchw(data, weight, padding=1)
    for c in range(3):
        single = ops.reference.conv2d_nchw(data[:, c:c + 1], weight[c:c + 1], padding=1)
        np.testing.assert_allclose(got[:, c:c + 1], single, rtol=1e-12)


def test_pool_references_against_naive_loops(rng):
    data = rng.uniform(-1, 1, (1, 1, 5, 5))
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    zero_padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    mx = ops.reference.max_pool2d(data, kernel=3, stride=2, padding=1)
    avg = ops.reference.avg_pool2d(data, kernel=3, stride=2, padding=1)
    for y in range(3):
        for x in range(3):
            assert mx[0, 0, y, x] == padded[0, 0, 2 * y:2 * y + 3, 2 * x:2 * x + 3].max()
            assert avg[0, 0, y, x] == pytest.approx(zero_padded[0, 0, 2 * y:2 * y + 3, 2 * x:2 * x + 3].sum() / 9)


def test_nn_references(rng):
    a = rng.uniform(-3, 3, (4, 6))
    s = ops.reference.softmax(a)
    np.testing.assert_allclose(s.sum(axis=1), 1.0)
    np.testing.assert_allclose(s, np.exp(a) / np.exp(a).sum(axis=1, keepdims=True))
    gamma, beta = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
    ln = ops.reference.layernorm(a, np.ones(6), np.zeros(6), eps=0.0)
    np.testing.assert_allclose(ln.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(ln.var(axis=1), 1.0)
    np.testing.assert_allclose(ops.reference.layernorm(a, gamma, beta), ln * gamma + beta, atol=1e-5)
    rms = ops.reference.rmsnorm(a, np.ones(6), eps=0.0)
    np.testing.assert_allclose((rms ** 2).mean(axis=1), 1.0)
    assert ops.reference.gelu(np.array([0.0]))[0] == 0.0
    assert ops.reference.gelu(np.array([1.0]))[0] == pytest.approx(0.8413447460685429)


def test_attention_reference_by_composition(rng):
    q, k, v = (rng.uniform(-1, 1, (1, 2, 4, 3)) for _ in range(3))
    for h in range(2):
        scores = q[0, h] @ k[0, h].T / math.sqrt(3)
        probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(ops.reference.attention(q, k, v)[0, h], probs @ v[0, h])
