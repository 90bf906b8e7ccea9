"""Schedule primitives of the compute location family: ``compute_at``,
``reverse_compute_at``, ``compute_inline``, ``reverse_compute_inline`` (see README.md for
the file's shape).

The family is split by concern:

* ``compute_location_at.py``: the pure ``compute_at`` / ``reverse_compute_at``;
* ``compute_location_inline.py`` (+ ``compute_location_substitute.py``): the pure
  ``compute_inline`` / ``reverse_compute_inline`` and their IR rewrites;
* ``compute_location_scope.py``: the blocks of a scope and dependence checks; producers
  and consumers come from the shared ``BlockScope`` (``scope.py``, its ``RAW`` edges);
* ``compute_location_nest.py``: building, removing and inserting a moved block's nest;
* ``workbench/ir/region_infer.py`` and ``workbench/ir/affine_inverse.py``: region
  inference and affine index inversion (pure IR analysis).

This module holds the ``ComputeLocationMethods`` mixin that gives ``Schedule`` its
methods, and the trace registrations with their legality probes. The four pure
functions are importable from here.
"""

from __future__ import annotations

from workbench.schedule.compute_location_at import compute_at, reverse_compute_at
from workbench.schedule.compute_location_inline import compute_inline, reverse_compute_inline
from workbench.schedule.compute_location_scope import (
    check_movable,
    enclosing_loops_of,
    first_output,
    producers_and_consumers,
)
from workbench.schedule.errors import ScheduleError
from workbench.schedule.errors_compute_location import (
    NoConsumersError,
    NoProducersError,
    OutputBlockError,
)
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import loop_names

# ---------------------------------------------------------------------------------------
# Schedule methods: resolve handles, call the pure function, record the step
# ---------------------------------------------------------------------------------------


