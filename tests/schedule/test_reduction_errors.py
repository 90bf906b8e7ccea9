"""Every reduction ScheduleError: raised exactly, with its message, detail, suggestion and
marked IR, the schedule left unchanged; and the legal_primitives rows of the reduction
primitives."""

import pytest
from reduction_examples import (
    outer_reduce_loop_shared,
    repeated_reduction,
    row_prod,
    scaled_sum,
    scatter_sum,
    shared_reduce_loop,
    sum_from_one,
    sum_minus,
    two_outputs,
)
from schedule_checks import raises_unchanged
from schedule_examples import matmul, row_sum, scale2d

from workbench.ops.nn import softmax
from workbench.schedule import (
    FactorAxisOutOfRangeError,
    InitLoopInsideReductionError,
    InitLoopNotAncestorError,
    InitNotIdentityError,
    InvalidArgumentError,
    MissingInitError,
    MixedIterLoopError,
    MultipleStoresError,
    NonAssociativeUpdateError,
    NotReductionBlockError,
    NotReductionLoopError,
    Schedule,
    ScheduleError,
    SharedReductionLoopError,
    UnboundLoopInReductionError,
)


def setup(func, block):
    sch = Schedule(func)
    return sch, sch.get_loops(sch.get_block(block))


def marked_line(err: ScheduleError) -> str:
    (line,) = [ln for ln in str(err).splitlines() if "# <--" in ln]
    return line.strip()


# --- decompose_reduction ---------------------------------------------------------------


def test_decompose_loop_not_around_the_block():
    sch = Schedule(softmax(4, 8))
    block = sch.get_block("T_softmax_maxelem")
    other = sch.get_loops(sch.get_block("T_softmax_expsum"))[0]
    err = raises_unchanged(sch, InitLoopNotAncestorError, sch.decompose_reduction, block, other)
    assert err.primitive == "decompose_reduction" and err.name == "i1"
    assert err.message == "loop 'i1' is not around block 'T_softmax_maxelem'"
    assert "(its loops: 'i', 'k')" in err.detail
    assert "sch.get_loops(block)" in err.suggestion
    assert marked_line(err).startswith("for i1, k1 in T.grid(4, 8):")


def test_decompose_inside_a_reduction_loop():
    sch, (i, j, k) = setup(matmul, "C")
    sch.reorder(k, j)
    err = raises_unchanged(
        sch, InitLoopInsideReductionError, sch.decompose_reduction, sch.get_block("C"), j
    )
    assert err.message == "loop 'j' is inside the reduction loop 'k'"
    assert "reduce variable 'vk' of block 'C'" in err.detail
    assert err.suggestion == "pass 'k' or a loop outside it"
    assert err.reduce_loop == "k"
    assert marked_line(err).startswith("for j in T.serial(16):")


def test_decompose_below_the_outer_part_of_a_split_reduction_loop():
    sch, (i, k) = setup(row_sum, "B")
    ko, ki = sch.split(k, factors=[None, 4])
    err = raises_unchanged(
        sch, InitLoopInsideReductionError, sch.decompose_reduction, sch.get_block("B"), ki
    )
    assert err.message == "loop 'k_1' is inside the reduction loop 'k_0'"


def test_decompose_of_a_spatial_block():
    sch, (i, j) = setup(scale2d, "B")
    err = raises_unchanged(
        sch, NotReductionBlockError, sch.decompose_reduction, sch.get_block("B"), i
    )
    assert err.message == "block 'B' is not a reduction"
    assert "nothing to initialise" in err.detail
    assert marked_line(err).startswith('with T.block("B"):')


def test_decompose_twice():
    sch, (i, k) = setup(row_sum, "B")
    block = sch.get_block("B")
    sch.decompose_reduction(block, i)
    err = raises_unchanged(sch, MissingInitError, sch.decompose_reduction, block, k)
    assert err.message == "block 'B' has no init"
    assert "decomposed already" in err.detail


# --- rfactor: the loop -------------------------------------------------------------------


def test_rfactor_of_a_spatial_loop():
    sch, (i, k) = setup(row_sum, "B")
    err = raises_unchanged(sch, NotReductionLoopError, sch.rfactor, i, 0)
    assert err.primitive == "rfactor" and err.name == "i"
    assert err.message == "loop 'i' is not a reduction loop"
    assert err.detail == "it binds the spatial variable(s) vi of block 'B'"
    assert "split" in err.suggestion
    assert marked_line(err).startswith("for i, k in T.grid(8, 12):")


