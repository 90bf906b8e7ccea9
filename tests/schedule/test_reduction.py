"""decompose_reduction and rfactor: the printed IR before and after (golden files
``tests/golden/reduction_*.txt``, rewritten by ``pytest --regen-golden``), numeric checks on
the numpy reference and the Numba CPU backend, traces, and the pure functions."""

import random
from pathlib import Path

import numpy as np
import pytest
from reduction_examples import row_min, row_prod, shared_spatial_loop
from schedule_examples import matmul, row_sum

from workbench.backends import build
from workbench.ir import IterKind
from workbench.ops.nn import softmax
from workbench.ops.reduce import reduce_max, reduce_sum
from workbench.schedule import BlockRV, Schedule, Trace, reduction
from workbench.script import from_source

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


@pytest.fixture
def golden(request):
    """``golden(name, text)``: ``text`` equals ``tests/golden/<name>.txt`` (or rewrites it
    under ``--regen-golden``)."""
    regen = request.config.getoption("--regen-golden", default=False)

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / f"{name}.txt"
        if regen:
            path.write_text(text + "\n")
            return
        assert path.exists(), f"golden file {path} is missing; run pytest --regen-golden"
        assert text == path.read_text()[:-1], f"output differs from {path}"

    return check


def before_after(sch: Schedule) -> str:
    """The golden text: the function before, then after, both parse back to themselves."""
    assert from_source(sch.mod.script()) == sch.mod
    return f"# before\n{sch.func_before.script()}\n\n# after\n{sch.mod.script()}"


def assert_computes_the_same(sch: Schedule, targets=("numpy", "cpu"), seed=0) -> None:
    """Run the scheduled function on each target and the unscheduled one on the numpy
    reference, on the same random non-zero inputs; outputs agree to fastmath tolerance."""
    rng = np.random.default_rng(seed)
    func = sch.func_before
    arrays = [rng.standard_normal(b.shape).astype(b.dtype) + 0.5 for b in func.params]
    want = [a.copy() for a in arrays]
    build(func, target="numpy")(*want)
    for target in targets:
        got = [a.copy() for a in arrays]
        build(sch, target=target)(*got)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=target)


def loops_of(sch: Schedule, block: str):
    return sch.get_loops(sch.get_block(block))


# --- decompose_reduction ---------------------------------------------------------------


def matmul_decomposed_at_j() -> Schedule:
    sch = Schedule(matmul)
    i, j, k = loops_of(sch, "C")
    init = sch.decompose_reduction(sch.get_block("C"), j)
    assert isinstance(init, BlockRV) and sch.name(init) == "C_init"
    return sch


def matmul_tiled_then_decomposed() -> Schedule:
    sch = Schedule(matmul)
    i, j, k = loops_of(sch, "C")
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    init = sch.decompose_reduction(sch.get_block("C"), jo)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.vectorize(ji)
    sch.parallel(io)
    return sch


def test_decompose_at_the_k_loop_parent(golden):
    sch = matmul_decomposed_at_j()
    golden("reduction_matmul_decompose_j", before_after(sch))
    update = sch.get(sch.get_block("C"))
    assert update.init is None
    assert [r.buffer.name for r in update.reads] == ["C", "A", "B"]


def test_decompose_after_split_and_reorder(golden):
    sch = matmul_tiled_then_decomposed()
    golden("reduction_matmul_decompose_tiled", before_after(sch))
    assert [sch.name(lp) for lp in sch.get_loops(sch.get_block("C_init"))] == [
        "i_0",
        "j_0_init",
        "i_1_init",
        "j_1_init",
    ]


def test_decompose_at_the_reduction_loop_itself_shares_every_spatial_loop():
    sch = Schedule(matmul)
    i, j, k = loops_of(sch, "C")
    init = sch.decompose_reduction(sch.get_block("C"), k)
    assert [sch.name(lp) for lp in sch.get_loops(init)] == ["i", "j"]
    assert sch.get(j).body.stmts[0].block.name == "C_init"


def test_decompose_keeps_the_block_handle_and_the_loop_handles():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.decompose_reduction(block, i)
    assert sch.name(block) == "C" and [sch.name(lp) for lp in (i, j, k)] == ["i", "j", "k"]
    sch.unroll(k)  # handles still work


@pytest.mark.parametrize("case", ["at_j", "tiled"])
def test_decompose_numerics(case):
    sch = matmul_decomposed_at_j() if case == "at_j" else matmul_tiled_then_decomposed()
    assert_computes_the_same(sch)


def test_decompose_of_a_guarded_split_keeps_the_spatial_guard_only():
    sch = Schedule(row_sum)
    i, k = loops_of(sch, "B")
    io, ii = sch.split(i, factors=[None, 3])  # 8 = 3 * 3 - 1: guarded
    ko, ki = sch.split(k, factors=[None, 5])  # 12 = 3 * 5 - 3: guarded
    init = sch.decompose_reduction(sch.get_block("B"), io)
    text = sch.mod.script()
    init_part = text.split('with T.block("B_init")')[1].split("for ")[0]
    assert "T.where(i_0_init * 3 + i_1_init < 8)" in init_part
    assert "k_" not in init_part
    assert sch.name(init) == "B_init"
    assert_computes_the_same(sch)


