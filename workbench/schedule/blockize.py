"""``blockize``: turn the loop nest under a loop into a block (TVM's ``blockize``).

The block under the loop is split into an *outer* block that stands for one iteration of
the loops above the target loop and an *inner* block that is the original one, reindexed
to the loops below. Each binding ``b`` of the original block is divided into
``outer * c + inner``: ``inner`` uses only the loops from the target loop down (its range
is ``[0, c)``), ``outer`` only the loops above. The outer block gets one iteration
variable ``v_o`` per original one (extent ``dom / c``, bound to ``outer``); the inner
block keeps ``v_i`` (extent ``c``, bound to ``inner``) where ``c > 1``, and its body reads
``v`` as ``v_o * c + v_i``. A reduction's ``init`` moves to the outer block, around a copy
of the spatial inner loops (block ``<name>_init``), as in TVM.
"""

from __future__ import annotations

from workbench.ir import (
    TRUE,
    Block,
    BlockRealize,
    BufferRegion,
    For,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    PrimFunc,
    Range,
    Var,
    collect,
    const_value,
    expr_vars,
    substitute,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.ir.arith.linear import Linear, from_linear, linear_form
from workbench.schedule.errors_blockize import (
    BlockizeNotSingleBlockError,
    SubspaceNotDivisibleError,
)
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import (
    block_names,
    describe_stmt,
    find_loop,
    fresh_name,
    loop_ranges,
    replace_loop,
    used_names,
)

# ---------------------------------------------------------------------------------------
# Subspace division
# ---------------------------------------------------------------------------------------



def divide_binding(
    binding: PrimExpr, inner_ranges: dict[Var, tuple[int, int]], extent: int
) -> tuple[PrimExpr, PrimExpr, int] | None:
    """``(outer, inner, c)`` with ``binding == outer * c + inner`` and ``inner`` in ``[0, c)``
    over ``inner_ranges``; ``outer`` uses no inner variable. None when there is no such split.

    Example: ``i_0 * 16 + i_1`` with ``i_1 < 16`` gives ``(i_0, i_1, 16)``.
    """
    inner_vars = set(inner_ranges)
    used = expr_vars(binding)
    if not used & inner_vars:
        return binding, IntImm(0), 1
    if not used - inner_vars:  # only inner loops: the whole domain is inner
        lo, _ = int_bounds(binding, inner_ranges)
        return (IntImm(0), binding, extent) if lo is not None and lo >= 0 else None
    form = linear_form(simplify(binding), binding.dtype)
    inner, outer = Linear(), Linear(const=form.const)
    for term, coeff in form.terms.items():
        term_vars = expr_vars(term)
        if term_vars & inner_vars and term_vars - inner_vars:
            return None  # a term mixing both sides (i_0 * i_1, (i_0 + i_1) // 2)
        side = inner if term_vars & inner_vars else outer
        side.terms[term] = coeff
    inner_expr = from_linear(inner, binding.dtype)
    lo, hi = int_bounds(inner_expr, inner_ranges)
    if lo != 0 or hi is None:
        return None
    c = hi + 1
    if extent % c or outer.const % c or any(coeff % c for coeff in outer.terms.values()):
        return None
    quotient = Linear({t: k // c for t, k in outer.terms.items()}, outer.const // c)
    return from_linear(quotient, binding.dtype), inner_expr, c


def relax_region(region: BufferRegion, ranges: dict[Var, tuple[int, int]]) -> BufferRegion:
    """The region covered when the variables of ``ranges`` take all their values."""
    relaxed = []
    for dim, rng in enumerate(region.region):
        start, extent = rng.min, const_value(rng.extent)
        if not expr_vars(start) & set(ranges):
            relaxed.append(rng)
            continue
        form = linear_form(simplify(start), start.dtype)
        fixed, moving = Linear(const=form.const), Linear()
        for term, coeff in form.terms.items():
            (moving if expr_vars(term) & set(ranges) else fixed).terms[term] = coeff
        lo, hi = int_bounds(from_linear(moving, start.dtype), ranges)
        mixed = any(
            expr_vars(t) & set(ranges) and expr_vars(t) - set(ranges) for t in form.terms
        )
        if lo is None or hi is None or not isinstance(extent, int) or mixed:
            relaxed.append(Range(IntImm(0), IntImm(region.buffer.shape[dim])))
            continue
        new_start = simplify(from_linear(fixed, start.dtype) + IntImm(lo, start.dtype))
        relaxed.append(Range(new_start, IntImm(hi - lo + extent)))
    return BufferRegion(region.buffer, tuple(relaxed))


def _merge_regions(regions: list[BufferRegion]) -> tuple[BufferRegion, ...]:
    merged: dict[object, BufferRegion] = {}
    for region in regions:
        if region.buffer in merged and merged[region.buffer] != region:
            whole = tuple(Range(IntImm(0), IntImm(n)) for n in region.buffer.shape)
            merged[region.buffer] = BufferRegion(region.buffer, whole)
        else:
            merged.setdefault(region.buffer, region)
    return tuple(merged.values())


# ---------------------------------------------------------------------------------------
# blockize
# ---------------------------------------------------------------------------------------


def _chain(loop: For, func: PrimFunc) -> tuple[list[For], BlockRealize]:
    loops, stmt = [loop], loop.body
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, BlockRealize):
        raise BlockizeNotSingleBlockError("blockize", loop, describe_stmt(stmt), func)
    return loops, stmt


def _init_nest(
    block: Block,
    realize: BlockRealize,
    loops: list[For],
    sub: dict[Var, PrimExpr],
    taken: set[str],
    name: str,
) -> PrimExpr:
    """The outer block's init: the spatial inner loops around block ``name`` doing the init."""
    init = substitute(block.init, sub)
    ivs, values, mapping = [], [], {}
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        if iv.kind is IterKind.SPATIAL and collect(init, lambda n, v=iv.var: n == v):
            new_var = Var(fresh_name(iv.var.name + "_init", taken), iv.var.dtype)
            mapping[iv.var] = new_var
            ivs.append(iv.replace(var=new_var))
            values.append(value)
    init = substitute(init, mapping)
    writes = tuple(substitute(w, mapping) for w in realize.block.writes)
    stmt = BlockRealize(
        tuple(values), realize.predicate, Block(name, tuple(ivs), (), writes, init)
    )
    loop_map = {}
    for loop in reversed(loops):
        if any(collect(v, lambda n, lv=loop.loop_var: n == lv) for v in values):
            new_var = Var(fresh_name(loop.loop_var.name + "_init", taken), loop.loop_var.dtype)
            loop_map[loop.loop_var] = new_var
            stmt = loop.replace(loop_var=new_var, body=stmt)
    return substitute(stmt, loop_map)


def blockize(
    func: PrimFunc, loop: str, *, preserve_unit_iters: bool = True
) -> tuple[PrimFunc, str]:
    """Make the loops from ``loop`` down, and the block they nest, a new outer block.

    Before (``blockize(func, "j")``)::

        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    After::

        for i in range(128):
            with T.block("blockized_B"):
                vi_o = T.axis.spatial(128, i)
                vj_o = T.axis.spatial(1, 0)
                T.reads(A[vi_o, 0:128])
                T.writes(B[vi_o, 0:128])
                for j in range(128):
                    with T.block("B"):
                        vj_i = T.axis.spatial(128, j)
                        B[vi_o, vj_i] = A[vi_o, vj_i] * T.float32(2)

    ``preserve_unit_iters=False`` substitutes 0 for an original variable whose outer and
    inner extents are both 1 (TVM). Returns the new function and the outer block's name.

    Raises
    ------
    LoopNotFoundError
    BlockizeNotSingleBlockError
        The loop does not nest exactly one block through a chain of loops.
    SubspaceNotDivisibleError
        A binding does not split into outer and inner parts.
    """
    primitive = "blockize"
    target, _ = find_loop(func, loop, primitive)
    loops, realize = _chain(target, func)
    block = realize.block
    inner_ranges = loop_ranges(loops)
    taken = used_names(func)
    outer_ivs, outer_values, inner_ivs, inner_values, sub = [], [], [], [], {}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        extent = const_value(iv.dom.extent)
        divided = None
        if isinstance(extent, int) and const_value(iv.dom.min) == 0:
            divided = divide_binding(value, inner_ranges, extent)
        if divided is None:
            raise SubspaceNotDivisibleError(primitive, target, block, str(value), func)
        outer, inner, c = divided
        outer_var = Var(fresh_name(iv.var.name + "_o", taken), iv.var.dtype)
        outer_ivs.append(IterVar(outer_var, Range.from_extent(extent // c), iv.kind))
        outer_values.append(outer)
        if c == 1:
            unit = extent // c == 1 and not preserve_unit_iters
            sub[iv.var] = IntImm(0, iv.var.dtype) if unit else outer_var
            continue
        inner_var = Var(fresh_name(iv.var.name + "_i", taken), iv.var.dtype)
        inner_ivs.append(IterVar(inner_var, Range.from_extent(c), iv.kind))
        inner_values.append(inner)
        sub[iv.var] = inner_var if extent // c == 1 else outer_var * c + inner_var
    inner_block = Block(
        block.name,
        tuple(inner_ivs),
        tuple(substitute(r, sub) for r in block.reads),
        tuple(substitute(r, sub) for r in block.writes),
        substitute(block.body, sub),
        None,
        block.alloc_buffers,
        block.annotations,
    )
    inner_realize = BlockRealize(tuple(inner_values), realize.predicate, inner_block)
    outer_init = None
    names = taken | set(block_names(func)) | {"root"}  # a second blockize reuses no block's
    if block.init is not None:
        init_name = fresh_name(block.name + "_init", names)
        outer_init = _init_nest(block, inner_realize, loops, sub, taken, init_name)
    iv_ranges = {iv.var: (0, const_value(iv.dom.extent) - 1) for iv in inner_ivs}
    reads = _merge_regions([relax_region(r, iv_ranges) for r in inner_block.reads])
    writes = _merge_regions([relax_region(r, iv_ranges) for r in inner_block.writes])
    outer_name = fresh_name("blockized_" + block.name, names)

    def rebuild(node: For):
        body = _replace_realize(node, realize, inner_realize)
        outer_block = Block(
            outer_name, tuple(outer_ivs), reads, writes, body, outer_init
        )
        return BlockRealize(tuple(outer_values), TRUE, outer_block)

    return replace_loop(func, loop, rebuild), outer_name


def _replace_realize(stmt, old: BlockRealize, new: BlockRealize):
    if stmt is old:
        return new
    return stmt.replace(body=_replace_realize(stmt.body, old, new))


# ---------------------------------------------------------------------------------------
# Schedule methods
# ---------------------------------------------------------------------------------------


class BlockizeMethods:
    """The ``blockize`` method of ``Schedule``."""

    def blockize(self, target_loop: LoopRV, preserve_unit_iters: bool = True) -> BlockRV:
        """Turn the loops from ``target_loop`` down and their block into a new outer block.

        See ``workbench.schedule.blockize.blockize`` for the IR before and after.

        Example
        -------
        >>> outer = sch.blockize(sch.get_loops(sch.get_block("B"))[1])
        """
        name = self._name_of(target_loop, "blockize", "loop", "target_loop")
        new_func, outer = blockize(self.mod, name, preserve_unit_iters=preserve_unit_iters)
        attrs = {"preserve_unit_iters": preserve_unit_iters}
        (handle,) = self._commit("blockize", (target_loop,), attrs, new_func, [("block", outer)])
        return handle


def _probe_blockize(sch, loop: LoopRV):
    return (loop,), {}


register_instruction(
    InstructionKind(
        "blockize",
        ("loop",),
        (
            AttrSpec(
                "preserve_unit_iters", lambda v: isinstance(v, bool), "a bool", default=True
            ),
        ),
        outputs="block",
        applies_to=("loop",),
        probe=_probe_blockize,
    )
)
