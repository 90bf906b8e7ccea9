"""Softmax, lowered step by step: from three passes over memory to one fused online pass.

``softmax_lowering_steps(M, N)`` returns the same row softmax four times, each a
``LoweringStep`` (title, markdown explanation, ``PrimFunc``, schedule trace):

1. **three passes** (``ops.softmax``): ``T_softmax_maxelem`` (row max),
   ``T_softmax_expsum`` (sum of ``exp(x - max)``), ``T_softmax_norm`` (``exp(x - max) / sum``),
   each a loop nest of its own over the whole ``(M, N)`` input, with the two row vectors in
   global memory;
2. **fused**: ``compute_at`` moves the max and exp-sum blocks into the row loop of the
   normalise block and ``set_scope`` makes the row intermediates ``local`` (one element per
   row): one pass over memory;
3. **fused, parallel, vectorized**: the row loop runs in parallel; each reduction is split
   by 16 and ``rfactor``-ed into 16 partial results (a vector register) that LLVM vectorizes,
   then a 16-element final reduction; the normalise loop is vectorized;
4. **online softmax, fused**: a new function (an algebraic rewrite, not a schedule) whose
   single reduction keeps a running max and a sum rescaled whenever the max grows
   (Milakov and Gimelshein, 2018), fused into the row loop the same way: the input is read
   twice per row instead of three times;
5. **online softmax across lanes**: a second rewrite (again a new function, not a schedule)
   that runs the online reduction independently in ``ONLINE_LANES`` lanes per row (lane
   ``l`` sees elements ``l, l + L, l + 2L, ...``), combines the lanes' maxima and rescaled
   sums, and is scheduled like step 3: the lane loop is innermost, independent, and
   vectorized, so the online reduction runs on vectors instead of a scalar loop.

Every step computes what ``ops.softmax`` computes (``tests/ops/test_softmax_lowering.py``
checks each on the numpy and cpu targets). ``workbench.viz.steps`` tabulates their bytes,
FLOPs and measured times.

Example
-------
>>> steps = softmax_lowering_steps(4, 32)
>>> [s.title for s in steps]  # doctest: +NORMALIZE_WHITESPACE
['1. three passes', '2. fused (compute_at)', '3. fused, parallel, vectorized',
 '4. online softmax, fused', '5. online softmax across lanes']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench import T
from workbench.ir.analysis import find_blocks
from workbench.ir.function import PrimFunc
from workbench.ir.stmt import Block
from workbench.ops.nn import softmax
from workbench.schedule import Schedule

LANES = 16
"""Partial results per row in the vectorized step: 16 float32 lanes fill one 512-bit register."""

ONLINE_LANES = 16
"""Lanes per row of the online softmax across lanes (step 5): one 512-bit register of
running maxima and one of running sums."""

LOWEST_FLOAT32 = float(np.finfo(np.float32).min)
"""The most negative finite float32: the init of step 5's maxima, in place of ``-inf``.

