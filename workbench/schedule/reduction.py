"""Reduction primitives: ``decompose_reduction`` (here) and ``rfactor``
(``workbench.schedule.reduction_rfactor``), with TVM semantics, and their ``Schedule`` methods.

``decompose_reduction`` moves a reduction block's ``T.init()`` into a block of its own,
placed before a loop of the block's nest; ``rfactor`` turns one reduction loop into a
spatial axis of an intermediate buffer (partial results) followed by a final reduction
over that axis. Both are pure functions ``func -> func`` taking blocks and loops by name;
the ``Schedule`` methods of the same names resolve handles and call these.

Choices that differ from TVM, and why (``rfactor``'s are in its module):

- ``decompose_reduction`` keeps the update block's name (TVM renames it ``C_update``):
  a handle is a name here, and renaming would invalidate every handle to the block.
"""

from __future__ import annotations

from typing import Any

from workbench.ir import (
    Block,
    BlockRealize,
    IterKind,
    PrimFunc,
    Var,
    const_value,
    seq,
    substitute,
)
from workbench.ir.dependence import block_accesses, iterations_overlap
from workbench.ir.regions import block_access_regions
from workbench.schedule.errors_reduction import (
    InitLoopInsideReductionError,
    InitLoopNotAncestorError,
    InitLoopRecomputedError,
    InitLoopRepeatsElementsError,
    MissingInitError,
    NotReductionBlockError,
)
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.reduction_nest import (
    binders,
    block_and_nest,
    copy_loops,
    fresh_block_name,
    insert_at_loop,
    reduce_vars,
    remake_predicate,
    wrap,
)
from workbench.schedule.reduction_rfactor import rfactor
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import (
    child_blocks,
    enclosing_loops,
    find_block,
    find_loop,
    fresh_name,
    replace_block,
    simplify_realizes,
    used_names,
    uses_var,
)

# ---------------------------------------------------------------------------------------
# decompose_reduction
# ---------------------------------------------------------------------------------------


def decompose_reduction(func: PrimFunc, block: str, loop: str) -> tuple[PrimFunc, str]:
    """Move a reduction block's init into a new block ``<block>_init`` placed before ``loop``.

    ``loop`` is one of the block's loops, outside every loop that binds a reduce variable
    (it may be the outermost reduction loop itself). The init block gets its own copies
    (``i_init``...) of the loops at and below ``loop`` that its spatial variables use; the
    loops above are shared. The original block keeps its name and loses its init: it is
    now a plain update, run after the init block has written the buffer.

    Before (``decompose_reduction(func, "C", "i")``)::

        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    After::

        for i_init, j_init in T.grid(16, 16):
            with T.block("C_init"):
                vi_1, vj_1 = T.axis.remap("SS", [i_init, j_init])
                C[vi_1, vj_1] = T.float32(0)
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    Parameters
    ----------
    func : PrimFunc
    block : str
        The reduction block's name.
    loop : str
        The loop before which the init block goes.

    Returns
    -------
    (PrimFunc, str)
        The new function and the init block's name.

    Raises
    ------
    InitLoopNotAncestorError, NotReductionBlockError, MissingInitError,
    InitLoopInsideReductionError, InitLoopRecomputedError, InitLoopRepeatsElementsError,
    BlockNotFoundError,
    LoopNotFoundError

    Example
    -------
    >>> new_func, init = decompose_reduction(matmul, "C", "k")
    >>> init
    'C_init'
    """
    primitive = "decompose_reduction"
    target, realize, loops, _ = block_and_nest(func, block, primitive)
    target_loop, _ = find_loop(func, loop, primitive)
    names = [lp.loop_var.name for lp in loops]
    if loop not in names:
        raise InitLoopNotAncestorError(primitive, loop, block, names, func, target_loop)
    if not reduce_vars(target):
        why = "all its iteration variables are spatial, so it has nothing to initialise"
        raise NotReductionBlockError(primitive, block, why, func, target)
    if target.init is None:
        raise MissingInitError(primitive, block, func, target)
    position = names.index(loop)
    for outer in loops[:position]:
        _, reduce = binders(realize, outer)
        if reduce:
            raise InitLoopInsideReductionError(
                primitive, loop, block, outer.loop_var.name, reduce[0], func, target_loop
            )

    for inner_loop in loops[position:]:
        spatial, reduce = binders(realize, inner_loop)
        if not spatial and not reduce and const_value(inner_loop.extent) != 1:
            raise InitLoopRecomputedError(
                primitive, loop, block, inner_loop.loop_var.name, func, inner_loop
            )

    _check_each_element_reduced_once(func, block, realize, loops[position:], loop)

    # the init block: the spatial iteration variables, renamed, with their bindings
    taken = used_names(func)
    spatial = [
        (iv, value)
        for iv, value in zip(target.iter_vars, realize.iter_values, strict=True)
        if iv.kind is IterKind.SPATIAL
    ]
    inner = loops[position:]
    chosen = [lp for lp in inner if any(uses_var(v, lp.loop_var.name) for _, v in spatial)]
    dropped = [lp for lp in inner if not any(lp is c for c in chosen)]
    new_loops, loop_map = copy_loops(chosen, taken, "_init")
    var_map = {iv.var: Var(fresh_name(iv.var.name, taken), iv.var.dtype) for iv, _ in spatial}
    init_body = substitute(target.init, var_map)
    reads, writes = block_access_regions(init_body)
    init_block = Block(
        fresh_block_name(func, f"{block}_init"),
        tuple(iv.replace(var=var_map[iv.var]) for iv, _ in spatial),
        reads,
        writes,
        init_body,
        None,
        (),
        target.annotations,
    )
    outer = loops[:position]
    predicate = remake_predicate(realize.predicate, dropped, loop_map, outer + new_loops)
    init_realize = BlockRealize(
        tuple(substitute(v, loop_map) for _, v in spatial), predicate, init_block
    )
    init_nest = simplify_realizes(wrap(init_realize, new_loops), outer)

    # the update: the same block without its init; it now also reads what it writes
    def drop_init(node: Block) -> Block:
        read_buffers = {r.buffer for r in node.reads}
        extra = tuple(w for w in node.writes if w.buffer not in read_buffers)
        return node.replace(init=None, reads=extra + node.reads)

    new_func = replace_block(func, block, drop_init)
    new_func = insert_at_loop(new_func, loop, lambda node: seq(init_nest, node))
    return new_func, init_block.name


