"""``decompose_padding``: split a padding block into a constant fill and an in-bounds copy.

TVM's ``decompose_padding``. A padding block computes
``P[idx] = T.if_then_else(in_bounds, X[...], c)``. The primitive inserts, right before
``loop``, a copy of the loops from ``loop`` down to the block around a new block
``<name>_pad_const`` that writes ``c`` everywhere, and turns the original block into
``P[idx] = X[...]`` run only where ``in_bounds`` holds. Where a condition bounds an
iteration variable bound to one loop of that nest (``3 <= vi and vi < 228`` with
``vi = i``), the loop itself shrinks to the in-bounds range (``vi = i + 3`` over 225
iterations), so the copy runs with no branch, as in TVM; other conditions become the
block's predicate (``T.where``).
"""

from __future__ import annotations

from workbench.ir import (
    GE,
    GT,
    LE,
    LT,
    And,
    Block,
    BlockRealize,
    BufferStore,
    FloatImm,
    For,
    IntImm,
    PrimExpr,
    PrimFunc,
    Select,
    SeqStmt,
    Stmt,
    Var,
    const_value,
    substitute,
)
from workbench.ir.functor import IRMapper
from workbench.schedule.errors import ScheduleError
from workbench.schedule.errors_padding import (
    NotPaddingBlockError,
    PaddingLoopNotAncestorError,
    TrivialPaddingError,
)
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.reduction_nest import conjuncts
from workbench.schedule.trace import InstructionKind, register_instruction
from workbench.schedule.tree import (
    block_names,
    child_blocks,
    conjoin,
    find_block,
    fresh_name,
    loop_ranges,
    prove,
    simplify,
    used_names,
)

# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------


def _padding_store(func: PrimFunc, block: Block) -> tuple[BufferStore, Select]:
    primitive = "decompose_padding"
    if block.init is not None:
        raise NotPaddingBlockError(primitive, block, "it has an init", func)
    store = block.body
    if not isinstance(store, BufferStore):
        raise NotPaddingBlockError(primitive, block, "its body is not one store", func)
    value = store.value
    if not isinstance(value, Select) or not isinstance(value.false_value, (IntImm, FloatImm)):
        raise NotPaddingBlockError(
            primitive, block, "the stored value is not T.if_then_else(cond, value, constant)", func
        )
    return store, value


def _bound(clause: PrimExpr, var: Var) -> tuple[str, int] | None:
    """``("lo", c)`` for ``c <= var`` / ``var >= c``..., ``("hi", c)`` for ``var < c``..."""
    a, b = getattr(clause, "a", None), getattr(clause, "b", None)
    if a == var and isinstance(const_value(b), int):
        c = const_value(b)
        table = {GE: ("lo", c), GT: ("lo", c + 1), LT: ("hi", c), LE: ("hi", c + 1)}
    elif b == var and isinstance(const_value(a), int):
        c = const_value(a)
        table = {LE: ("lo", c), LT: ("lo", c + 1), GT: ("hi", c), GE: ("hi", c + 1)}
    else:
        return None
    return table.get(type(clause))


def _tighten(realize: BlockRealize, path: list[For], clauses: list[PrimExpr]):
    """Shrink the path loops that bind one iteration variable each to its in-bounds range.

    Returns ``(loop name -> (new extent, offset), remaining clauses)``.
    """
    shrink: dict[str, tuple[int, int]] = {}
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        loop = next((lp for lp in path if value == lp.loop_var), None)
        if loop is None or loop.loop_var.name in shrink:
            continue
        if [b.name for b in child_blocks(loop)] != [realize.block.name]:
            continue  # other blocks use this loop: its range must not change
        extent = const_value(loop.extent)
        if const_value(loop.min) != 0 or not isinstance(extent, int):
            continue
        if const_value(iv.dom.min) != 0 or const_value(iv.dom.extent) != extent:
            continue
        lo, hi, used = 0, extent, []
        for clause in clauses:
            bound = _bound(clause, iv.var)
            if bound is None:
                continue
            used.append(clause)
            lo, hi = (max(lo, bound[1]), hi) if bound[0] == "lo" else (lo, min(hi, bound[1]))
        if used and hi > lo:
            shrink[loop.loop_var.name] = (hi - lo, lo)
            clauses = [c for c in clauses if all(c is not u for u in used)]
    return shrink, clauses