CPU kernels compile with ``fastmath``, under which LLVM may assume no value is infinite; an
online update computing ``exp(-inf - x)`` then has undefined behaviour (a 16-lane kernel with
a ``-inf`` init crashed). From the lowest finite value the first rescaling factor is
``exp(LOWEST - x) = 0`` exactly as from ``-inf``, for every finite input."""


@dataclass(frozen=True)
class LoweringStep:
    """One step of a lowering walk-through.

    Attributes
    ----------
    title : str
        A short name (``"2. fused (compute_at)"``).
    explanation : str
        Markdown: what changed from the previous step and why it matters.
    func : PrimFunc
        The function at this step.
    trace : str or None
        The printed schedule trace that produced ``func`` from the step's starting function,
        or None when the step is a function written by hand.
    """

    title: str
    explanation: str
    func: PrimFunc
    trace: str | None = None


def online_softmax(M: int = 32, N: int = 64, dtype: str = "float32") -> PrimFunc:
    """Row softmax with one reduction pass: a running max and a rescaled running sum.

    Block ``online_max_sum`` visits each ``x = A[i, k]`` once and keeps ``m`` (the max so
    far) and ``s`` (the sum of ``exp(x' - m)`` so far). When ``x`` raises the max to
    ``m' = max(m, x)``, the old sum is rescaled: ``s' = s * exp(m - m') + exp(x - m')``.
    ``T_softmax_norm`` then writes ``exp(A - m) / s``. This is an algebraic rewrite of
    ``ops.softmax``, not a schedule of it: no primitive turns two reductions into one.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(online_softmax(4, 8))]
    ['online_max_sum', 'T_softmax_norm']
    """
    neg_inf = float("-inf")

    @T.prim_func
    def online_softmax(A: T.Buffer((M, N), dtype), T_softmax_norm: T.Buffer((M, N), dtype)):
        running_max = T.alloc_buffer((M,), dtype)
        running_sum = T.alloc_buffer((M,), dtype)
        for i, k in T.grid(M, N):
            with T.block("online_max_sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    running_max[vi] = neg_inf
                    running_sum[vi] = 0.0
                running_sum[vi] = running_sum[vi] * T.exp(
                    running_max[vi] - T.max(running_max[vi], A[vi, vk])) + T.exp(
                    A[vi, vk] - T.max(running_max[vi], A[vi, vk]))
                running_max[vi] = T.max(running_max[vi], A[vi, vk])
        for i1, j1 in T.grid(M, N):
            with T.block("T_softmax_norm"):
                vi1, vj1 = T.axis.remap("SS", [i1, j1])
                T_softmax_norm[vi1, vj1] = T.exp(A[vi1, vj1] - running_max[vi1]) / running_sum[vi1]

    return online_softmax


def online_softmax_lanes(M: int = 32, N: int = 64, lanes: int = ONLINE_LANES,
                         dtype: str = "float32") -> PrimFunc:
    """Row softmax with the online reduction run in ``lanes`` independent lanes per row.

    Each row is read as ``N // lanes`` chunks of ``lanes`` elements; lane ``l`` keeps its
    own running max ``m[i, l]`` and rescaled sum ``d[i, l]`` over the elements
    ``A[i, k0 * lanes + l]`` (block ``lane_max_sum``, the same update as
    ``online_softmax``). Then the lanes are combined: ``row_max`` is ``max_l m[i, l]`` and
    ``row_sum`` is ``sum_l d[i, l] * exp(m[i, l] - row_max)`` (each lane's sum rescaled to
    the row max), and ``T_softmax_norm`` writes ``exp(A - row_max) / row_sum``. The lane
    loop is innermost and its iterations touch different ``(m, d)`` pairs, so it can be
    vectorized (``online_softmax_lanes_schedule``). Like ``online_softmax`` this is an
    algebraic rewrite, not a schedule: ``rfactor`` cannot make it, because the online
    block stores two buffers.

    The maxima start at ``LOWEST_FLOAT32`` instead of ``-inf`` (see there: CPU kernels
    compile with ``fastmath``).

    Parameters
    ----------
    M, N : int
        Rows and row length; ``N`` must be a multiple of ``lanes``.
    lanes : int
        Independent online reductions per row.
    dtype : str
        Element type.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(online_softmax_lanes(4, 32, lanes=16))]
    ['lane_max_sum', 'row_max', 'row_sum', 'T_softmax_norm']
    """
    if N % lanes:
        raise ValueError(f"online_softmax_lanes: N={N} must be a multiple of lanes={lanes}")
    lowest = LOWEST_FLOAT32
    chunks = N // lanes

    @T.prim_func
    def online_softmax_lanes(A: T.Buffer((M, N), dtype),
                             T_softmax_norm: T.Buffer((M, N), dtype)):
        lane_max = T.alloc_buffer((M, lanes), dtype)
        lane_sum = T.alloc_buffer((M, lanes), dtype)
        row_max = T.alloc_buffer((M,), dtype)
        row_sum = T.alloc_buffer((M,), dtype)
        for i, k0, l in T.grid(M, chunks, lanes):
            with T.block("lane_max_sum"):
                vi, vk0, vl = T.axis.remap("SRS", [i, k0, l])
                with T.init():
                    lane_max[vi, vl] = lowest
                    lane_sum[vi, vl] = 0.0
                lane_sum[vi, vl] = lane_sum[vi, vl] * T.exp(
                    lane_max[vi, vl] - T.max(lane_max[vi, vl], A[vi, vk0 * lanes + vl])) + T.exp(
                    A[vi, vk0 * lanes + vl] - T.max(lane_max[vi, vl], A[vi, vk0 * lanes + vl]))
                lane_max[vi, vl] = T.max(lane_max[vi, vl], A[vi, vk0 * lanes + vl])
        for i1, l1 in T.grid(M, lanes):
            with T.block("row_max"):
                vi1, vl1 = T.axis.remap("SR", [i1, l1])
                with T.init():
                    row_max[vi1] = lowest
                row_max[vi1] = T.max(row_max[vi1], lane_max[vi1, vl1])
        for i2, l2 in T.grid(M, lanes):
            with T.block("row_sum"):
                vi2, vl2 = T.axis.remap("SR", [i2, l2])
                with T.init():
                    row_sum[vi2] = 0.0
                row_sum[vi2] = row_sum[vi2] + lane_sum[vi2, vl2] * T.exp(
                    lane_max[vi2, vl2] - row_max[vi2])
        for i3, j3 in T.grid(M, N):
            with T.block("T_softmax_norm"):
                vi3, vj3 = T.axis.remap("SS", [i3, j3])
                T_softmax_norm[vi3, vj3] = T.exp(A[vi3, vj3] - row_max[vi3]) / row_sum[vi3]

    return online_softmax_lanes


# --- the schedules ------------------------------------------------------------------------


def fuse_rows(sch: Schedule, consumer: str, producers: list[str]) -> None:
    """Move each producer block into ``consumer``'s row loop and make its outputs ``local``.

    ``producers`` are listed in the order they must run (the first is computed first);
    ``compute_at`` puts a block at the start of the loop body, so they are moved last to
    first.
    """
    row_loop = sch.get_loops(sch.get_block(consumer))[0]
    for name in reversed(producers):
        sch.compute_at(sch.get_block(name), row_loop)
    for name in producers:
        written = _block_named(sch.mod, name).writes
        for index in range(len(written)):
            sch.set_scope(sch.get_block(name), index, "local")


def _block_named(func: PrimFunc, name: str) -> Block:
    return next(block for block in find_blocks(func) if block.name == name)


def vectorize_row_reduction(sch: Schedule, block: str, lanes: int = LANES) -> None:
    """Split ``block``'s reduction loop by ``lanes``, rfactor the inner part, vectorize it.

    The ``_rf`` block then keeps ``lanes`` partial results in a local buffer; each iteration
    of the outer reduction loop updates all of them with one vector instruction. The final
    block reduces the ``lanes`` partials. Both inits are decomposed out of their loops so no
    ``if k == 0`` test stays inside the vectorized loop.
    """
    blk = sch.get_block(block)
    reduce_loop = sch.get_loops(blk)[-1]
    _, inner = sch.split(reduce_loop, factors=[None, lanes])
    rf = sch.rfactor(inner, factor_axis=0)
    sch.set_scope(rf, 0, "local")
    sch.decompose_reduction(rf, sch.get_loops(rf)[1])
    sch.vectorize(sch.get_loops(rf)[-1])
    sch.decompose_reduction(blk, sch.get_loops(blk)[1])


def fused_softmax_schedule(M: int, N: int, *, parallel: bool = True, vectorize: bool = True,
                           rfactor: bool = True, dtype: str = "float32") -> Schedule:
    """``ops.softmax`` fused into one pass per row (steps 2 and 3 of the walk-through).

    Parameters
    ----------
    M, N : int
        Rows and row length. With ``rfactor``, ``N`` must be a multiple of ``LANES``.
    parallel : bool
        Run the row loop in parallel.
    vectorize : bool
        Vectorize the normalise loop, and (with ``rfactor``) the partial reductions.
    rfactor : bool
        Factor each row reduction into ``LANES`` partial results (see
        ``vectorize_row_reduction``). Without it the reductions are plain serial loops with
        their init decomposed out; LLVM leaves those scalar (``kernel.vectorization_report()``
        shows it), which is why step 3 uses ``rfactor``.

    Example
    -------
    >>> sch = fused_softmax_schedule(4, 32)
    >>> print(sch.trace)  # doctest: +ELLIPSIS
    b0 = sch.get_block("T_softmax_norm")
    ...
    """
    sch = Schedule(softmax(M, N, dtype))
    fuse_rows(sch, "T_softmax_norm", ["T_softmax_maxelem", "T_softmax_expsum"])
    if vectorize and rfactor:
        vectorize_row_reduction(sch, "T_softmax_maxelem")
        vectorize_row_reduction(sch, "T_softmax_expsum")
    elif vectorize:
        for name in ("T_softmax_maxelem", "T_softmax_expsum"):
            blk = sch.get_block(name)
            sch.decompose_reduction(blk, sch.get_loops(blk)[1])
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    if parallel:
        sch.parallel(row)
    if vectorize:
        sch.vectorize(col)
    return sch


def online_softmax_schedule(M: int, N: int, *, parallel: bool = True, vectorize: bool = True,
                            dtype: str = "float32") -> Schedule:
    """``online_softmax`` fused into one pass per row, the row loop parallel.

    The online block stores two buffers per update, which ``rfactor`` does not accept
    (``MultipleStoresError``), so its reduction stays a serial loop; the normalise loop is
    vectorized.

    Example
    -------
    >>> sch = online_softmax_schedule(4, 32)
    >>> [b.name for b in find_blocks(sch.mod)]
    ['online_max_sum_init', 'online_max_sum', 'T_softmax_norm']
    """
    sch = Schedule(online_softmax(M, N, dtype))
    fuse_rows(sch, "T_softmax_norm", ["online_max_sum"])
    blk = sch.get_block("online_max_sum")
    sch.decompose_reduction(blk, sch.get_loops(blk)[1])
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    if parallel:
        sch.parallel(row)
    if vectorize:
        sch.vectorize(col)
    return sch


def online_softmax_lanes_schedule(M: int, N: int, lanes: int = ONLINE_LANES, *,
                                  parallel: bool = True, vectorize: bool = True,
                                  dtype: str = "float32") -> Schedule:
    """``online_softmax_lanes`` fused into one pass per row, scheduled like step 3.

    The lane block and the two combine blocks are computed at the row loop of
    ``T_softmax_norm`` with ``local`` buffers (``lanes`` running maxima and sums per row,
    one value each for the row's max and sum), every init is decomposed out of its
    reduction loop, the row loop is parallel and the lane loop and the normalise loop are
    vectorized. The combine loops (``lanes`` iterations per row) stay serial.

    Example
    -------
    >>> sch = online_softmax_lanes_schedule(4, 32, lanes=16)
    >>> [b.name for b in find_blocks(sch.mod)]  # doctest: +NORMALIZE_WHITESPACE
    ['lane_max_sum_init', 'lane_max_sum', 'row_max_init', 'row_max', 'row_sum_init',
     'row_sum', 'T_softmax_norm']
    """
    producers = ["lane_max_sum", "row_max", "row_sum"]
    sch = Schedule(online_softmax_lanes(M, N, lanes, dtype))
    fuse_rows(sch, "T_softmax_norm", producers)
    for name in producers:
        blk = sch.get_block(name)
        sch.decompose_reduction(blk, sch.get_loops(blk)[1])
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    if parallel:
        sch.parallel(row)
    if vectorize:
        sch.vectorize(sch.get_loops(sch.get_block("lane_max_sum"))[-1])
        sch.vectorize(col)
    return sch


# --- the walk-through ---------------------------------------------------------------------

_THREE_PASSES = """\
Softmax as TVM's topi writes it: three blocks, each its own loop nest over the whole input.
`T_softmax_maxelem` reads `A` to find each row's max, `T_softmax_expsum` reads `A` again to
sum `exp(x - max)`, and `T_softmax_norm` reads `A` a third time to write
`exp(x - max) / sum`. The row vectors `T_softmax_maxelem` and `T_softmax_expsum` are global
buffers. When `A` is larger than the cache, each pass streams it from DRAM: three reads of
`A` and one write of the output. Subtracting the max keeps `exp` from overflowing."""

_FUSED = """\
`compute_at` moves the max and exp-sum blocks into the row loop of the normalise block, so
each row is reduced, summed and normalised while it is still in cache (a 4096-float row is
16 KiB: it stays in L1). Region inference narrows each moved block to the one row its
consumer needs. `set_scope(..., "local")` then turns the two row vectors into one element per
row (a register or stack slot): they no longer touch global memory. One pass over memory
instead of three: `A` is read from DRAM once. The loads and stores the kernel *executes* do
not change: each row is still read three times, from cache."""

_VECTORIZED = f"""\
The row loop becomes `parallel` (rows are independent) and the normalise loop `vectorized`.
The two reductions are the interesting part: LLVM leaves a reduction into one scalar
accumulator scalar here (Numba's `max` and the float32 `exp` inside a sum defeat its
reduction vectorizer; see `kernel.vectorization_report()`). `rfactor` rewrites the
algebra instead: each row reduction is split by {LANES}, the inner {LANES} iterations become a
spatial axis of a local `_rf` buffer of {LANES} partial results, one vector register, and
every step of the outer reduction loop updates all {LANES} lanes at once: an elementwise
`max` or `+ exp(...)` that LLVM vectorizes. A final block reduces the {LANES} partials.
`decompose_reduction` moves each init out of its loop so no `if k == 0` test remains in the
vectorized loop. The float32 `exp` is the backend's polynomial `fast_exp_f32` (build option
`fast_exp=True`, the default), which vectorizes where libm's `exp` cannot."""

