"""Attention recipe for the ``cuda`` target (``ops.attention``: blocks ``scores``,
``T_softmax_maxelem``, ``T_softmax_expsum``, ``T_softmax_norm``, ``attention``): a tile of
query rows per CUDA block, one warp per row, the keys of the head staged in shared memory,
the scores and probabilities kept on chip.

``warp_rows`` (the graph's default for attention):

- a CUDA block takes ``rows`` query rows of one ``(b, h)`` (``blockIdx.x`` over the fused
  ``b, h, i_0``; the rows on ``threadIdx.y``), each row a warp of ``lanes`` threads
  (``threadIdx.x``);
- the keys of the head (``K[b, h, :, :]``, ``kv_seq x dim``) are copied once per block into
  shared memory by all its threads (``cache_read`` + ``compute_at`` at the block's loop;
  coalesced reads) and stored transposed, ``[d, j]`` (``transform_layout``): lane ``j`` of
  a warp then reads consecutive words, free of bank conflicts. The ``rows`` rows of a block
  share one copy (the one-block-per-row kernel read the head's keys and values from L2 once
  per query row);
- per row (``compute_at`` at the row's ``threadIdx.y`` loop): the scores (lane ``j``
  accumulates the dot products of keys ``j, j + lanes, ...`` in a register, one key after
  the other, each written to the row's scores in shared memory), the row max and sum of
  exponentials (cross-lane reductions: warp shuffles, no block barrier: the row is one
  warp), the probabilities (shared) and the output row (lane ``e`` accumulates outputs
  ``e, e + lanes, ...`` in a register over the keys, one output after the other, the
  values read straight from global memory: coalesced across the lanes, shared by the
  block's rows through L1);
- the causal mask is the operator's own ``if_then_else`` (scores of masked keys count as
  ``-inf``); a ``kv_seq`` or head dim that is not a multiple of ``lanes`` leaves guards;
- Q, K and V may be read through index maps (``passes.fold_views``, the cuda target's
  layout hook): GPT-2's fused projection ``(B, S, 3 * H * D)`` in place, a grouped-query
  key/value head at ``h // group``; the staged keys are transposed whatever ``K``'s layout
  (``attention.keys_transposed``, the cpu recipe's rule); a single key (a decoding step)
  is not staged.

The defaults fit the device's shared memory per block (``shared_budget``, from the
target's device facts): each row of the tile keeps its scores and probabilities there
(``8 * kv_seq`` bytes), so long rows take fewer rows per block (``fit_rows``: 8, 4, 2,
1); ``stage_keys`` is turned off when the keys would not fit in ``MAX_STAGED`` bytes or
beside the rows (the rows then read them from global memory). A single row that does not
fit is refused (``ValueError``: the graph then takes the next rule).

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("attention", "warp_rows", "cuda")(ops.attention(1, 2, 9, 8))
>>> "K_shared" in sch.mod.script()
True
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.attention import keys_transposed
from workbench.recipes.registry import register
from workbench.schedule import Schedule

SOFTMAX = ("T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm")
"""The row softmax's blocks, in the order they run."""

MAX_STAGED = 32 * 1024
"""Bytes of shared memory the staged keys may take at most."""

LANES = 32
"""Threads per query row: one warp."""


def _extent(block, axis: int) -> int:
    return int(block.iter_vars[axis].dom.extent.value)


def default_rows(queries: int) -> int:
    """Query rows per block: 8 (256 threads), 4 or all of them for short sequences.

    >>> default_rows(128), default_rows(77), default_rows(3)
    (8, 8, 3)
    """
    return 8 if queries >= 8 else 4 if queries >= 4 else queries


def shared_budget() -> int:
    """Bytes of shared memory one block may use on the ``cuda`` target's device (48 KiB
    under the simulator and without a device)."""
    from workbench.backends.common.target import Target

    return int(Target("cuda").device.shared_memory_per_block)


def fit_rows(queries: int, keys: int, dim: int, budget: int | None = None
             ) -> tuple[int, bool]:
    """``(rows, stage_keys)`` for ``warp_rows`` within ``budget`` bytes of shared memory
    (default ``shared_budget()``): ``default_rows(queries)`` halved while the rows' scores
    and probabilities (``rows * keys * 8`` bytes) exceed it; the keys staged where they
    take at most ``MAX_STAGED`` and fit beside the rows. ``ValueError`` when one row does
    not fit.

    >>> fit_rows(128, 128, 64), fit_rows(1024, 1024, 64), fit_rows(512, 512, 16)
    ((8, True), (4, False), (8, False))
    """
    budget = shared_budget() if budget is None else budget
    rows = default_rows(queries)
    while rows > 1 and rows * keys * 8 > budget:
        rows //= 2
    if rows * keys * 8 > budget:
        raise ValueError(f"warp_rows: a row of {keys} keys keeps {keys * 8} bytes of scores "
                         f"and probabilities in shared memory, over the device's {budget}")
    staged = keys * dim * 4
    return rows, staged <= MAX_STAGED and staged + rows * keys * 8 <= budget