# --- rfactor ---------------------------------------------------------------------------


def sum_rfactor_inner(factor_axis: int) -> Schedule:
    sch = Schedule(reduce_sum(8, 32))
    i, k = loops_of(sch, "A_red")
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ki, factor_axis=factor_axis)
    assert sch.name(rf) == "A_red_rf"
    return sch


def test_rfactor_of_the_split_inner_loop(golden):
    sch = sum_rfactor_inner(0)
    golden("reduction_sum_rfactor_inner", before_after(sch))
    rf = sch.get(sch.get_block("A_red_rf"))
    assert [(iv.var.name, iv.kind) for iv in rf.iter_vars] == [
        ("vk_1", IterKind.SPATIAL),
        ("vi", IterKind.SPATIAL),
        ("vk_0", IterKind.REDUCE),
    ]
    (buffer,) = sch.mod.root_block.alloc_buffers
    assert (buffer.name, buffer.shape) == ("A_red_rf", (4, 8))


def test_rfactor_factor_axis_1_appends_the_new_dimension(golden):
    sch = sum_rfactor_inner(1)
    golden("reduction_sum_rfactor_inner_axis1", before_after(sch))
    assert sch.mod.root_block.alloc_buffers[0].shape == (8, 4)
    negative = sum_rfactor_inner(-1)
    assert negative.mod == sch.mod


def test_rfactor_matmul_factor_axis_0_and_1():
    shapes = {}
    for axis in (0, 1, 2, -1):
        sch = Schedule(matmul)
        i, j, k = loops_of(sch, "C")
        ko, ki = sch.split(k, factors=[None, 4])
        sch.rfactor(ko, axis)
        shapes[axis] = sch.mod.root_block.alloc_buffers[0].shape
        assert_computes_the_same(sch, targets=("numpy",))
    assert shapes == {0: (4, 16, 16), 1: (16, 4, 16), 2: (16, 16, 4), -1: (16, 16, 4)}


def test_rfactor_of_softmax_max_reduction(golden):
    sch = Schedule(softmax(4, 16))
    i, k = loops_of(sch, "T_softmax_maxelem")
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ki, factor_axis=1)
    sch.vectorize(ki)  # innermost, and spatial in the rfactor block
    assert sch.name(rf) == "T_softmax_maxelem_rf"
    golden("reduction_softmax_rfactor_max", before_after(sch))
    assert_computes_the_same(sch)


def test_rfactor_then_decompose_both_blocks(golden):
    sch = Schedule(matmul)
    i, j, k = loops_of(sch, "C")
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ko, factor_axis=1)
    sch.decompose_reduction(rf, ko)
    final = sch.get_block("C")
    sch.decompose_reduction(final, sch.get_loops(final)[0])
    golden("reduction_matmul_rfactor_decompose", before_after(sch))
    assert_computes_the_same(sch)


def test_rfactor_in_a_loop_shared_with_a_consumer(golden):
    sch = Schedule(shared_spatial_loop)
    i, k = loops_of(sch, "B")
    sch.rfactor(k, 0)
    golden("reduction_rfactor_shared_loop", before_after(sch))
    assert [sch.name(lp) for lp in loops_of(sch, "C")] == ["i", "j"]
    assert_computes_the_same(sch)


@pytest.mark.parametrize(
    "func,block,factors,index",
    [
        (reduce_sum(8, 32), "A_red", [None, 4], 1),
        (reduce_max(6, 20), "A_red", [None, 8], 0),  # 20 = 3 * 8 - 4: guarded
        (row_min, "B", [None, 5], 1),  # guarded; update written min(x, C)
        (row_prod, "B", [3, None], 0),
        (reduce_sum(8, 12, axis=0), "A_red", [None, 4], 0),
    ],
)
def test_rfactor_numerics(func, block, factors, index):
    sch = Schedule(func)
    i, k = loops_of(sch, block)
    parts = sch.split(k, factors=factors)
    sch.rfactor(parts[index], 0)
    assert_computes_the_same(sch)


def test_rfactor_of_an_unsplit_loop_makes_a_fully_spatial_block():
    sch = Schedule(row_sum)
    i, k = loops_of(sch, "B")
    rf = sch.rfactor(k, 0)
    kinds = {iv.kind for iv in sch.get(rf).iter_vars}
    assert kinds == {IterKind.SPATIAL}
    assert sch.get(rf).init is not None
    assert_computes_the_same(sch, targets=("numpy",))