def test_rfactor_of_a_fused_spatial_and_reduction_loop():
    sch, (i, j, k) = setup(matmul, "C")
    fused = sch.fuse(j, k)
    err = raises_unchanged(sch, MixedIterLoopError, sch.rfactor, fused, 0)
    assert err.message == "loop 'j_k_fused' binds both spatial and reduce variables of block 'C'"
    assert err.detail.startswith("it binds spatial vj and reduce vk;")
    assert "undo" in err.suggestion


def test_rfactor_next_to_a_fused_spatial_and_reduction_loop():
    sch, (i, j, k) = setup(matmul, "C")
    fused = sch.fuse(j, k)
    outer, inner = sch.split(fused, factors=[None, 4])
    err = raises_unchanged(sch, MixedIterLoopError, sch.rfactor, inner, 0)
    assert err.name == "j_k_fused_1"


def test_rfactor_of_a_reduction_loop_holding_another_block():
    sch, (i, k) = setup(shared_reduce_loop, "B")
    err = raises_unchanged(sch, SharedReductionLoopError, sch.rfactor, k, 0)
    assert err.message == "loop 'k' holds other blocks than 'B'"
    assert err.detail.startswith("it also holds 'D';")
    assert "compute_at" in err.suggestion


def test_rfactor_when_an_outer_reduction_loop_holds_another_block():
    sch, (i, k_0, k_1) = setup(outer_reduce_loop_shared, "B")
    err = raises_unchanged(sch, SharedReductionLoopError, sch.rfactor, k_1, 0)
    assert err.name == "k_0"
    assert err.message == "loop 'k_0' holds other blocks than 'B'"
    assert err.detail.startswith("it also holds 'D';")


def test_rfactor_with_an_unbound_loop_under_the_reduction():
    sch, (i, k, r) = setup(repeated_reduction, "B")
    err = raises_unchanged(sch, UnboundLoopInReductionError, sch.rfactor, k, 0)
    assert err.message == "loop 'r' binds no iteration variable of block 'B'"
    assert marked_line(err).startswith("for r in T.serial(2):")


def test_rfactor_of_a_loop_binding_no_variable():
    sch, (i, k, r) = setup(repeated_reduction, "B")
    err = raises_unchanged(sch, NotReductionLoopError, sch.rfactor, r, 0)
    assert err.detail == "it binds no iteration variable of block 'B'"


# --- rfactor: the reduction ----------------------------------------------------------------


def test_rfactor_of_a_subtraction():
    sch, (i, k) = setup(sum_minus, "B")
    err = raises_unchanged(sch, NonAssociativeUpdateError, sch.rfactor, k, 0)
    assert err.message == "the update of block 'B' is not an associative, commutative reduction"
    assert err.found == "B[vi] = B[vi] - A[vi, vk]"
    assert "the outermost operation is '-', not one of +, *, max, min" in err.detail
    assert "supported: C = C + x, C = C * x, C = T.max(C, x), C = T.min(C, x)" in err.detail
    assert "C = C + (-x)" in err.suggestion
    assert marked_line(err).startswith('with T.block("B"):')


def test_rfactor_of_an_affine_update():
    sch, (i, k) = setup(scaled_sum, "B")
    err = raises_unchanged(sch, NonAssociativeUpdateError, sch.rfactor, k, 0)
    assert err.found == "B[vi] = B[vi] * T.float32(2) + A[vi, vk]"
    assert "neither operand of the outermost + is B at the stored element itself" in err.detail


def test_rfactor_with_an_init_that_is_not_the_identity():
    sch, (i, k) = setup(sum_from_one, "B")
    err = raises_unchanged(sch, InitNotIdentityError, sch.rfactor, k, 0)
    assert err.message == "the init of block 'B' is not the identity of sum"
    assert err.detail.startswith("the init is T.float32(1), the identity of sum is 0;")
    assert err.suggestion == "initialise with 0 and apply the offset in a later block"


