"""Access-pattern plots: which elements of a buffer one tile (or one thread, one
iteration) touches, and in which order.

``access_map(obj, "A", tile="j_0")`` returns an array of the buffer's shape: ``-1`` where
the selected iterations never touch the element, else the number of the first iteration
that touches it (0, 1, 2... in execution order). ``access_figure`` draws those maps, one
panel per buffer, coloured by iteration order (untouched elements grey): the picture that
makes tiling, reuse and coalescing visible (after triton-viz and GPU-Puzzles).

Selecting iterations (see ``workbench.viz.iteration``): ``fixed={"i_0": 1}`` pins loops,
``tile="j_0"`` pins ``j_0`` and the loops around it (at 0 unless ``fixed`` says otherwise),
a GPU thread is ``fixed={"threadIdx.x loop": t}``. With neither, every iteration counts;
when that is more than ``MAX_ITERATIONS``, the outermost loops are pinned at their first
value until the rest fits (``AccessMap.tile`` says which).

Example
-------
>>> from workbench import ops
>>> access_map(ops.matmul(2, 3, 2), "C").tolist()     # i, j, k: C[0, 0] first at step 0
[[0, 2, 4], [6, 8, 10]]
"""

from __future__ import annotations

import math

import numpy as np

from workbench.ir.buffer import Buffer
from workbench.ir.function import PrimFunc
from workbench.viz.iteration import (
    MAX_ITERATIONS,
    BlockPath,
    access_elements,
    block_accesses,
    block_paths,
    dense_ranks,
    enumerate_block,
    loop_dependencies,
    order_keys,
    pad_keys,
    pinned_loops,
)

UNTOUCHED_COLOR = "#dddddd"


def find_buffer(func: PrimFunc, buffer: str | Buffer) -> Buffer:
    """The parameter or allocated buffer of ``func`` called ``buffer``."""
    if isinstance(buffer, Buffer):
        return buffer
    for candidate in all_buffers(func):
        if candidate.name == buffer:
            return candidate
    names = ", ".join(b.name for b in all_buffers(func))
    raise KeyError(f"{func.name} has no buffer {buffer!r} (its buffers: {names})")


def all_buffers(func: PrimFunc) -> list[Buffer]:
    """Parameters, then allocated buffers in program order."""
    found = list(func.params) + list(func.root_block.alloc_buffers)
    for path in block_paths(func):
        found += [b for b in path.block.alloc_buffers if b not in found]
    return found


def _selected_paths(func: PrimFunc, buffer: Buffer, block: str | None,
                    tile: str | None) -> list[BlockPath]:
    paths = [p for p in block_paths(func) if block_accesses(p.block, buffer)]
    if block is not None:
        paths = [p for p in paths if p.block.name == block]
        if not paths:
            raise KeyError(f"block {block!r} does not access {buffer.name}")
    if tile is not None:
        paths = [p for p in paths if tile in [loop.loop_var.name for loop in p.loops]]
        if not paths:
            raise KeyError(f"no block that accesses {buffer.name} runs inside loop {tile!r}")
    return paths


def auto_tile(path: BlockPath, fixed: dict | None, limit: int = MAX_ITERATIONS,
              needed: set[str] | None = None) -> str | None:
    """The outermost loop whose body (with the loops around it pinned) has at most
    ``limit`` varying iterations (counting only the ``needed`` loops when given); None
    when the whole nest fits."""
    from workbench.ir.arith import simplify
    from workbench.ir.expr import IntImm

    fixed = fixed or {}
    extents = []
    for loop in path.loops:
        extent = simplify(loop.extent)
        varies = loop.loop_var.name not in fixed and (needed is None
                                                       or loop.loop_var.name in needed)
        extents.append(extent.value if isinstance(extent, IntImm) and varies else 1)
    if math.prod(extents) <= limit:
        return None
    for depth, loop in enumerate(path.loops):
        if math.prod(extents[depth + 1:]) <= limit:
            return loop.loop_var.name
    return path.loops[-1].loop_var.name


class AccessMap(np.ndarray):
    """An ``access_map`` result: an int64 array with ``.buffer``, ``.tile`` (the loop
    whose one iteration was enumerated, or None) and ``.blocks`` (the blocks counted)."""

    buffer: Buffer
    tile: str | None
    blocks: tuple[str, ...]


