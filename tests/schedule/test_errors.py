"""Every ScheduleError subclass: raised exactly, with its message, detail, suggestion and
marked IR, and the schedule left exactly as it was (mod, trace, handles)."""

import pytest
from schedule_checks import raises_unchanged
from schedule_examples import add_relu, matmul, row_sum, scale, scale2d, triangle, two_stages

from workbench.schedule import (
    BlockNotFoundError,
    DependentLoopBoundError,
    DuplicateLoopError,
    ForeignHandleError,
    InvalidAnnotationError,
    InvalidArgumentError,
    LoopNotFoundError,
    LoopsNotAdjacentError,
    LoopsNotInSameNestError,
    MixedLoopReorderError,
    MultipleNoneFactorsError,
    NestedVectorizeError,
    NonConstantExtentError,
    NonDividingFactorError,
    NonPositiveFactorError,
    NothingToUndoError,
    NotPerfectlyNestedError,
    ReductionLoopError,
    RemovedHandleError,
    Schedule,
    WrongFactorProductError,
    WrongHandleKindError,
    loops,
)


def setup(func, block):
    sch = Schedule(func)
    return sch, sch.get_loops(sch.get_block(block))


# --- nests -------------------------------------------------------------------------------


def test_loops_in_different_nests():
    sch = Schedule(add_relu)
    (i0,) = sch.get_loops(sch.get_block("T_add"))
    (i1,) = sch.get_loops(sch.get_block("C"))
    err = raises_unchanged(sch, LoopsNotInSameNestError, sch.fuse, i0, i1)
    assert err.primitive == "fuse" and err.name == "i1"
    assert err.message == "loops 'i0' and 'i1' are not in the same loop nest"
    err = raises_unchanged(sch, LoopsNotInSameNestError, sch.reorder, i1, i0)
    assert err.primitive == "reorder"
    assert "sch.get_loops(block)" in err.suggestion


def test_reorder_across_blocks_at_several_levels():
    sch, (i, j) = setup(two_stages, "B")
    err = raises_unchanged(sch, NotPerfectlyNestedError, sch.reorder, j, i)
    assert err.name == "i"
    assert err.message == (
        "loop 'i' is not perfectly nested: its body is a sequence of 2 "
        "statements (loop 'j', loop 'j2')"
    )
    assert err.node.loop_var.name == "i"


def test_fuse_not_perfectly_nested():
    sch, (i, j) = setup(two_stages, "B")
    err = raises_unchanged(sch, NotPerfectlyNestedError, sch.fuse, i, j)
    assert err.primitive == "fuse"


def test_fuse_with_a_loop_between():
    sch, (i, j, k) = setup(matmul, "C")
    err = raises_unchanged(sch, LoopsNotAdjacentError, sch.fuse, i, k)
    assert err.message == "loops 'i' and 'k' are not adjacent"
    assert err.detail == "loop(s) j lie between 'i' and 'k'"


def test_fuse_inner_first():
    sch, (i, j, k) = setup(matmul, "C")
    err = raises_unchanged(sch, LoopsNotAdjacentError, sch.fuse, j, i)
    assert err.suggestion == "pass the loops outermost first"


def test_duplicate_loops():
    sch, (i, j, k) = setup(matmul, "C")
    err = raises_unchanged(sch, DuplicateLoopError, sch.reorder, i, j, i)
    assert err.message == "loop 'i' is given more than once"
    raises_unchanged(sch, DuplicateLoopError, sch.fuse, i, i)


def test_reorder_loop_bound_depends_on_outer_loop():
    sch, (i, j) = setup(triangle(), "B")
    err = raises_unchanged(sch, DependentLoopBoundError, sch.reorder, j, i)
    assert err.message == "the bounds of loop 'j' depend on loop 'i'"


def test_reorder_of_fused_spatial_and_reduction_loop():
    # found by the property tests: after fuse(i, j, k) and a split, swapping the two loops
    # ran some updates of C[vi, vj] before its init (vk == 0) and lost them
    sch, (i, j, k) = setup(matmul, "C")
    fused = sch.fuse(sch.fuse(i, j), k)
    outer, inner = sch.split(fused, factors=[None, 3])
    err = raises_unchanged(sch, MixedLoopReorderError, sch.reorder, inner, outer)
    assert err.message == (
        "loop 'i_j_fused_k_fused_0' binds both spatial and reduction variables of block 'C'"
    )
    assert "init could run after some of its updates" in err.detail
    assert err.block == "C"
    # loops of one kind still reorder
    sch2, (i, j, k) = setup(matmul, "C")
    sch2.reorder(j, i)
    assert [sch2.name(loop) for loop in sch2.get_loops(sch2.get_block("C"))] == ["j", "i", "k"]


# --- loop kinds ----------------------------------------------------------------------------