def test_rfactor_of_a_max_starting_at_zero():
    from workbench import T

    @T.prim_func
    def relu_max(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 12):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = T.max(B[vi], A[vi, vk])

    sch, (i, k) = setup(relu_max, "B")
    err = raises_unchanged(sch, InitNotIdentityError, sch.rfactor, k, 0)
    assert 'the identity of max is T.float32("-inf")' in err.detail


def test_rfactor_of_a_block_with_two_stores():
    sch, (i, k) = setup(two_outputs, "B")
    err = raises_unchanged(sch, MultipleStoresError, sch.rfactor, k, 0)
    assert err.message == "block 'B' is not a single-store reduction"
    assert err.detail.startswith("its body is a sequence of 2 statements")


def test_rfactor_of_a_block_writing_along_the_reduce_axis():
    sch, (i, k) = setup(scatter_sum, "B")
    err = raises_unchanged(sch, NotReductionBlockError, sch.rfactor, k, 0)
    assert err.detail == "the element it writes depends on the reduce variable vk"


def test_rfactor_after_decompose_reduction():
    sch, (i, k) = setup(row_prod, "B")
    sch.decompose_reduction(sch.get_block("B"), i)
    err = raises_unchanged(sch, MissingInitError, sch.rfactor, k, 0)
    assert err.suggestion == "apply rfactor before decompose_reduction"


@pytest.mark.parametrize("axis", [2, -3, 7])
def test_rfactor_factor_axis_out_of_range(axis):
    sch, (i, k) = setup(row_sum, "B")
    err = raises_unchanged(sch, FactorAxisOutOfRangeError, sch.rfactor, k, axis)
    assert err.message == f"factor_axis {axis} is out of range for buffer 'B'"
    assert "in [-2, 1]" in err.detail
    assert err.suggestion == "use a factor_axis between -2 and 1"


@pytest.mark.parametrize("axis", ["0", 1.0, True, None])
def test_rfactor_factor_axis_not_an_int(axis):
    sch, (i, k) = setup(row_sum, "B")
    raises_unchanged(sch, InvalidArgumentError, sch.rfactor, k, axis)


def test_errors_render_as_html_and_pickle():
    import pickle

    sch, (i, k) = setup(sum_minus, "B")
    with pytest.raises(NonAssociativeUpdateError) as info:
        sch.rfactor(k, 0)
    html = info.value._repr_html_()
    assert "NonAssociativeUpdateError" in html and "rfactor" in html
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is NonAssociativeUpdateError and again.message == info.value.message


# --- legal_primitives ----------------------------------------------------------------------


def test_legality_rows_at_loops():
    sch, (i, k) = setup(row_sum, "B")
    at_k = sch.legal_primitives(k)
    assert at_k["rfactor"].legal and at_k["decompose_reduction"].legal
    at_i = sch.legal_primitives(i)
    assert at_i["rfactor"].error == "NotReductionLoopError"
    assert at_i["rfactor"].reason == "loop 'i' is not a reduction loop"
    assert at_i["decompose_reduction"].legal
    ko, ki = sch.split(k, factors=[None, 4])
    at_ki = sch.legal_primitives(ki)
    assert at_ki["rfactor"].legal
    assert at_ki["decompose_reduction"].error == "InitLoopInsideReductionError"
    assert len(sch.trace) == 3  # probing changed nothing


def test_legality_rows_for_refused_reductions():
    for func, error in [
        (sum_minus, "NonAssociativeUpdateError"),
        (sum_from_one, "InitNotIdentityError"),
        (two_outputs, "MultipleStoresError"),
    ]:
        sch, (i, k) = setup(func, "B")
        assert sch.legal_primitives(k)["rfactor"].error == error


def test_legality_rows_at_blocks():
    sch = Schedule(softmax(4, 8))
    table = sch.legal_primitives(sch.get_block("T_softmax_maxelem"))
    assert table["decompose_reduction"].legal
    assert "rfactor" not in table.legal()  # rfactor takes a loop
    norm = sch.legal_primitives(sch.get_block("T_softmax_norm"))
    assert norm["decompose_reduction"].error == "NotReductionBlockError"
    sch.decompose_reduction(
        sch.get_block("T_softmax_maxelem"), sch.get_loops(sch.get_block("T_softmax_maxelem"))[0]
    )
    again = sch.legal_primitives(sch.get_block("T_softmax_maxelem"))
    assert again["decompose_reduction"].error == "MissingInitError"
