"""Cases the long property runs (``WORKBENCH_PROPERTY_EXAMPLES=400``, four seeds, race threads)
found on 2026-12-02, each reduced to its trace. Each once failed: a legal schedule whose
printed script the parser refused, a crash of the dependence analysis, or a move that made
a parallel loop race."""

from __future__ import annotations

import re

import pytest
from schedule_checks import assert_computes_reference, raises_unchanged

import workbench as wb
from workbench import ops
from workbench.ir.verify import verify
from workbench.schedule import Schedule
from workbench.schedule.errors_compute_location import ParallelRecomputeError
from workbench.schedule.errors_reindex import ReindexAccumulatorWithoutInitError
from workbench.script.errors import DSLError


def assert_script_parses_back(sch: Schedule) -> None:
    """The printed script parses (the DSL's loop-kind check included) to the same function."""
    assert wb.from_source(sch.mod.script()) == sch.mod


def test_split_by_one_keeps_a_fused_parallel_loop_independent():
    """seeds 1, 2, 3, 4 (loop primitives): ``(f0 + f1) // 10`` with ``f1`` in a loop of one
    iteration was read as a sum of two loops, and the DSL refused the printed ``T.parallel``."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_add"))
    fused = sch.fuse(i, j)
    sch.parallel(fused)
    outer, inner = sch.split(fused, factors=[None, 1])
    assert "T.parallel(60)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_split_by_one_of_a_fused_matmul_loop_under_parallel():
    """seed 1 (loop primitives): parallel(i), fuse(i, j), split(fused, [None, 1])."""
    func = ops.matmul(16, 12, 8)
    sch = Schedule(func)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    sch.split(sch.fuse(i, j), factors=[None, 1])
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_where_narrowing_of_a_repeated_bound_does_not_crash():
    """seed 3 (loop primitives): the ``T.where`` narrowing asked an IR variable for its truth
    value (``mapping.get(expr) and ...``) when two predicates bounded the same expression."""
    func = ops.batch_matmul(2, 8, 6, 4)
    sch = Schedule(func)
    b, i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    b0, b1 = sch.split(b, factors=[None, 4])
    fused = sch.fuse(b0, b1)
    sch.split(fused, factors=[None, 3])
    assert "T.where" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_compute_at_under_a_parallel_loop_that_would_share_the_intermediate():
    """seed 2 (all primitives): parallel(k), compute_at(pad_temp, k): every iteration of
    ``k`` would compute the whole padded input into one global buffer while the others read
    it. Refused, unchanged; with ``pad_temp`` local (private per iteration) it is legal."""
    func = ops.conv2d_nchw(1, 3, 7, 7, 4, 3, 3, stride=2, padding=1)
    sch = Schedule(func)
    _, k, _, _, _, _, _ = sch.get_loops(sch.get_block("conv2d_nchw"))
    sch.parallel(k)
    pad = sch.get_block("pad_temp")
    before, trace = sch.mod, str(sch.trace)
    with pytest.raises(ParallelRecomputeError) as info:
        sch.compute_at(pad, k, preserve_unit_loops=False)
    assert sch.mod == before and str(sch.trace) == trace
    message = str(info.value)
    assert "'pad_temp'" in message and "parallel loop 'k'" in message
    sch.set_scope(sch.get_block("pad_temp"), 0, "local")
    sch.compute_at(sch.get_block("pad_temp"), k, preserve_unit_loops=False)
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_compute_at_into_a_parallel_consumer_loop_of_attention():
    """seed 1 (all primitives): parallel(d) of the attention output, then compute_at of the
    softmax normalisation under it: each ``d`` would rewrite the whole row. Refused; a
    compute_at at the row loop ``i`` (outside ``d``) is legal."""
    func = ops.attention(1, 2, 6, 4)
    sch = Schedule(func)
    _, _, i, d, _ = sch.get_loops(sch.get_block("attention"))
    sch.parallel(d)
    with pytest.raises(ParallelRecomputeError):
        sch.compute_at(sch.get_block("T_softmax_norm"), d)
    sch.compute_at(sch.get_block("T_softmax_norm"), i)
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


# --- found on 2026-12-03 (seeds 21-24, with the fixes above) ------------------------------


def test_split_of_a_fused_parallel_loop_by_two():
    """seeds 22, 23 (loop and mixed): fuse(i, j), parallel, split(fused, [None, 2]) prints
    ``(f0 * 2 + f1) // 10`` and ``% 10``: a split of the fused loop, which the analysis read
    as unreadable and the parser refused as a race."""
    for func, name in ((ops.add(6, 10), "T_add"), (ops.matmul(16, 12, 8), "C")):
        sch = Schedule(func)
        loops = sch.get_loops(sch.get_block(name))
        fused = sch.fuse(loops[0], loops[1])
        sch.parallel(fused)
        sch.split(fused, factors=[None, 2])
        assert "T.parallel(" in sch.mod.script()
        assert_script_parses_back(sch)
        assert_computes_reference(sch, func)


def test_parallel_low_digit_under_an_inner_loop():
    """seed 21 (loop primitives): split(i, [3, 1, 2]), parallel(i_2), fuse the other two and
    reorder i_2 outermost: ``vi = f * 2 + i_2`` with ``f`` an inner loop; ``i_2`` is the low
    digit, so its two iterations never meet."""
    func = ops.softmax(6, 10)
    sch = Schedule(func)
    i, _ = sch.get_loops(sch.get_block("T_softmax_maxelem"))
    i0, i1, i2 = sch.split(i, factors=[3, 1, 2])
    sch.parallel(i2)
    fused = sch.fuse(i0, i1)
    sch.reorder(i2, fused)
    assert "for i_2 in T.parallel(2):" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_vectorized_init_of_a_fused_split_matmul():
    """seed 24 (mixed): fuse(i, j), split [1, 48, 4], vectorize the inner loop,
    decompose_reduction: ``C[(f1 * 4 + l) // 12, (f1 * 4 + l) % 12]`` is one element per
    ``f1 * 4 + l`` (the two dimensions read together, row-major)."""
    func = ops.matmul(16, 12, 8)
    sch = Schedule(func)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    _, _, inner = sch.split(sch.fuse(i, j), factors=[1, 48, 4])
    sch.vectorize(inner)
    sch.decompose_reduction(sch.get_block("C"), inner)
    assert "T.vectorized(4)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def _strided_writes(index: str) -> str:
    return f'''
@T.prim_func
def strided(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for l in T.parallel(2):
        for f in T.serial(4):
            with T.block("B"):
                v = T.axis.spatial(16, {index})
                T.reads(A[v])
                T.writes(B[v])
                B[v] = A[v] + T.float32(1)
'''


@pytest.mark.parametrize("index", ["f * 2 + l", "f * 4 + l * 2", "l + f * 8"])
def test_parallel_digit_below_an_inner_stride_is_independent(index):
    """Every inner term a multiple of ``g`` and the parallel loop's reach below ``g``."""
    func = wb.from_source(_strided_writes(index))
    assert "T.parallel(2)" in func.script()


@pytest.mark.parametrize("index", ["f + l", "f * 2 + l * 2", "f * 3 + l * 3"])
def test_parallel_digit_that_meets_an_inner_stride_is_a_race(index):
    """``f + l``: (f=1, l=0) and (f=0, l=1) write one element; the parser must refuse."""
    from workbench.script.errors import DSLError

    with pytest.raises(DSLError, match="two of its iterations touch one element of 'B'"):
        wb.from_source(_strided_writes(index))


def test_parallel_replaces_a_thread_binding():
    """seed 24 (mixed): bind(l, "blockIdx.x") then parallel(l) kept both, and the printed
    ``T.parallel`` lost the binding on the way back. As in TVM, the new kind replaces it."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_add"))
    fused = sch.fuse(i, j)
    sch.bind(fused, "blockIdx.x")
    sch.parallel(fused)
    (loop,) = sch.get_loops(sch.get_block("T_add"))
    assert sch.get(loop).thread_binding is None
    assert "T.parallel(60)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_decompose_reduction_refuses_a_loop_the_block_is_recomputed_in():
    """seed 32 (mixed, local run): compute_at(var_sum, j2) recomputes the row reduction on
    every ``j2``; decompose_reduction at ``i2`` put one init before ``i2`` while the updates
    ran ten times (layernorm 90% wrong). Decomposing at or below ``j2`` stays legal."""
    from workbench.schedule.errors_reduction import InitLoopRecomputedError

    func = ops.layernorm(6, 10)
    sch = Schedule(func)
    var_sum = sch.get_block("var_sum")
    (consumer,) = sch.get_consumers(var_sum)
    i2, j2 = sch.get_loops(consumer)
    sch.compute_at(var_sum, j2)
    raises_unchanged(sch, InitLoopRecomputedError, lambda: sch.decompose_reduction(var_sum, i2))
    sch.decompose_reduction(var_sum, sch.get_loops(var_sum)[2])
    assert_computes_reference(sch, func)


def test_decompose_reduction_refuses_a_loop_that_reruns_one_element():
    """seed 5 (mixed, ``PYTHONHASHSEED=4``, 2026-12-05): softmax's row sum computed at the
    fused ``(i, j)`` loop of its consumer binds ``vi = f // 10``: ten iterations rerun one
    row's sum, each from its init; decompose_reduction at ``f`` put the init before ``f``
    and the ten runs accumulated (softmax 90% wrong). At ``ax0`` it stays legal, and a
    loop binding a reduce variable too (``maxelem``'s fused ``(i, k)``) is the reduction
    itself."""
    from workbench.schedule.errors_reduction import (
        InitLoopRecomputedError,
        InitLoopRepeatsElementsError,
    )

    func = ops.softmax(6, 10)
    sch = Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("T_softmax_norm")))
    expsum = sch.get_block("T_softmax_expsum")
    sch.compute_at(expsum, fused)
    raises_unchanged(sch, InitLoopRepeatsElementsError,
                     lambda: sch.decompose_reduction(expsum, fused))
    assert issubclass(InitLoopRepeatsElementsError, InitLoopRecomputedError)
    sch.decompose_reduction(expsum, sch.get_loops(expsum)[1])
    maxelem = sch.get_block("T_softmax_maxelem")
    sch.decompose_reduction(maxelem, sch.fuse(*sch.get_loops(maxelem)))
    assert_computes_reference(sch, func)


def test_parallel_split_of_a_fused_loop_by_a_non_divisor():
    """seed 34 (mixed, local run): fuse(i1, j1) (96), parallel, split by 5: the guard
    ``T.where(f0 * 5 + f1 < 96)`` keeps ``(f0 * 5 + f1) // 12`` in bounds, so the two indices
    read together as ``f0 * 5 + f1``; the parser refused the printed ``T.parallel``."""
    func = ops.add(8, 12)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_add"))
    fused = sch.fuse(i, j)
    sch.parallel(fused)
    sch.split(fused, factors=[None, 5])
    assert "T.where" in sch.mod.script() and "T.parallel(20)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_compute_at_of_a_padding_interior_refuses_to_widen_it():
    """seed 51 (mixed, 400 examples, local run): decompose_padding leaves ``pad_temp``
    copying the interior ``[1, 7]`` of each padded row; compute_at under the conv's ``n``
    widened it to the consumers' whole ``[0, 8]`` and read ``data[-1]`` (the verifier caught
    it). The move is refused; a loop where the consumers read only the interior stays legal."""
    from workbench.schedule.errors_compute_location import BeyondIterationsError

    func = ops.conv2d_nchw(1, 3, 7, 7, 4, 3, 3, stride=2, padding=1)
    sch = Schedule(func)
    pad = sch.get_block("pad_temp")
    sch.decompose_padding(pad, sch.get_loops(pad)[0])
    (conv,) = sch.get_consumers(pad)
    n = sch.get_loops(conv)[0]
    raises_unchanged(sch, BeyondIterationsError, lambda: sch.compute_at(pad, n))
    assert_computes_reference(sch, func)


def test_parallel_split_of_a_split_fused_loop_under_a_scaled_guard():
    """seed 51 (loop primitives, 400 examples, local run): fuse, split by 4, parallel the
    outer, split it by 2: the guard ``f00 * 2 + f01 < 15`` bounds ``f00 * 8 + f01 * 4 + f1``
    through a multiple (4x), which the bounds of the row-major reading now use."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_add"))
    outer, _ = sch.split(sch.fuse(i, j), factors=[None, 4])
    sch.parallel(outer)
    sch.split(outer, factors=[None, 2])
    assert "T.where" in sch.mod.script() and "T.parallel(8)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_parallel_loop_guarded_to_one_iteration():
    """seed 52 (loop primitives, 400 examples, local run): a split of a one-iteration loop by
    2 gives ``j_2_1 in T.parallel(2)`` under ``T.where(j_2_0 * 2 + j_2_1 < 1)``: only its
    first iteration runs, so nothing races; the parser refused the printed script."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_add"))
    sch.parallel(i)
    _, j1, j2 = sch.split(j, factors=[1, None, 1])
    sch.reorder(j1, j2, i)
    _, inner = sch.split(j2, factors=[None, 2])
    sch.parallel(inner)
    assert "T.where" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_parallel_outer_part_of_a_guarded_split_under_a_reorder():
    """seed 64 (loop primitives, 400 examples, device run): ``fuse`` + ``split`` by
    ``[20, 1, 3]`` + ``reorder`` + ``split`` of the 3-wide part by 2 gives
    ``i_j_fused_2_0 in T.parallel(2)`` outermost with the index
    ``i_j_fused_0 * 3 + (i_j_fused_2_0 * 2 + i_j_fused_2_1)`` under
    ``T.where(i_j_fused_2_0 * 2 + i_j_fused_2_1 < 3)``: the guarded sum is a digit below 3,
    so two iterations of the parallel loop never write one element. The parser refused the
    printed script (a false race) although the schedule kept the split loop parallel."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("T_add")))
    sch.parallel(fused)
    f0, f1, f2 = sch.split(fused, factors=[20, 1, 3])
    sch.reorder(f2, f1, f0)
    sch.parallel(f2)
    outer, _ = sch.split(f2, factors=[None, 2])
    script = sch.mod.script()
    assert "T.where(i_j_fused_2_0 * 2 + i_j_fused_2_1 < 3)" in script
    assert "for i_j_fused_2_0 in T.parallel(2)" in script
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_guarded_digit_does_not_hide_a_real_race():
    """The guarded-sum rule must still refuse a real race: ``A[w % 2]`` written for
    ``w = l * 2 + r < 3`` repeats elements across iterations of ``l``."""
    src = '''
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((6,), "float32")):
    for l in T.parallel(2):
        for r, q in T.grid(2, 2):
            with T.block("B"):
                v = T.axis.spatial(6, q * 3 + l * 2 + r)
                T.where(l * 2 + r < 3)
                T.reads(A[v % 2])
                T.writes(A[v % 2])
                A[v % 2] = A[v % 2] + T.float32(1)
'''
    with pytest.raises(DSLError, match="T.parallel"):
        wb.from_source(src)


