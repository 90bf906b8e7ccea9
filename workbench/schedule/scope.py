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
the blocks' bindings and declared regions (``scope_access.iterations_overlap``), never by
enumerating iterations: the answer does not depend on problem size. ``loop_conflicts`` asks
that question for every pair of blocks under a loop: it is what ``parallel``, ``vectorize``
and the DSL's ``T.parallel`` / ``T.vectorized`` check.

Scopes are built once per (function, scope) and cached by the function's structural hash.

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

from workbench.ir import Block, BlockRealize, Buffer, For, ForKind, PrimFunc, Stmt
from workbench.schedule.scope_access import Access, block_accesses, iterations_overlap
from workbench.schedule.tree import find_block, find_loop, reduce_binding, walk


class DepKind(enum.Enum):
    RAW = "RAW"
    WAR = "WAR"
    WAW = "WAW"


@dataclasses.dataclass(frozen=True)
class Dependency:
    """``dst`` depends on ``src`` (``src`` comes first in program order)."""

    src: str
    dst: str
    kind: DepKind
    buffers: tuple[str, ...]
    loops: tuple[str, ...] = ()
    """Loops around both blocks that carry the dependence (outermost first)."""


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


@dataclasses.dataclass(frozen=True)
class BlockScope:
    """The dependence facts of one scope. Build it with ``block_scope`` (cached)."""

    root: str
    blocks: tuple[str, ...]
    reads: dict[str, tuple[str, ...]]
    writes: dict[str, tuple[str, ...]]
    deps: tuple[Dependency, ...]
    carried: dict[str, tuple[str, ...]]

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


def _children(stmt: Stmt, ancestors: tuple[Stmt, ...]):
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

    Raises ``BlockNotFoundError`` for an unknown name. Cached by structural hash.
    """
    return _build(func, scope)


def scope_of(func: PrimFunc, block: str, primitive: str = "block_scope") -> BlockScope:
    """The ``BlockScope`` that has ``block`` as a child (the root's for top-level blocks)."""
    target, ancestors = find_block(func, block, primitive)
    if target is func.root_block:
        return _build(func, "root")
    parent = next(a for a in reversed(ancestors) if isinstance(a, Block))
    return _build(func, parent.name)


@functools.lru_cache(maxsize=256)
def _build(func: PrimFunc, scope: str) -> BlockScope:
    block, ancestors = find_block(func, scope, "block_scope")
    depth = len(ancestors) + 1
    children = list(_children(block, ancestors))
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
                shared = [lp for lp in loops[src] if any(lp is m for m in loops[dst])]
                carried = [lp.loop_var.name for lp in shared
                           if any(iterations_overlap(a, b, lp) for a, b in pairs)]
                buffers = tuple(_unique(a.buffer.name for a, _ in pairs))
                deps.append(Dependency(src, dst, kind, buffers, tuple(carried)))
    carried_self = {}
    for name in names:
        own = accesses[name]
        carried_self[name] = tuple(
            lp.loop_var.name for lp in loops[name]
            if any(iterations_overlap(w, x, lp) for w in own if w.kind == "write"
                   for x in own if x.buffer == w.buffer)
        )
    return BlockScope(scope, names, reads, writes, tuple(deps), carried_self)


# ---------------------------------------------------------------------------------------
# Loop legality: can the iterations of a loop run in any order, or at the same time?
# ---------------------------------------------------------------------------------------


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

    Raises ``LoopNotFoundError`` for an unknown loop. Cached by structural hash.
    """
    return list(_conflicts(func, loop))


@functools.lru_cache(maxsize=1024)
def _conflicts(func: PrimFunc, loop: str) -> tuple[Conflict, ...]:
    target, ancestors = find_loop(func, loop, "loop_conflicts")
    children = list(_children(target.body, ancestors + (target,)))
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
    target, _ = find_loop(func, loop, "loop_conflicts")
    return reduce_binding(target)


PARALLEL_KINDS = (ForKind.PARALLEL, ForKind.VECTORIZED)


def check_parallel_loop_kinds(func: PrimFunc, fdef, make_error) -> None:
    """Refuse a DSL function whose ``T.parallel`` / ``T.vectorized`` loop binds a reduction
    variable or carries a dependence: raise ``make_error(ast_node, message, kind)`` (the
    parser's ``DSLError`` with a caret under the loop variable).

    Example
    -------
    Called by the parser after it built ``func`` from ``fdef`` (``ast.FunctionDef``).
    """
    for node, _ in walk(func.body):
        if not isinstance(node, For) or node.kind not in PARALLEL_KINDS:
            continue
        name = node.loop_var.name
        kind = "T.parallel" if node.kind is ForKind.PARALLEL else "T.vectorized"
        bound = reduction_binding(func, name)
        if bound is not None:
            block, iter_var = bound
            message = (f"loop {name!r} is {kind} but binds the reduction variable "
                       f"{iter_var!r} of block {block!r}: its iterations update the same "
                       "elements; make it a serial loop (range/T.serial)")
            raise make_error(_loop_node(func, fdef, name), message, "loop-kind")
        conflicts = loop_conflicts(func, name)
        if conflicts:
            message = f"loop {name!r} is {kind} but {describe_conflict(conflicts[0])}"
            raise make_error(_loop_node(func, fdef, name), message, "loop-kind")


def describe_conflict(conflict: Conflict) -> str:
    """``"block 'B' writes B[vk] and block 'B' reads B[vk] in another iteration"``."""
    first, second = conflict.first, conflict.second
    verb = "writes" if second.kind == "write" else "reads"
    return (f"two of its iterations touch one element of {conflict.buffer!r}: block "
            f"{first.block!r} writes {first.text} and block {second.block!r} {verb} "
            f"{second.text} in another iteration")


def _loop_node(func: PrimFunc, fdef, name: str):
    """The AST name node declaring loop variable ``name`` (the parser renames a repeated
    name ``i`` to ``i_1``: matched by base name and position), else the function."""
    import ast
    import re

    targets = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.For):
            found = [node.target] if isinstance(node.target, ast.Name) else [
                t for t in getattr(node.target, "elts", []) if isinstance(t, ast.Name)]
            targets.extend(found)
    targets.sort(key=lambda t: (t.lineno, t.col_offset))
    ids = {t.id for t in targets}
    base = name if name in ids else re.sub(r"_\d+$", "", name)
    same_base = [lp.loop_var.name for lp, _ in walk(func.body)
                 if isinstance(lp, For) and (lp.loop_var.name == base
                                              or re.sub(r"_\d+$", "", lp.loop_var.name) == base)]
    candidates = [t for t in targets if t.id == base]
    position = same_base.index(name) if name in same_base else 0
    if position < len(candidates):
        return candidates[position]
    return candidates[0] if candidates else fdef