class ComputeLocationMethods:
    """The ``compute_at`` / ``reverse_compute_at`` / ``compute_inline`` /
    ``reverse_compute_inline`` methods of ``Schedule``.

    Mixed into ``Schedule``, which provides ``mod``, ``_name_of``, ``_resolve`` and
    ``_commit`` (see ``workbench/schedule/README.md``).
    """

    def compute_at(
        self,
        block: BlockRV,
        loop: LoopRV,
        *,
        preserve_unit_loops: bool = False,
        index: int = -1,
    ) -> None:
        """Move a producer under a loop of its consumers, computing only what they read there.

        Before (conv2d, ``sch.compute_at(sch.get_block("pad_temp"), y)``)::

            for i0, i1, i2, i3 in T.grid(1, 2, 8, 8):
                with T.block("pad_temp"): ...
            for n, k, y, x, rc, ry, rx in T.grid(1, 2, 6, 6, 2, 3, 3):
                with T.block("conv2d_nchw"): ...

        After (each output row ``y`` pads the 3 input rows its window reads)::

            for n, k, y in T.grid(1, 2, 6):
                for ax0, ax1, ax2 in T.grid(2, 3, 8):
                    with T.block("pad_temp"):
                        v0 = T.axis.spatial(1, n)
                        v1 = T.axis.spatial(2, ax0)
                        v2 = T.axis.spatial(8, y + ax1)
                        v3 = T.axis.spatial(8, ax2)
                        ...
                for x, rc, ry, rx in T.grid(6, 2, 3, 3):
                    with T.block("conv2d_nchw"): ...

        ``index`` (TVM's) picks the position among the loop body's statements: -1 (default)
        right before the first consumer, -2 right after the block's last producer there, or
        an explicit position between the two (``InsertionIndexError`` otherwise).

        Raises ``NotAncestorOfConsumerError``, ``NoConsumersError``, ``OutputBlockError``,
        ``ProducerAfterConsumerError``, ``DependenceViolationError``,
        ``UnboundedRegionError`` and the others of
        ``workbench.schedule.compute_location.compute_at``.

        Example
        -------
        >>> y = sch.get_loops(sch.get_block("conv2d_nchw"))[2]
        >>> sch.compute_at(sch.get_block("pad_temp"), y)
        """
        self._move_under(compute_at, block, loop, preserve_unit_loops, index)

    def reverse_compute_at(
        self,
        block: BlockRV,
        loop: LoopRV,
        *,
        preserve_unit_loops: bool = False,
        index: int = -1,
    ) -> None:
        """Move a consumer under a loop of its producers, computing what they produced there.

        Before (``sch.reverse_compute_at(sch.get_block("relu"), i_0)``)::

            for i_0, i_1, j, k in T.grid(4, 4, 16, 16):
                with T.block("C"): ...
            for i, j_1 in T.grid(16, 16):
                with T.block("relu"): ...

        After (the relu of each 4-row tile right after the tile is computed)::

            for i_0 in range(4):
                for i_1, j, k in T.grid(4, 16, 16):
                    with T.block("C"): ...
                for ax0, ax1 in T.grid(4, 16):
                    with T.block("relu"):
                        vi_1 = T.axis.spatial(16, i_0 * 4 + ax0)
                        vj_1 = T.axis.spatial(16, ax1)
                        ...

        ``index`` (TVM's): -1 (default) the last possible position (before the first
        consumer of the block in the loop body, else the end), -2 right after the last
        producer, or an explicit position between the two.

        Raises ``NotAncestorOfProducerError``, ``NoProducersError``,
        ``PartialReductionError``, ``RegionNotCoveredError`` and the others of
        ``workbench.schedule.compute_location.reverse_compute_at``.

        Example
        -------
        >>> sch.reverse_compute_at(sch.get_block("relu"), i_0)
        """
        self._move_under(reverse_compute_at, block, loop, preserve_unit_loops, index)

    def compute_inline(self, block: BlockRV) -> None:
        """Inline a pure injective block into its consumers; the block and its buffer go.

        Before / after (``sch.compute_inline(sch.get_block("T_add"))``)::

            T_add[v0] = A[v0] + B[v0]                  (removed)
            C[v1] = T.max(T_add[v1], T.float32(0))     C[v1] = T.max(A[v1] + B[v1], T.float32(0))

        Raises ``InlineReductionError``, ``NotSingleStoreError``,
        ``StoreIndicesNotIterVarsError``, ``OutputBlockError`` and the others of
        ``workbench.schedule.compute_location.compute_inline``.

        Example
        -------
        >>> sch.compute_inline(sch.get_block("pad_temp"))
        """
        self._inline(compute_inline, block)

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline a pure injective consumer into its single, non-reduction producer.

        Before / after (``sch.reverse_compute_inline(sch.get_block("C"))``)::

            T_add[v0] = A[v0] + B[v0]                  C[v0] = T.max(A[v0] + B[v0], T.float32(0))
            C[v1] = T.max(T_add[v1], T.float32(0))     (removed)

        Raises ``ReductionProducerError``, ``SeveralProducersError``,
        ``ProducerHasOtherConsumersError``, ``ReadNotBijectiveError`` and the others of
        ``workbench.schedule.compute_location.reverse_compute_inline``.

        Example
        -------
        >>> sch.reverse_compute_inline(sch.get_block("T_relu"))
        """
        self._inline(reverse_compute_inline, block)

    def _move_under(self, primitive, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool,
                    index: int) -> None:
        """``compute_at`` / ``reverse_compute_at``: resolve the handles, apply, record."""
        name = primitive.__name__
        new_func = primitive(
            self.mod,
            self._name_of(block, name, "block", "block"),
            self._name_of(loop, name),
            preserve_unit_loops=preserve_unit_loops,
            index=index,
        )
        attrs = _location_attrs(preserve_unit_loops, index)
        self._commit(name, (block, loop), attrs, new_func, [])

    def _inline(self, primitive, block: BlockRV) -> None:
        """``compute_inline`` / ``reverse_compute_inline``: resolve the handle, apply, record."""
        name = primitive.__name__
        new_func = primitive(self.mod, self._name_of(block, name, "block", "block"))
        self._commit(name, (block,), {}, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------

PRESERVE_UNIT_LOOPS = AttrSpec(
    "preserve_unit_loops", lambda v: isinstance(v, bool), "a bool", default=False
)
INDEX = AttrSpec(
    "index",
    lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= -2,
    "an int >= -2",
    default=-1,
)


def _location_attrs(preserve_unit_loops: bool, index: int) -> dict:
    """The trace attributes of compute_at / reverse_compute_at, defaults left out."""
    attrs: dict = {}
    if preserve_unit_loops:
        attrs["preserve_unit_loops"] = True
    if index != -1:
        attrs["index"] = index
    return attrs


def _probe_location(sch, block: BlockRV, *, reverse: bool):
    """The innermost loop of the first consumer (last producer, for reverse) at which the
    primitive is legal; when none is, the innermost such loop, or any loop of the function,
    so that the primitive's own error says why."""
    primitive = "reverse_compute_at" if reverse else "compute_at"
    function = reverse_compute_at if reverse else compute_at
    name = sch.name(block)
    scope, moved = check_movable(primitive, sch.mod, name)
    producers, consumers = producers_and_consumers(scope, moved)
    others = producers[::-1] if reverse else consumers
    candidates = [
        loop.loop_var.name
        for other in others
        for loop in reversed(enclosing_loops_of(scope, other.name))
    ]
    for loop in candidates:
        try:
            function(sch.mod, name, loop)
        except ScheduleError:
            continue
        return (block, sch._handle_for_name("loop", loop)), {}
    around = {loop.loop_var.name for loop in enclosing_loops_of(scope, name)}
    elsewhere = [n for n in loop_names(sch.mod) if n not in around]
    fallback = candidates[:1] or elsewhere[:1]
    if fallback:  # the primitive's own error says why
        return (block, sch._handle_for_name("loop", fallback[0])), {}
    output = None if reverse else first_output(sch.mod, moved)
    if output is not None:
        raise OutputBlockError(primitive, name, output, sch.mod, moved)
    error = NoProducersError if reverse else NoConsumersError
    raise error(primitive, name, sch.mod, moved)


def _probe_compute_at(sch, block: BlockRV):
    return _probe_location(sch, block, reverse=False)


def _probe_reverse_compute_at(sch, block: BlockRV):
    return _probe_location(sch, block, reverse=True)


def _probe_block(sch, block: BlockRV):
    return (block,), {}


register_instruction(
    InstructionKind(
        "compute_at",
        ("block", "loop"),
        (PRESERVE_UNIT_LOOPS, INDEX),
        applies_to=("block",),
        probe=_probe_compute_at,
    )
)
register_instruction(
    InstructionKind(
        "reverse_compute_at",
        ("block", "loop"),
        (PRESERVE_UNIT_LOOPS, INDEX),
        applies_to=("block",),
        probe=_probe_reverse_compute_at,
    )
)
register_instruction(
    InstructionKind("compute_inline", ("block",), applies_to=("block",), probe=_probe_block)
)
register_instruction(
    InstructionKind("reverse_compute_inline", ("block",), applies_to=("block",), probe=_probe_block)
)

__all__ = [
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
    "ComputeLocationMethods",
]