_ONLINE = """\
The online softmax (Milakov and Gimelshein, 2018) is **a new function, not a schedule**: no
primitive merges two reductions into one, because the merge needs an algebraic identity.
One reduction `online_max_sum` keeps, per row, the running max `m` and the running sum `s`
of `exp(x - m)`; when an element raises the max to `m' = max(m, x)`, the old sum is
rescaled: `s' = s * exp(m - m') + exp(x - m')`. It is then fused exactly like step 2
(`compute_at` into the normalise row loop, both row buffers `local`) and the row loop made
parallel. Each row is now read twice instead of three times: executed loads drop by a
third, DRAM traffic stays at one pass. The price: two `exp` per element in the reduction,
and the block stores two buffers, which `rfactor` does not accept, so this reduction stays
a scalar loop on the CPU. On a GPU, where one thread block owns a row, it is the form
FlashAttention builds on."""

_ONLINE_LANES = f"""\
**A new function again, not a schedule**: `rfactor` refuses the online block (two stores),
so the lanes are written into the algorithm by hand. Each row is read in chunks of
{ONLINE_LANES}; lane `l` runs its own online reduction over the elements `l, l + {ONLINE_LANES},
l + {2 * ONLINE_LANES}, ...`, keeping a running max `m[i, l]` and a rescaled sum `d[i, l]`
(block `lane_max_sum`, the update of step 4). Two small blocks combine the lanes:
`row_max = max_l m[i, l]` and `row_sum = sum_l d[i, l] * exp(m[i, l] - row_max)` (each
lane's sum rescaled to the row max), and `T_softmax_norm` is unchanged. It is scheduled
like step 3: `compute_at` into the row loop, `local` buffers ({ONLINE_LANES} maxima and
{ONLINE_LANES} sums per row, one register each), inits decomposed, rows `parallel`. The lane
loop is innermost and its iterations update different `(m, d)` pairs, so `vectorize` is
legal and LLVM turns it into {ONLINE_LANES}-wide vector code, the two `exp` included (the
polynomial `fast_exp_f32`). The input is still read twice per element instead of three
times, but each element now costs three `exp` (two in the online update, one in the
normalise loop) against two in step 3. The maxima start at the lowest finite float32
instead of `-inf`: the kernels compile with `fastmath`, which lets LLVM assume that no value
is infinite."""