def _path(ancestors: tuple[Stmt, ...], loop: str) -> list[For] | None:
    loops = [s for s in ancestors if isinstance(s, For)]
    names = [lp.loop_var.name for lp in loops]
    if loop not in names:
        return None
    start = names.index(loop)
    # loops between the named loop and the block must not cross another block
    for stmt in ancestors[ancestors.index(loops[start]) + 1 : -1]:
        if isinstance(stmt, Block):
            return None
    return loops[start:]


def _rebuild_nest(path: list[For], inner: Stmt, renames: dict[str, str], shrink) -> Stmt:
    """The loops of ``path`` (only those) around ``inner``, renamed / shrunk."""
    stmt = inner
    for loop in reversed(path):
        name = renames.get(loop.loop_var.name, loop.loop_var.name)
        extent = loop.extent
        if loop.loop_var.name in shrink:
            extent = IntImm(shrink[loop.loop_var.name][0], loop.extent.dtype)
        stmt = loop.replace(loop_var=Var(name, loop.loop_var.dtype), extent=extent, body=stmt)
    return stmt


class _Decompose(IRMapper):
    """Insert the fill nest before ``loop`` and rewrite the padding block in place."""

    def __init__(self, loop: str, fill: Stmt, block: str, new_realize, shrink):
        self.loop, self.fill, self.block = loop, fill, block
        self.new_realize, self.shrink = new_realize, shrink

    def visit_SeqStmt(self, node: SeqStmt):
        stmts = []
        for stmt in node.stmts:
            new = self.visit(stmt)
            if isinstance(stmt, For) and stmt.loop_var.name == self.loop:
                stmts.append(self.fill)
            stmts.append(new)
        return node.replace(stmts=tuple(stmts))

    def visit_For(self, node: For):
        new = self.generic_visit(node)
        if node.loop_var.name in self.shrink:
            extent, _ = self.shrink[node.loop_var.name]
            new = new.replace(extent=IntImm(extent, node.extent.dtype))
        return new

    def visit_BlockRealize(self, node: BlockRealize):
        if node.block.name == self.block:
            return self.new_realize
        return self.generic_visit(node)

    def visit_BufferStore(self, node):
        return node


def decompose_padding(func: PrimFunc, block: str, loop: str) -> tuple[PrimFunc, str]:
    """Split padding block ``block`` into a constant fill (before ``loop``) and a copy of
    the in-bounds values.

    Before (``decompose_padding(func, "block", "i")``)::

        for i in range(140):
            with T.block("block"):
                vi = T.axis.spatial(140, i)
                y[vi] = T.if_then_else(6 <= vi and vi < 134, x[vi - 6], 0)

    After::

        for i_1 in range(140):
            with T.block("block_pad_const"):
                vi_1 = T.axis.spatial(140, i_1)
                y[vi_1] = 0
        for i in range(128):
            with T.block("block"):
                vi = T.axis.spatial(140, i + 6)
                y[vi] = x[vi - 6]

    Returns the new function and the fill block's name.

    Raises
    ------
    NotPaddingBlockError, TrivialPaddingError, PaddingLoopNotAncestorError
    """
    primitive = "decompose_padding"
    node, ancestors = find_block(func, block, primitive)
    store, select = _padding_store(func, node)
    path = _path(ancestors, loop)
    if path is None:
        raise PaddingLoopNotAncestorError(primitive, node, loop, func)
    realize = ancestors[-1]
    domain = {
        iv.var: (const_value(iv.dom.min), const_value(iv.dom.min) + const_value(iv.dom.extent) - 1)
        for iv in node.iter_vars
        if isinstance(const_value(iv.dom.extent), int)
    }
    if prove(select.condition, domain):
        raise TrivialPaddingError(primitive, node, func)

    taken = used_names(func)
    blocks = set(block_names(func)) | {"root"}
    # the constant fill: copies of the path loops and the block, fresh names
    renames = {lp.loop_var.name: fresh_name(lp.loop_var.name, taken) for lp in path}
    loop_map = {lp.loop_var: Var(renames[lp.loop_var.name], lp.loop_var.dtype) for lp in path}
    var_map = {iv.var: Var(fresh_name(iv.var.name, taken), iv.var.dtype) for iv in node.iter_vars}
    fill_block = Block(
        fresh_name(block + "_pad_const", blocks),
        tuple(iv.replace(var=var_map[iv.var]) for iv in node.iter_vars),
        (),
        tuple(substitute(w, var_map) for w in node.writes),
        substitute(store.replace(value=select.false_value), var_map),
    )
    fill_realize = BlockRealize(
        tuple(substitute(v, loop_map) for v in realize.iter_values),
        substitute(realize.predicate, loop_map),
        fill_block,
    )
    fill = _rebuild_nest(path, fill_realize, renames, {})

    # the in-bounds copy: tighten loops, keep the rest of the condition as a predicate
    shrink, rest = _tighten(realize, path, conjuncts(select.condition))
    offsets = {lp.loop_var: lp.loop_var + IntImm(shrink[lp.loop_var.name][1]) for lp in path
               if lp.loop_var.name in shrink and shrink[lp.loop_var.name][1] != 0}
    values = tuple(substitute(v, offsets) for v in realize.iter_values)
    guard = None
    for clause in rest:
        guard = clause if guard is None else And(guard, clause)
    binding = {iv.var: v for iv, v in zip(node.iter_vars, values, strict=True)}
    predicate = substitute(realize.predicate, offsets)
    if guard is not None:
        predicate = conjoin(predicate, substitute(guard, binding))
    reads = node.reads
    new_block = node.replace(body=store.replace(value=select.true_value), reads=reads)
    ranges = loop_ranges([lp.replace(extent=IntImm(shrink[lp.loop_var.name][0]))
                          if lp.loop_var.name in shrink else lp for lp in path])
    values = tuple(simplify(v, ranges) for v in values)
    new_realize = BlockRealize(values, simplify(predicate, ranges), new_block)
    mapper = _Decompose(loop, fill, block, new_realize, shrink)
    parent_is_seq = _parent_is_seq(ancestors, path[0])
    body = mapper.visit(func.body)
    if not parent_is_seq:
        body = _insert_single(body, loop, fill)
    return func.replace(body=body), fill_block.name


