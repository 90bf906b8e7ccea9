"""0-d buffers (``T.Buffer((), dtype)``, ``C[()]``) in the DSL, the printer and every target."""

import numpy as np
import pytest

import workbench as wb

SUM = '''
@T.prim_func
def total(A: T.Buffer((16,), "float32"), C: T.Buffer((), "float32")):
    for i in T.serial(16):
        with T.block("C"):
            vi = T.axis.reduce(16, i)
            with T.init():
                C[()] = T.float32(0)
            C[()] = C[()] + A[vi]
'''

SCALE = '''
@T.prim_func
def scale(A: T.Buffer((4, 8), "float32"), s: T.Buffer((), "float32"),
          B: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * s[()]
'''

NORMALIZE = '''
@T.prim_func
def normalize(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    S = T.alloc_buffer((), "float32")
    for i in T.serial(16):
        with T.block("S"):
            vi = T.axis.reduce(16, i)
            with T.init():
                S[()] = T.float32(0)
            S[()] = S[()] + A[vi] * A[vi]
    for i in T.serial(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] / T.sqrt(S[()])
'''

COPY = '''
@T.prim_func
def copy(A: T.Buffer((), "float64"), C: T.Buffer((), "float64")):
    with T.block("C"):
        C[()] = A[()] * T.float64(2)
'''

TARGETS = [("numpy", {}), ("numpy", {"whole_array": False}), ("cpu", {}),
           ("numpy", {"debug": True}), ("cpu", {"debug": True})]


def _cases(rng):
    a16 = rng.uniform(0.5, 1.5, 16).astype("float32")
    a48 = rng.uniform(-1, 1, (4, 8)).astype("float32")
    s = np.array(rng.uniform(0.5, 2.0), "float32")
    x = np.array(rng.uniform(-3, 3), "float64")
    return [
        (SUM, (a16,), lambda: np.array(a16.sum(), "float32")),
        (SCALE, (a48, s), lambda: a48 * s),
        (NORMALIZE, (a16,), lambda: a16 / np.sqrt((a16 * a16).sum())),
        (COPY, (x,), lambda: x * 2),
    ]


@pytest.mark.parametrize("target, options", TARGETS, ids=lambda v: str(v))
def test_zero_dim_buffers_match_numpy(target, options, rng):
    for text, inputs, expected in _cases(rng):
        func = wb.from_source(text)
        out = func.params[-1]
        result = np.asarray(rng.standard_normal(out.shape), dtype=out.dtype)  # garbage
        wb.build(func, target=target, **options)(*inputs, result)
        np.testing.assert_allclose(result, expected(), rtol=1e-5, err_msg=func.name)


@pytest.mark.parametrize("text", [SUM, SCALE, NORMALIZE, COPY])
def test_zero_dim_round_trips_through_the_printer(text):
    func = wb.from_source(text)
    printed = func.script()
    assert "[()]" in printed and "((), " in printed
    assert wb.from_source(printed) == func


def test_zero_dim_script_text():
    printed = wb.from_source(COPY).script()
    assert printed == '''@T.prim_func
def copy(A: T.Buffer((), "float64"), C: T.Buffer((), "float64")):
    with T.block("C"):
        T.reads(A[()])
        T.writes(C[()])
        C[()] = A[()] * T.float64(2)'''


def test_zero_dim_kernel_checks_the_shape(rng):
    kernel = wb.build(wb.from_source(COPY), target="cpu")
    with pytest.raises(wb.KernelArgumentError):
        kernel(np.zeros(1), np.zeros(()))
