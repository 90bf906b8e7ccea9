"""``reindex``: stage a buffer through a copy indexed by the block's iteration variables.

TVM's ``reindex``: for a block that accesses ``A[f(vi, vj)]`` (one index pattern), a new
buffer ``A_reindex`` indexed by the iteration variables that pattern uses is created; a
copy block ``A_reindex[v0, v1] = A[f(v0, v1)]`` runs before the block (a read) or
``C[f(v0, v1)] = C_reindex[v0, v1]`` after it (a write), and the block accesses the copy.
Typically followed by ``transform_layout`` of the copy, to get a layout a tensor
intrinsic or a vector unit wants.
"""

from __future__ import annotations

from workbench.ir import (
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    PrimFunc,
    Range,
    SeqStmt,
    Var,
    collect,
    seq,
    substitute,
)
from workbench.ir.functor import IRMapper
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_reindex import (
    ReindexAccumulatorWithoutInitError,
    ReindexNoAccessError,
    ReindexNonUniqueAccessError,
    ReindexNotLeafBlockError,
    ReindexNotLoopChainError,
    ReindexReadOfWrittenBufferError,
)
from workbench.schedule.handles import BlockRV
from workbench.schedule.layout import _find_buffer, _is_buffer_attr
from workbench.schedule.memory import buffer_region
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import block_names, find_block, fresh_name, simplify, used_names

# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------


def resolve_buffer(func: PrimFunc, block: Block, buffer: object) -> tuple[str, Buffer]:
    """``(kind, buffer)`` for ``("read" | "write", i)`` or a name (a write wins, as in TVM)."""
    if isinstance(buffer, str):
        found = None
        for kind, regions in (("read", block.reads), ("write", block.writes)):
            for region in regions:
                if region.buffer.name == buffer:
                    found = (kind, region.buffer)
        if found is None:
            _find_buffer("reindex", func, block, buffer)  # BufferNotFoundError if unknown
            raise ReindexNoAccessError("reindex", block, buffer, func)
        return found
    if isinstance(buffer, (tuple, list)) and len(buffer) == 2 and buffer[0] in ("read", "write"):
        return buffer[0], buffer_region("reindex", func, block, buffer[0], buffer[1]).buffer
    expected = 'a buffer name or ("read" | "write", i)'
    raise InvalidArgumentError("reindex", "buffer", expected, buffer)


def _access_indices(func: PrimFunc, block: Block, buffer: Buffer) -> tuple[PrimExpr, ...]:
    def is_access(n) -> bool:
        return isinstance(n, (BufferLoad, BufferStore)) and n.buffer == buffer

    accesses = collect(block.init, is_access) if block.init is not None else []
    accesses += collect(block.body, is_access)
    if not accesses:
        raise ReindexNoAccessError("reindex", block, buffer.name, func)
    first = accesses[0].indices
    for access in accesses[1:]:
        if access.indices != first:
            raise ReindexNonUniqueAccessError(
                "reindex", block, buffer.name, _text(first), _text(access.indices), func
            )
    return first


def _text(indices: tuple[PrimExpr, ...]) -> str:
    from workbench.ir.expr_text import expr_text

    return "[" + ", ".join(expr_text(i) for i in indices) + "]"


class _Redirect(IRMapper):
    def __init__(self, old: Buffer, new: Buffer, indices: tuple[PrimExpr, ...]):
        self.old, self.new, self.indices = old, new, indices

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        return BufferLoad(self.new, self.indices) if node.buffer == self.old else node

    def visit_BufferStore(self, node: BufferStore):
        node = self.generic_visit(node)
        if node.buffer != self.old:
            return node
        return BufferStore(self.new, node.value, self.indices)

    def visit_BufferRegion(self, node: BufferRegion):
        if node.buffer != self.old:
            return node
        point = tuple(Range(i, IntImm(1)) for i in self.indices)
        return BufferRegion(self.new, point)


def _top_level_position(func: PrimFunc, block: Block, ancestors) -> int:
    """Index of the block's loop nest in the root block's body; checks the chain."""
    root = func.root_block
    chain = list(ancestors[ancestors.index(root) + 1 :]) + [block]
    # chain: [top stmt (maybe SeqStmt), For..., BlockRealize, block]
    if chain and isinstance(chain[0], SeqStmt):
        seq_node, chain = chain[0], chain[1:]
        position = next(n for n, s in enumerate(seq_node.stmts) if s is chain[0])
    else:
        position = 0
    for outer, inner in zip(chain, chain[1:], strict=False):
        if isinstance(outer, For) and outer.body is not inner:
            raise ReindexNotLoopChainError("reindex", block, "", func)
        if not isinstance(outer, (For, BlockRealize)):
            raise ReindexNotLoopChainError("reindex", block, "", func)
    return position


