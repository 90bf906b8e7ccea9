"""Explorer actions by name: re-fetch traced handles, call the public Schedule method.

The explorer names loops and blocks by their names (what its controls show). An action
turns each name into a handle of the schedule's own trace (one it already fetched, or a new
``sch.get_block`` / ``sch.get_loops``, as a user would type), then calls the primitive. The
legality table's probes make handles outside the trace, so their arguments are read back as
names and re-fetched here before anything is applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.ir import For, PrimFunc
from workbench.schedule import Schedule
from workbench.schedule.handles import ScheduleHandle
from workbench.schedule.trace import INSTRUCTIONS
from workbench.schedule.tree import child_blocks, find_loop, walk


@dataclass(frozen=True)
class Ref:
    """A loop or block by name (what a control holds instead of a handle)."""

    kind: str
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class LoopInfo:
    name: str
    extent: int | None
    kind: str
    depth: int


def block_names(func: PrimFunc) -> list[str]:
    """Blocks of the function in program order (without the implicit root)."""
    from workbench.ir import Block

    return [n.name for n, _ in walk(func.body) if isinstance(n, Block) and n.name != "root"]


def loops_above(func: PrimFunc, block: str) -> list[LoopInfo]:
    """The loops enclosing ``block``, outermost first."""
    from workbench.schedule.tree import enclosing_loops, find_block

    _, ancestors = find_block(func, block, "explore")
    return [
        LoopInfo(loop.loop_var.name, getattr(loop.extent, "value", None), loop.kind.value, depth)
        for depth, loop in enumerate(enclosing_loops(ancestors))
    ]


def all_loops(func: PrimFunc) -> list[str]:
    return [n.loop_var.name for n, _ in walk(func.body) if isinstance(n, For)]


def divisors(n: int) -> list[int]:
    return [d for d in range(2, n) if n % d == 0]


def fetch(sch: Schedule, handles: dict, ref: Ref) -> ScheduleHandle:
    """A handle of ``sch``'s trace for ``ref``: a cached one still valid, else fetched."""
    cached = handles.get((ref.kind, ref.name))
    if cached is not None:
        try:
            if sch.name(cached) == ref.name:
                return cached
        except Exception:  # noqa: BLE001 - a removed or foreign handle: fetch again
            pass
    if ref.kind == "block":
        handle = sch.get_block(ref.name)
        handles[(ref.kind, ref.name)] = handle
        return handle
    loop, _ = find_loop(sch.mod, ref.name, "explore")
    inner = child_blocks(loop)
    block_ref = Ref("block", inner[0].name)
    for handle in sch.get_loops(fetch(sch, handles, block_ref)):
        handles[("loop", sch.name(handle))] = handle
    return handles[("loop", ref.name)]


def resolve(sch: Schedule, handles: dict, value: Any) -> Any:
    """Replace every ``Ref`` in ``value`` (lists included) by a traced handle."""
    if isinstance(value, Ref):
        return fetch(sch, handles, value)
    if isinstance(value, list | tuple):
        return type(value)(resolve(sch, handles, v) for v in value)
    return value


def as_refs(sch: Schedule, value: Any) -> Any:
    """Replace every handle in ``value`` by a ``Ref`` (reading names in ``sch``)."""
    if isinstance(value, ScheduleHandle):
        return Ref(value.kind, sch.name(value))
    if isinstance(value, list | tuple):
        return type(value)(as_refs(sch, v) for v in value)
    return value


def refs_for(primitive: str, args: tuple) -> tuple:
    """Turn string arguments into ``Ref``s using the primitive's input kinds."""
    kinds = INSTRUCTIONS[primitive].inputs
    out = []
    for index, arg in enumerate(args):
        kind = kinds[min(index, len(kinds) - 1)]
        kind = kind.lstrip("*")
        if isinstance(arg, str):
            arg = Ref("loop" if kind in ("loop", "block_or_loop") else kind, arg)
        out.append(arg)
    return tuple(out)


def label(primitive: str, args: tuple, kwargs: dict) -> str:
    parts = [str(a) if isinstance(a, Ref) else repr(a) for a in args]
    parts += [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{primitive} " + " ".join(parts)


def apply(
    sch: Schedule, handles: dict, primitive: str, args: tuple, kwargs: dict
) -> tuple[Schedule, dict]:
    """``primitive(*args, **kwargs)`` on a copy of ``sch``; the copy and its handles.

    Raises the primitive's ``ScheduleError`` (``sch`` is never changed).
    """
    if primitive not in INSTRUCTIONS:
        raise ValueError(f"unknown primitive {primitive!r}")
    trial = sch.copy()
    new_handles = dict(handles)
    call_args = resolve(trial, new_handles, refs_for(primitive, args))
    call_kwargs = {k: resolve(trial, new_handles, v) for k, v in kwargs.items()}
    outputs = getattr(trial, primitive)(*call_args, **call_kwargs)
    for handle in _handles_in(outputs):
        new_handles[(handle.kind, trial.name(handle))] = handle
    return trial, new_handles


def _handles_in(value) -> list[ScheduleHandle]:
    if isinstance(value, ScheduleHandle):
        return [value]
    if isinstance(value, list | tuple):
        return [h for v in value for h in _handles_in(v)]
    return []


def legality(sch: Schedule, ref: Ref):
    """``legal_primitives`` at ``ref`` (on a copy: nothing is added to ``sch``'s trace)."""
    trial = sch.copy()
    return trial.legal_primitives(fetch(trial, {}, ref))


def probe_arguments(sch: Schedule, primitive: str, ref: Ref) -> tuple[tuple, dict]:
    """The legality probe's default arguments for ``primitive`` at ``ref``, as ``Ref``s."""
    trial = sch.copy()
    handle = fetch(trial, {}, ref)
    args, kwargs = INSTRUCTIONS[primitive].probe(trial, handle)
    return as_refs(trial, tuple(args)), {k: as_refs(trial, v) for k, v in kwargs.items()}


def continue_trace(sch: Schedule, trace) -> Schedule:
    """A copy of ``sch`` with every step of ``trace`` applied after its own trace.

    ``trace`` was recorded on a schedule of ``sch.mod`` (a tuning record of the current
    node's function): each step is called through the public ``Schedule`` method with the
    handles its earlier steps returned, so the result's trace reads as the node's steps
    followed by the tuned ones. Raises the step's ``ScheduleError`` (``sch`` is unchanged).
    """
    trial = sch.copy()
    handles: dict[str, ScheduleHandle] = {}
    for step in trace:
        args = [handles[ref] for ref in step.inputs]
        outputs = _handles_in(getattr(trial, step.primitive)(*args, **step.attrs))
        handles.update(zip(step.outputs, outputs, strict=True))
    return trial
