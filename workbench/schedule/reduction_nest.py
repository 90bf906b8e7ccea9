"""Loop-nest helpers of the reduction primitives (``reduction.py``): a block with its loops,
which iteration variables a loop binds, guards of copied blocks, copies of loops, and
inserting statements at a loop.
"""

from __future__ import annotations

from workbench.ir import (
    TRUE,
    And,
    Block,
    BlockRealize,
    For,
    IterKind,
    IterVar,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    const_value,
    substitute,
)
from workbench.ir.buffer import Buffer
from workbench.schedule.tree import (
    block_names,
    conjoin,
    enclosing_loops,
    find_block,
    fresh_name,
    loop_ranges,
    prove,
    replace_block,
    replace_loop,
    simplify,
    uses_var,
)


def block_and_nest(
    func: PrimFunc, name: str, primitive: str
) -> tuple[Block, BlockRealize, list[For], Block]:
    """The block, its realize, its loops (outermost first, up to the enclosing block) and
    the enclosing (scope) block."""
    block, ancestors = find_block(func, name, primitive)
    realize = ancestors[-1]
    scope = next(a for a in reversed(ancestors) if isinstance(a, Block))
    return block, realize, enclosing_loops(ancestors), scope


def reduce_vars(block: Block) -> list[IterVar]:
    """The block's reduce iteration variables."""
    return [iv for iv in block.iter_vars if iv.kind is IterKind.REDUCE]


def binders(realize: BlockRealize, loop: For) -> tuple[list[str], list[str]]:
    """Names of the spatial and of the reduce iteration variables whose bindings use ``loop``."""
    spatial, reduce = [], []
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        if uses_var(value, loop.loop_var.name):
            (reduce if iv.kind is IterKind.REDUCE else spatial).append(iv.var.name)
    return spatial, reduce


def conjuncts(predicate: PrimExpr) -> list[PrimExpr]:
    if isinstance(predicate, And):
        return conjuncts(predicate.a) + conjuncts(predicate.b)
    if const_value(predicate) == 1:
        return []
    return [predicate]


def remake_predicate(
    predicate: PrimExpr,
    dropped: list[For],
    renamed: dict[Var, PrimExpr],
    around: list[For],
) -> PrimExpr:
    """The guard of a block copied into a nest without the ``dropped`` loops.

    Each dropped loop variable is replaced by its loop's minimum (the iteration at which
    the original block's init ran), the kept ones by their new variables; conditions that
    then provably hold within the loops ``around`` the copy are left out.
    """
    at_min = {loop.loop_var: loop.min for loop in dropped}
    ranges = loop_ranges(around)
    result: PrimExpr = TRUE
    for cond in conjuncts(predicate):
        cond = simplify(substitute(substitute(cond, at_min), renamed), ranges)
        if not prove(cond, ranges):
            result = conjoin(result, cond)
    return result


def copy_loops(loops: list[For], taken: set[str], suffix: str) -> tuple[list[For], dict]:
    """Copies of ``loops`` with fresh variables ``<name><suffix>`` (kind, bounds and thread
    binding kept); their bodies are filled in by ``wrap``."""
    copies, mapping = [], {}
    for loop in loops:
        var = Var(fresh_name(loop.loop_var.name + suffix, taken), loop.loop_var.dtype)
        mapping[loop.loop_var] = var
        copies.append(loop.replace(loop_var=var, annotations=()))
    return copies, mapping


def wrap(body: Stmt, loops: list[For]) -> Stmt:
    for loop in reversed(loops):
        body = loop.replace(body=body)
    return body


def insert_at_loop(func: PrimFunc, name: str, make) -> PrimFunc:
    """Replace the loop called ``name`` by ``make(loop)`` (a statement or a sequence),
    flattening it into the enclosing sequence."""
    return replace_loop(func, name, make, flatten=True)


def add_alloc(func: PrimFunc, scope: str, buffer: Buffer) -> PrimFunc:
    return replace_block(
        func, scope, lambda b: b.replace(alloc_buffers=b.alloc_buffers + (buffer,))
    )


def fresh_block_name(func: PrimFunc, base: str) -> str:
    return fresh_name(base, set(block_names(func)) | {"root"})
