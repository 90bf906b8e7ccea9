"""Warnings a schedule earns as its controls move: vector-width alignment, parallel loops
against the cores, unroll sizes, GPU threads per block and shared memory, and (with a
loop) the tile footprint against the caches (``footprint_warnings``).

All computed from the IR and the machine's facts (``/proc/cpuinfo`` through
``workbench.measure.peaks.cpu_facts``), so the explorer can show them at every change.

Example
-------
>>> import workbench as wb
>>> sch = wb.Schedule(wb.ops.matmul(64, 60, 64))
>>> i, j, k = sch.get_loops(sch.get_block("C"))
>>> sch.reorder(i, k, j)
>>> sch.vectorize(j)
>>> for line in schedule_warnings(sch, facts={"cores": 2, "lanes": 8}):
...     print(line)
vectorized loop j: extent 60 is not a multiple of 8 float32 lanes (4 in a scalar remainder)
"""

from __future__ import annotations

import math

from workbench.ir.expr import IntImm
from workbench.ir.stmt import For, ForKind
from workbench.viz.iteration import block_paths

WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024
MAX_UNROLL = 64
SHARED_BYTES_PER_BLOCK = 48 << 10


def _extent(loop: For) -> int | None:
    return loop.extent.value if isinstance(loop.extent, IntImm) else None


def _loops_with_blocks(func):
    """Each loop (by identity) with the blocks under it and whether a loop is under it."""
    seen: dict[int, tuple[For, list, bool]] = {}
    for path in block_paths(func):
        loops = path.loops
        for depth, loop in enumerate(loops):
            entry = seen.setdefault(id(loop), (loop, [], False))
            inner = entry[2] or depth < len(loops) - 1
            seen[id(loop)] = (loop, entry[1] + [path.block], inner)
    return list(seen.values())


def _dtype_under(blocks) -> str:
    for block in blocks:
        for region in block.writes:
            return region.buffer.dtype
    return "float32"


def cpu_warnings(func, facts: dict) -> list[str]:
    """Vectorized, parallel and unrolled loops against the CPU's lanes and cores."""
    import numpy as np

    out = []
    vector_bytes = facts.get("lanes", 8) * 4
    cores = facts.get("cores", 1)
    parallel_depth = {}
    for path in block_paths(func):
        parallel = [loop for loop in path.loops if loop.kind is ForKind.PARALLEL]
        if len(parallel) > 1:
            parallel_depth[id(parallel[1])] = (parallel[0], parallel[1])
    for outer, inner in parallel_depth.values():
        out.append(f"parallel loop {inner.loop_var.name} is inside parallel loop "
                   f"{outer.loop_var.name}: only the outer one runs in parallel")
    for loop, blocks, has_inner_loop in _loops_with_blocks(func):
        name, extent = loop.loop_var.name, _extent(loop)
        if loop.kind is ForKind.VECTORIZED:
            dtype = _dtype_under(blocks)
            lanes = max(vector_bytes // np.dtype(dtype).itemsize, 1)
            if has_inner_loop:
                out.append(f"vectorized loop {name} is not innermost: LLVM vectorizes "
                           "innermost loops")
            if extent is not None and extent % lanes:
                out.append(f"vectorized loop {name}: extent {extent} is not a multiple of "
                           f"{lanes} {dtype} lanes ({extent % lanes} in a scalar remainder)")
        elif loop.kind is ForKind.PARALLEL and extent is not None:
            if extent < cores:
                out.append(f"parallel loop {name} has {extent} iterations for {cores} cores: "
                           f"{cores - extent} cores idle")
            elif extent % cores and extent < 4 * cores:
                busiest = math.ceil(extent / cores)
                out.append(f"parallel loop {name}: {extent} iterations over {cores} cores, "
                           f"the busiest does {busiest}: load imbalance")
        elif loop.kind is ForKind.UNROLLED and extent is not None and extent > MAX_UNROLL:
            out.append(f"unrolled loop {name} has {extent} iterations (> {MAX_UNROLL}): the "
                       "code grows and compiles slowly")
    return out


def gpu_warnings(func, shared_bytes: int = SHARED_BYTES_PER_BLOCK) -> list[str]:
    """Threads per block against the CUDA limits, and shared memory per block."""
    out = []
    threads: dict[str, int] = {}
    for path in block_paths(func):
        for loop in path.loops:
            tag = loop.thread_binding or ""
            if tag.startswith("threadIdx") and _extent(loop) is not None:
                threads[tag] = max(threads.get(tag, 1), _extent(loop))
    per_block = math.prod(threads.values()) if threads else 0
    if per_block > MAX_THREADS_PER_BLOCK:
        out.append(f"{per_block} threads per block exceeds the CUDA limit of "
                   f"{MAX_THREADS_PER_BLOCK}")
    elif per_block and per_block % WARP_SIZE:
        out.append(f"{per_block} threads per block is not a multiple of the warp size "
                   f"{WARP_SIZE}: the last warp runs partly idle")
    shared = sum(b.nbytes for path in block_paths(func) for b in path.block.alloc_buffers
                 if b.scope == "shared")
    shared += sum(b.nbytes for b in func.root_block.alloc_buffers if b.scope == "shared")
    if shared > shared_bytes:
        out.append(f"shared memory {shared} bytes per block exceeds {shared_bytes}")
    return out


def schedule_warnings(obj, target="cpu", *, loop=None, caches: dict | None = None,
                      facts: dict | None = None) -> list[str]:
    """Every warning for a PrimFunc or Schedule on ``target`` (its kind's ``warnings`` hook:
    ``cpu_schedule_warnings`` for ``cpu`` and ``numpy``, ``cuda_schedule_warnings``).

    Parameters
    ----------
    obj : PrimFunc or Schedule
    target : str or Target
    loop : str or loop handle, optional
        Add the tile footprint warnings of this loop (``footprint_warnings``).
    caches : dict, optional
        Capacities for the footprint (default: this machine's, or 48 KiB shared memory
        on ``cuda``).
    facts : dict, optional
        ``{"cores": ..., "lanes": ...}`` (float32 lanes); default this CPU's.

    Returns
    -------
    list of str
    """
    from workbench.backends.target import resolve_target

    resolved = resolve_target(target, "schedule_warnings")
    advice = resolved.hook("warnings")
    if advice is None:
        return []
    return advice(obj, resolved, loop=loop, caches=caches, facts=facts)


def cuda_schedule_warnings(obj, target=None, *, loop=None, caches: dict | None = None,
                           facts: dict | None = None) -> list[str]:
    """The ``cuda`` kind's ``warnings``: ``gpu_warnings`` and the loop's tile footprint
    against a block's shared memory."""
    from workbench.viz.footprint import footprint_warnings
    from workbench.viz.html import _function_of

    out = gpu_warnings(_function_of(obj))
    if loop is not None:
        out += footprint_warnings(obj, loop, caches or {"shared": SHARED_BYTES_PER_BLOCK})
    return out


def cpu_schedule_warnings(obj, target=None, *, loop=None, caches: dict | None = None,
                          facts: dict | None = None) -> list[str]:
    """The ``cpu`` kind's ``warnings``: ``cpu_warnings`` and the loop's tile footprint
    against the caches."""
    from workbench.viz.footprint import footprint_warnings
    from workbench.viz.html import _function_of

    if facts is None:
        from workbench.measure.peaks import cpu_facts

        facts = cpu_facts()
    out = cpu_warnings(_function_of(obj), facts)
    if loop is not None:
        out += footprint_warnings(obj, loop, caches)
    return out