def test_vectorized_inner_part_of_a_split_with_a_one_iteration_outer_loop():
    """seed 64 (loop primitives, 400 examples, local run, hypothesis 6.170): ``split`` of a
    fused loop of 60 by ``[None, 6, 15]`` leaves ``i_j_fused_0`` of extent 1 inside the guard
    ``i_j_fused_0 * 90 + i_j_fused_1 * 15 + i_j_fused_2 < 60``; the guard bounds the row
    index only once that loop is pinned to 0. The parser refused the vectorized loop."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("T_add")))
    sch.vectorize(fused)
    sch.split(fused, factors=[None, 6, 15])
    script = sch.mod.script()
    assert "T.where(i_j_fused_0 * 90 + i_j_fused_1 * 15 + i_j_fused_2 < 60)" in script
    assert "for i_j_fused_2 in T.vectorized(15)" in script
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_reindex_of_the_update_block_after_decompose_reduction_is_refused():
    """Found by a 2000-example parse-back fuzz run (mixed primitives): after
    ``decompose_reduction`` the update block accumulates into its output with no init; a write
    ``reindex`` redirected the sums to a fresh ``*_reindex`` buffer that nobody initialised
    (the init block still wrote the output): wrong numbers, and the parser refused the script."""
    func = ops.matmul(8, 12, 6)
    sch = Schedule(func)
    block = sch.get_block("C")
    sch.decompose_reduction(block, sch.get_loops(block)[0])
    update = sch.get_block("C")
    error = raises_unchanged(sch, ReindexAccumulatorWithoutInitError, sch.reindex, update,
                             buffer=("write", 0))
    assert error.block == "C" and error.buffer == "C"


def test_reindex_of_a_reduction_block_with_its_init_still_computes_the_reference():
    func = ops.matmul(8, 12, 6)
    sch = Schedule(func)
    sch.reindex(sch.get_block("C"), buffer=("write", 0))
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_vectorized_split_of_a_column_major_fused_loop():
    """Found by a parse-back fuzz run (loop primitives): ``reorder(j, i)`` + ``fuse`` +
    ``split`` by 2 gives ``vi = f % 6, vj = f // 6``: distinct in column-major order only.
    The parser refused ``T.vectorized(2)`` (a false race)."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_add"))
    sch.reorder(j, i)
    fused = sch.fuse(j, i)
    sch.vectorize(fused)
    sch.split(fused, factors=[None, 2])
    assert "for j_i_fused_1 in T.vectorized(2)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_parallel_digit_below_an_inner_loop_of_the_same_fused_index():
    """seed 64 (loop primitives, 400 examples, local run): ``split`` by ``[None, 3, 12]``,
    ``reorder`` to ``(f2, f1, f0)``, ``split(f2, [6, 2])``: the index
    ``f0 * 36 + f1 * 12 + f2_0 * 2 + f2_1`` with ``f2_0`` parallel outermost; ``f2_0 * 2 +
    f2_1`` is a digit of radix 12 (its span 11 stays below the other coefficients' gcd)."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("T_add")))
    f0, f1, f2 = sch.split(fused, factors=[None, 3, 12])
    sch.reorder(f2, f1, f0)
    sch.parallel(f2)
    sch.split(f2, factors=[6, 2])
    assert "for i_j_fused_2_0 in T.parallel(6)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


@pytest.mark.parametrize(("terms", "forced"), [
    ({"l": (2, 5), "r": (1, 1), "f1": (12, 2), "f0": (36, 1)}, True),
    ({"l": (2, 5), "r": (1, 2), "f1": (12, 2)}, False),  # 2 * 1 - 1 * 2 == 0
    ({"l": (3, 1), "f": (3, 4)}, False),  # 3 * l == -3 * f
    ({"l": (1, 3), "f": (4, 9)}, True),
])
def test_only_zero_decides_small_linear_equations(terms, forced):
    """The mixed-radix rule behind the point-access check, against enumeration."""
    import itertools

    from workbench.ir.dependence.overlap import _only_zero

    names = list(terms)
    boxes = [range(-span, span + 1) for _, span in terms.values()]
    solutions = [x for x in itertools.product(*boxes)
                 if sum(terms[n][0] * v for n, v in zip(names, x, strict=True)) == 0]
    truly_forced = all(x[names.index("l")] == 0 for x in solutions)
    assert truly_forced == forced
    assert _only_zero(terms, {"l"}) == forced


def test_parallel_loop_inside_a_guard_of_outer_loops_only():
    """Found by a 6000-example parse-back fuzz run (loop primitives, device): ``split(j, [3,
    2, 2])`` then ``split(j_0, [None, 2])`` leaves ``T.where(j_0_0 * 2 + j_0_1 < 3)`` over the
    loops around the parallel ``j_1``; the guarded sum is the same in both iterations."""
    func = ops.matmul(16, 12, 8)
    sch = Schedule(func)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    j0, j1, _ = sch.split(j, factors=[3, 2, 2])
    sch.parallel(i)
    sch.parallel(j1)
    sch.split(j0, factors=[None, 2])
    script = sch.mod.script()
    assert "T.where(j_0_0 * 2 + j_0_1 < 3)" in script and "for j_1 in T.parallel(2)" in script
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_vectorized_loop_under_a_guard_that_bounds_the_row_index_whole():
    """Found by a 6000-example parse-back fuzz run (loop primitives, device): ``split`` of a
    fused loop of 60 by ``[None, 20, 2]``: ``vi = f0 * 4 + (f1 * 2 + f2) // 10`` is below 6
    only through the guard ``f0 * 40 + f1 * 2 + f2 < 60`` on the whole flat index."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("T_add")))
    sch.vectorize(fused)
    sch.split(fused, factors=[None, 20, 2])
    script = sch.mod.script()
    assert "T.where(i_j_fused_0 * 40 + i_j_fused_1 * 2 + i_j_fused_2 < 60)" in script
    assert "for i_j_fused_2 in T.vectorized(2)" in script
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_parallel_fused_loop_with_a_guard_on_a_lone_inner_loop():
    """Found by a 3000-example parse-back fuzz run (loop primitives, local): splits by 1 and
    2 of a fused loop leave ``T.where(f1_1_1 * 2 + f1_2 < 1 and f1_1_1 < 1)``; the bound on
    the lone ``f1_1_1`` replaced that variable and hid the sum around it, and a column-major
    order that could not be flattened ended the search before the row-major one was used."""
    func = ops.add(6, 10)
    sch = Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("T_add")))
    f0, f1 = sch.split(fused, factors=[None, 1])
    sch.parallel(f0)
    a, b, _ = sch.split(f1, factors=[None, 1, 2])
    sch.fuse(f0, a)
    sch.split(b, factors=[None, 2])
    script = sch.mod.script()
    assert "T.parallel(60)" in script and "T.where(" in script
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_parallel_fused_conv_loop_split_by_one_reads_back_as_the_fused_index():
    """Found by the long property run (race analysis, conv2d_nhwc): fuse(n, y, x, k),
    parallel, split [3, None], split of the inner part [1, None, 2]. The binding of ``vx``
    is ``(f0 * 8 + (f1_1 * 2 + f1_2) // 4) % 3`` (``simplify``'s form of
    ``(f0 * 32 + r) // 4 % 3``): flattening the write did not give the fused index back, and
    the DSL refused the printed ``T.parallel`` as a race the schedule layer had accepted."""
    func = ops.conv2d_nhwc(N=2, H=6, W=4, C=3, K=4, R=3, S=3, stride=2, padding=2, dilation=1)
    sch = Schedule(func)
    block = sch.get_block("conv2d_nhwc")
    fused = sch.fuse(*sch.get_loops(block)[:4])
    sch.parallel(fused)
    f0, f1 = sch.split(fused, factors=[3, None])
    sch.split(f1, factors=[1, None, 2])
    assert "for n_y_x_k_fused_0 in T.parallel(3)" in sch.mod.script()
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)
    # the schedule layer answers the same on the split form
    again = Schedule(func)
    fused = again.fuse(*again.get_loops(again.get_block("conv2d_nhwc"))[:4])
    g0, g1 = again.split(fused, factors=[3, None])
    again.split(g1, factors=[1, None, 2])
    again.parallel(g0)
    assert again.mod == sch.mod


