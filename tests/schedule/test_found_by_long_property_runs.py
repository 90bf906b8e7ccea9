"""Cases the long property runs (``WORKBENCH_PROPERTY_EXAMPLES=400``, four seeds, race threads)
found on 2026-12-02, each reduced to its trace. Each once failed: a legal schedule whose
printed script the parser refused, a crash of the dependence analysis, or a move that made
a parallel loop race."""

from __future__ import annotations

import pytest
from schedule_checks import assert_computes_reference

import workbench as wb
from workbench import ops
from workbench.schedule import Schedule
from workbench.schedule.errors_compute_location import ParallelRecomputeError


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
