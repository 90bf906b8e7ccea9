"""Tests of workbench.ir.analysis on hand-built IR (tests/ir_examples.py) and scheduled variants."""

import pytest

from ir_examples import add_relu, matmul
from workbench.ir import (
    LT,
    TRUE,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    Call,
    Cast,
    FloatImm,
    For,
    ForKind,
    IntImm,
    Max,
    Min,
    PrimFunc,
    Range,
    Select,
    Var,
    seq,
)
from workbench.ir.analysis import (
    BlockNotFoundError,
    arithmetic_intensity,
    block_flops,
    block_infos,
    block_regions,
    expr_ops,
    find_blocks,
    flops,
    get_block,
    min_bytes,
    param_traffic,
)


def c(v):
    return IntImm(v)


def _root(body, alloc=()):
    return BlockRealize((), TRUE, Block("root", (), (), (), body, None, tuple(alloc)))


def _loop(var, extent, body):
    return For(var, c(0), c(extent), ForKind.SERIAL, body)


def split_matmul(M, N, K, factor):
    """matmul with i split by ``factor`` (with a predicate when it does not divide M), reordered."""
    base = matmul(M, N, K)
    block = base.root_block.body.body.body.body.block
    i_0, i_1, j, k = Var("i_0"), Var("i_1"), Var("j"), Var("k")
    outer = -(-M // factor)
    vi = i_0 * factor + i_1
    predicate = TRUE if M % factor == 0 else LT(vi, c(M))
    realize = BlockRealize((vi, j, k), predicate, block)
    nest = _loop(i_0, outer, _loop(j, N, _loop(k, K, _loop(i_1, factor, realize))))
    return base.replace(body=_root(nest))


def computed_at_add_relu(N=64):
    """add_relu with T_add computed at the relu loop: one T_add per relu iteration."""
    base = add_relu(N)
    root = base.root_block
    add_realize = root.body.stmts[0].body
    relu_realize = root.body.stmts[1].body
    i1, ax0 = Var("i1"), Var("ax0")
    add_inner = add_realize.replace(iter_values=(i1 + ax0,))
    body = _loop(i1, N, seq(_loop(ax0, 1, add_inner), relu_realize))
    return base.replace(body=_root(body, alloc=root.alloc_buffers))


# --------------------------------------------------------------------------- blocks


def test_find_blocks_walk_order_without_root():
    assert [b.name for b in find_blocks(add_relu())] == ["T_add", "C"]
    assert [b.name for b in find_blocks(matmul())] == ["C"]


def test_get_block():
    func = add_relu()
    assert get_block(func, "C").name == "C"
    assert get_block(func, "T_add").iter_vars[0].var == Var("v0")
    with pytest.raises(BlockNotFoundError, match=r"add_relu has no block named 'D' \(its blocks: 'T_add', 'C'\)"):
        get_block(func, "D")


def test_block_infos_loops_and_executions():
    (info,) = block_infos(matmul(8, 4, 2))
    assert [loop.loop_var.name for loop in info.loops] == ["i", "j", "k"]
    assert info.executions == 8 * 4 * 2


# --------------------------------------------------------------------------- flops


def test_matmul_flops_is_2mnk():
    assert flops(matmul(16, 16, 16)) == 2 * 16 * 16 * 16
    assert flops(matmul(32, 8, 4)) == 2 * 32 * 8 * 4


def test_add_relu_flops():
    assert block_flops(add_relu(64)) == {"T_add": 64, "C": 64}
    assert flops(add_relu(64)) == 128


def test_loop_trips_and_domains_agree_on_unscheduled_funcs():
    import math

    for func in (matmul(16, 8, 4), add_relu(32)):
        for info in block_infos(func):
            domain = math.prod(iv.dom.extent.value for iv in info.block.iter_vars)
            trips = math.prod(loop.extent.value for loop in info.loops)
            assert trips == domain == info.executions


@pytest.mark.parametrize("M, factor", [(32, 8), (30, 8), (5, 16)])
def test_flops_unchanged_by_split_and_reorder(M, factor):
    assert flops(split_matmul(M, 8, 4, factor)) == flops(matmul(M, 8, 4)) == 2 * M * 8 * 4


def test_flops_of_compute_at_counts_per_execution_times_enclosing_loops():
    func = computed_at_add_relu(64)
    (add_info, relu_info) = block_infos(func)
    assert [loop.loop_var.name for loop in add_info.loops] == ["i1", "ax0"]
    assert add_info.executions == 64
    assert flops(func) == flops(add_relu(64)) == 128


def test_expr_ops_counts_arithmetic_not_loads_or_indices():
    A = Buffer("A", (8,))
    i = Var("i")
    load = BufferLoad(A, (i * 2 + 1,))
    assert expr_ops(load) == 0
    assert expr_ops(load + load) == 1
    assert expr_ops(Max(load * load, FloatImm(0.0))) == 2
    assert expr_ops(Call("exp", (load - FloatImm(1.0),))) == 2
    assert expr_ops(Select(LT(load, FloatImm(0.0)), load, Min(load, FloatImm(1.0)))) == 2
    assert expr_ops(Cast("float64", load)) == 0


def test_init_is_not_counted():
    func = matmul(4, 4, 4)
    block = get_block(func, "C")
    assert block.init is not None
    assert block_flops(func) == {"C": 2 * 64}


# --------------------------------------------------------------------------- bytes


def test_matmul_bytes_counts_c_once_because_init_overwrites_it():
    assert param_traffic(matmul(16, 8, 4)) == {"A": 16 * 4 * 4, "B": 4 * 8 * 4, "C": 16 * 8 * 4}
    assert min_bytes(matmul(16, 8, 4)) == 4 * (16 * 4 + 4 * 8 + 16 * 8)
    assert min_bytes(matmul(16, 16, 16, "float64")) == 8 * 3 * 256


def test_in_place_accumulation_counts_read_and_write():
    func = matmul(8, 8, 8)
    block = get_block(func, "C")
    no_init = block.replace(init=None)
    realize = func.root_block.body.body.body.body.replace(block=no_init)
    nest = func.root_block.body.replace(body=func.root_block.body.body.replace(
        body=func.root_block.body.body.body.replace(body=realize)))
    func = func.replace(body=_root(nest))
    assert param_traffic(func)["C"] == 2 * 8 * 8 * 4


def test_intermediates_are_free():
    assert param_traffic(add_relu(64)) == {"A": 256, "B": 256, "C": 256}
    assert min_bytes(add_relu(64)) == 768


def test_bytes_unchanged_by_scheduling():
    assert min_bytes(split_matmul(30, 8, 4, 8)) == min_bytes(matmul(30, 8, 4))
    assert min_bytes(computed_at_add_relu(64)) == min_bytes(add_relu(64))


def test_unused_param_costs_nothing():
    func = add_relu(8)
    extra = Buffer("unused", (100,))
    func = func.replace(params=func.params + (extra,))
    assert param_traffic(func)["unused"] == 0


def test_arithmetic_intensity():
    assert arithmetic_intensity(matmul(64, 64, 64)) == pytest.approx(2 * 64**3 / (3 * 64 * 64 * 4))
    assert arithmetic_intensity(add_relu(64)) == pytest.approx(128 / 768)


def test_arithmetic_intensity_of_func_without_params_is_an_error():
    func = PrimFunc("empty", (), _root(add_relu(4).root_block.body))
    with pytest.raises(ValueError, match="empty moves no parameter bytes"):
        arithmetic_intensity(func)


# --------------------------------------------------------------------------- dataflow


def test_block_regions_are_the_declared_regions():
    regions = block_regions(matmul(8, 8, 8))
    reads, writes = regions["C"]
    assert [r.buffer.name for r in reads] == ["C", "A", "B"]
    assert [w.buffer.name for w in writes] == ["C"]
    assert writes[0] == BufferRegion(Buffer("C", (8, 8)), (Range(Var("vi"), c(1)), Range(Var("vj"), c(1))))
    assert list(block_regions(add_relu())) == ["T_add", "C"]


def test_loop_trips_and_domains_agree_on_every_library_op():
    import math

    from workbench import ops

    for spec in ops.LIBRARY:
        for info in block_infos(spec.func()):
            domain = math.prod(iv.dom.extent.value for iv in info.block.iter_vars)
            assert info.executions == domain, (spec.name, info.block.name)


def test_docstring_examples():
    import doctest

    import workbench.ir.analysis as analysis

    assert doctest.testmod(analysis).failed == 0


def test_flops_and_bytes_unchanged_by_real_schedule_primitives():
    from workbench import ops, schedule

    func = ops.matmul(30, 16, 8)
    sch = schedule.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i_0, i_1 = sch.split(i, factors=[None, 8])  # 30 is not a multiple of 8: a predicate
    sch.reorder(i_0, k, i_1, j)
    if hasattr(sch, "fuse"):
        sch.fuse(i_1, j)
    scheduled = sch.mod
    assert scheduled != func
    assert flops(scheduled) == flops(func) == 2 * 30 * 16 * 8
    assert min_bytes(scheduled) == min_bytes(func)
    assert [info.executions for info in block_infos(scheduled)] == [30 * 16 * 8]
