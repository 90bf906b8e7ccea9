"""The lean call path of CUDA kernels (workbench/backends/cuda/cuda_launch.py): a plan per shape
signature after the first checked call; wrong arguments still raise the full path's errors."""

import os

import numpy as np
import pytest
from numba import cuda

from workbench import ops, recipes
from workbench.backends import KernelArgumentError, build
from workbench.backends.cuda.cuda_graph import contiguous_strides
from workbench.backends.cuda.cuda_launch import _interface_pointer, signature

pytestmark = pytest.mark.cuda


def _kernel_and_args(rng, n=8):
    kernel = build(recipes.get("matmul", "naive", "cuda")(ops.matmul(n, n, n), tile=4), target="cuda")
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    return kernel, a, b


def test_second_call_with_a_signature_uses_its_plan(rng):
    kernel, a, b = _kernel_and_args(rng)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.zeros((8, 8), np.float32))
    assert kernel._lean.plans == {}
    kernel(da, db, dc)
    assert list(kernel._lean.plans) == [signature((da, db, dc))]
    a2 = rng.standard_normal((8, 8), dtype=np.float32)
    kernel(cuda.to_device(a2), db, dc)  # new data, same signature: the plan, new pointers
    np.testing.assert_allclose(dc.copy_to_host(), a2 @ b, rtol=1e-5, atol=1e-5)
    assert len(kernel._lean.plans) == 1


def test_host_arrays_make_no_plan(rng):
    kernel, a, b = _kernel_and_args(rng)
    c = np.zeros((8, 8), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    assert kernel._lean.plans == {}


def test_wrong_shapes_still_raise_the_same_errors_after_a_plan(rng):
    kernel, a, b = _kernel_and_args(rng)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.zeros((8, 8), np.float32))
    kernel(da, db, dc)
    wrong = cuda.to_device(np.zeros((8, 4), np.float32))
    with pytest.raises(
        KernelArgumentError,
        match=r"argument 'B' of matmul: expected float32 array of shape \(8, 8\), got float32 "
        r"array of shape \(8, 4\)",
    ):
        kernel(da, wrong, dc)
    with pytest.raises(KernelArgumentError, match="argument 'B' of matmul: expected float32"):
        kernel(da, cuda.to_device(np.zeros((8, 8))), dc)
    with pytest.raises(KernelArgumentError, match="matmul expects 3 arrays, got 2"):
        kernel(da, db)
    assert len(kernel._lean.plans) == 1  # failed signatures are not remembered


def test_disabled_lean_path_takes_the_checked_path(rng):
    kernel, a, b = _kernel_and_args(rng)
    kernel._lean.enabled = False
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.zeros((8, 8), np.float32))
    kernel(da, db, dc)
    assert kernel._lean.plans == {}
    np.testing.assert_allclose(dc.copy_to_host(), a @ b, rtol=1e-5, atol=1e-5)


class _Strided:
    def __init__(self, shape, strides):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "strides": strides,
            "typestr": "<f4",
            "data": (4096, False),
            "version": 3,
        }


def test_non_contiguous_arrays_never_take_the_lean_path():
    assert contiguous_strides((3, 5), 4) == (20, 4)
    assert _interface_pointer(_Strided((3, 5), None)) == 4096
    assert _interface_pointer(_Strided((3, 5), (20, 4))) == 4096
    assert _interface_pointer(_Strided((3, 5), (40, 8))) is None


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="needs a real GPU")
def test_driver_plan_on_a_real_gpu(rng):
    from workbench.backends.cuda.cuda_launch import _DriverLaunch

    kernel, a, b = _kernel_and_args(rng)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(np.zeros((8, 8), np.float32))
    kernel(da, db, dc)
    (plan,) = kernel._lean.plans.values()
    assert all(isinstance(launch, _DriverLaunch) for launch in plan.launches)
    a2 = rng.standard_normal((8, 8), dtype=np.float32)
    kernel(cuda.to_device(a2), db, dc)
    np.testing.assert_allclose(dc.copy_to_host(), a2 @ b, rtol=1e-5, atol=1e-5)
