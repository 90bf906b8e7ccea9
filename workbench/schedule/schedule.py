"""``Schedule``: a function being scheduled, its trace, and handles to its loops and blocks.

Each method is a thin wrapper: it resolves handles to names, calls the pure primitive
(``workbench.schedule.loops.split`` ...), records the step in the trace and only then
updates the schedule. A primitive that raises leaves the schedule exactly as it was.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.ir import Block, For, PrimFunc
from workbench.schedule.annotations import AnnotationMethods
from workbench.schedule.binding import BindingMethods
from workbench.schedule.blockize import BlockizeMethods
from workbench.schedule.compute_location import ComputeLocationMethods
from workbench.schedule.errors import (
    ForeignHandleError,
    InvalidArgumentError,
    NothingToUndoError,
    RemovedHandleError,
    ScheduleError,
    WrongHandleKindError,
)
from workbench.schedule.handles import BlockRV, LoopRV, ScheduleHandle, make_handle, parse_ref
from workbench.schedule.layout import LayoutMethods
from workbench.schedule.legality import LegalityTable, legal_primitives
from workbench.schedule.loops import LoopMethods
from workbench.schedule.memory import MemoryMethods
from workbench.schedule.names import accept_names
from workbench.schedule.padding import PaddingMethods
from workbench.schedule.queries import QueryMethods
from workbench.schedule.reduction import ReductionMethods
from workbench.schedule.reindex import ReindexMethods
from workbench.schedule.sampling import SamplingMethods
from workbench.schedule.storage import StorageMethods
from workbench.schedule.trace import Instruction, Trace, TraceError, to_json_value
from workbench.schedule.tree import block_names, find_block, find_loop, loop_names
from workbench.schedule.unit_loop import UnitLoopMethods

_SCHEDULE_IDS = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class _State:
    """Everything a primitive changes, replaced as a whole on success."""

    mod: PrimFunc
    trace: Trace
    names: Mapping[int, tuple[str, str]]  # handle id -> (kind, name) of live handles
    removed: Mapping[int, tuple[str, str, str]]  # handle id -> (kind, name, removed by)
    next_id: int


class Schedule(
    QueryMethods,
    LoopMethods,
    AnnotationMethods,
    ComputeLocationMethods,
    MemoryMethods,
    LayoutMethods,
    ReductionMethods,
    UnitLoopMethods,
    BlockizeMethods,
    PaddingMethods,
    ReindexMethods,
    StorageMethods,
    SamplingMethods,
    BindingMethods,
):
    """A PrimFunc under scheduling, as in TVM's ``tir.Schedule``.

    Parameters
    ----------
    func : PrimFunc
        The function to schedule; it is never modified (``sch.func_before``).
    seed : int, optional
        Seed of the random state the sampling primitives draw from (TVM's ``seed``).

    Attributes
    ----------
    mod : PrimFunc
        The current, scheduled function (``sch.mod.show()`` prints it).
    func_before : PrimFunc
        The function the schedule started from.
    trace : Trace
        Every step so far, printable as Python and serialisable to JSON.

    Example
    -------
    >>> sch = Schedule(matmul)
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 4])
    >>> sch.reorder(io, j, k, ii)
    >>> print(sch.trace)
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    l4, l5 = sch.split(l1, factors=[None, 4])
    sch.reorder(l4, l2, l3, l5)
    """

    def __init__(self, func: PrimFunc, *, seed: int | None = None):
        if not isinstance(func, PrimFunc):
            raise TypeError(f"Schedule needs a PrimFunc, got {type(func).__name__}")
        self.func_before = func
        self._uid = next(_SCHEDULE_IDS)
        # schedules whose handles this one accepts: uid -> accept ids below this (None: all)
        self._accepted: dict[int, int | None] = {self._uid: None}
        self._state = _State(func, Trace(), {}, {}, 0)
        self._forced_outputs: list[str] | None = None
        self._seed = seed

    # --- state ------------------------------------------------------------------------

    @property
    def mod(self) -> PrimFunc:
        """The current function."""
        return self._state.mod

    @property
    def trace(self) -> Trace:
        """The steps applied so far."""
        return self._state.trace

    def __repr__(self) -> str:
        return f"<Schedule of {self.func_before.name}: {len(self.trace)} steps>"

    def _repr_html_(self) -> str:
        return self.mod._repr_html_()

    def copy(self) -> Schedule:
        """An independent schedule with the same function, trace and handles.

        Handles made before the copy work in both; handles made afterwards work only in
        the schedule that made them.

        Example
        -------
        >>> trial = sch.copy()
        >>> trial.vectorize(ji)       # sch is unchanged
        """
        other = Schedule.__new__(Schedule)
        other.func_before = self.func_before
        other._uid = next(_SCHEDULE_IDS)
        other._accepted = {
            uid: (self._state.next_id if cap is None else cap)
            for uid, cap in self._accepted.items()
        }
        other._accepted[other._uid] = None
        other._state = self._state
        other._forced_outputs = None
        other._seed = self._fork_seed()
        return other

    def undo(self) -> None:
        """Drop the last step: replay all the others on ``func_before``.

        Handles the dropped step made become invalid; handles to loops it removed are
        valid again.

        Example
        -------
        >>> io, ii = sch.split(i, factors=[None, 4])
        >>> sch.undo()                # sch.mod is as before the split, i works again
        """
        old = self._state
        if not old.trace.steps:
            raise NothingToUndoError()
        dropped = old.trace.steps[-1]
        replay = Schedule(self.func_before)
        replay._uid = self._uid
        replay._accepted = self._accepted
        for index, step in enumerate(old.trace.steps[:-1]):
            replay._replay_step(index, step)
        new = replay._state
        removed = dict(new.removed)
        label = f"undo() of step {len(old.trace) - 1} ({dropped.primitive})"
        for handle_id, (kind, name) in old.names.items():
            if handle_id not in new.names and handle_id not in removed:
                removed[handle_id] = (kind, name, label)
        for handle_id, entry in old.removed.items():
            if handle_id not in new.names:
                removed.setdefault(handle_id, entry)
        self._state = dataclasses.replace(
            new, removed=removed, next_id=max(new.next_id, old.next_id)
        )

    # --- handles ----------------------------------------------------------------------

    def _accepts(self, handle: ScheduleHandle) -> bool:
        if handle.owner not in self._accepted:
            return False
        cap = self._accepted[handle.owner]
        return cap is None or handle.id < cap

    def _resolve(
        self, handle: object, expected: str, primitive: str, argument: str
    ) -> tuple[str, str]:
        """``(kind, name)`` of a handle, or the error explaining why it cannot be used."""
        if not isinstance(handle, ScheduleHandle):
            raise InvalidArgumentError(
                primitive, argument, f"a {expected.replace('_', ' ')} handle or name", handle
            )
        if not self._accepts(handle):
            raise ForeignHandleError(primitive, handle)
        state = self._state
        if handle.id in state.removed:
            kind, name, removed_by = state.removed[handle.id]
            raise RemovedHandleError(primitive, handle, name, removed_by, state.mod)
        if handle.id not in state.names or state.names[handle.id][0] != handle.kind:
            raise ForeignHandleError(primitive, handle)
        if expected != "block_or_loop" and handle.kind != expected:
            raise WrongHandleKindError(primitive, argument, expected, handle)
        return state.names[handle.id]

    def _name_of(
        self, handle: object, primitive: str, expected: str = "loop", argument: str = "loop"
    ) -> str:
        return self._resolve(handle, expected, primitive, argument)[1]

    def _describe_handle(self, handle: ScheduleHandle) -> str:
        state = self._state
        if handle.id in state.names:
            return state.names[handle.id][1]
        if handle.id in state.removed:
            kind, name, removed_by = state.removed[handle.id]
            return f"{name}, removed by {removed_by}"
        return ""

    def _handle_for_name(self, kind: str, name: str) -> ScheduleHandle:
        """A new handle for an existing loop or block, outside the trace (for probes)."""
        handle_id = self._state.next_id
        names = dict(self._state.names)
        names[handle_id] = (kind, name)
        self._state = dataclasses.replace(self._state, names=names, next_id=handle_id + 1)
        return make_handle(kind, handle_id, self._uid, self)

    def name(self, handle: ScheduleHandle) -> str:
        """The name of the loop variable or block a handle stands for.

        Example
        -------
        >>> sch.name(sch.get_loops(sch.get_block("C"))[0])
        'i'
        """
        return self._resolve(handle, "block_or_loop", "name", "handle")[1]

    def get(self, handle: ScheduleHandle) -> For | Block:
        """The IR node (``For`` or ``Block``) a handle stands for in ``sch.mod``, as in TVM.

        Example
        -------
        >>> sch.get(sch.get_block("C")).iter_vars[2].kind
        <IterKind.REDUCE: 'R'>
        """
        kind, name = self._resolve(handle, "block_or_loop", "get", "handle")
        if kind == "loop":
            return find_loop(self.mod, name, "get")[0]
        return find_block(self.mod, name, "get")[0]

    def show(self) -> None:
        """Print the current function (``sch.mod.show()``)."""
        self.mod.show()

    # --- recording --------------------------------------------------------------------

    def _output_ids(self, primitive: str, kinds: list[str]) -> list[int]:
        forced = self._forced_outputs
        if forced is None:
            start = self._state.next_id
            return list(range(start, start + len(kinds)))
        if len(forced) != len(kinds):
            raise TraceError(
                f"{primitive} made {len(kinds)} handles here, the trace expects "
                f"{len(forced)} ({', '.join(forced) or 'none'})"
            )
        ids = []
        for ref, kind in zip(forced, kinds, strict=True):
            parsed = parse_ref(ref)
            if parsed is None or parsed[0] != kind:
                raise TraceError(f"{primitive}: trace output {ref!r} is not a {kind}")
            ids.append(parsed[1])
        return ids

    def _commit(
        self,
        primitive: str,
        inputs: Sequence[ScheduleHandle],
        attrs: dict[str, Any],
        new_func: PrimFunc,
        outputs: Sequence[tuple[str, str]],
    ) -> list[ScheduleHandle]:
        """Record a successful step and install the new state; returns the output handles."""
        state = self._state
        ids = self._output_ids(primitive, [kind for kind, _ in outputs])
        names = dict(state.names)
        removed = dict(state.removed)
        step_label = f"{primitive} (step {len(state.trace)})"
        if new_func is not state.mod:
            alive = {
                "loop": set(loop_names(new_func)),
                "block": set(block_names(new_func)) | {"root"},
            }
            for handle_id, (kind, name) in state.names.items():
                if name not in alive[kind]:
                    del names[handle_id]
                    removed[handle_id] = (kind, name, step_label)
        for handle_id, (kind, name) in zip(ids, outputs, strict=True):
            names[handle_id] = (kind, name)
        handles = [
            make_handle(kind, handle_id, self._uid, self)
            for handle_id, (kind, _) in zip(ids, outputs, strict=True)
        ]
        step = Instruction(
            primitive,
            tuple(h.ref for h in inputs),
            {k: to_json_value(v) for k, v in attrs.items()},
            tuple(h.ref for h in handles),
        )
        next_id = max([state.next_id] + [i + 1 for i in ids])
        self._state = _State(new_func, state.trace.append(step), names, removed, next_id)
        return handles

    def _replay_step(self, index: int, step: Instruction) -> None:
        """Apply one recorded step, giving its outputs the recorded handle ids."""
        handles = []
        for ref in step.inputs:
            parsed = parse_ref(ref)
            if parsed is None:
                raise TraceError(
                    f"{step.primitive}: input {ref!r} is not a handle reference", index
                )
            handles.append(make_handle(parsed[0], parsed[1], self._uid, self))
        method = getattr(self, step.primitive, None)
        if method is None:
            raise TraceError(f"unknown primitive {step.primitive!r}", index)
        self._forced_outputs = list(step.outputs)
        try:
            method(*handles, **step.attrs)
        except TraceError as err:
            raise TraceError(str(err), index) from None
        except ScheduleError as err:
            err.add_note(
                f"while replaying step {index}: {Trace(self.trace.steps + (step,)).lines()[-1]}"
            )
            raise
        finally:
            self._forced_outputs = None

    # --- legality ---------------------------------------------------------------------

    def legal_primitives(self, handle: BlockRV | LoopRV) -> LegalityTable:
        """Which primitives apply at a loop or block, and why the others do not.

        Each registered primitive is tried with default arguments on a copy of this
        schedule; the schedule itself is not changed.

        Example
        -------
        >>> sch.legal_primitives(k).to_frame()
             primitive  legal                          reason
        0        split   True
        1         fuse  False  loop 'k' is not perfectly nested: its body is block 'C'
        ...
        """
        self._resolve(handle, "block_or_loop", "legal_primitives", "handle")
        return legal_primitives(self, handle)


accept_names(Schedule)  # sch.vectorize("j"): names resolved to traced handles (names.py)
