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


def main_block(func: PrimFunc) -> str:
    """The block an explorer opens on: the one with the most loops around it, a reduction
    first (a conv2d's convolution, not its ``pad_temp``; a matmul's ``C``).

    Example
    -------
    >>> from workbench import ops
    >>> main_block(ops.conv2d_nchw(1, 4, 8, 8, 4, 3, 3))
    'conv2d_nchw'
    """
    from workbench.ir import Block, IterKind

    best, best_key = None, None
    for node, ancestors in walk(func.body):
        if not isinstance(node, Block) or node.name == "root":
            continue
        depth = sum(isinstance(a, For) for a in ancestors)
        reduces = any(iv.kind != IterKind.SPATIAL for iv in node.iter_vars)
        key = (reduces, depth)
        if best_key is None or key > best_key:
            best, best_key = node.name, key
    return best if best is not None else block_names(func)[0]


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


def blocks_under(func: PrimFunc, loop: str) -> list[str]:
    """Names of the blocks inside loop ``loop``, in program order."""
    found, _ = find_loop(func, loop, "explore")
    return [b.name for b in child_blocks(found)]


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
        if index >= len(kinds) and not (kinds and kinds[-1].startswith("*")):
            out.append(arg)  # a literal after the handles (a buffer index, a scope)
            continue
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
) -> tuple[Schedule, dict, list[Ref]]:
    """``primitive(*args, **kwargs)`` on a copy of ``sch``; the copy, its handles and the
    loops and blocks the primitive returned (a fused loop, a split's parts, a cache block).

    Raises the primitive's ``ScheduleError`` (``sch`` is never changed).
    """
    if primitive not in INSTRUCTIONS:
        raise ValueError(f"unknown primitive {primitive!r}")
    trial = sch.copy()
    new_handles = dict(handles)
    call_args = resolve(trial, new_handles, refs_for(primitive, args))
    call_kwargs = {k: resolve(trial, new_handles, v) for k, v in kwargs.items()}
    outputs = getattr(trial, primitive)(*call_args, **call_kwargs)
    made = []
    for handle in _handles_in(outputs):
        new_handles[(handle.kind, trial.name(handle))] = handle
        made.append(Ref(handle.kind, trial.name(handle)))
    return trial, new_handles, made


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


# --- block primitives: arguments chosen from the state ------------------------------------

AT_LOOP = ("compute_at", "reverse_compute_at", "decompose_reduction", "decompose_padding")
"""Block primitives that take a target loop (the "at loop" dropdown)."""

BLOCK_ARGUMENTS = {
    "compute_at": ("loop",),
    "reverse_compute_at": ("loop",),
    "decompose_reduction": ("loop",),
    "decompose_padding": ("loop",),
    "cache_read": ("read", "scope"),
    "cache_write": ("write", "scope"),
    "set_scope": ("write", "scope"),
    "reindex": ("write_pair",),
    "transform_layout": ("write_pair", "index_map"),
}
"""What each block primitive takes besides its block, by the control it is read from (the
others, ``compute_inline``, ``storage_align``..., take the legality probe's arguments)."""


def block_buffers(func: PrimFunc, block: str) -> tuple[list[str], list[str]]:
    """Names of the buffers ``block`` reads and writes, in region order (the indices
    ``cache_read`` / ``cache_write`` / ``set_scope`` take)."""
    from workbench.schedule.tree import find_block

    node, _ = find_block(func, block, "explore")
    node = getattr(node, "block", node)
    return [r.buffer.name for r in node.reads], [w.buffer.name for w in node.writes]


def block_arguments(
    primitive: str,
    block: str,
    *,
    loop: str | None = None,
    read: int = 0,
    write: int = 0,
    scope: str = "local",
    index_map: str = "",
) -> tuple[tuple, dict]:
    """The call of block primitive ``primitive`` at ``block`` with the controls' choices:
    the target loop, the read / write buffer index, the storage scope, an index map.

    Example
    -------
    >>> block_arguments("cache_read", "C", read=1, scope="shared")
    ((Ref(kind='block', name='C'), 1, 'shared'), {})
    >>> block_arguments("compute_at", "T_exp", loop="i0")
    ((Ref(kind='block', name='T_exp'), Ref(kind='loop', name='i0')), {})
    """
    args: list = [Ref("block", block)]
    for what in BLOCK_ARGUMENTS.get(primitive, ()):
        if what == "loop":
            if loop is None:
                raise ValueError(f"{primitive} needs a target loop: choose one in 'at loop'")
            args.append(Ref("loop", loop))
        elif what == "read":
            args.append(read)
        elif what == "write":
            args.append(write)
        elif what == "scope":
            args.append(scope)
        elif what == "write_pair":
            args.append(("write", write))
        elif what == "index_map":
            if not index_map.strip():
                raise ValueError(f"{primitive} needs an index map, e.g. 'lambda i, j: (j, i)'")
            args.append(index_map.strip())
    return tuple(args), {}
