"""The operator library and a DSL + Schedule round trip through both targets."""

import numpy as np
import pytest

import workbench as wb
from workbench import T, ops
from workbench.backends import build, lower
from workbench.backends.numpy.numpy_ref import ReferenceProgram


def _run(func, inputs, target, **options):
    out = func.params[-1]
    result = np.full(out.shape, 7, out.dtype)
    build(func, target=target, **options)(*inputs, result)
    return result


@pytest.mark.parametrize("spec", ops.LIBRARY, ids=lambda spec: spec.name)
def test_library_on_numpy_target_both_paths(spec, rng):
    func = spec.func()
    inputs = spec.random_inputs(rng)
    expected = spec.run_reference(*inputs)
    assert set(ReferenceProgram(func).modes) == {"whole-array"}
    whole = _run(func, inputs, "numpy")
    loops = _run(func, inputs, "numpy", whole_array=False)
    np.testing.assert_allclose(whole, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loops, whole, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "conv2d_nchw", "layernorm", "attention"])
def test_library_on_cpu_target(name, rng):
    spec = ops.get(name)
    func = spec.func()
    inputs = spec.random_inputs(rng)
    np.testing.assert_allclose(
        _run(func, inputs, "cpu"), _run(func, inputs, "numpy"), rtol=1e-4, atol=1e-5
    )


@T.prim_func
def matmul(
    A: T.Buffer((64, 32), "float32"),
    B: T.Buffer((32, 48), "float32"),
    C: T.Buffer((64, 48), "float32"),
):
    for i, j, k in T.grid(64, 48, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_scheduled_dsl_matmul(rng):
    sch = wb.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 16])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.vectorize(ji)
    sch.unroll(ii)
    a, b = rng.random((64, 32), dtype=np.float32), rng.random((32, 48), dtype=np.float32)
    for target in ("numpy", "cpu"):
        c = np.empty((64, 48), np.float32)
        kernel = wb.build(sch, target=target)
        kernel(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)
        assert kernel.func == sch.mod
    # the lowered IR prints with the DSL printer: opaque blocks, the init as a guard
    text = lower(sch).script()
    assert 'with T.block("C"):' in text and "if k == 0:" in text
