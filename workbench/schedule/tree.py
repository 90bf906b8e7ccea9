"""Helpers the primitives share: finding loops and blocks, their ancestors, rewriting one
loop, fresh names, and simplifying bindings.

Loops are identified by their loop variable's name and blocks by their name; both are
unique within a function (the IR's rule), which is what makes names stable handles.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from workbench.ir import (
    TRUE,
    And,
    Block,
    BlockRealize,
    Buffer,
    For,
    IfThenElse,
    IntImm,
    IRMapper,
    Node,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    arith,
    const_value,
    seq,
)

# the walkers live in the IR layer (the dependence analysis uses them too)
from workbench.ir.names import fresh_name  # noqa: F401
from workbench.ir.node import node_fields
from workbench.ir.region_infer import loop_ranges  # noqa: F401
from workbench.ir.walk import reduce_binding, stmt_children, uses_var, walk  # noqa: F401
from workbench.schedule.errors import BlockNotFoundError, LoopNotFoundError

# ---------------------------------------------------------------------------------------
# Walking statements with their ancestors
# ---------------------------------------------------------------------------------------


def loop_names(func: PrimFunc) -> list[str]:
    """Names of all loop variables, in program order."""
    return [s.loop_var.name for s, _ in walk(func.body) if isinstance(s, For)]


def block_names(func: PrimFunc) -> list[str]:
    """Names of all blocks except the root, in program order."""
    root = func.root_block
    return [s.name for s, _ in walk(func.body) if isinstance(s, Block) and s is not root]


def find_loop(func: PrimFunc, name: str, primitive: str) -> tuple[For, tuple[Stmt, ...]]:
    """The loop whose variable is ``name`` and its ancestors; raises ``LoopNotFoundError``."""
    for stmt, ancestors in walk(func.body):
        if isinstance(stmt, For) and stmt.loop_var.name == name:
            return stmt, ancestors
    raise LoopNotFoundError(primitive, name, func, loop_names(func))


def find_block(func: PrimFunc, name: str, primitive: str) -> tuple[Block, tuple[Stmt, ...]]:
    """The block called ``name`` (``"root"`` included) and its ancestors; raises
    ``BlockNotFoundError``."""
    for stmt, ancestors in walk(func.body):
        if isinstance(stmt, Block) and stmt.name == name:
            return stmt, ancestors
    raise BlockNotFoundError(primitive, name, func, block_names(func))


def enclosing_loops(ancestors: tuple[Stmt, ...]) -> list[For]:
    """The loops directly around a statement, up to the nearest enclosing block, outermost first."""
    if ancestors and isinstance(ancestors[-1], BlockRealize):  # a block's own realize
        ancestors = ancestors[:-1]
    loops: list[For] = []
    for stmt in reversed(ancestors):
        if isinstance(stmt, For):
            loops.append(stmt)
        elif isinstance(stmt, (Block, BlockRealize)):
            break
    return loops[::-1]


def child_blocks(stmt: Stmt) -> list[Block]:
    """Blocks under ``stmt`` that are not inside another block under it, in program order."""
    found: list[Block] = []

    def visit(node: Stmt) -> None:
        for child in stmt_children(node):
            if isinstance(child, BlockRealize):
                found.append(child.block)
            else:
                visit(child)

    start = stmt.block if isinstance(stmt, BlockRealize) else stmt
    visit(start)
    return found


def outer_realizes(stmt: Stmt) -> list[BlockRealize]:
    """BlockRealizes under ``stmt`` that are not inside another block, in program order."""
    found: list[BlockRealize] = []

    def visit(node: Stmt) -> None:
        if isinstance(node, BlockRealize):
            found.append(node)
            return
        for child in stmt_children(node):
            visit(child)

    visit(stmt)
    return found


# ---------------------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------------------


class _ReplaceLoop(IRMapper):
    def __init__(self, name: str, rewrite: Callable[[For], Stmt], flatten: bool):
        self.name = name
        self.rewrite = rewrite
        self.flatten = flatten

    def visit_For(self, node: For):
        if node.loop_var.name == self.name:
            return self.rewrite(node)
        return self.generic_visit(node)

    def visit_SeqStmt(self, node: SeqStmt):
        new = self.generic_visit(node)
        return seq(*new.stmts) if self.flatten and new is not node else new

    # expressions never contain loops: do not descend into them
    def visit_BufferStore(self, node):
        return node


def replace_loop(
    func: PrimFunc, name: str, rewrite: Callable[[For], Stmt], *, flatten: bool = False
) -> PrimFunc:
    """``func`` with the loop called ``name`` replaced by ``rewrite(loop)``; with ``flatten``
    a sequence it returns is spliced into the enclosing sequence."""
    body = _ReplaceLoop(name, rewrite, flatten).visit(func.body)
    return func if body is func.body else func.replace(body=body)


class _ReplaceBlock(IRMapper):
    def __init__(self, name: str, rewrite: Callable[[Block], Block]):
        self.name = name
        self.rewrite = rewrite

    def visit_Block(self, node: Block):
        if node.name == self.name:
            return self.rewrite(node)
        return self.generic_visit(node)

    def visit_BufferStore(self, node):
        return node


def replace_block(func: PrimFunc, name: str, rewrite: Callable[[Block], Block]) -> PrimFunc:
    """``func`` with the block called ``name`` replaced by ``rewrite(block)``."""
    body = _ReplaceBlock(name, rewrite).visit(func.body)
    return func if body is func.body else func.replace(body=body)


class _ReplaceRealize(IRMapper):
    def __init__(self, name: str, new: BlockRealize):
        self.name, self.new = name, new

    def visit_BlockRealize(self, node: BlockRealize):
        if node.block.name == self.name:
            return self.new
        return self.generic_visit(node)

    def visit_BufferStore(self, node):
        return node


def replace_realize(func: PrimFunc, name: str, new: BlockRealize) -> PrimFunc:
    """``func`` with the realize of the block called ``name`` replaced by ``new``."""
    return func.replace(body=_ReplaceRealize(name, new).visit(func.body))


# ---------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------


def used_names(func: PrimFunc) -> set[str]:
    """Every variable and buffer name in ``func`` (new names must avoid all of them): the
    variables of its body, the buffers anywhere in it."""
    return set(_names_under(func.body)[0] | _names_under(func)[1])


_STMT_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""``_names_under``'s answer per statement: a primitive rebuilds only the statements around
its edit and shares the rest with the function before it (``IRMapper``), so each primitive's
``used_names`` walks only what changed (the whole function each time was ~20% of scheduling
a resnet). Keyed by structure: equal statements hold equal names, and the IR is frozen."""