def test_parallel_part_of_a_fused_conv_loop_under_a_guard_of_its_sibling():
    """Found by a parse-back fuzz run of conv2d_nhwc (loop primitives, local): fuse(x, k),
    parallel, split [2, None], then a non-dividing split [2, None, 2] of the inner part.
    ``vx`` is ``f1_0 + (f0 * 6 + f1_1 * 2 + f1_2) // 4`` under ``T.where(f1_0 * 4 + f1_1 * 2
    + f1_2 < 6)``: read apart, the guarded sum was not seen and ``vx`` was not proven below
    3, so the write was never flattened and the printed ``T.parallel`` was refused."""
    func = ops.conv2d_nhwc(N=2, H=4, W=6, C=3, K=4, R=3, S=3, stride=2, padding=2, dilation=2)
    sch = Schedule(func)
    block = sch.get_block("conv2d_nhwc")
    n, _, x, k = sch.get_loops(block)[:4]
    fused = sch.fuse(x, k)
    sch.parallel(fused)
    f0, f1 = sch.split(fused, factors=[2, None])
    sch.split(n, factors=[None, 2, 1])
    sch.split(f1, factors=[2, None, 2])
    script = sch.mod.script()
    assert "for x_k_fused_0 in T.parallel(2)" in script and "T.where(" in script
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_inlining_into_a_scope_keeps_the_cache_it_allocates_out_of_its_regions():
    """2026-12-04, 200 examples (mixed primitives): blockize, cache_write of the inner
    block (the cache allocated in the blockized scope), then compute_inline of a producer
    the scope reads: the refreshed regions of the scope block named ``out_global``, the
    buffer it allocates itself, and the printed script did not parse back."""
    func = ops.attention(1, 2, 6, 4)
    sch = Schedule(func)
    sch.split(sch.get_loops(sch.get_block("scores"))[0], factors=[None, 1])
    sch.blockize(sch.get_loops(sch.get_block("attention"))[0])
    sch.cache_write(sch.get_block("attention"), 0, "global")
    sch.vectorize(sch.get_loops(sch.get_block("scores"))[0])
    sch.compute_inline(sch.get_block("T_softmax_norm"))
    script = sch.mod.script()
    header = script[script.index('T.block("blockized_attention")'):script.index("out_global = T.alloc")]
    assert "out_global" not in header and "out[" in header
    assert_script_parses_back(sch)
    assert_computes_reference(sch, func)