def access_map(obj, buffer: str | Buffer, *, block: str | None = None,
               fixed: dict[str, int] | None = None, tile: str | None = None,
               limit: int = MAX_ITERATIONS) -> AccessMap:
    """The first iteration that touches each element of ``buffer`` (``-1``: never).

    Parameters
    ----------
    obj : PrimFunc or Schedule
        The function.
    buffer : str or Buffer
        A parameter or an allocated buffer.
    block : str, optional
        Count only this block's accesses; default every block that accesses the buffer.
        Iterations are numbered in execution order across the blocks (a stage moved by
        ``compute_at`` interleaves with its consumer).
    fixed : dict of loop name to value, optional
        Loops pinned to one value (the loop variable's value).
    tile : str, optional
        A loop: pin it and every loop around it (to 0, or as ``fixed`` says), so the map
        shows one iteration of its body.
    limit : int
        Most iterations enumerated per access (only the loops an access depends on are
        enumerated); past it, outer loops are pinned (``AccessMap.tile``).

    Returns
    -------
    AccessMap
        An int64 array of the buffer's shape.

    Example
    -------
    >>> import workbench as wb
    >>> sch = wb.Schedule(wb.ops.matmul(4, 4, 4))
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 2])
    >>> (access_map(sch, "A", tile="i_0", fixed={"i_0": 1}) >= 0).sum(axis=1).tolist()
    [0, 0, 4, 4]
    """
    from workbench.viz.html import _function_of

    func = _function_of(obj)
    buf = find_buffer(func, buffer)
    paths = _selected_paths(func, buf, block, tile)
    chosen_tile = tile
    events = []  # per access: (elements, positions, run, path)
    for path in paths:
        accesses = block_accesses(path.block, buf)
        needed = [loop_dependencies(path, indices) for indices in accesses]
        path_tile = tile if tile is not None else auto_tile(path, fixed, limit,
                                                            needed=set().union(*needed))
        chosen_tile = chosen_tile or path_tile
        pinned = pinned_loops(path, fixed, path_tile)
        for indices, loops in zip(accesses, needed, strict=True):
            run = enumerate_block(path, pinned, limit, needed=loops)
            elements, positions = access_elements(buf, indices, run)
            events.append((elements, positions, run, path))
    if len(paths) == 1:
        steps = [run.number[positions] for _, positions, run, _ in events]
    else:  # number iterations across blocks in execution order (a stage interleaves)
        keys = [[column[positions] for column in order_keys(path, run.env, run.size)]
                for _, positions, run, path in events]
        ranks = dense_ranks(pad_keys(keys))
        bounds = np.cumsum([0] + [positions.size for _, positions, _, _ in events])
        steps = [ranks[bounds[i]:bounds[i + 1]] for i in range(len(events))]
    result = np.full(buf.size, np.iinfo(np.int64).max, dtype=np.int64)
    for (elements, _, _, _), numbers in zip(events, steps, strict=True):
        if elements.size:  # numbers grow along an access: an element's first is its min
            unique, first = np.unique(elements, return_index=True)
            result[unique] = np.minimum(result[unique], numbers[first])
    result[result == np.iinfo(np.int64).max] = -1
    out = result.reshape(buf.shape).view(AccessMap)
    out.buffer, out.tile = buf, chosen_tile
    out.blocks = tuple(p.block.name for p in paths)
    return out


def _as_2d(values: np.ndarray) -> np.ndarray:
    if values.ndim == 0:
        return values.reshape(1, 1)
    if values.ndim == 1:
        return values.reshape(1, -1)
    return values.reshape(-1, values.shape[-1])


def access_figure(obj, buffer: str | Buffer | list | None = None, *, block: str | None = None,
                  fixed: dict[str, int] | None = None, tile: str | None = None):
    """Draw ``access_map`` of one or several buffers, coloured by iteration order.

    Parameters
    ----------
    buffer : str, Buffer or list of them, optional
        Default: every parameter of the function.
    block, fixed, tile
        As in ``access_map``.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per buffer; each axes' image holds the map as a masked array (untouched
        elements masked) and its title says how many elements (and bytes) are touched.

    Example
    -------
    >>> fig = access_figure(sch, ["A", "B", "C"], tile="j_0")        # doctest: +SKIP
    """
    import matplotlib

    from workbench.viz.figures import new_figure
    from workbench.viz.html import _function_of
    from workbench.viz.loopnest import format_bytes

    func = _function_of(obj)
    if buffer is None:
        names = list(func.params)
    elif isinstance(buffer, (str, Buffer)):
        names = [buffer]
    else:
        names = list(buffer)
    buffers = [find_buffer(func, name) for name in names]
    width = min(4.0 * len(buffers), 14.0)
    fig, axes = new_figure((width, 3.6), nrows=1, ncols=len(buffers), squeeze=False)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=UNTOUCHED_COLOR)
    image, tiles = None, set()
    for ax, buf in zip(axes[0], buffers, strict=True):
        values = access_map(func, buf, block=block, fixed=fixed, tile=tile)
        touched = int((values >= 0).sum())
        shown = np.ma.masked_less(_as_2d(np.asarray(values)), 0)
        image = ax.imshow(shown, cmap=cmap, interpolation="nearest", aspect="auto")
        ax.set_title(f"{buf.name} {tuple(buf.shape)}: {touched} of {buf.size} elements\n"
                     f"({format_bytes(touched * buf.itemsize)})", fontsize=9)
        ax.set_xlabel("last index", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_gid(f"access:{buf.name}")
        tiles.add(values.tile)
    tiles.discard(None)
    selection = [f"one iteration of {', '.join(sorted(tiles))}"] if tiles else []
    selection += [f"{name} = {value}" for name, value in (fixed or {}).items()]
    if selection:
        fig.suptitle(", ".join(selection), fontsize=9, color="0.3", y=1.04)
    if image is not None:
        fig.colorbar(image, ax=list(axes[0]), label="first touched at iteration", shrink=0.8)
    return fig