def _names_under(node) -> tuple[frozenset[str], frozenset[str]]:
    """``(variable names, buffer names)`` of the nodes in ``node``'s tree (itself included)."""
    if isinstance(node, Stmt):
        known = _STMT_NAMES.get(node)
        if known is not None:
            return known
    variables, buffers = set(), set()
    if isinstance(node, Var):
        variables.add(node.name)
    elif isinstance(node, Buffer):
        buffers.add(node.name)
    for _, value in node_fields(node):
        for child in _child_nodes(value):
            child_vars, child_buffers = _names_under(child)
            variables |= child_vars
            buffers |= child_buffers
    found = frozenset(variables), frozenset(buffers)
    if isinstance(node, Stmt):
        _STMT_NAMES[node] = found
    return found


def _child_nodes(value):
    if isinstance(value, Node):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _child_nodes(item)


# ---------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------


def simplify(expr: PrimExpr, var_ranges: dict[Var, tuple[int, int]]) -> PrimExpr:
    """Simplify a binding with ``workbench.ir.arith``, knowing ``var_ranges``."""
    return arith.simplify(expr, var_ranges)


def prove(cond: PrimExpr, var_ranges: dict[Var, tuple[int, int]]) -> bool:
    """Whether ``cond`` provably holds for all values in ``var_ranges`` (False when unsure)."""
    value = const_value(cond)
    if value is not None:
        return bool(value)
    return arith.prove(cond, var_ranges)


def conjoin(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a and b``, dropping a constant true side."""
    if a == TRUE or const_value(a) == 1:
        return b
    if b == TRUE or const_value(b) == 1:
        return a
    return And(a, b)


def is_zero(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 0


def simplify_realizes(stmt: Stmt, outer: list[For]) -> Stmt:
    """Simplify the bindings and predicates of the BlockRealizes directly under ``stmt``
    (not inside another block), using the ranges of the loops around each one.

    ``outer`` are the loops around ``stmt`` itself, outermost first.
    """
    if isinstance(stmt, BlockRealize):
        ranges = loop_ranges(outer)
        values = tuple(simplify(v, ranges) for v in stmt.iter_values)
        predicate = simplify(stmt.predicate, ranges)
        if values == stmt.iter_values and predicate == stmt.predicate:
            return stmt
        return stmt.replace(iter_values=values, predicate=predicate)
    if isinstance(stmt, For):
        body = simplify_realizes(stmt.body, outer + [stmt])
        return stmt if body is stmt.body else stmt.replace(body=body)
    if isinstance(stmt, SeqStmt):
        stmts = tuple(simplify_realizes(s, outer) for s in stmt.stmts)
        if all(a is b for a, b in zip(stmts, stmt.stmts, strict=True)):
            return stmt
        return stmt.replace(stmts=stmts)
    if isinstance(stmt, IfThenElse):
        then_case = simplify_realizes(stmt.then_case, outer)
        else_case = None if stmt.else_case is None else simplify_realizes(stmt.else_case, outer)
        return stmt.replace(then_case=then_case, else_case=else_case)
    return stmt


def add_predicate(stmt: Stmt, guard: PrimExpr) -> Stmt:
    """Conjoin ``guard`` to the predicate of every BlockRealize directly under ``stmt``."""
    if isinstance(stmt, BlockRealize):
        return stmt.replace(predicate=conjoin(stmt.predicate, guard))
    if isinstance(stmt, For):
        return stmt.replace(body=add_predicate(stmt.body, guard))
    if isinstance(stmt, SeqStmt):
        return stmt.replace(stmts=tuple(add_predicate(s, guard) for s in stmt.stmts))
    if isinstance(stmt, IfThenElse):
        else_case = None if stmt.else_case is None else add_predicate(stmt.else_case, guard)
        return stmt.replace(then_case=add_predicate(stmt.then_case, guard), else_case=else_case)
    return stmt


def describe_stmt(stmt: Stmt) -> str:
    """A few words naming a statement, for error messages."""
    if isinstance(stmt, BlockRealize):
        return f"block {stmt.block.name!r}"
    if isinstance(stmt, Block):
        return f"block {stmt.name!r}"
    if isinstance(stmt, For):
        return f"loop {stmt.loop_var.name!r}"
    if isinstance(stmt, SeqStmt):
        parts = ", ".join(describe_stmt(s) for s in stmt.stmts)
        return f"a sequence of {len(stmt.stmts)} statements ({parts})"
    if isinstance(stmt, IfThenElse):
        return "an if statement"
    return type(stmt).__name__
