"""Walking statements with their ancestors, and finding blocks and loops by name.

Loops are identified by their loop variable's name and blocks by their name; both are
unique within a function (the IR's rule). The lookups here raise ``KeyError`` for an
unknown name; the schedule layer's (``workbench.schedule.tree.find_block`` /
``find_loop``) raise its ``BlockNotFoundError`` / ``LoopNotFoundError`` with the IR shown.
"""

from __future__ import annotations

from collections.abc import Iterator

from workbench.ir.expr import Var
from workbench.ir.function import PrimFunc
from workbench.ir.functor import collect
from workbench.ir.stmt import Block, BlockRealize, For, IfThenElse, IterKind, SeqStmt, Stmt

__all__ = ["stmt_children", "walk", "block_node", "loop_node", "uses_var", "reduce_binding"]


def stmt_children(stmt: Stmt) -> tuple[Stmt, ...]:
    """The statements directly inside ``stmt`` (a block's init comes before its body)."""
    if isinstance(stmt, For):
        return (stmt.body,)
    if isinstance(stmt, BlockRealize):
        return (stmt.block,)
    if isinstance(stmt, Block):
        return tuple(s for s in (stmt.init, stmt.body) if s is not None)
    if isinstance(stmt, SeqStmt):
        return stmt.stmts
    if isinstance(stmt, IfThenElse):
        return tuple(s for s in (stmt.then_case, stmt.else_case) if s is not None)
    return ()


def walk(stmt: Stmt, ancestors: tuple[Stmt, ...] = ()) -> Iterator[tuple[Stmt, tuple[Stmt, ...]]]:
    """Yield ``(stmt, ancestors)`` for every statement in program order, outermost first."""
    yield stmt, ancestors
    inner = ancestors + (stmt,)
    for child in stmt_children(stmt):
        yield from walk(child, inner)


def block_node(func: PrimFunc, name: str) -> tuple[Block, tuple[Stmt, ...]]:
    """The block called ``name`` (``"root"`` included) and its ancestors; ``KeyError`` if
    there is none."""
    for stmt, ancestors in walk(func.body):
        if isinstance(stmt, Block) and stmt.name == name:
            return stmt, ancestors
    raise KeyError(f"{func.name} has no block {name!r}")


def loop_node(func: PrimFunc, name: str) -> tuple[For, tuple[Stmt, ...]]:
    """The loop whose variable is ``name`` and its ancestors; ``KeyError`` if there is none."""
    for stmt, ancestors in walk(func.body):
        if isinstance(stmt, For) and stmt.loop_var.name == name:
            return stmt, ancestors
    raise KeyError(f"{func.name} has no loop {name!r}")


def uses_var(expr: object, name: str) -> bool:
    """Whether variable ``name`` occurs in ``expr``."""
    return bool(collect(expr, lambda n: isinstance(n, Var) and n.name == name))


def reduce_binding(loop: For) -> tuple[str, str] | None:
    """``(block, iter_var)`` of the first reduction variable bound by ``loop``, else None."""
    name = loop.loop_var.name
    for stmt, _ in walk(loop.body):
        if not isinstance(stmt, BlockRealize):
            continue
        for iv, value in zip(stmt.block.iter_vars, stmt.iter_values, strict=True):
            if iv.kind == IterKind.REDUCE and uses_var(value, name):
                return stmt.block.name, iv.var.name
    return None
