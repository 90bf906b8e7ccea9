"""``rfactor`` (TVM semantics): one reduction loop becomes a spatial axis of an intermediate
buffer of partial results (block ``<block>_rf``), followed by a final reduction over that
axis in the original block. A pure function ``func -> func`` taking the loop by name; the
``Schedule`` method (``workbench.schedule.reduction.ReductionMethods``) resolves handles and
calls it.

Choices that differ from TVM, and why:

- ``rfactor`` keeps the original loops (and their handles) around the new ``C_rf`` block
  and gives the final reduction's loops fresh names (``i_1``, ``k_1_1``). The printed IR
  is TVM's; with ``k_0`` still valid, ``sch.parallel(k_0)`` after ``sch.rfactor(k_0, 0)``
  parallelises the partial sums directly.
- When the block shares outer spatial loops with other blocks (after ``compute_at``),
  ``rfactor`` puts both new nests inside the innermost shared loop instead of copying the
  shared loops; the result is the same computation, and loops of the other blocks keep
  their names.
- Guards (``T.where``) of the final reduction keep the conditions of the original guard
  with the dropped reduction loops at their minimum (where the rfactor block's init ran),
  so a partial result that was never initialised is never read.
"""

from __future__ import annotations

from workbench.ir import (
    Block,
    BlockRealize,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IRMapper,
    IterKind,
    IterVar,
    PrimExpr,
    PrimFunc,
    Range,
    Sub,
    Var,
    const_value,
    seq,
    substitute,
)
from workbench.ir.buffer import Buffer
from workbench.ir.regions import block_access_regions
from workbench.schedule.affine import first_non_affine
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_loops import NonAffineBindingError, NonConstantExtentError
from workbench.schedule.errors_reduction import (
    FactorAxisOutOfRangeError,
    MixedIterLoopError,
    NotReductionLoopError,
    RfactorLoopNotSerialError,
    SharedReductionLoopError,
    UnboundLoopInReductionError,
)
from workbench.schedule.reducers import check_reduction
from workbench.schedule.reduction_nest import (
    add_alloc,
    binders,
    block_and_nest,
    copy_loops,
    fresh_block_name,
    insert_at_loop,
    reduce_vars,
    remake_predicate,
    wrap,
)
from workbench.schedule.tree import (
    child_blocks,
    find_loop,
    fresh_name,
    outer_realizes,
    simplify_realizes,
    used_names,
    uses_var,
)


def _rfactor_block(func: PrimFunc, primitive: str, rf_loop: For) -> tuple[Block, BlockRealize]:
    """The one block under the rfactor loop (else the error saying why there is none)."""
    name = rf_loop.loop_var.name
    realizes = outer_realizes(rf_loop.body)
    if not realizes:
        raise NotReductionLoopError(primitive, name, "there is no block inside it", func, rf_loop)
    if len(realizes) > 1:
        first = realizes[0].block.name
        others = [r.block.name for r in realizes[1:]]
        raise SharedReductionLoopError(primitive, name, first, others, func, rf_loop)
    return realizes[0].block, realizes[0]


def _check_nest(
    func: PrimFunc, primitive: str, rf_loop: For, realize: BlockRealize, loops: list[For]
) -> int:
    """Check the loops around the block; return the index of the outermost loop that holds
    this block only (the loops above it are shared with other blocks)."""
    block = realize.block
    name = rf_loop.loop_var.name
    spatial, reduce = binders(realize, rf_loop)
    if spatial and reduce:
        raise MixedIterLoopError(primitive, name, block.name, spatial, reduce, func, rf_loop)
    if not reduce:
        if spatial:
            why = f"it binds the spatial variable(s) {', '.join(spatial)} of block {block.name!r}"
        elif not reduce_vars(block):
            why = f"block {block.name!r} has no reduce variable at all"
        elif const_value(rf_loop.extent) == 1:
            why = ""  # an unbound loop of one iteration: a partial-result axis of size 1 (TVM)
        else:
            why = f"it binds no iteration variable of block {block.name!r}"
        if why:
            raise NotReductionLoopError(primitive, name, why, func, rf_loop)

    exclusive = next(
        index
        for index, loop in enumerate(loops)
        if [r.block.name for r in outer_realizes(loop.body)] == [block.name]
    )
    seen_reduce = False
    for index, loop in enumerate(loops):
        spatial, reduce = binders(realize, loop)
        loop_name = loop.loop_var.name
        if spatial and reduce:
            raise MixedIterLoopError(primitive, loop_name, block.name, spatial, reduce, func, loop)
        if reduce and index < exclusive:
            others = [b.name for b in child_blocks(loop) if b.name != block.name]
            raise SharedReductionLoopError(primitive, loop_name, block.name, others, func, loop)
        if not spatial and not reduce and seen_reduce and const_value(loop.extent) != 1:
            raise UnboundLoopInReductionError(primitive, loop_name, block.name, func, loop)
        seen_reduce = seen_reduce or bool(reduce)
    return exclusive