def test_rfactor_of_fused_reduction_loops_splits_both_reduce_vars():
    from workbench import T

    @T.prim_func
    def sum2(A: T.Buffer((4, 6, 8), "float32"), B: T.Buffer((4,), "float32")):
        for i, k, r in T.grid(4, 6, 8):
            with T.block("B"):
                vi, vk, vr = T.axis.remap("SRR", [i, k, r])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk, vr]

    sch = Schedule(sum2)
    i, k, r = loops_of(sch, "B")
    fused = sch.fuse(k, r)
    outer, inner = sch.split(fused, factors=[None, 4])
    rf = sch.rfactor(outer, 0)
    assert [iv.kind for iv in sch.get(rf).iter_vars] == [IterKind.SPATIAL] * 2 + [IterKind.REDUCE]
    assert_computes_the_same(sch, targets=("numpy",))


def test_parallel_sum_over_the_rfactor_axis_on_cpu():
    sch = Schedule(reduce_sum(16, 256))
    i, k = loops_of(sch, "A_red")
    ko, ki = sch.split(k, factors=[2, None])
    rf = sch.rfactor(ko, factor_axis=0)
    sch.reorder(ko, i)
    sch.parallel(ko)
    assert sch.get(ko).kind.value == "parallel"
    assert [sch.name(lp) for lp in sch.get_loops(rf)] == ["k_0", "i", "k_1"]
    kernel = build(sch, target="cpu")
    assert "prange" in kernel.source
    assert_computes_the_same(sch, targets=("cpu",))


# --- traces, undo, pure functions --------------------------------------------------------


def test_trace_prints_and_replays_from_json():
    sch = Schedule(matmul)
    i, j, k = loops_of(sch, "C")
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ki, factor_axis=1)
    sch.decompose_reduction(rf, ko)
    assert str(sch.trace).splitlines()[-2:] == [
        "b6 = sch.rfactor(l5, factor_axis=1)",
        "b7 = sch.decompose_reduction(b6, l4)",
    ]
    again = Trace.from_json(sch.trace.to_json()).apply(matmul)
    assert again.mod == sch.mod and again.trace == sch.trace


def test_undo_of_rfactor_restores_the_function_and_handles():
    sch = Schedule(row_sum)
    i, k = loops_of(sch, "B")
    ko, ki = sch.split(k, factors=[None, 4])
    after_split = sch.mod
    rf = sch.rfactor(ki, 0)
    sch.undo()
    assert sch.mod == after_split
    assert sch.name(ki) == "k_1"
    with pytest.raises(Exception, match="no longer exists"):
        sch.name(rf)


def test_pure_functions_leave_their_input_alone():
    before = row_sum.script()
    func, init = reduction.decompose_reduction(row_sum, "B", "i")
    assert init == "B_init" and row_sum.script() == before
    func, rf = reduction.rfactor(row_sum, "k", -1)
    assert rf == "B_rf" and row_sum.script() == before
    assert [b.name for b in func.root_block.alloc_buffers] == ["B_rf"]


def test_new_names_avoid_existing_ones():
    sch = Schedule(row_sum)
    i, k = loops_of(sch, "B")
    sch.decompose_reduction(sch.get_block("B"), i)
    sch.undo()
    first = sch.rfactor(k, 0)
    assert sch.name(first) == "B_rf"
    # the final block B is a reduction again: rfactor it once more
    final_loops = loops_of(sch, "B")
    second = sch.rfactor(final_loops[1], 0)
    assert sch.name(second) == "B_rf_1"
    names = [b.name for b in sch.mod.root_block.alloc_buffers]
    assert names == ["B_rf", "B_rf_1"]
    assert_computes_the_same(sch, targets=("numpy",))


# --- random sequences ----------------------------------------------------------------------


def random_reduction_schedule(func, seed: int, steps: int = 6) -> Schedule:
    """Random splits, reorders, rfactors, decompositions and parallel loops; every
    refused step must leave the schedule exactly as it was."""
    from workbench.schedule import ScheduleError
    from workbench.schedule.tree import block_names

    chooser = random.Random(seed)
    sch = Schedule(func)
    for _ in range(steps):
        block = sch.get_block(chooser.choice(block_names(sch.mod)))
        loops = sch.get_loops(block)
        if not loops:
            continue
        loop = chooser.choice(loops)
        primitive = chooser.choice(["split", "reorder", "rfactor", "decompose", "parallel"])
        state = sch._state
        try:
            if primitive == "split":
                sch.split(loop, factors=[None, chooser.choice([2, 3, 4])])
            elif primitive == "reorder":
                sch.reorder(loops[-1], loops[0])
            elif primitive == "rfactor":
                sch.rfactor(loop, chooser.choice([0, -1]))
            elif primitive == "decompose":
                sch.decompose_reduction(block, loop)
            else:
                sch.parallel(loop)
        except ScheduleError:
            assert sch._state is state
    return sch


@pytest.mark.parametrize("seed", range(16))
def test_random_reduction_schedules_compute_the_reference(seed):
    func = [row_sum, matmul, softmax(4, 12), reduce_max(6, 10, axis=0)][seed % 4]
    sch = random_reduction_schedule(func, seed)
    assert from_source(sch.mod.script()) == sch.mod
    assert_computes_the_same(sch, targets=("numpy",), seed=seed)