def softmax_lowering_steps(M: int, N: int, dtype: str = "float32") -> list[LoweringStep]:
    """The softmax lowering walk-through (see the module docstring), for an ``(M, N)`` input.

    ``N`` must be a multiple of ``LANES`` (16) for the vectorized step and of
    ``ONLINE_LANES`` (16) for the online softmax across lanes.

    Example
    -------
    >>> steps = softmax_lowering_steps(4, 32)
    >>> print(steps[1].trace.splitlines()[0])
    b0 = sch.get_block("T_softmax_norm")
    """
    if N % LANES or N % ONLINE_LANES:
        lanes = math.lcm(LANES, ONLINE_LANES)
        raise ValueError(f"softmax_lowering_steps: N={N} must be a multiple of {lanes} "
                         "(the vectorized steps split each row into that many lanes)")
    fused = fused_softmax_schedule(M, N, parallel=False, vectorize=False, dtype=dtype)
    vectorized = fused_softmax_schedule(M, N, dtype=dtype)
    online = online_softmax_schedule(M, N, dtype=dtype)
    lanes = online_softmax_lanes_schedule(M, N, ONLINE_LANES, dtype=dtype)
    return [
        LoweringStep("1. three passes", _THREE_PASSES, softmax(M, N, dtype)),
        LoweringStep("2. fused (compute_at)", _FUSED, fused.mod, str(fused.trace)),
        LoweringStep("3. fused, parallel, vectorized", _VECTORIZED, vectorized.mod,
                     str(vectorized.trace)),
        LoweringStep("4. online softmax, fused", _ONLINE, online.mod, str(online.trace)),
        LoweringStep("5. online softmax across lanes", _ONLINE_LANES, lanes.mod,
                     str(lanes.trace)),
    ]


