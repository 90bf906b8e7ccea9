"""Attention recipes for the ``cuda`` target (``ops.attention``: blocks ``scores``,
``T_softmax_maxelem``, ``T_softmax_expsum``, ``T_softmax_norm``, ``attention``): a tile of
query rows per CUDA block, the keys of the head staged in shared memory, the scores and
probabilities kept on chip.

``warp_tiles`` (the graph's default for attention, ``graph_cuda_ops.attention_tiled``): a
register tile of query rows x keys per lane, the keys and queries staged per slice of the
head dimension (its docstring). ``warp_rows`` (the default before, and the fallback where
``warp_tiles`` does not fit): one warp per query row.

``warp_rows``:

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


def _tile(sch: Schedule, loops) -> None:
    """Unroll ``loops`` in the generated source (a register tile: local arrays indexed by
    constants)."""
    for loop in loops:
        sch.unroll(loop)
        sch.annotate(loop, "pragma_unroll_explicit", 1)


def _fetch(sch: Schedule, stage, threads: tuple[int, int], vector: bool) -> None:
    """The copy loops of shared ``stage`` spread over the block's ``threads`` (y, x), the
    innermost split by 4 and vectorized when ``vector`` (``matmul_cuda``'s cooperative
    fetch)."""
    from workbench.recipes.matmul_cuda import _cooperative_fetch

    _cooperative_fetch(sch, stage, threads, vector)


def _read_index(sch: Schedule, block, param) -> int:
    return next(n for n, r in enumerate(sch.get(block).reads) if r.buffer.name == param.name)


def tiles_fit(queries: int, keys: int, dim: int, value_dim: int, warps: int, rows: int,
              d_tile: int) -> int:
    """Bytes of shared memory a block of ``warp_tiles`` takes: the scores and probabilities
    of its ``warps * rows`` query rows, a double-buffered ``d_tile`` slice of the keys, and
    (where staged: ``rows * d_tile`` a multiple of the lanes) the rows' slice of the queries.

    >>> tiles_fit(128, 128, 64, 64, 8, 4, 8), tiles_fit(511, 511, 64, 64, 4, 2, 4)
    (43008, 49056)
    """
    block_rows = warps * rows
    queries_staged = rows * d_tile % LANES == 0  # warp_tiles' default
    return 4 * (2 * block_rows * keys + 2 * d_tile * keys
                + 2 * block_rows * d_tile * queries_staged)


MAX_TILE = 16
"""Scores a lane keeps in registers at most (``rows * ceil(kv_seq / lanes)``): ptxas (sm_90)
gave 156 registers to 2 rows x 16 keys at S=511, 115 to 1 x 16, 64 to 4 x 4 at S=128."""


def default_tiles(queries: int, keys: int, dim: int, value_dim: int,
                  budget: int | None = None) -> tuple[int, int, int]:
    """``(warps, rows, d_tile)`` of ``warp_tiles``: the most query rows per warp (4, 2, 1)
    whose scores take at most ``MAX_TILE`` registers a lane, 8 warps per block, then, while
    the block's shared memory (``tiles_fit``) is over ``budget`` (default
    ``shared_budget()``), the keys' slice ``d_tile`` halved from 8 to 4, then the warps.
    ``ValueError`` when a lane's keys alone are over ``MAX_TILE`` or one warp does not fit.

    >>> default_tiles(128, 128, 64, 64), default_tiles(511, 511, 64, 64)
    ((8, 4, 8), (8, 1, 4))
    >>> default_tiles(3, 3, 8, 8)
    (2, 2, 8)
    """
    budget = shared_budget() if budget is None else budget
    per_lane = -(-keys // LANES)
    if per_lane > MAX_TILE:
        raise ValueError(f"warp_tiles: {keys} keys are {per_lane} a lane, over the "
                         f"{MAX_TILE} scores a lane keeps in registers")
    rows = next(r for r in (4, 2, 1) if r * per_lane <= MAX_TILE and (r <= queries or r == 1))
    warps = max(1, min(8, -(-queries // rows)))
    d_tile = 8
    while tiles_fit(queries, keys, dim, value_dim, warps, rows, d_tile) > budget:
        if d_tile > 4:
            d_tile //= 2
        elif warps > 1:
            warps //= 2
        else:
            raise ValueError(f"warp_tiles: a warp of {rows} rows of {keys} keys does not fit "
                             f"in {budget} bytes of shared memory")
    return warps, rows, d_tile


@register("attention", "warp_tiles", "cuda")
def warp_tiles(func: PrimFunc, warps: int | None = None, rows: int | None = None,
               d_tile: int | None = None, lanes: int = LANES,
               stage_queries: bool | None = None, k_unroll: int = 4,
               half_warps: bool = True) -> Schedule:
    """A register tile of ``rows`` query rows x consecutive keys per lane; ``warps`` warps
    per block (``warps * rows`` query rows of one ``(b, h)``), defaults from
    ``default_tiles``.

    - scores (``Q K^T``): lane ``t`` of a warp accumulates the ``rows x n`` scores of its
      warp's rows and keys ``t * n .. t * n + n - 1`` (``n = ceil(kv_seq / lanes)``) in
      registers over the head dimension; the head dimension in slices of ``d_tile``, each
      slice of the keys (``K[:, d0:d0 + d_tile]``, transposed, ``[d, j]``) and of the
      block's queries staged in shared memory by all the block's threads (cooperative,
      128-bit global loads where aligned, double-buffered): per step of ``d`` a lane loads
      ``rows`` queries (a broadcast) and ``n`` keys (``ld.shared.v4`` when ``n`` is a
      multiple of 4) for ``rows * n`` FMAs, where ``warp_rows`` loads a query from global
      memory and a key for each FMA;
    - the row max and sum of exponentials per row as warp shuffles, probabilities in shared
      memory (the whole row of keys fits at ``kv_seq <= 512``: no online rescaling);
    - ``P V``: lane ``t`` accumulates the ``rows x m`` outputs of its rows and values
      ``t * m .. t * m + m - 1`` over the keys: per key ``rows`` probabilities (broadcast)
      and ``m`` values (global, coalesced across the lanes, shared by the block's warps
      through L1) for ``rows * m`` FMAs. ``half_warps`` (default; ignored at an odd
      ``rows``): lanes 0-15 take the first half of the warp's rows, 16-31 the second, each
      4 consecutive values (one ``ld.global.v4`` where the value dimension is a multiple of
      64): per key half the loads for the same FMAs (PTX at S=128: 45 instructions and 6
      loads for 32 FMAs, 52 and 12 without). Chosen by that count, not yet timed on a GPU.

    Masks (causal, boolean, additive) are the softmax blocks' own; index-mapped Q, K, V
    (``passes.fold_views``) are read through their maps. ``ValueError`` where the blocks
    are not those of ``ops.attention`` or the tile does not fit in shared memory.
    """
    blocks = find_blocks(func)
    names = [b.name for b in blocks]
    if names[:5] != ["scores", *SOFTMAX, "attention"] or len(names) > 5:
        raise ValueError(f"warp_tiles needs the five blocks of ops.attention; got {names}")
    queries, keys, dim = (_extent(blocks[0], a) for a in (-3, -2, -1))
    value_dim = _extent(blocks[4], -2)
    auto = default_tiles(queries, keys, dim, value_dim)
    warps = auto[0] if warps is None else warps
    rows = auto[1] if rows is None else rows
    d_tile = auto[2] if d_tile is None else d_tile
    need = tiles_fit(queries, keys, dim, value_dim, warps, rows, d_tile)
    if need > shared_budget():
        raise ValueError(f"warp_tiles: {warps} warps x {rows} rows x {keys} keys need "
                         f"{need} bytes of shared memory, over the device's {shared_budget()}")
    threads = (warps, lanes)
    sch = Schedule(func)
    att = sch.get_block("attention")
    *batch, i, _e, _k = sch.get_loops(att)
    i0, warp, _ = sch.split(i, factors=[None, warps, rows])
    # (b, h) on blockIdx.x, the tile of queries on blockIdx.y: the staged slice of the
    # queries is then sized by the block's rows (a fused index bounds it by the sequence)
    sch.bind(sch.fuse(*batch) if len(batch) > 1 else batch[0], "blockIdx.x")
    sch.bind(i0, "blockIdx.y")
    sch.bind(warp, "threadIdx.y")
    for name in ("T_softmax_norm", "T_softmax_expsum", "T_softmax_maxelem", "scores"):
        # one row a warp or one key: the blocks keep their unit loops (indexed below)
        sch.compute_at(sch.get_block(name), warp, preserve_unit_loops=keys == 1 or rows == 1)

    # scores: the lane's rows x keys in registers, K and Q staged per slice of d
    scores = sch.get_block("scores")
    key_index = _read_index(sch, scores, func.params[1])
    query_index = _read_index(sch, scores, func.params[0])
    ii, j, d = sch.get_loops(scores)[-3:]
    lane, jj = sch.split(j, factors=[lanes, None])
    d0, d1 = sch.split(d, factors=[None, d_tile])
    sch.reorder(lane, d0, d1, ii, jj)
    sch.bind(lane, "threadIdx.x")
    sch.set_scope(scores, 0, "shared")
    sch.reverse_compute_at(sch.cache_write(scores, 0, "local"), lane)
    vector = dim % 4 == 0 and d_tile % 4 == 0
    if keys > 1:
        staged = sch.cache_read(scores, key_index, "shared")
        sch.compute_at(staged, d0)
        sch.transform_layout(staged, ("write", 0), keys_transposed(sch, staged))
        _fetch(sch, staged, threads, vector)
        sch.annotate(staged, "double_buffer_scope", 0)
        per_lane = -(-keys // lanes)
        fragment = sch.cache_read(scores, key_index, "local")  # reads K_shared now
        sch.compute_at(fragment, d1)
        if keys % lanes == 0 and per_lane % 4 == 0:
            _, four = sch.split(sch.get_loops(fragment)[-1], factors=[None, 4])
            sch.vectorize(four)
    if stage_queries is None:  # a copy without a guard (one would size it by the sequence)
        stage_queries = rows * d_tile % lanes == 0
    if stage_queries:
        staged_q = sch.cache_read(scores, query_index, "shared")
        sch.compute_at(staged_q, d0)
        _fetch(sch, staged_q, threads, vector and rows * d_tile % (4 * lanes) == 0)
        sch.annotate(staged_q, "double_buffer_scope", 0)
    query_fragment = sch.cache_read(scores, query_index, "local")
    sch.compute_at(query_fragment, d1)
    sch.decompose_reduction(scores, d0)
    _tile(sch, [d1, ii, jj])

    # softmax: per row, warp-shuffle max and sum, probabilities in shared memory
    norm = sch.get_block("T_softmax_norm")
    _, j_lane = sch.split(sch.get_loops(norm)[-1], factors=[None, lanes])
    sch.bind(j_lane, "threadIdx.x")
    sch.set_scope(norm, 0, "shared")
    for name in SOFTMAX[:2]:
        block = sch.get_block(name)
        _, k_lane = sch.split(sch.get_loops(block)[-1], factors=[None, lanes])
        sch.bind(k_lane, "threadIdx.x")
        sch.set_scope(block, 0, "local")

    # P V: the lane's rows x values in registers over the keys
    att = sch.get_block("attention")
    ii, e, k = sch.get_loops(att)[-3:]
    k0, k1 = sch.split(k, factors=[None, k_unroll])
    half_warps = half_warps and rows % 2 == 0  # (one row a warp: the whole warp's values)
    if half_warps:  # lanes 0-15 the first half of the rows, 16-31 the second: 4 values each
        ih, ii = sch.split(ii, factors=[2, None])
        el, ee = sch.split(e, factors=[lanes // 2, None])
        sch.reorder(ih, el, k0, k1, ii, ee)
        lane = sch.fuse(ih, el)
    else:
        lane, ee = sch.split(e, factors=[lanes, None])
        sch.reorder(lane, k0, k1, ii, ee)
    sch.bind(lane, "threadIdx.x")
    sch.reverse_compute_at(sch.cache_write(att, 0, "local"), lane)
    if k_unroll % 4 == 0 and keys % 4 == 0:  # the rows' probabilities 4 keys at a time
        probs = sch.cache_read(att, _read_index(sch, att, sch.get(norm).writes[0].buffer),
                               "local")
        sch.compute_at(probs, k0)
        _, four = sch.split(sch.get_loops(probs)[-1], factors=[None, 4])
        sch.vectorize(four)
    if half_warps and value_dim % (2 * lanes) == 0:  # the lane's values 4 at a time
        values = sch.cache_read(att, _read_index(sch, att, func.params[2]), "local")
        sch.compute_at(values, k1)
        _, four = sch.split(sch.get_loops(values)[-1], factors=[None, 4])
        sch.vectorize(four)
    sch.decompose_reduction(att, k0)
    _tile(sch, [k1, ii, ee])
    return sch
