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
   by the vector width (16 float32 lanes on AVX-512) and ``rfactor``-ed into that many partial
   results (a vector register) that LLVM vectorizes, then a final reduction of the lanes; the
   normalise loop is vectorized;
4. **online softmax, fused**: a new function (an algebraic rewrite, not a schedule) whose
   single reduction keeps a running max and a sum rescaled whenever the max grows
   (Milakov and Gimelshein, 2018), fused into the row loop the same way: the input is read
   twice per row instead of three times;
5. **online softmax across lanes**: a second rewrite (again a new function, not a schedule)
   that runs the online reduction independently in one vector register of lanes per row (lane
   ``l`` sees elements ``l, l + L, l + 2L, ...``), combines the lanes' maxima and rescaled
   sums, and is scheduled like step 3: the lane loop is innermost, independent, and
   vectorized, so the online reduction runs on vectors instead of a scalar loop.

Every step computes what ``ops.softmax`` computes (``tests/recipes/test_softmax_lowering.py``
checks each on the numpy and cpu targets). The schedules are the recipes of
``workbench.recipes.softmax``; the lane counts are the machine's vector width.
``workbench.viz.steps`` tabulates their bytes, FLOPs and measured times.

Example
-------
>>> steps = softmax_lowering_steps(4, 32)
>>> [s.title for s in steps]  # doctest: +NORMALIZE_WHITESPACE
['1. three passes', '2. fused (compute_at)', '3. fused, parallel, vectorized',
 '4. online softmax, fused', '5. online softmax across lanes']
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.backends.common.target import Target
from workbench.backends.cpu.cpu_facts import target_reduction_lanes
from workbench.ir.function import PrimFunc
from workbench.ops.nn import softmax as ops_softmax
from workbench.ops.softmax_online import online_softmax, online_softmax_lanes
from workbench.recipes import softmax


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


def _vectorized(lanes: int) -> str:
    return f"""\
The row loop becomes `parallel` (rows are independent) and the normalise loop `vectorized`.
The two reductions are the interesting part: LLVM leaves a reduction into one scalar
accumulator scalar here (Numba's `max` and the float32 `exp` inside a sum defeat its
reduction vectorizer; see `kernel.vectorization_report()`). `rfactor` rewrites the
algebra instead: each row reduction is split by {lanes}, the inner {lanes} iterations become a
spatial axis of a local `_rf` buffer of {lanes} partial results, one vector register, and
every step of the outer reduction loop updates all {lanes} lanes at once: an elementwise
`max` or `+ exp(...)` that LLVM vectorizes. A final block reduces the {lanes} partials.
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

def _online_lanes(lanes: int) -> str:
    return f"""\
**A new function again, not a schedule**: `rfactor` refuses the online block (two stores),
so the lanes are written into the algorithm by hand. Each row is read in chunks of
{lanes}; lane `l` runs its own online reduction over the elements `l, l + {lanes},
l + {2 * lanes}, ...`, keeping a running max `m[i, l]` and a rescaled sum `d[i, l]`
(block `lane_max_sum`, the update of step 4). Two small blocks combine the lanes:
`row_max = max_l m[i, l]` and `row_sum = sum_l d[i, l] * exp(m[i, l] - row_max)` (each
lane's sum rescaled to the row max), and `T_softmax_norm` is unchanged. It is scheduled
like step 3: `compute_at` into the row loop, `local` buffers ({lanes} maxima and
{lanes} sums per row, one register each), inits decomposed, rows `parallel`. The lane
loop is innermost and its iterations update different `(m, d)` pairs, so `vectorize` is
legal and LLVM turns it into {lanes}-wide vector code, the two `exp` included (the
polynomial `fast_exp_f32`). The input is still read twice per element instead of three
times, but each element now costs three `exp` (two in the online update, one in the
normalise loop) against two in step 3. The maxima start at the lowest finite float32
instead of `-inf`: the kernels compile with `fastmath`, which lets LLVM assume that no value
is infinite."""


def softmax_lowering_steps(
    M: int,
    N: int,
    dtype: str = "float32",
    *,
    lanes: int | None = None,
    target: Target | str = "cpu",
) -> list[LoweringStep]:
    """The softmax lowering walk-through (see the module docstring), for an ``(M, N)`` input.

    ``N`` must be a multiple of ``lanes`` (default
    ``cpu_facts.target_reduction_lanes(target, dtype)``: 16 float32 on AVX-512 and AVX2)
    for the vectorized steps.

    Example
    -------
    >>> steps = softmax_lowering_steps(4, 32)
    >>> print(steps[1].trace.splitlines()[0])
    b0 = sch.get_block("T_softmax_norm")
    """
    lanes = target_reduction_lanes(target, dtype) if lanes is None else lanes
    if N % lanes:
        raise ValueError(f"softmax_lowering_steps: N={N} must be a multiple of {lanes} "
                         "(the vectorized steps split each row into that many lanes)")
    fused = softmax.fused_cpu(ops_softmax(M, N, dtype), parallel=False, vectorize=False)
    vectorized = softmax.fused_cpu(ops_softmax(M, N, dtype), lanes=lanes)
    online = softmax.online_cpu(online_softmax(M, N, dtype))
    in_lanes = softmax.online_lanes_cpu(online_softmax_lanes(M, N, lanes, dtype))
    return [
        LoweringStep("1. three passes", _THREE_PASSES, ops_softmax(M, N, dtype)),
        LoweringStep("2. fused (compute_at)", _FUSED, fused.mod, str(fused.trace)),
        LoweringStep("3. fused, parallel, vectorized", _vectorized(lanes), vectorized.mod,
                     str(vectorized.trace)),
        LoweringStep("4. online softmax, fused", _ONLINE, online.mod, str(online.trace)),
        LoweringStep("5. online softmax across lanes", _online_lanes(lanes), in_lanes.mod,
                     str(in_lanes.trace)),
    ]