def test_cache_write_of_a_stage_inside_a_parallel_loop_that_would_race():
    """Found by the long property run of 2026-12-05 (random mixed schedules, ``ops.add``):
    a ``cache_read`` stage computed at a parallel loop, its rows split by 2 under a
    ``T.where`` that keeps one row per iteration; ``cache_write`` of it copied back two rows
    per iteration (the copy's region cannot follow the guard), so iteration ``i`` wrote
    row ``i + 1`` of the stage that iteration ``i + 1`` writes too. The schedule layer
    accepted it and the DSL refused the printed ``T.parallel``; now ``cache_write``
    refuses, naming the loop, and changes nothing."""
    from workbench.schedule.scope_errors import StageRaceError

    func = ops.add(6, 10)
    sch = Schedule(func)
    block = sch.get_block("T_add")
    i, _ = sch.get_loops(block)
    sch.parallel(i)
    sch.split(i, factors=[None, 1])
    sch.add_unit_loop(block)
    stage = sch.cache_read(block, 0, "global")
    sch.parallel(sch.get_loops(stage)[0])
    sch.compute_at(stage, sch.get_loops(block)[0], preserve_unit_loops=True)
    sch.split(sch.get_loops(stage)[1], factors=[None, 2])
    assert_script_parses_back(sch)
    error = raises_unchanged(sch, StageRaceError, sch.cache_write, stage, 0, "global")
    assert error.loop == "i_0" and error.buffer == "A_global_global"
    assert "cannot run in parallel" in str(error)
    assert_computes_reference(sch, func)


