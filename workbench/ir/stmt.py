"""Statements of the tensor IR.

Grammar (TVM TensorIR's block model)::

    Stmt ::= For(loop_var, min, extent, kind, body, thread_binding, annotations)
           | BlockRealize(iter_values, predicate, block)
           | BufferStore(buffer, value, indices)
           | IfThenElse(condition, then_case, else_case?)
           | SeqStmt(stmts)
           | Evaluate(value)

    Block    ::= (name, iter_vars, reads, writes, body, init?, alloc_buffers, annotations)
    IterVar  ::= (var, dom: Range, kind: spatial | reduce)

A ``Block`` is the unit of computation schedules talk about: its iteration variables
are bound to loop expressions by the ``BlockRealize`` around it, and its body only sees
its own iteration variables. Intermediate buffers are allocated by a block's
``alloc_buffers`` (the function's root block for ``T.alloc_buffer``); their ``scope``
says where they live (global, shared, local).
"""

from __future__ import annotations

import enum

from workbench.ir.buffer import Buffer
from workbench.ir.expr import IntImm, PrimExpr, Var
from workbench.ir.node import Node, ir_node


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


class IterKind(enum.Enum):
    SPATIAL = "S"
    REDUCE = "R"


class Stmt(Node):
    """Base class of statements."""

    __hash__ = Node.__hash__


@ir_node
class Range(Node):
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_extent(extent: int | PrimExpr) -> Range:
        from workbench.ir.expr import as_expr

        return Range(IntImm(0), as_expr(extent))

    __hash__ = Node.__hash__


@ir_node
class IterVar(Node):
    """A block iteration variable with its domain and kind (spatial or reduce)."""

    var: Var
    dom: Range
    kind: IterKind = IterKind.SPATIAL

    __hash__ = Node.__hash__


@ir_node
class BufferRegion(Node):
    """The part of a buffer a block reads or writes: one Range per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]

    __hash__ = Node.__hash__


@ir_node
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: str | None = None
    annotations: tuple[tuple[str, object], ...] = ()

    __hash__ = Node.__hash__


@ir_node
class Block(Stmt):
    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    annotations: tuple[tuple[str, object], ...] = ()

    __hash__ = Node.__hash__


@ir_node
class BlockRealize(Stmt):
    """Binds a block's iteration variables to ``iter_values``; runs it when ``predicate`` holds."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block

    __hash__ = Node.__hash__


@ir_node
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]

    __hash__ = Node.__hash__


@ir_node
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None

    __hash__ = Node.__hash__


@ir_node
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]

    __hash__ = Node.__hash__


@ir_node
class Evaluate(Stmt):
    """An expression evaluated for no result (kept for completeness; a no-op body)."""

    value: PrimExpr

    __hash__ = Node.__hash__


def seq(*stmts: Stmt) -> Stmt:
    """A SeqStmt of ``stmts``, flattening nested sequences; a single statement is returned as is."""
    flat: list[Stmt] = []
    for stmt in stmts:
        if stmt is None:
            continue
        if isinstance(stmt, SeqStmt):
            flat.extend(stmt.stmts)
        else:
            flat.append(stmt)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))


TRUE = IntImm(1, "bool")
