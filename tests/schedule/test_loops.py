"""split / fuse / reorder: the printed IR after each primitive (golden texts), and the pure
functions behind the Schedule methods."""

import textwrap

import pytest
from schedule_examples import matmul, scale, scale2d

from workbench.schedule import Schedule, loops
from workbench.script import from_source


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def check(sch: Schedule, expected: str) -> None:
    """The printed function equals the golden text, and the text parses back to it."""
    assert sch.mod.script() == golden(expected)
    assert from_source(sch.mod.script()) == sch.mod


def loops_of(func, block):
    sch = Schedule(func)
    return sch, sch.get_loops(sch.get_block(block))


def test_split_non_dividing_adds_guard():
    sch, (i,) = loops_of(scale, "B")
    outer, inner = sch.split(i, factors=[None, 32])
    assert [sch.name(outer), sch.name(inner)] == ["i_0", "i_1"]
    check(
        sch,
        """
        @T.prim_func
        def scale(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
            for i_0, i_1 in T.grid(4, 32):
                with T.block("B"):
                    vi = T.axis.spatial(100, i_0 * 32 + i_1)
                    T.where(i_0 * 32 + i_1 < 100)
                    T.reads(A[vi])
                    T.writes(B[vi])
                    B[vi] = A[vi] * T.float32(2)
    """,
    )


def test_split_three_factors_dividing_has_no_guard():
    sch, (i,) = loops_of(scale, "B")
    new = sch.split(i, factors=[5, 4, None])
    assert [sch.name(loop) for loop in new] == ["i_0", "i_1", "i_2"]
    check(
        sch,
        """
        @T.prim_func
        def scale(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
            for i_0, i_1, i_2 in T.grid(5, 4, 5):
                with T.block("B"):
                    vi = T.axis.spatial(100, i_0 * 20 + i_1 * 5 + i_2)
                    T.reads(A[vi])
                    T.writes(B[vi])
                    B[vi] = A[vi] * T.float32(2)
    """,
    )


def test_split_all_factors_given_larger_product_is_guarded():
    sch, (i,) = loops_of(scale, "B")
    sch.split(i, factors=[7, 16])
    assert "T.where(i_0 * 16 + i_1 < 100)" in sch.mod.script()


def test_fuse():
    sch, (i, j) = loops_of(scale2d, "B")
    fused = sch.fuse(i, j)
    assert sch.name(fused) == "i_j_fused"
    check(
        sch,
        """
        @T.prim_func
        def scale2d(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
            for i_j_fused in T.serial(128):
                with T.block("B"):
                    vi = T.axis.spatial(16, i_j_fused // 8)
                    vj = T.axis.spatial(8, i_j_fused % 8)
                    T.reads(A[vi, vj])
                    T.writes(B[vi, vj])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
    """,
    )


def test_split_of_fused_loop_simplifies_bindings():
    sch, (i, j) = loops_of(scale2d, "B")
    sch.split(sch.fuse(i, j), factors=[None, 8])
    check(
        sch,
        """
        @T.prim_func
        def scale2d(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
            for i_j_fused_0, i_j_fused_1 in T.grid(16, 8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i_j_fused_0, i_j_fused_1])
                    T.reads(A[vi, vj])
                    T.writes(B[vi, vj])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
    """,
    )


def test_fuse_three_loops_names_and_bindings():
    sch, (i, j, k) = loops_of(matmul, "C")
    fused = sch.fuse(i, j, k)
    assert sch.name(fused) == "i_j_k_fused"
    text = sch.mod.script()
    assert "for i_j_k_fused in T.serial(4096):" in text
    assert "vi = T.axis.spatial(16, i_j_k_fused // 256)" in text
    assert "vj = T.axis.spatial(16, i_j_k_fused // 16 % 16)" in text
    assert "vk = T.axis.reduce(16, i_j_k_fused % 16)" in text