def test_a_parallel_loop_fused_and_split_over_two_axes_parses_back():
    """seed 7, PYTHONHASHSEED=6 (race analysis by enumeration): pad_temp of a conv:
    ``parallel(i0)``, then ``i0`` fused with ``i1`` and ``i3`` (1 x 10 x 3 = 30) and split by
    2: each iteration of the outer loop writes the elements ``(x // 3, i2, x % 3)`` for its
    two ``x``, distinct from every other iteration's. The analysis read ``x // 3`` and
    ``x % 3`` apart, not seeing that the pair determines ``x``, and the parser refused the
    printed ``T.parallel``. Marking the split loop parallel afterwards is accepted too."""
    func = ops.conv2d_nhwc(1, 6, 6, 3, 4, 3, 3, stride=1, padding=2, dilation=2)
    sch = Schedule(func)
    block = sch.get_block("pad_temp")
    i0, i1, i2, i3 = sch.get_loops(block)
    sch.reorder(i0, i3, i2)
    sch.parallel(sch.get_loops(block)[0])
    loops = sch.get_loops(block)
    fused = sch.fuse(loops[0], loops[1])
    fused = sch.fuse(fused, sch.get_loops(block)[1])
    sch.split(fused, factors=[None, 2])
    assert "in T.parallel(15):" in sch.mod.script()
    assert_computes_reference(sch, func)
    assert_script_parses_back(sch)
    later = Schedule(func)
    loops = later.get_loops(later.get_block("pad_temp"))
    later.reorder(loops[0], loops[3], loops[2])
    loops = later.get_loops(later.get_block("pad_temp"))
    fused = later.fuse(later.fuse(loops[0], loops[1]), loops[2])
    outer, _ = later.split(fused, factors=[None, 2])
    later.parallel(outer)
    assert later.mod.script() == sch.mod.script()