def test_parallel_reduction_loop():
    sch, (i, k) = setup(row_sum, "B")
    err = raises_unchanged(sch, ReductionLoopError, sch.parallel, k)
    assert err.message == "loop 'k' is a reduction loop"
    assert "reduction variable 'vk' of block 'B'" in err.detail
    assert err.block == "B"


def test_vectorize_reduction_loop_suggests_reorder():
    sch, (i, k) = setup(row_sum, "B")
    err = raises_unchanged(sch, ReductionLoopError, sch.vectorize, k)
    assert err.suggestion == "reorder so the reduction loop is outside and vectorize a spatial loop"


def test_parallel_of_fused_loop_binding_a_reduction():
    sch, (i, k) = setup(row_sum, "B")
    fused = sch.fuse(i, k)
    raises_unchanged(sch, ReductionLoopError, sch.parallel, fused)


def test_vectorize_outer_loop_as_tvm_but_not_nested():
    """TVM vectorizes a loop with loops inside it; vectorized loops never nest."""
    sch, (i, j) = setup(scale2d, "B")
    sch.vectorize(i)
    err = raises_unchanged(sch, NestedVectorizeError, sch.vectorize, j)
    assert err.message == "loop 'j' would nest with the vectorized loop 'i'"


def test_vectorize_and_split_of_non_constant_extent():
    sch, (i, j) = setup(triangle(), "B")
    err = raises_unchanged(sch, NonConstantExtentError, sch.vectorize, j)
    assert (
        err.detail
        == "its extent is "
        + repr(sch.mod.body.block.body.body.extent)
        + "; vectorize needs a constant trip count"
    )
    raises_unchanged(sch, NonConstantExtentError, sch.split, j, factors=[None, 2])
    raises_unchanged(sch, LoopsNotAdjacentError, sch.fuse, j, i)


# --- split factors -----------------------------------------------------------------------


def test_more_than_one_none():
    sch, (i,) = setup(scale, "B")
    err = raises_unchanged(sch, MultipleNoneFactorsError, sch.split, i, factors=[None, None])
    assert err.message == "factors [None, None] for loop 'i' have more than one None"


@pytest.mark.parametrize("factors", [[0, None], [None, -4], [4, 0, 25]])
def test_non_positive_factor(factors):
    sch, (i,) = setup(scale, "B")
    err = raises_unchanged(sch, NonPositiveFactorError, sch.split, i, factors=factors)
    assert err.message == f"factors {factors} for loop 'i' contain a non-positive factor"


def test_factors_do_not_cover_the_loop():
    sch, (i,) = setup(add_relu, "T_add")
    err = raises_unchanged(sch, WrongFactorProductError, sch.split, i, factors=[5, 9])
    assert err.message == "factors [5, 9] for loop 'i0' multiply to 45, not 48"
    assert err.suggestion == (
        "use None for one factor to infer it, or split by a divisor of 48: "
        "1, 2, 3, 4, 6, 8, 12, 16, 24"
    )


def test_non_dividing_factor_without_predication():
    sch, (i,) = setup(scale, "B")
    err = raises_unchanged(
        sch, NonDividingFactorError, sch.split, i, factors=[None, 32], disable_predication=True
    )
    assert err.suggestion == "split by a divisor of 100: 1, 2, 4, 5, 10, 20, 25, 50"
    outer, inner = sch.split(i, factors=[None, 25], disable_predication=True)
    assert "T.where" not in sch.mod.script()
    assert str(sch.trace).endswith("sch.split(l1, factors=[None, 25], disable_predication=True)")


@pytest.mark.parametrize("factors", ["ab", [1.5, None], [True, None], [4], 7])
def test_bad_factor_types(factors):
    sch, (i,) = setup(scale, "B")
    err = raises_unchanged(sch, InvalidArgumentError, sch.split, i, factors=factors)
    assert isinstance(err, TypeError)
    assert err.primitive == "split" and err.argument == "factors"


def test_numpy_and_intimm_factors_are_accepted():
    import numpy as np

    from workbench.ir import IntImm

    sch, (i,) = setup(scale, "B")
    sch.split(i, factors=[np.int64(4), IntImm(25)])
    assert sch.trace.steps[-1].attrs == {"factors": [4, 25]}


# --- handles and names -------------------------------------------------------------------


def test_handle_from_another_schedule():
    sch, (i,) = setup(scale, "B")
    other, (j,) = setup(scale, "B")
    err = raises_unchanged(other, ForeignHandleError, other.split, i, factors=[None, 4])
    assert err.message == "LoopRV(l1: i) belongs to another Schedule"