def reindex(func: PrimFunc, block: str, buffer: object) -> tuple[PrimFunc, str]:
    """Stage ``buffer`` of ``block`` through a copy indexed by the block's iteration variables.

    Before (``reindex(func, "B", ("read", 0))``)::

        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi] * T.float32(2)

    After::

        A_reindex = T.alloc_buffer((128, 128))
        for ax0, ax1 in T.grid(128, 128):
            with T.block("A_reindex"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                A_reindex[v0, v1] = A[v1, v0]
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A_reindex[vi, vj] * T.float32(2)

    Returns the new function and the copy block's name.

    Raises
    ------
    BufferIndexError, BufferNotFoundError, InvalidArgumentError
        A bad ``buffer`` argument.
    ReindexNoAccessError, ReindexNonUniqueAccessError, ReindexNotLeafBlockError,
    ReindexNotLoopChainError, ReindexReadOfWrittenBufferError, ReindexAccumulatorWithoutInitError
    """
    node, ancestors = find_block(func, block, "reindex")
    kind, buf = resolve_buffer(func, node, buffer)
    if collect(node.body, lambda n: isinstance(n, Block)):
        raise ReindexNotLeafBlockError("reindex", node, buf.name, func)
    if kind == "read" and any(w.buffer == buf for w in node.writes):
        raise ReindexReadOfWrittenBufferError("reindex", node, buf.name, func)
    if kind == "write" and node.init is None and any(r.buffer == buf for r in node.reads):
        raise ReindexAccumulatorWithoutInitError("reindex", node, buf.name, func)
    if node is func.root_block or func.root_block not in ancestors:
        raise ReindexNotLoopChainError("reindex", node, buf.name, func)
    try:
        position = _top_level_position(func, node, ancestors)
    except ReindexNotLoopChainError:
        raise ReindexNotLoopChainError("reindex", node, buf.name, func) from None
    indices = _access_indices(func, node, buf)
    domain = {
        iv.var: (iv.dom.min.value, iv.dom.min.value + iv.dom.extent.value - 1)
        for iv in node.iter_vars
    }
    indices = tuple(simplify(i, domain) for i in indices)  # co // 64 -> 0 when co < 64
    used = {v for i in indices for v in collect(i, lambda n: isinstance(n, Var))}
    covered = [iv for iv in node.iter_vars if iv.var in used]

    taken = used_names(func)
    new_buf = Buffer(
        fresh_name(buf.name + "_reindex", taken),
        tuple(int(iv.dom.min.value + iv.dom.extent.value) for iv in covered),
        buf.dtype,
        buf.scope,
    )
    copy_vars = [Var(fresh_name(f"v{n}", taken), iv.var.dtype) for n, iv in enumerate(covered)]
    loop_vars = [Var(fresh_name(f"ax{n}", taken), iv.var.dtype) for n, iv in enumerate(covered)]
    target_indices = tuple(
        substitute(i, {iv.var: v for iv, v in zip(covered, copy_vars, strict=True)})
        for i in indices
    )
    reindex_indices = tuple(copy_vars)
    if kind == "write":
        src, src_idx, dst, dst_idx = new_buf, reindex_indices, buf, target_indices
    else:
        src, src_idx, dst, dst_idx = buf, target_indices, new_buf, reindex_indices
    copy_name = fresh_name(dst.name + "_reindex" if kind == "write" else dst.name,
                           set(block_names(func)) | {"root"})
    copy_block = Block(
        copy_name,
        tuple(IterVar(v, iv.dom, IterKind.SPATIAL) for v, iv in zip(copy_vars, covered,
                                                                   strict=True)),
        (BufferRegion(src, tuple(Range(i, IntImm(1)) for i in src_idx)),),
        (BufferRegion(dst, tuple(Range(i, IntImm(1)) for i in dst_idx)),),
        BufferStore(dst, BufferLoad(src, src_idx), dst_idx),
    )
    stmt = BlockRealize(tuple(loop_vars), IntImm(1, "bool"), copy_block)
    for loop_var, iv in reversed(list(zip(loop_vars, covered, strict=True))):
        stmt = For(loop_var, iv.dom.min, iv.dom.extent, ForKind.SERIAL, stmt)

    redirect = _Redirect(buf, new_buf, tuple(iv.var for iv in covered))
    new_block = node.replace(
        body=redirect.visit(node.body),
        init=None if node.init is None else redirect.visit(node.init),
        reads=tuple(redirect.visit(r) for r in node.reads),
        writes=tuple(redirect.visit(r) for r in node.writes),
    )
    new_func = _replace_block_node(func, node, new_block)
    root = new_func.root_block
    body = root.body
    stmts = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    stmts.insert(position + (1 if kind == "write" else 0), stmt)
    new_root = root.replace(body=seq(*stmts), alloc_buffers=root.alloc_buffers + (new_buf,))
    return new_func.replace(body=new_func.body.replace(block=new_root)), copy_name


def _replace_block_node(func: PrimFunc, old: Block, new: Block) -> PrimFunc:
    class _Swap(IRMapper):
        def visit_Block(self, node):
            return new if node is old else self.generic_visit(node)

        def visit_BufferStore(self, node):
            return node

    return func.replace(body=_Swap().visit(func.body))


# ---------------------------------------------------------------------------------------
# Schedule methods
# ---------------------------------------------------------------------------------------


class ReindexMethods:
    """The ``reindex`` method of ``Schedule``."""

    def reindex(self, block: BlockRV, buffer: tuple[str, int] | str) -> BlockRV:
        """Stage a buffer of the block through a copy indexed by its iteration variables.

        See ``workbench.schedule.reindex.reindex`` for the IR before and after.

        Example
        -------
        >>> copy = sch.reindex(sch.get_block("B"), ("read", 0))
        """
        name = self._name_of(block, "reindex", "block", "block")
        new_func, copy = reindex(self.mod, name, buffer)
        attrs = {"buffer": list(buffer) if isinstance(buffer, tuple) else buffer}
        (handle,) = self._commit("reindex", (block,), attrs, new_func, [("block", copy)])
        return handle


def _probe_reindex(sch, block: BlockRV):
    """The block's first written buffer (TVM's common use: a reindexed output stage), else
    its first read."""
    node = find_block(sch.mod, sch.name(block), "reindex")[0]
    return (block, ("write", 0) if node.writes else ("read", 0)), {}


register_instruction(
    InstructionKind(
        "reindex",
        ("block",),
        (AttrSpec("buffer", _is_buffer_attr, 'a buffer name or ["read" | "write", index]'),),
        outputs="block",
        applies_to=("block",),
        probe=_probe_reindex,
    )
)