def test_reorder_unlisted_loop_keeps_its_place():
    sch, (i, j, k) = loops_of(matmul, "C")
    sch.reorder(k, i)
    check(
        sch,
        """
        @T.prim_func
        def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
            for k, j, i in T.grid(16, 16, 16):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    """,
    )


def test_tiled_matmul_with_loop_kinds_and_annotations():
    sch, (i, j, k) = loops_of(matmul, "C")
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.unroll(ii)
    sch.vectorize(ji)
    sch.annotate(k, "pragma", "x")
    sch.annotate(sch.get_block("C"), "note", 3)
    check(
        sch,
        """
        @T.prim_func
        def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
            for i_0 in T.parallel(4):
                for j_0 in T.serial(2):
                    for k in T.serial(16, annotations={"pragma": "x"}):
                        for i_1 in T.unroll(4):
                            for j_1 in T.vectorized(8):
                                with T.block("C"):
                                    vi = T.axis.spatial(16, i_0 * 4 + i_1)
                                    vj = T.axis.spatial(16, j_0 * 8 + j_1)
                                    vk = T.axis.reduce(16, k)
                                    T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                                    T.writes(C[vi, vj])
                                    T.block_attr({"note": 3})
                                    with T.init():
                                        C[vi, vj] = T.float32(0)
                                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    """,
    )


def test_new_names_avoid_existing_ones():
    sch, (i, j) = loops_of(scale2d, "B")
    a, b = sch.split(i, factors=[None, 2])  # i_0, i_1
    c, d = sch.split(a, factors=[None, 2])  # i_0_0, i_0_1
    sch.fuse(c, d)  # i_0_0_i_0_1_fused
    # a loop named like a fresh name already exists: the new one gets a suffix
    e, f = sch.split(j, factors=[2, 4])
    assert [sch.name(e), sch.name(f)] == ["j_0", "j_1"]
    e0, e1 = sch.split(e, factors=[1, 2])
    assert [sch.name(e0), sch.name(e1)] == ["j_0_0", "j_0_1"]
    names = [h.loop_var.name for h in _all_loops(sch.mod)]
    assert len(names) == len(set(names))


def _all_loops(func):
    from workbench.ir import For, collect

    return collect(func.body, lambda n: isinstance(n, For))


def test_pure_functions_do_not_touch_their_input():
    before = scale2d
    after, (outer, inner) = loops.split(before, "i", factors=[None, 4])
    assert (outer, inner) == ("i_0", "i_1")
    assert before.script() == scale2d.script()
    fused_func, fused = loops.fuse(after, "i_0", "i_1")
    assert fused == "i_0_i_1_fused"
    assert loops.reorder(before, "j", "i") != before
    assert loops.reorder(before, "i") is before


def test_fresh_name_suffix_when_taken():
    from workbench.schedule.tree import fresh_name

    taken = {"i_0", "i_0_1"}
    assert fresh_name("i_0", taken) == "i_0_2"
    assert "i_0_2" in taken


@pytest.mark.parametrize("factors", [[None, 3], [2, None, 5], [100, 1], [None, 100]])
def test_split_extents_cover_the_loop(factors):
    sch, (i,) = loops_of(scale, "B")
    new = sch.split(i, factors=factors)
    extents = [l.extent.value for l in _all_loops(sch.mod)]
    assert len(new) == len(factors)
    product = 1
    for e in extents:
        product *= e
    assert product >= 100
    for given, got in zip(factors, extents, strict=True):
        if given is not None:
            assert got == given


def test_hand_built_ir_schedules_like_the_dsl():
    import ir_examples

    hand = Schedule(ir_examples.matmul(16, 16, 16))
    dsl = Schedule(matmul)
    for sch in (hand, dsl):
        i, j, k = sch.get_loops(sch.get_block("C"))
        io, ii = sch.split(i, factors=[None, 4])
        sch.reorder(io, j, k, ii)
        sch.vectorize(ii)
    assert hand.mod.script().replace("def matmul", "") == dsl.mod.script().replace("def matmul", "")