def fused_layernorm_schedule(M: int, N: int, *, lanes: int = 64, eps: float = 1e-5,
                             dtype: str = "float32") -> Schedule:
    """``ops.layernorm`` fused like softmax step 3: one parallel pass per row.

    The mean and variance blocks are computed at the row loop of ``T_layer_norm`` with
    ``local`` row values, each reduction rfactor-ed into ``lanes`` partial sums that LLVM
    vectorizes, and the normalise loop vectorized. ``lanes`` defaults to 64, not 16: with a
    16-iteration inner loop LLVM unrolls it fully and then leaves the squared-deviation sum
    scalar; a 64-iteration loop goes through its loop vectorizer (16 lanes, 4 interleaved).

    Example
    -------
    >>> sch = fused_layernorm_schedule(4, 128)
    >>> [b.name for b in find_blocks(sch.mod)][-1]
    'T_layer_norm'
    """
    from workbench.ops.nn import layernorm

    if N % lanes:
        raise ValueError(f"fused_layernorm_schedule: N={N} must be a multiple of lanes={lanes}")
    sch = Schedule(layernorm(M, N, eps, dtype))
    fuse_rows(sch, "T_layer_norm", ["mean_sum", "var_sum"])
    vectorize_row_reduction(sch, "mean_sum", lanes)
    vectorize_row_reduction(sch, "var_sum", lanes)
    row, col = sch.get_loops(sch.get_block("T_layer_norm"))
    sch.parallel(row)
    sch.vectorize(col)
    return sch
