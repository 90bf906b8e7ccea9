"""The footprint of a tile (bytes per buffer touched by one iteration of a loop's body)
and warnings against the machine's caches or a GPU's shared memory.

``tile_footprint(sch, "j_0")`` pins ``j_0`` and the loops around it at their first
iteration and counts the distinct elements each buffer has touched by the rest, exactly
(``workbench.viz.iteration``), or, past ``MAX_ITERATIONS`` iterations, as the bounding box
of the accessed index ranges (interval analysis), which can only overcount.

Cache sizes come from the machine (``workbench.backends.common.machine``: sysfs, else
``lscpu``, else 32 KiB L1d / 1 MiB L2 / 32 MiB L3).

Example
-------
>>> import workbench as wb
>>> sch = wb.Schedule(wb.ops.matmul(64, 64, 64))
>>> i, j, k = sch.get_loops(sch.get_block("C"))
>>> tile_footprint(sch, "j")       # one (i, j): a row of A, a column of B, one C
{'C': 4, 'A': 256, 'B': 256}
"""

from __future__ import annotations

from pathlib import Path

from workbench.backends.common.machine import DEFAULT_CACHES, machine_facts, read_caches
from workbench.ir.buffer import Buffer
from workbench.ir.expr import IntImm, PrimExpr
from workbench.viz.access import all_buffers, find_buffer
from workbench.viz.iteration import (
    MAX_ITERATIONS,
    BlockPath,
    TooManyIterationsError,
    access_elements,
    block_accesses,
    block_paths,
    enumerate_block,
    loop_dependencies,
    pinned_loops,
)
from workbench.viz.loopnest import format_bytes

GPU_SHARED_DEFAULT = 48 << 10
"""Shared memory per block a CUDA kernel gets without opting in (all compute capabilities)."""


def cache_sizes(root: str | Path | None = None) -> dict[str, int]:
    """This machine's data caches in bytes, e.g. ``{"L1d": 32768, "L2": 524288, "L3": ...}``
    (``machine_facts()``), or those under the sysfs folder ``root``.

    Example
    -------
    >>> sorted(cache_sizes())[:2]                                  # doctest: +SKIP
    ['L1d', 'L2']
    """
    if root is None:
        return machine_facts().cache_dict
    return dict(read_caches(root) or DEFAULT_CACHES)


def _loop_name(obj, loop) -> str:
    if isinstance(loop, str):
        return loop
    loop_var = getattr(loop, "loop_var", None)
    if loop_var is not None:
        return loop_var.name
    node = obj.get(loop)  # a Schedule's loop handle
    return node.loop_var.name


def _bounding_box(path: BlockPath, pinned: dict, indices: tuple[PrimExpr, ...],
                  buffer: Buffer) -> list[tuple[int, int]]:
    """Per-dimension (lo, hi) of ``indices`` over the varying loops (interval analysis)."""
    from workbench.ir.arith import int_bounds, simplify
    from workbench.ir.functor import substitute

    ranges, values = {}, {}
    for node in path.path:
        if hasattr(node, "loop_var"):
            start = simplify(substitute(node.min, values))
            name = node.loop_var.name
            if name in pinned:
                values[node.loop_var] = IntImm(pinned[name] if pinned[name] is not None
                                               else start.value if isinstance(start, IntImm)
                                               else 0)
                continue
            lo, _ = int_bounds(start, ranges)
            _, hi = int_bounds(start + node.extent - 1, ranges)
            ranges[node.loop_var] = (lo, hi)
        else:
            for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True):
                ranges[iv.var] = int_bounds(substitute(value, values), ranges)
    box = []
    for index, size in zip(indices, buffer.shape, strict=True):
        lo, hi = int_bounds(substitute(index, values), ranges)
        lo = 0 if lo is None else max(lo, 0)
        hi = size - 1 if hi is None else min(hi, size - 1)
        box.append((lo, hi))
    return box


