"""Kernel arguments that share memory: KernelArgumentAliasError naming both parameters."""

import numpy as np
import pytest

import workbench as wb
from workbench.backends import KernelArgumentAliasError, KernelArgumentError

ADD = '''
@T.prim_func
def add(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
        C: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vj, vi]
'''

INPLACE = '''
@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("A"):
            vi = T.axis.spatial(8, i)
            A[vi] = A[vi] * B[vi]
'''

TWO_OUTPUTS = '''
@T.prim_func
def split(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"),
          C: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
    for i in T.serial(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * T.float32(2)
'''

TARGETS = ("numpy", "cpu")


@pytest.mark.parametrize("target", TARGETS)
def test_same_array_as_input_and_output(target, rng):
    kernel = wb.build(wb.from_source(ADD), target=target)
    a = rng.standard_normal((8, 8)).astype("float32")
    b = rng.standard_normal((8, 8)).astype("float32")
    with pytest.raises(KernelArgumentAliasError) as info:
        kernel(a, b, b)
    assert isinstance(info.value, KernelArgumentError)
    assert str(info.value) == ("arguments 'B' and 'C' of add share memory: the kernel reads 'B' "
                               "and writes 'C' (pass a copy, e.g. B.copy())")


@pytest.mark.parametrize("target", TARGETS)
def test_overlapping_views(target, rng):
    kernel = wb.build(wb.from_source(INPLACE.replace("A[vi] = A[vi] * B[vi]",
                                                     "A[vi] = B[vi] * T.float32(2)")),
                      target=target)
    base = rng.standard_normal(12).astype("float32")
    with pytest.raises(KernelArgumentAliasError) as info:
        kernel(base[4:], base[:8])
    assert "arguments 'B' and 'A' of scale share memory" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_two_outputs_in_one_array(target, rng):
    kernel = wb.build(wb.from_source(TWO_OUTPUTS), target=target)
    a = rng.standard_normal(8).astype("float32")
    out = np.empty(8, "float32")
    with pytest.raises(KernelArgumentAliasError) as info:
        kernel(a, out, out)
    assert str(info.value) == ("arguments 'C' and 'B' of split share memory: the kernel writes "
                               "'C' and writes 'B' (pass a copy, e.g. C.copy())")


@pytest.mark.parametrize("target", TARGETS)
def test_in_place_update_of_one_buffer_is_fine(target, rng):
    kernel = wb.build(wb.from_source(INPLACE), target=target)
    a = rng.standard_normal(8).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    expected = a * b
    kernel(a, b)
    np.testing.assert_allclose(a, expected, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_disjoint_views_of_one_array_are_fine(target, rng):
    kernel = wb.build(wb.from_source(ADD), target=target)
    base = rng.standard_normal((3, 8, 8)).astype("float32")
    a, b = base[0].copy(), base[1].copy()
    kernel(base[0], base[1], base[2])
    np.testing.assert_allclose(base[2], a + b.T, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_two_read_only_inputs_may_alias(target, rng):
    kernel = wb.build(wb.from_source(ADD), target=target)
    a = rng.standard_normal((8, 8)).astype("float32")
    c = np.empty((8, 8), "float32")
    kernel(a, a, c)
    np.testing.assert_allclose(c, a + a.T, rtol=1e-6)
