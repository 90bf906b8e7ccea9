"""Where each intermediate buffer of a lowered function is allocated.

Global-scope intermediates are allocated once at the top of the function. A ``local`` or
``shared`` buffer is allocated at the start of the body of the innermost loop that encloses
every access to it (TVM's rule: the lowest common ancestor of its uses), so that each
iteration of an enclosing ``parallel`` loop (each thread) gets its own copy.

Loops are identified by their pre-order number in the lowered function body (0 for the
first ``For`` met, counting every ``For``). The pass ``place_allocations`` turns the sites
into explicit ``Allocate`` statements, which is all the printers look at.
"""

from __future__ import annotations

from workbench.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Stmt
from workbench.ir.functor import IRMapper, IRVisitor
from workbench.ir.node import Node, ir_node

TOP = None
"""Placement at the top of the function (outside every loop)."""


def allocation_sites(func: PrimFunc) -> dict[Buffer, int | None]:
    """Map each intermediate buffer of lowered ``func`` to the loop whose body allocates it.

    The value is the pre-order number of that ``For`` or ``TOP`` (None) for the top of the
    function. Buffers are those of the root block's ``alloc_buffers`` (see ``lower``).
    """
    buffers = func.root_block.alloc_buffers
    finder = _AccessPaths({b.name for b in buffers})
    finder.visit(func.root_block.body)
    sites: dict[Buffer, int | None] = {}
    for buf in buffers:
        if buf.scope == "global":
            sites[buf] = TOP
            continue
        paths = finder.paths.get(buf.name, [])
        common = _common_prefix(paths)
        sites[buf] = common[-1] if common else TOP
    return sites


def _common_prefix(paths: list[tuple[int, ...]]) -> tuple[int, ...]:
    if not paths:
        return ()
    prefix = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(prefix), len(path)) and prefix[n] == path[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


class _AccessPaths(IRVisitor):
    """For each buffer, the stack of enclosing loop numbers at each access."""

    def __init__(self, names: set[str]):
        self.names = names
        self.paths: dict[str, list[tuple[int, ...]]] = {}
        self.stack: list[int] = []
        self.count = 0

    def visit_For(self, node: For):
        number = self.count
        self.count += 1
        self.stack.append(number)
        self.generic_visit(node)
        self.stack.pop()

    def _record(self, buf: Buffer):
        if buf.name in self.names:
            self.paths.setdefault(buf.name, []).append(tuple(self.stack))

    def visit_BufferLoad(self, node: BufferLoad):
        self._record(node.buffer)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        self._record(node.buffer)
        self.generic_visit(node)


# ---------------------------------------------------------------------------------------
# The allocation statement and the pass that places it
# ---------------------------------------------------------------------------------------


@ir_node
class Allocate(Stmt):
    """``buffer`` exists (uninitialised) while ``body`` runs (TVM's ``Allocate`` + ``DeclBuffer``).

    Only the target passes create it (``place_allocations``), after lowering: the printers
    print one allocation per node, where the node is. Its ``buffer.scope`` says where the
    memory lives; a ``global`` buffer at the top of the function is a *workspace* buffer,
    which a compiled kernel allocates once and reuses across calls (see ``workspace_buffers``).
    """

    buffer: Buffer
    body: Stmt

    __hash__ = Node.__hash__


def place_allocations(func: PrimFunc) -> PrimFunc:
    """Wrap each intermediate's lowest common loop body in an ``Allocate`` (a target pass).

    Global buffers and buffers used outside every loop are allocated at the top of the
    function, outside every loop; a ``local``/``shared`` buffer at the start of the body of
    the innermost loop enclosing every access (``allocation_sites``). The root block's
    ``alloc_buffers`` become empty: the ``Allocate`` nodes say everything.

    Example
    -------
    ``for i in T.parallel(4): tmp[0] = ...; C[i] = tmp[0]`` with ``tmp`` local becomes
    ``for i in T.parallel(4): Allocate(tmp, tmp[0] = ...; C[i] = tmp[0])``.
    """
    sites = allocation_sites(func)
    by_loop: dict[int, list[Buffer]] = {}
    top: list[Buffer] = []
    for buf, site in sites.items():
        (top if site is TOP else by_loop.setdefault(site, [])).append(buf)
    body = _AllocationPlacer(by_loop).visit(func.root_block.body)
    for buf in reversed(top):
        body = Allocate(buf, body)
    root = func.root_block.replace(body=body, alloc_buffers=())
    return func.replace(body=func.body.replace(block=root))


def workspace_buffers(func: PrimFunc) -> tuple[Buffer, ...]:
    """The global buffers ``place_allocations`` put at the top of ``func``, outermost first."""
    found = []
    stmt = func.root_block.body
    while isinstance(stmt, Allocate):
        if stmt.buffer.scope == "global":
            found.append(stmt.buffer)
        stmt = stmt.body
    return tuple(found)


class _AllocationPlacer(IRMapper):
    """Counts loops in pre-order, as ``allocation_sites`` does, and wraps loop bodies."""

    def __init__(self, by_loop: dict[int, list[Buffer]]):
        self.by_loop = by_loop
        self.count = 0

    def visit_For(self, node: For):
        number = self.count
        self.count += 1
        node = self.generic_visit(node)
        body = node.body
        for buf in reversed(self.by_loop.get(number, [])):
            body = Allocate(buf, body)
        return node if body is node.body else node.replace(body=body)