def test_a_second_blockize_of_one_block_gets_a_name_of_its_own():
    """Property run seed 8 (PYTHONHASHSEED=7, 2026-12-07): ``blockize`` of ``pool_avg``'s
    inner loop, then of the same block's loop inside the new block, named both outer blocks
    ``blockized_pool_avg`` (``DuplicateNameError`` from ``verify``): the new block's name
    avoided the function's variables and buffers but not its blocks. The second is now
    ``blockized_pool_avg_1`` (a reduction's the same; its init block, made once, avoids the
    blocks' names too)."""
    func = ops.avg_pool2d(1, 3, 8, 8, kernel=2, stride=2, padding=0)
    sch = Schedule(func)
    sch.blockize(sch.get_loops(sch.get_block("pool_avg"))[-1])
    sch.blockize(sch.get_loops(sch.get_block("pool_avg"))[-1])
    assert 'T.block("blockized_pool_avg_1")' in sch.mod.script()
    sch.blockize(sch.get_loops(sch.get_block("pool_sum"))[-2])
    sch.blockize(sch.get_loops(sch.get_block("pool_sum"))[-1])
    names = re.findall(r'T\.block\("(\w+)"\)', sch.mod.script())
    assert {"blockized_pool_sum", "blockized_pool_sum_1", "pool_sum_init"} <= set(names)
    assert len(names) == len(set(names))
    verify(sch.mod)
    assert_computes_reference(sch, func)
    assert_script_parses_back(sch)