def _check_each_element_reduced_once(func: PrimFunc, block: str, realize: BlockRealize,
                                     inner: list, loop: str) -> None:
    """``InitLoopRepeatsElementsError`` where two iterations of a loop of ``inner`` that
    binds only spatial variables may write one element (the dependence analysis; unsure
    counts as yes): before the split each such iteration restarted the element's reduction
    at its init, after it they would all add to one. A loop that also binds a reduce
    variable writes an element in several iterations by design (the reduction itself)."""
    _, ancestors = find_block(func, block, "decompose_reduction")
    writes = [a for a in block_accesses(realize, ancestors[:-1]) if a.kind == "write"]
    for inner_loop in inner:
        spatial, reduce = binders(realize, inner_loop)
        if not spatial or reduce:
            continue
        for write in writes:
            if iterations_overlap(write, write, inner_loop):
                raise InitLoopRepeatsElementsError(
                    "decompose_reduction", loop, block, inner_loop.loop_var.name,
                    write.text, func, inner_loop)


# ---------------------------------------------------------------------------------------
# Schedule methods: resolve handles, call the pure function, record the step
# ---------------------------------------------------------------------------------------


class ReductionMethods:
    """The ``decompose_reduction`` and ``rfactor`` methods of ``Schedule``.

    Mixed into ``Schedule``, which provides ``mod``, ``_name_of`` and ``_commit`` (see
    ``workbench/schedule/README.md``).
    """

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Move a reduction block's init into a new block ``<name>_init`` before ``loop``.

        ``loop`` is a loop of the block outside all its reduction loops (the outermost
        reduction loop itself is allowed). The block keeps its name and handle.

        Before (``sch.decompose_reduction(C, k)``)::

            for i, j, k in T.grid(16, 16, 16):
                with T.block("C"):
                    ...
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

        After::

            for i, j in T.grid(16, 16):
                with T.block("C_init"):
                    vi_1, vj_1 = T.axis.remap("SS", [i, j])
                    C[vi_1, vj_1] = T.float32(0)
                for k in range(16):
                    with T.block("C"):
                        ...
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

        Raises ``InitLoopNotAncestorError``, ``InitLoopInsideReductionError``,
        ``NotReductionBlockError``, ``MissingInitError``. See
        ``workbench.schedule.reduction.decompose_reduction``.

        Example
        -------
        >>> C_init = sch.decompose_reduction(sch.get_block("C"), k)
        """
        primitive = "decompose_reduction"
        new_func, init = decompose_reduction(
            self.mod,
            self._name_of(block, primitive, "block", "block"),
            self._name_of(loop, primitive),
        )
        return self._commit(primitive, (block, loop), {}, new_func, [("block", init)])[0]

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor reduction loop ``loop`` out into a spatial axis of an ``_rf`` buffer.

        Returns the new ``<block>_rf`` block computing the partial results; the original
        block (same name) then reduces them. Loop handles stay with the ``_rf`` block.

        Before (``sch.rfactor(k_1, factor_axis=0)``)::

            for i, k_0, k_1 in T.grid(8, 3, 4):
                with T.block("B"):
                    ...
                    B[vi] = B[vi] + A[vi, vk]

        After::

            B_rf = T.alloc_buffer((4, 8), "float32")
            for i, k_0, k_1 in T.grid(8, 3, 4):
                with T.block("B_rf"):
                    ...
                    B_rf[vk_1, vi] = B_rf[vk_1, vi] + A[vi, vk_0 * 4 + vk_1]
            for i_1, k_1_1 in T.grid(8, 4):
                with T.block("B"):
                    ...
                    B[vi_1] = B[vi_1] + B_rf[vk_1_1, vi_1]

        Raises ``NotReductionLoopError``, ``MixedIterLoopError``,
        ``SharedReductionLoopError``, ``UnboundLoopInReductionError``, ``MissingInitError``,
        ``MultipleStoresError``, ``NotReductionBlockError``, ``NonAssociativeUpdateError``,
        ``InitNotIdentityError``, ``FactorAxisOutOfRangeError``. See
        ``workbench.schedule.reduction_rfactor.rfactor``.

        Example
        -------
        >>> ko, ki = sch.split(k, factors=[None, 4])
        >>> rf = sch.rfactor(ki, factor_axis=0)
        >>> sch.vectorize(sch.get_loops(rf)[-1])     # after a reorder putting ki innermost
        """
        new_func, rf_block = rfactor(self.mod, self._name_of(loop, "rfactor"), factor_axis)
        attrs: dict[str, Any] = {"factor_axis": factor_axis}
        return self._commit("rfactor", (loop,), attrs, new_func, [("block", rf_block)])[0]


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------


