"""The bounds-checked debug build: ``wb.build(..., debug=True)``."""

import numpy as np
import pytest

import workbench as wb
from workbench.backends import KernelBoundsError
from workbench.backends.common.bounds_checks import add_bounds_checks

GATHER = '''
@T.prim_func
def gather(A: T.Buffer((128,), "float32"), I: T.Buffer((128,), "int32"),
           B: T.Buffer((128,), "float32")):
    for i in T.serial(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[I[vi]] + A[vi]
'''

SHIFT = '''
@T.prim_func
def shift(A: T.Buffer((128,), "float32"), S: T.Buffer((1,), "int32"),
          B: T.Buffer((128,), "float32")):
    for i in T.serial(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi + S[0]]
'''

TARGETS = ("numpy", "cpu")


@pytest.fixture(scope="module")
def gather():
    return wb.from_source(GATHER)


def test_only_unproven_accesses_are_checked(gather):
    checked, table = add_bounds_checks(gather)
    assert [(c.block, c.buffer, c.access, c.dim, c.extent, c.var_names) for c in table] == [
        ("B", "A", "A[I[vi]]", 0, 128, ("vi",))
    ]
    assert "A[T.bounds_check(I[vi], 128, 0, vi)] + A[vi]" in checked.script()


def test_a_well_formed_schedule_gets_no_check():
    sch = wb.Schedule(wb.ops.matmul(30, 16, 8))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 8])
    assert add_bounds_checks(sch.mod)[1] == ()
    kernel = wb.build(sch, target="cpu", debug=True)
    assert "checked_index" not in kernel.source and kernel.bounds_checks == ()


@pytest.mark.parametrize("target", TARGETS)
def test_in_bounds_run_matches_numpy(gather, target, rng):
    kernel = wb.build(gather, target=target, debug=True)
    a = rng.standard_normal(128).astype("float32")
    idx = rng.integers(0, 128, 128).astype("int32")
    b = rng.standard_normal(128).astype("float32")
    kernel(a, idx, b)
    np.testing.assert_allclose(b, a[idx] + a, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_out_of_bounds_gather_raises_with_the_values(gather, target, rng):
    kernel = wb.build(gather, target=target, debug=True)
    a = rng.standard_normal(128).astype("float32")
    idx = np.arange(128, dtype="int32")
    idx[37] = 200
    with pytest.raises(KernelBoundsError) as info:
        kernel(a, idx, np.empty(128, "float32"))
    err = info.value
    assert isinstance(err, IndexError)
    assert str(err) == ("block 'B': A[I[vi]] reads index 200 of dimension 0 of 'A', out of "
                        "range 0..127 (vi=37)")
    assert (err.block, err.buffer, err.access, err.dim, err.index, err.values) == (
        "B", "A", "A[I[vi]]", 0, 200, {"vi": 37})


@pytest.mark.parametrize("target", TARGETS)
def test_shift_past_the_last_row(target, rng):
    """The issue's case, with the shift read from a buffer so no static proof exists:
    ``A[vi + 1]`` at vi=127 is index 128."""
    kernel = wb.build(wb.from_source(SHIFT), target=target, debug=True)
    a = rng.standard_normal(128).astype("float32")
    with pytest.raises(KernelBoundsError) as info:
        kernel(a, np.array([1], "int32"), np.empty(128, "float32"))
    assert str(info.value) == ("block 'B': A[vi + S[0]] reads index 128 of dimension 0 of "
                               "'A', out of range 0..127 (vi=127)")
    b = np.empty(128, "float32")
    kernel(a, np.array([0], "int32"), b)
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("target", TARGETS)
def test_negative_index_reports_the_signed_value(target, rng):
    kernel = wb.build(wb.from_source(SHIFT), target=target, debug=True)
    with pytest.raises(KernelBoundsError) as info:
        kernel(rng.standard_normal(128).astype("float32"), np.array([-1], "int32"),
               np.empty(128, "float32"))
    assert info.value.index == -1 and info.value.values == {"vi": 0}


def test_the_provable_case_is_caught_before_the_build():
    """Without debug the cpu kernel would read past the end: the DSL rejects it."""
    text = SHIFT.replace("A[vi + S[0]]", "A[vi + 1]")
    with pytest.raises(wb.DSLError) as info:
        wb.from_source(text)
    assert info.value.kind == "out-of-bounds"


def test_debug_is_part_of_the_cache_key(gather):
    plain = wb.build(gather, target="cpu")
    debug = wb.build(gather, target="cpu", debug=True)
    assert "checked_index" in debug.source and "checked_index" not in plain.source
    assert plain.options["debug"] is False and debug.options["debug"] is True
    assert debug.options["promote"] is False
    again = wb.build(gather, target="cpu", debug=True)
    assert again.cache_hit == "memory" and again.source == debug.source


def test_checks_survive_a_schedule(rng):
    """Split and unroll the gather: the check follows the access into the new loops."""
    sch = wb.Schedule(wb.from_source(GATHER))
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, factors=[None, 4])
    sch.unroll(inner)
    kernel = wb.build(sch, target="cpu", debug=True)
    idx = np.arange(128, dtype="int32")
    idx[126] = -3
    with pytest.raises(KernelBoundsError) as info:
        kernel(rng.standard_normal(128).astype("float32"), idx, np.empty(128, "float32"))
    assert info.value.values == {"vi": 126} and info.value.index == -3