def _lane_sums(sch: Schedule, name: str, lanes: int, tile: bool) -> None:
    """Block ``name``'s output loop (keys of the scores, values of the output) split over
    ``lanes`` on ``threadIdx.x``, each sum in a ``local`` buffer, its init out of the
    reduction loop, written back once.

    Without ``tile``, a lane's outputs are ``lanes`` apart and computed one after the other
    (one local scalar each). With ``tile``, lane ``t`` takes the consecutive outputs
    ``t * n .. t * n + n - 1`` as a register tile inside the reduction loop (explicitly
    unrolled): one load of the row's query / probability per step serves ``n`` independent
    FMAs. (Outputs ``lanes`` apart cannot be a tile: the write-back placed under the lane
    loop covers the bounding box of the strided outputs, and every lane wrote all of them.)
    """
    block = sch.get_block(name)
    j, reduce = sch.get_loops(block)[-2:]
    if not tile:
        _, j1 = sch.split(j, factors=[None, lanes])
        sch.bind(j1, "threadIdx.x")
        sch.reverse_compute_at(sch.cache_write(block, 0, "local"), j1)
        sch.decompose_reduction(block, reduce)
        return
    lane, j0 = sch.split(j, factors=[lanes, None])
    sch.bind(lane, "threadIdx.x")
    sch.reverse_compute_at(sch.cache_write(block, 0, "local"), lane)
    sch.reorder(reduce, j0)
    sch.decompose_reduction(block, reduce)
    sch.unroll(j0)
    sch.annotate(j0, "pragma_unroll_explicit", 1)


@register("attention", "warp_rows", "cuda")
def warp_rows(func: PrimFunc, rows: int | None = None, stage_keys: bool | None = None,
              lanes: int = LANES, tile: bool = False) -> Schedule:
    """A tile of ``rows`` query rows per block, a warp per row (module docstring).

    ``rows`` and ``stage_keys`` default to ``fit_rows`` (within the device's shared memory
    per block); ``rows`` given alone keeps ``stage_keys``'s rule for those rows. ``tile``
    gives each lane consecutive keys and outputs as a register tile (``_lane_sums``; the
    staged keys are then read 4 at a time, ``ld.shared.v4``, where a lane's keys are a
    multiple of 4). Off by default: built and
    checked under the simulator, not yet timed on a GPU.
    """
    blocks = find_blocks(func)
    names = [b.name for b in blocks]
    if names[:5] != ["scores", *SOFTMAX, "attention"] or len(names) > 5:
        raise ValueError(f"warp_rows needs the five blocks of ops.attention; got {names}")
    scores_info = blocks[0]
    queries, keys, dim = (_extent(scores_info, a) for a in (-3, -2, -1))
    if rows is None:
        rows, fits = fit_rows(queries, keys, dim)
    else:
        fits = keys * dim * 4 <= MAX_STAGED and (keys * dim * 4 + rows * keys * 8
                                                  <= shared_budget())
    if stage_keys is None:
        stage_keys = fits
    sch = Schedule(func)
    att = sch.get_block("attention")
    *batch, i, e, _k = sch.get_loops(att)
    i0, i1 = sch.split(i, factors=[None, rows])
    head = sch.fuse(*batch, i0)
    sch.bind(head, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    for name in ("T_softmax_norm", "T_softmax_expsum", "T_softmax_maxelem", "scores"):
        # one key (a decoding step): the blocks keep their unit key loop, bound to lanes
        sch.compute_at(sch.get_block(name), i1, preserve_unit_loops=keys == 1)
    sch.set_scope(sch.get_block("scores"), 0, "shared")
    for name in ("scores", "attention"):  # the two dot products, registers per lane
        _lane_sums(sch, name, lanes, tile)
    norm = sch.get_block("T_softmax_norm")
    _, j_lane = sch.split(sch.get_loops(norm)[-1], factors=[None, lanes])
    sch.bind(j_lane, "threadIdx.x")
    sch.set_scope(norm, 0, "shared")
    for name in SOFTMAX[:2]:  # warp-shuffle reductions, the result in every lane
        block = sch.get_block(name)
        _, k_lane = sch.split(sch.get_loops(block)[-1], factors=[None, lanes])
        sch.bind(k_lane, "threadIdx.x")
        sch.set_scope(block, 0, "local")
    if stage_keys and keys > 1:  # one key per head (a decoding step): nothing to share
        scores = sch.get_block("scores")
        key_index = next(n for n, r in enumerate(sch.get(scores).reads)
                         if r.buffer.name == func.params[1].name)
        staged = sch.cache_read(scores, key_index, "shared")
        sch.compute_at(staged, head)
        sch.transform_layout(staged, ("write", 0), keys_transposed(sch, staged))
        fused = sch.fuse(*sch.get_loops(staged)[1:])
        _, ty, tx = sch.split(fused, factors=[None, rows, lanes])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        per_lane = -(-keys // lanes)
        if tile and keys % lanes == 0 and per_lane % 4 == 0:  # the lane's keys, 4 at a time
            fragment = sch.cache_read(scores, key_index, "local")  # reads K_shared there now
            sch.compute_at(fragment, sch.get_loops(scores)[-2])
            _, lanes4 = sch.split(sch.get_loops(fragment)[-1], factors=[None, 4])
            sch.vectorize(lanes4)
    return sch
