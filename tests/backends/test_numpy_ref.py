"""The numpy reference executor: whole-array path, loop path, and the two against each other."""


import numpy as np
import pytest
import scheduled_examples as se
from work import work

import ir_examples
from workbench.backends import build
from workbench.backends.numpy_ref import ReferenceProgram
from workbench.ir import (
    TRUE,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterVar,
    PrimFunc,
    Range,
    Var,
)


def _run(func, inputs, out_specs, **options):
    outputs = [np.full(shape, 7, dtype) for shape, dtype in out_specs]
    build(func, target="numpy", **options)(*inputs, *outputs)
    return outputs


def _both_paths(func, inputs, out_specs):
    whole = _run(func, inputs, out_specs)
    loops = _run(func, inputs, out_specs, whole_array=False)
    for w, lp in zip(whole, loops, strict=True):
        np.testing.assert_allclose(w, lp, rtol=1e-5, atol=1e-6)
    return whole


def test_matmul_matches_numpy(rng):
    a, b = rng.random((16, 8), dtype=np.float32), rng.random((8, 12), dtype=np.float32)
    (c,) = _both_paths(ir_examples.matmul(16, 12, 8), [a, b], [((16, 12), np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_add_relu_matches_numpy(rng):
    a, b = rng.standard_normal(64, dtype=np.float32), rng.standard_normal(64, dtype=np.float32)
    (c,) = _both_paths(ir_examples.add_relu(64), [a, b], [((64,), np.float32)])
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))


def test_unscheduled_functions_take_the_whole_array_path():
    assert ReferenceProgram(ir_examples.matmul(4, 4, 4)).modes == ["whole-array"]
    assert ReferenceProgram(ir_examples.add_relu(4)).modes == ["whole-array", "whole-array"]
    assert ReferenceProgram(se.tiled_matmul(8, 8, 4, 4, 4)).modes == ["loops"]


def test_unscheduled_256_matmul_is_fast(rng):
    """Whole-array numpy, not a Python loop per element: counted in calls, not seconds (a
    per-element path would make 16M of them)."""
    kernel = build(ir_examples.matmul(256, 256, 256), target="numpy")
    a, b = rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    c = np.empty((256, 256), np.float32)
    kernel(a, b, c)  # the first call may compile or cache
    used = work(kernel, a, b, c)
    assert used.calls < 5_000, used.calls
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_row_max_reduction_both_paths(rng):
    a = rng.standard_normal((8, 32), dtype=np.float32)
    (r,) = _both_paths(se.row_max(8, 32), [a], [((8,), np.float32)])
    np.testing.assert_array_equal(r, a.max(axis=1))


def test_intrinsics_and_casts_both_paths(rng):
    a = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    specs = [((64,), np.float32)] * len(se.INTRINSIC_OUTPUTS) + [
        ((64,), np.int32),
        ((64,), np.float32),
    ]
    outputs = _both_paths(se.intrinsics(64), [a], specs)
    import math

    expected = {
        "exp": np.exp(a),
        "sqrt": np.sqrt(a),
        "tanh": np.tanh(a),
        "erf": np.array([math.erf(x) for x in a], np.float32),
        "sigmoid": 1 / (1 + np.exp(-a)),
        "pow": a ** np.float32(1.5),
        "abs": np.abs(a),
        "log": np.log(a),
        "rsqrt": 1 / np.sqrt(a),
    }
    for op, out in zip(se.INTRINSIC_OUTPUTS, outputs[:-2], strict=True):
        np.testing.assert_allclose(out, expected[op], rtol=1e-6, err_msg=op)
    np.testing.assert_array_equal(outputs[-2], (a * np.float32(10)).astype(np.int32))
    np.testing.assert_array_equal(outputs[-1], outputs[-2].astype(np.float32) * 0.5)


def test_branches_if_then_else_and_select(rng):
    func, expected = se.branches(32)
    a = rng.standard_normal(32, dtype=np.float32)
    b, d = _both_paths(func, [a], [((32,), np.float32)] * 2)
    eb, ed = expected(a)
    np.testing.assert_array_equal(b, eb)
    np.testing.assert_array_equal(d, ed)


@pytest.mark.parametrize("M,N", [(16, 32), (18, 20)])
def test_scheduled_tiled_matmul_runs_as_loops(rng, M, N):
    func = se.tiled_matmul(
        M, N, 8, 4, 8, outer=ForKind.PARALLEL, inner_i=ForKind.UNROLLED, inner_j=ForKind.VECTORIZED
    )
    a, b = rng.random((M, 8), dtype=np.float32), rng.random((8, N), dtype=np.float32)
    (c,) = _run(func, [a, b], [((M, N), np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_local_intermediate(rng):
    func, expected = se.local_intermediate(8, 16)
    a = rng.standard_normal((8, 16), dtype=np.float32)
    (c,) = _run(func, [a], [((8, 16), np.float32)])
    np.testing.assert_array_equal(c, expected(a))


def test_store_hitting_an_element_twice_falls_back_to_sequential_semantics(rng):
    """C[0] = A[v] for every v: sequentially the last write (A[N-1]) wins."""
    N = 8
    A, C = Buffer("A", (N,)), Buffer("C", (1,))
    v, i = Var("v"), Var("i")
    block = Block(
        "C",
        (IterVar(v, Range(IntImm(0), IntImm(N))),),
        (),
        (),
        BufferStore(C, BufferLoad(A, (v,)), (IntImm(0),)),
    )
    root = Block(
        "root",
        (),
        (),
        (),
        For(i, IntImm(0), IntImm(N), ForKind.SERIAL, BlockRealize((i,), TRUE, block)),
    )
    func = PrimFunc("last_write", (A, C), BlockRealize((), TRUE, root))
    a = rng.standard_normal(N, dtype=np.float32)
    (c,) = _both_paths(func, [a], [((1,), np.float32)])
    assert c[0] == a[-1]
