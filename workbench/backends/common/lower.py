"""Lowering: turn a (scheduled) PrimFunc with blocks into plain loops.

The result is still a ``PrimFunc`` (so the printer can show it), in a restricted form:

* its body is the root ``BlockRealize`` as always, and the root block's ``alloc_buffers``
  hold **every** intermediate buffer of the function (the root's and the ones inner
  blocks allocated), each with its scope;
* below the root there are ``For``, ``IfThenElse``, ``SeqStmt``, ``BufferStore``,
  ``Evaluate`` and opaque blocks;
* every inner block is *opaque*: it keeps its name (so generated code and the lowering
  viewer can say which block a statement comes from) but has no iteration variables,
  no init and no allocations, and its ``BlockRealize`` has no bindings and a true
  predicate. Its body is::

    if <predicate>:                          # only when the predicate is not True
        if <every reduce binding == its domain min>:   # only when the block has an init
            <init>
        <body>

  where the block's iteration variables are substituted by their bindings
  (``BlockRealize.iter_values``), in the body and in the read/write regions. A block
  with an ``init`` and no reduce iteration variable runs the init unconditionally (TVM
  semantics).

Every statement is simplified once at the end
(``simplify_stmt``, which knows the loop ranges), and guards that became constant are
resolved.

Where local-scope buffers are allocated (which loop body) is decided by the code
generators from the lowered loops (the innermost loop enclosing every access), see
``workbench.backends.common.allocation``.
"""

from __future__ import annotations

from workbench.backends.common.compact import compact_local_buffers
from workbench.backends.common.storage_align import apply_storage_align
from workbench.ir import (
    EQ,
    TRUE,
    And,
    Block,
    BlockRealize,
    Buffer,
    IfThenElse,
    IntImm,
    IterKind,
    PrimExpr,
    PrimFunc,
    Stmt,
    seq,
    substitute,
)
from workbench.ir.arith import simplify_stmt as arith_simplify_stmt
from workbench.ir.functor import IRMapper


def lower(func: PrimFunc, *, simplify: bool = True) -> PrimFunc:
    """Lower ``func`` (scheduled or not) to plain loops, keeping it a ``PrimFunc``.

    Parameters
    ----------
    func
        The function to lower. A ``Schedule`` is accepted too (its ``.mod`` is lowered).
    simplify
        Simplify with ``workbench.ir.arith.simplify_stmt``.

    Returns
    -------
    PrimFunc
        The same function with every inner block made opaque (guarded, substituted
        body); the root block's ``alloc_buffers`` list every intermediate buffer.

    Example
    -------
    >>> from tests.ir_examples import matmul
    >>> lowered = lower(matmul(4, 4, 4))
    >>> [b.name for b in lowered.root_block.alloc_buffers]
    []
    """
    func = getattr(func, "mod", func)
    if not isinstance(func, PrimFunc):
        raise TypeError(f"lower expects a PrimFunc or a Schedule, got {type(func).__name__}")
    flattener = _BlockFlattener()
    root = func.root_block
    body = flattener.visit(root.body)
    if root.init is not None:
        body = seq(root.init, body)
    if simplify:
        body = simplify_stmt(body)
    allocations = tuple(dict.fromkeys(root.alloc_buffers + tuple(flattener.allocations)))
    new_root = root.replace(body=body, init=None, alloc_buffers=allocations)
    lowered = func.replace(body=func.body.replace(block=new_root))
    lowered = compact_local_buffers(lowered) if simplify else lowered
    return apply_storage_align(lowered)


def init_condition(realize: BlockRealize) -> PrimExpr:
    """The condition under which a block's ``init`` runs: every reduce binding at its min.

    Example: for ``vk`` bound to ``k_0 * 4 + k_1`` with domain ``[0, 16)`` the condition
    is ``k_0 * 4 + k_1 == 0``. A block without reduce iteration variables gives ``True``.
    """
    condition: PrimExpr | None = None
    for iter_var, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        if iter_var.kind is not IterKind.REDUCE:
            continue
        clause = EQ(value, iter_var.dom.min)
        condition = clause if condition is None else And(condition, clause)
    return TRUE if condition is None else condition


def is_opaque_block(stmt: Stmt) -> bool:
    """Whether ``stmt`` is the BlockRealize of an opaque block (the lowered form of a block)."""
    return isinstance(stmt, BlockRealize) and not stmt.block.iter_vars


def is_true(expr: PrimExpr) -> bool:
    """Whether ``expr`` is a constant true condition (``True`` or a non-zero integer)."""
    return isinstance(expr, IntImm) and expr.value != 0


class _BlockFlattener(IRMapper):
    """Replace every BlockRealize by its guarded, substituted body; collect allocations."""

    def __init__(self):
        self.allocations: list[Buffer] = []

    def visit_BlockRealize(self, node: BlockRealize) -> Stmt:
        block: Block = node.block
        self.allocations.extend(block.alloc_buffers)
        bindings = zip(block.iter_vars, node.iter_values, strict=True)
        mapping = {iv.var: value for iv, value in bindings}
        body = self.visit(substitute(block.body, mapping))
        if block.init is not None:
            init = self.visit(substitute(block.init, mapping))
            condition = init_condition(node)
            if not is_true(condition):
                init = IfThenElse(condition, init)
            body = seq(init, body)
        if not is_true(node.predicate):
            body = IfThenElse(node.predicate, body)
        opaque = Block(
            block.name,
            (),
            tuple(substitute(region, mapping) for region in block.reads),
            tuple(substitute(region, mapping) for region in block.writes),
            body,
            None,
            (),
            block.annotations,
        )
        return BlockRealize((), TRUE, opaque)


def simplify_stmt(stmt: Stmt, var_ranges: dict | None = None) -> Stmt:
    """Simplify every expression of ``stmt``, using the ranges of the loops in it and
    ``var_ranges`` (``{Var: (min, max)}``, inclusive) for variables of loops around it.

    Uses ``workbench.ir.arith.simplify_stmt``. A guard
    whose condition simplifies to a constant is resolved: ``if True: s`` becomes ``s`` and
    ``if False: s`` disappears (an empty ``SeqStmt``).
    """
    return _ConstantGuardRemover().visit(arith_simplify_stmt(stmt, var_ranges))


class _ConstantGuardRemover(IRMapper):
    def visit_IfThenElse(self, node: IfThenElse) -> Stmt:
        node = self.generic_visit(node)
        if isinstance(node.condition, IntImm):
            if node.condition.value:
                return node.then_case
            return node.else_case if node.else_case is not None else seq()
        return node
