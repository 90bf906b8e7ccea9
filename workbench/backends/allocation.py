"""Where each intermediate buffer of a lowered function is allocated.

Global-scope intermediates are allocated once at the top of the function. A ``local`` or
``shared`` buffer is allocated at the start of the body of the innermost loop that encloses
every access to it (TVM's rule: the lowest common ancestor of its uses), so that each
iteration of an enclosing ``parallel`` loop (each thread) gets its own copy.

Loops are identified by their pre-order number in the lowered function body (0 for the
first ``For`` met, counting every ``For``), which the code generator counts the same way.
"""

from __future__ import annotations

from workbench.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc
from workbench.ir.functor import IRVisitor

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
