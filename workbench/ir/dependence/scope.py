"""The one dependence analysis: a ``BlockScope`` per block scope (TVM's BlockScope).

A *scope* is a block and the blocks directly under it (its children, not inside another
block). For a scope, ``BlockScope`` records

* the children in program order, and which buffers each reads and writes (declared regions);
* dependence edges between children, TVM's rule: a child reading a buffer that an earlier
  child writes depends on it (read-after-write, ``RAW``); writing a buffer an earlier child
  writes, ``WAW``; writing one an earlier child reads, ``WAR``. Each edge lists the buffers
  and the loops shared by both blocks that *carry* it (two different iterations of the loop
  touch one element);
* for each child, the loops around it (inside the scope) that carry a dependence of the block
  on itself (``carried_loops``: ``A[i + 1] = A[i + 1] + A[i]`` is carried by ``i``);
* ``producers`` / ``consumers``: the sources of the ``RAW`` edges into a block and the
  destinations of those out of it (TVM's ``GetProducers`` / ``GetConsumers``).

Whether two iterations of a loop can touch one element is decided by affine reasoning over
the blocks' bindings and declared regions (``overlap.iterations_overlap``), never by
enumerating iterations: the answer does not depend on problem size. ``loops.loop_conflicts``
asks that question for every pair of blocks under a loop: it is what ``parallel``,
``vectorize`` and the DSL's ``T.parallel`` / ``T.vectorized`` check.

Scopes are built once per (function, scope) and cached by the function's structural hash.
The loops carrying each dependence (``Dependency.loops``, ``carried_loops``) are worked out
when first read: the schedule primitives ask only for the edges, and those loops are most of
the analysis's cost (a packed conv's nest: ~1 s of a resnet18 compile).
Names are looked up with ``KeyError`` for an unknown one; the schedule layer's
``workbench.schedule.scope`` raises its ``ScheduleError``s instead.

Example
-------
>>> scope = block_scope(add_relu)                 # the root scope
>>> scope.producers("C"), scope.consumers("T_add")
(['T_add'], ['C'])
>>> [(d.src, d.dst, d.kind.value) for d in scope.deps_by_dst("C")]
[('T_add', 'C', 'RAW')]
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable

from workbench.ir import Block, BlockRealize, For, PrimFunc, Stmt
from workbench.ir.dependence.access import block_accesses
from workbench.ir.dependence.overlap import iterations_overlap
from workbench.ir.walk import block_node, walk


class DepKind(enum.Enum):
    RAW = "RAW"
    WAR = "WAR"
    WAW = "WAW"


@dataclasses.dataclass(frozen=True, eq=False)
class Dependency:
    """``dst`` depends on ``src`` (``src`` comes first in program order).

    ``loops``: the loops around both blocks that carry the dependence (outermost first),
    given, or worked out when first read from ``carriers`` (no primitive asks for them, and
    they are most of a scope's analysis)."""

    src: str
    dst: str
    kind: DepKind
    buffers: tuple[str, ...]
    carriers: tuple[str, ...] | Callable[[], tuple[str, ...]] = dataclasses.field(
        default=(), repr=False)

    @functools.cached_property
    def loops(self) -> tuple[str, ...]:
        return tuple(self.carriers() if callable(self.carriers) else self.carriers)

    def _key(self) -> tuple:
        return self.src, self.dst, self.kind, self.buffers

    def __eq__(self, other) -> bool:
        return (isinstance(other, Dependency) and self._key() == other._key()
                and self.loops == other.loops)

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Dependency(src={self.src!r}, dst={self.dst!r}, kind={self.kind}, "
                f"buffers={self.buffers!r}, loops={self.loops!r})")


@dataclasses.dataclass(frozen=True)
class BlockScope:
    """The dependence facts of one scope. Build it with ``block_scope`` (cached)."""

    root: str
    blocks: tuple[str, ...]
    reads: dict[str, tuple[str, ...]]
    writes: dict[str, tuple[str, ...]]
    deps: tuple[Dependency, ...]
    self_carriers: dict[str, Callable[[], tuple[str, ...]]] = dataclasses.field(
        default_factory=dict, repr=False, compare=False)
    """Per child, what works out ``carried`` (on first read: no primitive asks for it)."""

    @functools.cached_property
    def carried(self) -> dict[str, tuple[str, ...]]:
        """Per child, the loops (inside the scope) carrying a dependence of it on itself."""
        return {name: tuple(self.self_carriers[name]()) if name in self.self_carriers else ()
                for name in self.blocks}

    def deps_by_src(self, block: str) -> list[Dependency]:
        return [d for d in self.deps if d.src == block]

    def deps_by_dst(self, block: str) -> list[Dependency]:
        return [d for d in self.deps if d.dst == block]

    def producers(self, block: str) -> list[str]:
        """Blocks this block reads from (sources of ``RAW`` edges), in program order."""
        return _unique(d.src for d in self.deps_by_dst(block) if d.kind is DepKind.RAW)

    def consumers(self, block: str) -> list[str]:
        """Blocks reading what this block writes (``RAW`` destinations), in program order."""
        return _unique(d.dst for d in self.deps_by_src(block) if d.kind is DepKind.RAW)

    def writers(self, buffer: str) -> list[str]:
        """Children writing ``buffer``, in program order."""
        return [b for b in self.blocks if buffer in self.writes[b]]

    def readers(self, buffer: str) -> list[str]:
        """Children reading ``buffer``, in program order."""
        return [b for b in self.blocks if buffer in self.reads[b]]

    def carried_loops(self, block: str) -> tuple[str, ...]:
        """Loops (inside the scope) around ``block`` carrying a dependence of it on itself."""
        return self.carried[block]

    def __str__(self) -> str:
        lines = [f"scope {self.root!r}: {', '.join(self.blocks) or 'no blocks'}"]
        for dep in self.deps:
            carried = f", carried by {', '.join(dep.loops)}" if dep.loops else ""
            lines.append(
                f"  {dep.kind.value}: {dep.src} -> {dep.dst} ({', '.join(dep.buffers)}{carried})"
            )
        for block, loops in self.carried.items():
            if loops:
                lines.append(f"  {block} depends on itself across {', '.join(loops)}")
        return "\n".join(lines)


def _unique(names) -> list[str]:
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


# ---------------------------------------------------------------------------------------
# Building a scope
# ---------------------------------------------------------------------------------------


def child_realizes(stmt: Stmt, ancestors: tuple[Stmt, ...]):
    """``(realize, ancestors)`` of the blocks under ``stmt`` that are not inside another."""
    for node, anc in walk(stmt, ancestors):
        if isinstance(node, BlockRealize) and not any(
            isinstance(a, BlockRealize) for a in anc[len(ancestors) :]
        ):
            yield node, anc


def _loops_inside(ancestors: tuple[Stmt, ...], scope_depth: int) -> list[For]:
    return [a for a in ancestors[scope_depth:] if isinstance(a, For)]


def block_scope(func: PrimFunc, scope: str = "root") -> BlockScope:
    """The ``BlockScope`` of block ``scope`` (``"root"``: the function's top level).

    Raises ``KeyError`` for an unknown name (``workbench.schedule.scope.block_scope``:
    ``BlockNotFoundError``). Cached by structural hash.
    """
    return _build(func, scope)


def scope_of(func: PrimFunc, block: str) -> BlockScope:
    """The ``BlockScope`` that has ``block`` as a child (the root's for top-level blocks)."""
    target, ancestors = block_node(func, block)
    if target is func.root_block:
        return _build(func, "root")
    parent = next(a for a in reversed(ancestors) if isinstance(a, Block))
    return _build(func, parent.name)


@functools.lru_cache(maxsize=256)
def _build(func: PrimFunc, scope: str) -> BlockScope:
    block, ancestors = block_node(func, scope)
    depth = len(ancestors) + 1
    children = list(child_realizes(block, ancestors))
    names = tuple(r.block.name for r, _ in children)
    accesses = {r.block.name: block_accesses(r, anc) for r, anc in children}
    loops = {r.block.name: _loops_inside(anc, depth) for r, anc in children}
    reads = {n: tuple(_unique(a.buffer.name for a in accesses[n] if a.kind == "read"))
             for n in names}
    writes = {n: tuple(_unique(a.buffer.name for a in accesses[n] if a.kind == "write"))
              for n in names}
    deps = []
    for j, dst in enumerate(names):
        for src in names[:j]:
            for kind, src_kind, dst_kind in (
                (DepKind.RAW, "write", "read"),
                (DepKind.WAW, "write", "write"),
                (DepKind.WAR, "read", "write"),
            ):
                pairs = [
                    (a, b)
                    for a in accesses[src] if a.kind == src_kind
                    for b in accesses[dst] if b.kind == dst_kind and b.buffer == a.buffer
                ]
                if not pairs:
                    continue
                shared = tuple(lp for lp in loops[src] if any(lp is m for m in loops[dst]))
                buffers = tuple(_unique(a.buffer.name for a, _ in pairs))
                deps.append(Dependency(src, dst, kind, buffers,
                                       functools.partial(_carrying, shared, tuple(pairs))))
    self_carriers = {}
    for name in names:
        own = accesses[name]
        pairs = tuple((w, x) for w in own if w.kind == "write"
                      for x in own if x.buffer == w.buffer)
        self_carriers[name] = functools.partial(_carrying, tuple(loops[name]), pairs)
    return BlockScope(scope, names, reads, writes, tuple(deps), self_carriers)


def _carrying(loops: tuple[For, ...], pairs: tuple) -> tuple[str, ...]:
    """The names of ``loops`` two of whose iterations may touch one element through one of the
    access ``pairs`` (first, second)."""
    return tuple(lp.loop_var.name for lp in loops
                 if any(iterations_overlap(a, b, lp) for a, b in pairs))