def _parent_is_seq(ancestors: tuple[Stmt, ...], loop: For) -> bool:
    index = next(n for n, s in enumerate(ancestors) if s is loop)
    return index > 0 and isinstance(ancestors[index - 1], SeqStmt)


def _insert_single(body: Stmt, loop: str, fill: Stmt) -> Stmt:
    """Make ``loop`` (the only statement of its parent) the second of ``(fill, loop)``."""

    class _Wrap(IRMapper):
        def visit_For(self, node: For):
            if node.loop_var.name == loop:
                return SeqStmt((fill, node))
            return self.generic_visit(node)

        def visit_SeqStmt(self, node: SeqStmt):
            return self.generic_visit(node)

        def visit_BufferStore(self, node):
            return node

    return _Wrap().visit(body)


# ---------------------------------------------------------------------------------------
# Schedule methods
# ---------------------------------------------------------------------------------------


class PaddingMethods:
    """The ``decompose_padding`` and ``can_decompose_padding`` methods of ``Schedule``."""

    def decompose_padding(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Split a padding block into a constant fill before ``loop`` and an in-bounds copy.

        See ``workbench.schedule.padding.decompose_padding`` for the IR before and after.

        Example
        -------
        >>> pad = sch.get_block("pad_temp")
        >>> fill = sch.decompose_padding(pad, sch.get_loops(pad)[0])
        """
        block_name = self._name_of(block, "decompose_padding", "block", "block")
        loop_name = self._name_of(loop, "decompose_padding")
        new_func, fill = decompose_padding(self.mod, block_name, loop_name)
        outputs = [("block", fill)]
        (handle,) = self._commit("decompose_padding", (block, loop), {}, new_func, outputs)
        return handle

    def can_decompose_padding(self, block: BlockRV, loop: LoopRV) -> bool:
        """Whether ``decompose_padding(block, loop)`` applies (nothing is recorded)."""
        block_name = self._name_of(block, "can_decompose_padding", "block", "block")
        loop_name = self._name_of(loop, "can_decompose_padding")
        try:
            decompose_padding(self.mod, block_name, loop_name)
        except ScheduleError:
            return False
        return True


def _probe_decompose_padding(sch, block: BlockRV):
    loops = sch.get_loops(block)
    if not loops:
        node = find_block(sch.mod, sch.name(block), "decompose_padding")[0]
        raise PaddingLoopNotAncestorError("decompose_padding", node, "(none)", sch.mod)
    return (block, loops[0]), {}


register_instruction(
    InstructionKind(
        "decompose_padding",
        ("block", "loop"),
        outputs="block",
        applies_to=("block",),
        probe=_probe_decompose_padding,
    )
)