def _first_reduce_loop(sch, block: BlockRV) -> LoopRV:
    """The outermost loop of ``block`` binding a reduce variable (else its first loop)."""
    name = sch.name(block)
    node, ancestors = find_block(sch.mod, name, "legal_primitives")
    realize = ancestors[-1]
    loops = enclosing_loops(ancestors)
    if not loops:
        why = "it has no loops"
        raise NotReductionBlockError("decompose_reduction", name, why, sch.mod, node)
    chosen = next((lp for lp in loops if binders(realize, lp)[1]), loops[0])
    return sch._handle_for_name("loop", chosen.loop_var.name)


def _probe_decompose(sch, handle: BlockRV | LoopRV):
    if handle.kind == "block":
        return (handle, _first_reduce_loop(sch, handle)), {}
    node = find_loop(sch.mod, sch.name(handle), "legal_primitives")[0]
    blocks = child_blocks(node)
    if not blocks:
        raise InitLoopNotAncestorError(
            "decompose_reduction", node.loop_var.name, "(no block)", [], sch.mod, node
        )
    block = next((b for b in blocks if b.init is not None), blocks[0])
    return (sch._handle_for_name("block", block.name), handle), {}


def _probe_rfactor(sch, loop: LoopRV):
    return (loop,), {"factor_axis": 0}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


register_instruction(
    InstructionKind(
        "decompose_reduction",
        ("block", "loop"),
        outputs="block",
        applies_to=("block", "loop"),
        probe=_probe_decompose,
    )
)
register_instruction(
    InstructionKind(
        "rfactor",
        ("loop",),
        (AttrSpec("factor_axis", _is_int, "an int"),),
        outputs="block",
        applies_to=("loop",),
        probe=_probe_rfactor,
    )
)