def _elements(buffer: Buffer, paths: list[BlockPath], loop: str,
              limit: int) -> tuple[int, bool]:
    """Distinct elements of ``buffer`` one iteration of ``loop``'s body touches, and
    whether the count is exact. Each access enumerates only the loops it depends on."""
    import numpy as np

    touched = np.zeros(buffer.size, dtype=bool)
    boxes = []
    for path in paths:
        pinned = pinned_loops(path, None, loop)
        for indices in block_accesses(path.block, buffer):
            needed = loop_dependencies(path, indices)
            try:
                run = enumerate_block(path, pinned, limit, needed=needed)
            except TooManyIterationsError:
                boxes.append(_bounding_box(path, pinned, indices, buffer))
                continue
            elements, _ = access_elements(buffer, indices, run)
            touched[elements] = True
    if not boxes:
        return int(touched.sum()), True
    grid = touched.reshape(buffer.shape) if buffer.shape else touched
    for box in boxes:
        grid[tuple(slice(lo, hi + 1) for lo, hi in box)] = True
    return int(grid.sum()), False


def tile_footprint(obj, loop, *, limit: int = MAX_ITERATIONS) -> dict[str, int]:
    """Bytes of each buffer touched by one iteration of ``loop``'s body.

    Parameters
    ----------
    obj : PrimFunc or Schedule
    loop : str, For or a Schedule loop handle
        The loop; it and the loops around it are pinned at their first iteration.
    limit : int
        Most iterations counted exactly per block; past it, bounding boxes.

    Returns
    -------
    dict
        Buffer name to bytes (distinct elements times item size), in the order the
        buffers are first accessed; every buffer a block inside the loop accesses.

    Example
    -------
    >>> import workbench as wb
    >>> sch = wb.Schedule(wb.ops.matmul(64, 64, 64))
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 16])
    >>> jo, ji = sch.split(j, factors=[None, 16])
    >>> sch.reorder(io, jo, k, ii, ji)
    >>> tile_footprint(sch, "j_0")
    {'C': 1024, 'A': 4096, 'B': 4096}
    """
    from workbench.viz.html import _function_of

    func = _function_of(obj)
    name = _loop_name(obj, loop)
    paths = [p for p in block_paths(func) if name in [lp.loop_var.name for lp in p.loops]]
    if not paths:
        raise KeyError(f"{func.name} has no loop {name!r} around a block")
    footprint: dict[str, int] = {}
    for path in paths:
        for region in path.block.reads + path.block.writes:
            footprint.setdefault(region.buffer.name, 0)
    for buffer in all_buffers(func):
        if buffer.name not in footprint:
            continue
        users = [p for p in paths if block_accesses(p.block, buffer)]
        count, _ = _elements(buffer, users, name, limit)
        footprint[buffer.name] = count * buffer.itemsize
    return footprint


def footprint_warnings(obj, loop, caches: dict[str, int] | None = None) -> list[str]:
    """Warnings when one iteration of ``loop``'s body touches more than a cache holds.

    Parameters
    ----------
    obj : PrimFunc or Schedule
    loop : str, For or loop handle
    caches : dict, optional
        Capacities in bytes: ``{"L1d": ..., "L2": ...}`` for a CPU (default: this
        machine's, ``cache_sizes()``; L3 and beyond are ignored), or ``{"shared": ...}``
        for a GPU, where the buffers in ``shared`` scope the tile touches are compared.

    Returns
    -------
    list of str
        One line per capacity exceeded; empty when the tile fits.

    Example
    -------
    >>> import workbench as wb
    >>> sch = wb.Schedule(wb.ops.matmul(64, 64, 64))
    >>> footprint_warnings(sch, "j", caches={"L1d": 256, "L2": 4096})
    ['tile of j: 516 B (C 4 B, A 256 B, B 256 B) exceeds L1d (256 B)']
    """
    from workbench.viz.html import _function_of

    func = _function_of(obj)
    name = _loop_name(obj, loop)
    footprint = tile_footprint(obj, name)
    caches = dict(caches) if caches is not None else cache_sizes()
    warnings = []
    if "shared" in caches:
        shared = {n: b for n, b in footprint.items()
                  if find_buffer(func, n).scope == "shared"}
        total = sum(shared.values())
        if total > caches["shared"]:
            parts = ", ".join(f"{n} {format_bytes(b)}" for n, b in shared.items())
            warnings.append(f"tile of {name}: shared memory {format_bytes(total)} ({parts}) "
                            f"exceeds the {format_bytes(caches['shared'])} per block")
    total = sum(footprint.values())
    parts = ", ".join(f"{n} {format_bytes(b)}" for n, b in footprint.items())
    for level in ("L1d", "L1", "L2"):
        capacity = caches.get(level)
        if capacity is not None and total > capacity:
            warnings.append(f"tile of {name}: {format_bytes(total)} ({parts}) exceeds "
                            f"{level} ({format_bytes(capacity)})")
    return warnings