def test_handle_of_a_removed_loop_names_the_primitive():
    sch, (i,) = setup(scale, "B")
    sch.split(i, factors=[None, 4])
    err = raises_unchanged(sch, RemovedHandleError, sch.vectorize, i)
    assert err.message == "loop 'i' no longer exists: it was removed by split (step 2)"
    assert err.removed_by == "split (step 2)"
    assert repr(i) == "LoopRV(l1: i, removed by split (step 2))"


def test_fused_loops_are_removed_by_fuse():
    sch, (i, j) = setup(scale2d, "B")
    sch.fuse(i, j)
    err = raises_unchanged(sch, RemovedHandleError, sch.parallel, j)
    assert "removed by fuse (step 2)" in err.message


def test_wrong_handle_kind():
    sch, (i,) = setup(scale, "B")
    block = sch.get_block("B")
    err = raises_unchanged(sch, WrongHandleKindError, sch.split, block, factors=[None, 4])
    assert err.message == "argument 'loop' must be a loop handle, got BlockRV(b2: B)"
    raises_unchanged(sch, WrongHandleKindError, sch.get_loops, i)


def test_not_a_handle():
    # a name is accepted since issue 17 (tests/schedule/test_names.py); other values are not
    sch, _ = setup(scale, "B")
    err = raises_unchanged(sch, InvalidArgumentError, sch.get_loops, 2.5)
    assert err.message == "argument 'block' must be a block handle or name, got 2.5"
    raises_unchanged(sch, InvalidArgumentError, sch.get_block, 3)


def test_unknown_block_did_you_mean():
    sch = Schedule(add_relu)
    err = raises_unchanged(sch, BlockNotFoundError, sch.get_block, "T_ad")
    assert err.message == "no block named 'T_ad' in add_relu"
    assert err.suggestion == "did you mean 'T_add'?"
    assert err.detail == "blocks in the function: 'T_add', 'C'"
    err = raises_unchanged(sch, BlockNotFoundError, sch.get_block, "zzz")
    assert err.suggestion == ""


def test_unknown_loop_in_pure_function():
    with pytest.raises(LoopNotFoundError) as info:
        loops.split(scale2d, "k", factors=[None, 2])
    assert info.value.suggestion == ""
    with pytest.raises(LoopNotFoundError) as info:
        loops.split(scale2d, "ii", factors=[None, 2])
    assert info.value.suggestion == "did you mean 'i'?"


def test_nothing_to_undo():
    sch = Schedule(scale)
    raises_unchanged(sch, NothingToUndoError, sch.undo)


def test_bad_annotations():
    sch, (i,) = setup(scale, "B")
    raises_unchanged(sch, InvalidAnnotationError, sch.annotate, i, 3, "x")
    raises_unchanged(sch, InvalidAnnotationError, sch.annotate, i, "key", [1, 2])


# --- rendering ---------------------------------------------------------------------------


def test_str_shows_message_detail_suggestion_and_marked_ir():
    sch, (i, k) = setup(row_sum, "B")
    err = raises_unchanged(sch, ReductionLoopError, sch.vectorize, k)
    text = str(err)
    lines = text.splitlines()
    assert lines[0] == "vectorize: loop 'k' is a reduction loop"
    assert lines[1].startswith("  why: it binds the reduction variable 'vk'")
    assert (
        lines[2]
        == "  suggestion: reorder so the reduction loop is outside and vectorize a spatial loop"
    )
    marked = [line for line in lines if "# <--" in line]
    assert len(marked) == 1 and "k" in marked[0]
    assert marked[0].endswith("# <-- loop 'k' is a reduction loop")
    assert "def row_sum" in text


def test_html_rendering():
    sch, (i,) = setup(scale, "B")
    err = raises_unchanged(sch, NonPositiveFactorError, sch.split, i, factors=[0, None])
    html = err._repr_html_()
    assert "NonPositiveFactorError" in html and "<code>split</code>" in html
    assert "contain a non-positive factor" in html


def test_errors_are_cheap_to_raise(monkeypatch):
    """Nothing is rendered when an error is raised and caught."""
    import workbench.schedule.errors as errors

    def boom(*args, **kwargs):
        raise AssertionError("rendered while raising")

    monkeypatch.setattr(errors, "render_ir", boom)
    sch, (i, k) = setup(row_sum, "B")
    with pytest.raises(ReductionLoopError):
        sch.parallel(k)


def test_errors_survive_pickling():
    """Tuning workers send errors back to the parent process."""
    import pickle

    from workbench.schedule import TraceError

    sch, (i, k) = setup(row_sum, "B")
    err = raises_unchanged(sch, ReductionLoopError, sch.parallel, k)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ReductionLoopError
    assert str(again) == str(err) and again.block == "B" and again.func == err.func
    trace_error = pickle.loads(pickle.dumps(TraceError("bad", 3)))
    assert str(trace_error) == "step 3: bad" and trace_error.step == 3
