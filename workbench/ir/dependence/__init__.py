"""The one dependence analysis, in the IR layer (below the DSL parser, which checks
``T.parallel`` / ``T.vectorized`` loops with it, and the schedule layer, whose primitives ask
it every legality question).

* ``scope``: ``BlockScope`` per block scope (TVM's BlockScope): children, RAW/WAR/WAW edges
  and the loops that carry them, producers and consumers;
* ``loops``: whether the iterations of a loop may run in any order or at once
  (``loop_conflicts``, ``reduction_binding``);
* ``access``: a block's declared regions in the loop variables around it (``Access``);
* ``index_form`` and ``overlap``: reading an index as digits of a loop variable, and
  whether two iterations of a loop can touch one element (``iterations_overlap``).

Unknown names raise ``KeyError`` here; ``workbench.schedule.scope`` wraps the lookups with
the schedule layer's ``BlockNotFoundError`` / ``LoopNotFoundError``.
"""

from workbench.ir.dependence.access import Access, block_accesses
from workbench.ir.dependence.loops import (
    PARALLEL_KINDS,
    Conflict,
    describe_conflict,
    loop_conflicts,
    reduction_binding,
)
from workbench.ir.dependence.overlap import iterations_overlap
from workbench.ir.dependence.scope import (
    BlockScope,
    Dependency,
    DepKind,
    block_scope,
    scope_of,
)

__all__ = [
    "Access",
    "BlockScope",
    "Conflict",
    "DepKind",
    "Dependency",
    "PARALLEL_KINDS",
    "block_accesses",
    "block_scope",
    "describe_conflict",
    "iterations_overlap",
    "loop_conflicts",
    "reduction_binding",
    "scope_of",
]
