"""fastmath kernels keep infinities meaningful (every LLVM fast-math flag but ``ninf``)."""

import re

import numpy as np

import workbench as wb
from workbench.backends.cpu import runtime
from workbench.ops.softmax_online import online_softmax_lanes


def test_fastmath_flags_leave_out_ninf():
    assert "ninf" not in runtime.FASTMATH_FLAGS
    assert "reassoc" in runtime.FASTMATH_FLAGS  # what lets reductions vectorize


def test_running_max_from_minus_infinity_with_fast_exp():
    # with ninf this kernel segfaulted inside fast_exp_f32 (exp of -inf - max)
    text = online_softmax_lanes(6, 128).script()
    text = re.sub(r"T\.float32\(-3\.40282\d*e\+38\)", 'T.float32("-inf")', text)
    func = wb.from_source(text)
    assert 'T.float32("-inf")' in func.script()
    kernel = wb.build(func, target="cpu")
    assert "fastmath=rt.FASTMATH_FLAGS" in kernel.source
    a = np.random.default_rng(0).standard_normal((6, 128)).astype(np.float32) * 30
    y = np.empty_like(a)
    kernel(a, y)
    e = np.exp(a.astype(np.float64) - a.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-7)
