"""Loop legality: can the iterations of a loop run in any order, or at the same time?

``loop_conflicts(func, loop)`` lists the pairs of accesses that two different iterations of
``loop`` may make to one element, one of them writing it (``overlap.iterations_overlap`` on
every pair of blocks under the loop, buffers private to an iteration left out);
``reduction_binding`` names a reduction variable the loop drives. They answer ``parallel``,
``vectorize``, ``compute_at`` under a parallel loop, and the DSL's ``T.parallel`` /
``T.vectorized`` (``workbench.script.loop_kinds``). Cached by structural hash; ``KeyError``
for an unknown loop name.

Example
-------
>>> loop_conflicts(row_sum, "k")[0].buffer
'B'
"""

from __future__ import annotations

import dataclasses
import functools

from workbench.ir import Block, Buffer, For, ForKind, PrimFunc, Stmt
from workbench.ir.dependence.access import Access, block_accesses
from workbench.ir.dependence.overlap import iterations_overlap
from workbench.ir.dependence.scope import DepKind, child_realizes
from workbench.ir.walk import loop_node, reduce_binding, walk


@dataclasses.dataclass(frozen=True)
class Conflict:
    """Two iterations of ``loop`` touch one element of ``buffer``; ``first`` writes it."""

    loop: str
    buffer: str
    first: Access
    second: Access

    @property
    def kind(self) -> DepKind:
        return DepKind.WAW if self.second.kind == "write" else DepKind.RAW





def _private_buffers(func: PrimFunc, loop: For, ancestors: tuple[Stmt, ...],
                     children: list) -> set[Buffer]:
    """Buffers each iteration of ``loop`` has its own copy of.

    Buffers allocated by a block inside the loop; and ``local`` / ``shared`` intermediates
    that are used only inside the loop and written (not read) first there: the backends
    allocate those inside the loop (``backends/allocation.py``), so iterations never share
    them (what TVM assumes too).
    """
    private = set()
    for node, _ in walk(loop.body):
        if isinstance(node, Block):
            private.update(node.alloc_buffers)
    enclosing = {id(a) for a in ancestors}
    inside = {id(r.block) for r, _ in children}
    for buf in func.root_block.alloc_buffers:
        if buf.scope == "global" or buf in private:
            continue
        users_outside = False
        for node, anc in walk(func.body):
            if not isinstance(node, Block) or id(node) in enclosing or node is func.root_block:
                continue
            uses = any(r.buffer == buf for r in node.reads + node.writes)
            if uses and not any(a is loop for a in anc) and node is not loop:
                users_outside = True
                break
        if users_outside:
            continue
        first = next((r.block for r, _ in children
                      if any(w.buffer == buf for w in r.block.reads + r.block.writes)), None)
        if (first is not None and id(first) in inside
                and any(w.buffer == buf for w in first.writes)
                and not any(r.buffer == buf for r in first.reads)):
            private.add(buf)
    return private


def loop_conflicts(func: PrimFunc, loop: str) -> list[Conflict]:
    """Pairs of accesses that two different iterations of ``loop`` may make to one element,
    at least one writing it (empty: the iterations are independent).

    Raises ``KeyError`` for an unknown loop. Cached by structural hash.
    """
    return list(_conflicts(func, loop))


@functools.lru_cache(maxsize=1024)
def _conflicts(func: PrimFunc, loop: str) -> tuple[Conflict, ...]:
    target, ancestors = loop_node(func, loop)
    children = list(child_realizes(target.body, ancestors + (target,)))
    private = _private_buffers(func, target, ancestors, children)
    accesses = [block_accesses(r, anc) for r, anc in children]
    found = []
    for i, first in enumerate(accesses):
        for second in accesses[i:]:
            for a_list, b_list in ((first, second), (second, first)):
                for a in a_list:
                    if a.kind != "write" or a.buffer in private:
                        continue
                    for b in b_list:
                        if b.buffer == a.buffer and iterations_overlap(a, b, target):
                            found.append(Conflict(loop, a.buffer.name, a, b))
    return tuple(found)


def reduction_binding(func: PrimFunc, loop: str) -> tuple[str, str] | None:
    """``(block, iter_var)`` of a reduction iteration variable bound by ``loop``, else None
    (TVM: parallel / vectorized loops may only drive data-parallel block iterators)."""
    target, _ = loop_node(func, loop)
    return reduce_binding(target)


PARALLEL_KINDS = (ForKind.PARALLEL, ForKind.VECTORIZED)


def describe_conflict(conflict: Conflict) -> str:
    """``"block 'B' writes B[vk] and block 'B' reads B[vk] in another iteration"``."""
    first, second = conflict.first, conflict.second
    verb = "writes" if second.kind == "write" else "reads"
    return (f"two of its iterations touch one element of {conflict.buffer!r}: block "
            f"{first.block!r} writes {first.text} and block {second.block!r} {verb} "
            f"{second.text} in another iteration")
