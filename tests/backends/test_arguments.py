"""Bad arrays raise KernelArgumentError naming the argument; nothing is copied or cast."""

import numpy as np
import pytest

import ir_examples
from workbench.backends import KernelArgumentError, build


@pytest.fixture(scope="module")
def kernels():
    func = ir_examples.matmul(16, 16, 16)
    return {target: build(func, target=target) for target in ("numpy", "cpu")}


def _good():
    rng = np.random.default_rng(1)
    return [rng.random((16, 16), dtype=np.float32) for _ in range(3)]


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_wrong_dtype(kernels, target):
    a, b, c = _good()
    with pytest.raises(KernelArgumentError) as info:
        kernels[target](a, b.astype(np.float64), c)
    assert type(info.value) is KernelArgumentError and isinstance(info.value, ValueError)
    assert str(info.value) == (
        "argument 'B' of matmul: expected float32 array of shape (16, 16), "
        "got float64 array of shape (16, 16)"
    )


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_wrong_shape(kernels, target):
    a, b, c = _good()
    with pytest.raises(
        KernelArgumentError,
        match=r"^argument 'C' of matmul: expected float32 array "
        r"of shape \(16, 16\), got float32 array of shape \(16, 8\)$",
    ):
        kernels[target](a, b, c[:, :8].copy())


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_wrong_count(kernels, target):
    a, b, _ = _good()
    with pytest.raises(KernelArgumentError, match=r"^matmul expects 3 arrays \(A, B, C\), got 2$"):
        kernels[target](a, b)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_not_an_array(kernels, target):
    a, b, _ = _good()
    with pytest.raises(
        KernelArgumentError,
        match=r"^argument 'C' of matmul: expected float32 array "
        r"of shape \(16, 16\), got list \(not a numpy array\)$",
    ):
        kernels[target](a, b, [[0.0] * 16] * 16)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_non_contiguous(kernels, target):
    a, b, c = _good()
    with pytest.raises(
        KernelArgumentError,
        match=r"^argument 'A' of matmul: expected a C-contiguous "
        r"array, got a non-contiguous float32 array of shape \(16, 16\)",
    ):
        kernels[target](a.T, b, c)


def test_read_only_output(kernels):
    a, b, c = _good()
    c.flags.writeable = False
    with pytest.raises(
        KernelArgumentError,
        match="^argument 'C' of matmul: the kernel writes it but the array is read-only$",
    ):
        kernels["numpy"](a, b, c)


def test_outputs_untouched_after_a_bad_call(kernels):
    a, b, c = _good()
    before = c.copy()
    with pytest.raises(KernelArgumentError):
        kernels["cpu"](a, b.astype(np.float64), c)
    np.testing.assert_array_equal(c, before)


def test_build_rejects_unknown_target_and_option():
    func = ir_examples.matmul(4, 4, 4)
    with pytest.raises(
        ValueError, match="build: unknown target 'gpu'; choose one of 'numpy', 'cpu'"
    ):
        build(func, target="gpu")
    with pytest.raises(
        TypeError,
        match="build: unknown option\\(s\\) fast for target 'cpu'; "
        "known: fastmath, fast_exp, boundscheck",
    ):
        build(func, target="cpu", fast=True)
    with pytest.raises(TypeError, match="build expects a PrimFunc or a Schedule, got str"):
        build("matmul")