def rfactor(func: PrimFunc, loop: str, factor_axis: int) -> tuple[PrimFunc, str]:
    """Turn reduction loop ``loop`` into a spatial axis of partial results.

    The reduction block under ``loop`` becomes two blocks (TVM's structure):

    - ``<block>_rf`` writes a new buffer ``<buffer>_rf``, the output buffer with one more
      dimension of the loop's extent at position ``factor_axis``: the loop's variable is
      now spatial there, the other reduction loops still reduce;
    - the original block (same name) reduces ``<buffer>_rf`` over that new axis into the
      output, under fresh copies of the spatial loops and of ``loop``.

    The update must be ``C = C + x``, ``C = C * x``, ``C = T.max(C, x)`` or
    ``C = T.min(C, x)`` and the init the operator's identity.

    Before (``rfactor(func, "k_1", 0)``, after splitting ``k`` by 4)::

        for i, k_0, k_1 in T.grid(8, 3, 4):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                vk = T.axis.reduce(12, k_0 * 4 + k_1)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    After::

        B_rf = T.alloc_buffer((4, 8), "float32")
        for i, k_0, k_1 in T.grid(8, 3, 4):
            with T.block("B_rf"):
                vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
                with T.init():
                    B_rf[vk_1, vi] = T.float32(0)
                B_rf[vk_1, vi] = B_rf[vk_1, vi] + A[vi, vk_0 * 4 + vk_1]
        for i_1, k_1_1 in T.grid(8, 4):
            with T.block("B"):
                vk_1_1, vi_1 = T.axis.remap("RS", [k_1_1, i_1])
                with T.init():
                    B[vi_1] = T.float32(0)
                B[vi_1] = B[vi_1] + B_rf[vk_1_1, vi_1]

    Parameters
    ----------
    func : PrimFunc
    loop : str
        A loop binding (part of) a reduce variable, holding one block.
    factor_axis : int
        Where the new dimension goes in the ``_rf`` buffer, in ``[-(ndim + 1), ndim]``.

    Returns
    -------
    (PrimFunc, str)
        The new function and the rfactor block's name.

    Raises
    ------
    NonAffineBindingError (a binding such as ``(k * k) // 2``), RfactorLoopNotSerialError
    (a parallel/vectorized/unrolled/thread-bound loop), NotReductionLoopError (a loop that
    binds no reduce variable, except an unbound loop of extent 1, as in TVM),
    MixedIterLoopError, SharedReductionLoopError,
    UnboundLoopInReductionError, MissingInitError, MultipleStoresError,
    NotReductionBlockError, NonAssociativeUpdateError, InitNotIdentityError,
    FactorAxisOutOfRangeError, NonConstantExtentError, InvalidArgumentError

    Example
    -------
    >>> new_func, rf_block = rfactor(func, "k_1", 0)
    >>> rf_block
    'B_rf'
    """
    primitive = "rfactor"
    if isinstance(factor_axis, bool) or not isinstance(factor_axis, int):
        raise InvalidArgumentError(primitive, "factor_axis", "an int", factor_axis)
    rf_loop, _ = find_loop(func, loop, primitive)
    block, realize = _rfactor_block(func, primitive, rf_loop)
    _, _, loops, scope = block_and_nest(func, block.name, primitive)
    bad = first_non_affine([realize], {lp.loop_var.name for lp in loops})
    if bad is not None:
        _, iter_var, value = bad
        raise NonAffineBindingError(primitive, loop, block.name, iter_var, value, func, block)
    if rf_loop.kind is not ForKind.SERIAL or rf_loop.thread_binding is not None:
        raise RfactorLoopNotSerialError(primitive, loop, rf_loop.kind.value, func, rf_loop)
    exclusive = _check_nest(func, primitive, rf_loop, realize, loops)
    update, reducer, rhs, init = check_reduction(func, primitive, block)
    ndim = update.buffer.ndim
    if not -(ndim + 1) <= factor_axis <= ndim:
        raise FactorAxisOutOfRangeError(
            primitive, loop, update.buffer.name, ndim, factor_axis, func, rf_loop
        )
    axis = factor_axis + ndim + 1 if factor_axis < 0 else factor_axis
    extent = const_value(rf_loop.extent)
    if not isinstance(extent, int):
        raise NonConstantExtentError(primitive, loop, rf_loop.extent, func, rf_loop)

    taken = used_names(func)
    buffer = update.buffer
    shape = buffer.shape[:axis] + (extent,) + buffer.shape[axis:]
    rf_buffer = Buffer(fresh_name(f"{buffer.name}_rf", taken), shape, buffer.dtype, buffer.scope)
    rf_block_name = fresh_block_name(func, f"{block.name}_rf")
    nest = loops[exclusive:]

    def rf_index(indices: tuple[PrimExpr, ...], var: Var) -> tuple[PrimExpr, ...]:
        position = var if const_value(rf_loop.min) == 0 else Sub(var, rf_loop.min)
        return indices[:axis] + (position,) + indices[axis:]

    # -- the rfactor block, under the original loops ----------------------------------
    rf_var = Var(fresh_name("v" + loop, taken), rf_loop.loop_var.dtype)
    domain = Range(rf_loop.min, rf_loop.extent)
    iter_vars = [IterVar(rf_var, domain, IterKind.SPATIAL)]
    bindings: list[PrimExpr] = [rf_loop.loop_var]
    loop_to_iter: dict[Var, PrimExpr] = {rf_loop.loop_var: rf_var}
    old_to_new: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iv.kind is IterKind.SPATIAL or not uses_var(value, loop):
            iter_vars.append(iv)
            bindings.append(value)
            continue
        # a reduce variable using the rfactor loop: one new reduce variable per other loop
        for other in loops:
            if other.loop_var in loop_to_iter or not uses_var(value, other.loop_var.name):
                continue
            new = Var(fresh_name("v" + other.loop_var.name, taken), other.loop_var.dtype)
            loop_to_iter[other.loop_var] = new
            iter_vars.append(IterVar(new, Range(other.min, other.extent), IterKind.REDUCE))
            bindings.append(other.loop_var)
        old_to_new[iv.var] = substitute(value, loop_to_iter)
    rf_indices = rf_index(update.indices, rf_var)
    rf_update = BufferStore(
        rf_buffer,
        reducer.combine(BufferLoad(rf_buffer, rf_indices), substitute(rhs, old_to_new)),
        rf_indices,
    )
    rf_init = BufferStore(rf_buffer, init.value, rf_indices)
    reads, writes = block_access_regions(rf_update, rf_init)
    rf_block = Block(
        rf_block_name, tuple(iter_vars), reads, writes, rf_update, rf_init, (), block.annotations
    )
    rf_realize = BlockRealize(tuple(bindings), realize.predicate, rf_block)

    # -- the final reduction over the new axis, under fresh copies of the loops ---------
    kept = [lp for lp in nest if lp is rf_loop or not binders(realize, lp)[1]]
    dropped = [lp for lp in nest if not any(lp is k for k in kept)]
    wb_loops, loop_map = copy_loops(kept, taken, "")
    wb_rf_var = Var(fresh_name("v" + loop_map[rf_loop.loop_var].name, taken), rf_var.dtype)
    wb_iter_vars = [IterVar(wb_rf_var, domain, IterKind.REDUCE)]
    wb_bindings: list[PrimExpr] = [loop_map[rf_loop.loop_var]]
    var_map: dict[Var, PrimExpr] = {rf_var: wb_rf_var}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iv.kind is IterKind.SPATIAL:
            new = Var(fresh_name(iv.var.name, taken), iv.var.dtype)
            var_map[iv.var] = new
            wb_iter_vars.append(iv.replace(var=new))
            wb_bindings.append(substitute(value, loop_map))
    out = tuple(substitute(index, var_map) for index in update.indices)
    partial = BufferLoad(rf_buffer, tuple(substitute(index, var_map) for index in rf_indices))
    wb_update = BufferStore(buffer, reducer.combine(BufferLoad(buffer, out), partial), out)
    wb_init = BufferStore(buffer, init.value, out)
    reads, writes = block_access_regions(wb_update, wb_init)
    wb_block = Block(
        block.name, tuple(wb_iter_vars), reads, writes, wb_update, wb_init, (), block.annotations
    )
    outer = loops[:exclusive]
    predicate = remake_predicate(realize.predicate, dropped, loop_map, outer + wb_loops)
    wb_realize = BlockRealize(tuple(wb_bindings), predicate, wb_block)
    wb_nest = simplify_realizes(wrap(wb_realize, wb_loops), outer)

    class _SwapRealize(IRMapper):
        def visit_BlockRealize(self, node):
            return rf_realize if node.block.name == block.name else node

    top = nest[0]
    new_func = insert_at_loop(
        func, top.loop_var.name, lambda node: seq(_SwapRealize().visit(node), wb_nest)
    )
    return add_alloc(new_func, scope.name, rf_buffer), rf_block_name
