"""Conv2d recipes for the ``cuda`` target: the direct convolution (one thread per output) and
the tiled implicit GEMM (``tiled``: the graph's default for ``conv2d_nchw``).

``tiled`` treats the convolution as a matrix product: output pixels ``(y, x)`` times output
channels ``k``, reduced over ``(c, ry, rx)``. A CUDA block computes a tile of
``k_tile`` channels x ``y_tile x x_tile`` pixels of one image; per step of ``c_tile``
input channels it stages the padded input window (the ``pad_temp`` block itself, computed
into shared memory at the step: the zero border is the block's own ``if_then_else``, so
no separate padded tensor is ever written) and the weights of the step in shared memory,
both fetched cooperatively by all the block's threads, and each thread accumulates a
register tile of ``per_k`` channels x ``per_x`` pixels of a row (``cache_write`` to
``local``, written back once, the elementwise epilogue of a graph kernel inlined into the
write-back). Tiles that do not divide the output leave guards (predicated edge tiles);
``conv_tiling`` chooses ones that divide where it can.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("conv2d_nchw", "direct", "cuda")(ops.conv2d_nchw(1, 2, 6, 6, 2, 3, 3))
>>> sch = recipes.get("conv2d_nchw", "tiled", "cuda")(ops.conv2d_nchw(1, 3, 7, 7, 8, 3, 3))
>>> "pad_temp = cuda.shared" in __import__("workbench").backends.build(sch, "cuda").source
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from workbench.backends.cuda.numba_cuda_printer import FULL_REGISTER_THREADS
from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.ir.arith import evaluate
from workbench.recipes.registry import register
from workbench.schedule import Schedule


def _conv_head(func: PrimFunc, block: str, recipe: str, op: str) -> list[str]:
    """The blocks up to ``block``: ``[block]`` or ``["pad_temp", block]`` as ``op`` builds
    them (an epilogue may follow); ``ValueError`` naming ``recipe`` for any other kernel."""
    names = [b.name for b in find_blocks(func)]
    head = names[:names.index(block) + 1] if block in names else []
    if head not in ([block], ["pad_temp", block]):
        raise ValueError(f"{recipe} needs the blocks ('pad_temp', '{block}') of {op} (an "
                         f"epilogue may follow); got {names}")
    return head


@register("conv2d_nchw", "direct", "cuda")
def direct(func: PrimFunc, threads: int = 32) -> Schedule:
    """Padding inlined; one thread per output element; the reduction in each thread."""
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    for producer in blocks[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    n, k, y, x, *_ = sch.get_loops(out)
    fused = sch.fuse(n, k, y, x)
    bx, tx = sch.split(fused, factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch


@dataclass(frozen=True)
class ConvTiling:
    """The tile of ``tiled``: threads ``k_threads x y_threads x x_threads`` per block, each
    ``per_k`` channels x ``per_x`` pixels of a row; ``c_tile`` input channels per step.
    ``n_threads`` (``register_tiled`` only): images a block takes, a thread each (the batch
    folded into the block's pixels)."""

    k_threads: int
    per_k: int
    y_threads: int
    x_threads: int
    per_x: int
    c_tile: int
    n_threads: int = 1

    @property
    def threads(self) -> int:
        return self.k_threads * self.n_threads * self.y_threads * self.x_threads


def _divisor(n: int, options) -> int:
    """The first of ``options`` that divides ``n`` (1 when none does)."""
    return next((o for o in options if n % o == 0), 1)


MIN_THREADS = 40_000
"""Threads a convolution's grid asks for at least (about 300 per multiprocessor of an H200):
on the H200, resnet18's 7x7 and 14x14 layers at batch 16 took 1.0-1.7 ms with 14K-29K
threads of 28 outputs each (3.5-7 warps per multiprocessor: latency-bound)."""

MAX_BLOCK_THREADS = FULL_REGISTER_THREADS  # 256
"""The most threads ``conv_tiling`` gives a block: a multiprocessor's 65,536 registers hold
256 threads at the 255 registers a thread may use, so a block of 256 launches whatever
ptxas allocates. Larger blocks (448 threads for resnet18's 7x7 layers) failed on the H200
with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES inside resnet18 (the simulator checks no register
count)."""


def conv_tiling(K: int, C: int, P: int, Q: int, N: int = 1) -> ConvTiling:
    """The default tile for ``K`` output channels, ``C`` input channels, a ``P x Q`` output,
    ``N`` images: a block of 64 channels (fewer when K is small), each thread 4 of them;
    along a row ``x_threads x per_x`` pixels, the first of 8, 14, 7, 4, 2 as
    ``(x_threads, per_x)`` that divides ``Q``; ``y_threads`` rows, the first of 8, 7, 4, 2
    that divides ``P`` and keeps the block near 64-128 pixels. Where no candidate divides,
    the largest tile is taken and its edge tiles are predicated. ``c_tile``: ``C`` itself
    below 8, else the first of 8, 4, 2, 1 that divides it. When the grid would have fewer
    than ``MIN_THREADS`` threads (small images), each thread takes fewer channels
    (``per_k`` halved, ``k_threads`` doubled up to ``MAX_BLOCK_THREADS`` per block).

    >>> conv_tiling(64, 64, 56, 56, N=16)
    ConvTiling(k_threads=16, per_k=4, y_threads=8, x_threads=2, per_x=4, c_tile=8, n_threads=1)
    >>> conv_tiling(512, 512, 7, 7, N=16)
    ConvTiling(k_threads=32, per_k=2, y_threads=7, x_threads=1, per_x=7, c_tile=8, n_threads=1)
    >>> conv_tiling(128, 64, 28, 28, N=16)
    ConvTiling(k_threads=16, per_k=4, y_threads=7, x_threads=2, per_x=7, c_tile=8, n_threads=1)
    >>> conv_tiling(64, 3, 112, 112).c_tile, conv_tiling(5, 3, 9, 9)
    (3, ConvTiling(k_threads=8, per_k=1, y_threads=8, x_threads=2, per_x=4, c_tile=3, n_threads=1))
    """
    per_k = 4 if K >= 4 else 1
    k_threads = min(16, -(-K // per_k))
    k_threads = 1 << (k_threads - 1).bit_length()
    x_threads, per_x = next(
        (c for c in ((2, 4), (2, 7), (1, 7), (1, 4), (2, 2), (1, 2)) if Q % (c[0] * c[1]) == 0),
        (2 if Q > 4 else 1, min(4, Q)))
    most = max(1, 128 // (x_threads * per_x))
    y_threads = next((o for o in (8, 7, 4, 2) if o <= most and P % o == 0), min(8, P, most))
    c_tile = C if C <= 8 else _divisor(C, (8, 4, 2, 1))

    def grid_threads(k_threads: int, per_k: int) -> int:
        pixels = -(-P // y_threads) * y_threads * -(-Q // (x_threads * per_x)) * x_threads
        return N * -(-K // (k_threads * per_k)) * k_threads * pixels

    while (per_k > 1 and grid_threads(k_threads, per_k) < MIN_THREADS
           and 2 * k_threads * y_threads * x_threads <= MAX_BLOCK_THREADS):
        k_threads, per_k = 2 * k_threads, per_k // 2
    return ConvTiling(k_threads, per_k, y_threads, x_threads, per_x, c_tile)


def _cooperative(sch: Schedule, stage, outer: int, threads: tuple[int, int]) -> None:
    """Spread the copy loops of shared ``stage`` (those below its first ``outer`` loops)
    over the block's ``threads`` (threadIdx.y, threadIdx.x), a serial loop outside."""
    fused = sch.fuse(*sch.get_loops(stage)[outer:])
    _, ty, tx = sch.split(fused, factors=[None, *threads])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")


@register("conv2d_nchw", "tiled", "cuda")
def tiled(func: PrimFunc, tiling: ConvTiling | None = None, unroll: bool = True,
          block: str = "conv2d_nchw") -> Schedule:
    """The implicit-GEMM convolution of the module docstring.

    Loop nest: ``(n, k_0) blockIdx.y / (y_0, x_0) blockIdx.x / k_1 threadIdx.y /
    (y_1, x_1) threadIdx.x / c_0`` [pad tile and weight tile to shared, barrier]
    ``c_1 / ry / rx / k_2 / x_2``. ``tiling`` defaults to ``conv_tiling`` of the shape;
    ``unroll`` unrolls ``ry`` and ``rx`` in the generated source (the kernel window: the
    inputs of neighbouring ``rx`` steps are then the same registers). The init is hoisted
    out of the reduction (``decompose_reduction``).
    """
    head = _conv_head(func, block, "tiled conv2d", "ops.conv2d_nchw")
    sch = Schedule(func)
    conv = sch.get_block(block)
    n, k, y, x, rc, ry, rx = sch.get_loops(conv)
    extent = {name: int(sch.get(lp).extent.value) for name, lp in
              (("K", k), ("C", rc), ("P", y), ("Q", x))}
    t = tiling or conv_tiling(extent["K"], extent["C"], extent["P"], extent["Q"],
                              int(sch.get(n).extent.value))
    if t.n_threads != 1:
        raise ValueError(f"tiled conv2d takes one image a block; got n_threads={t.n_threads} "
                         "(register_tiled folds the batch)")
    k0, k1, k2 = sch.split(k, factors=[None, t.k_threads, t.per_k])
    y0, y1 = sch.split(y, factors=[None, t.y_threads])
    x0, x1, x2 = sch.split(x, factors=[None, t.x_threads, t.per_x])
    c0, c1 = sch.split(rc, factors=[None, t.c_tile])
    sch.reorder(n, k0, y0, x0, k1, y1, x1, c0, c1, ry, rx, k2, x2)
    sch.bind(sch.fuse(n, k0), "blockIdx.y")
    sch.bind(sch.fuse(y0, x0), "blockIdx.x")
    sch.bind(k1, "threadIdx.y")
    pixel = sch.fuse(y1, x1)
    sch.bind(pixel, "threadIdx.x")
    threads = (t.k_threads, t.y_threads * t.x_threads)
    # the thread's register tile, written back once
    sch.reverse_compute_at(sch.cache_write(conv, 0, "local"), pixel)
    # the padded input window of the step: the pad block itself, into shared memory
    if len(head) == 2:
        pad = sch.get_block("pad_temp")
        sch.set_scope(pad, 0, "shared")
        sch.compute_at(pad, c0)
        _cooperative(sch, pad, 5, threads)
    weights = sch.cache_read(conv, 2, "shared")  # reads: conv_local, pad_temp, weight
    sch.compute_at(weights, c0)
    _cooperative(sch, weights, 5, threads)
    sch.decompose_reduction(conv, c0)
    if unroll:
        for loop in (ry, rx):
            sch.unroll(loop)
            sch.annotate(loop, "pragma_unroll_explicit", 1)
    return sch


def depthwise_tiling(P: int, Q: int) -> tuple[int, int, int]:
    """``(y_threads, x_threads, per_x)`` of ``depthwise_tiled`` for a ``P x Q`` output: a
    row of up to 32 threads, each 1 (or 2, 4 on wide rows) pixels, and up to 8 rows: up to
    256 threads, tiles that divide ``Q`` where one of the candidates does.

    >>> depthwise_tiling(112, 112), depthwise_tiling(7, 7), depthwise_tiling(9, 9)
    ((8, 28, 4), (7, 7, 1), (8, 9, 1))
    """
    x_threads, per_x = next(
        (c for c in ((32, 4), (28, 4), (32, 2), (28, 2), (32, 1), (28, 1), (16, 1), (14, 1))
         if Q % (c[0] * c[1]) == 0), (min(32, Q), 1))
    y_threads = next((o for o in (8, 7, 4, 2) if P % o == 0), min(8, P))
    return y_threads, x_threads, per_x


@register("depthwise_conv2d_nchw", "tiled", "cuda")
def depthwise_tiled(func: PrimFunc, tiling: tuple[int, int, int] | None = None,
                    block: str = "depthwise_conv2d_nchw") -> Schedule:
    """Depthwise convolution (``ops.depthwise_conv2d_nchw``): a block per image, channel
    and tile of ``y_threads`` rows x ``x_threads * per_x`` columns; the channel's padded
    input window computed straight into shared memory by the ``pad_temp`` block (each input
    read once per tile instead of once per window position), each thread ``per_x``
    consecutive pixels of a row in registers, the ``ry, rx`` window unrolled; the weights
    (``R x S`` per channel, the same for the whole block) read from global memory.
    ``tiling`` defaults to ``depthwise_tiling``; edges that do not divide are guarded.

    Example
    -------
    >>> from workbench import ops
    >>> sch = depthwise_tiled(ops.depthwise_conv2d_nchw(1, 2, 9, 9, 3, 3))
    """
    head = _conv_head(func, block, "tiled depthwise conv2d", "ops.depthwise_conv2d_nchw")
    sch = Schedule(func)
    conv = sch.get_block(block)
    n, c, y, x, ry, rx = sch.get_loops(conv)
    P, Q = (int(sch.get(lp).extent.value) for lp in (y, x))
    y_threads, x_threads, per_x = tiling or depthwise_tiling(P, Q)
    y0, y1 = sch.split(y, factors=[None, y_threads])
    x0, x1, x2 = sch.split(x, factors=[None, x_threads, per_x])
    sch.reorder(n, c, y0, x0, y1, x1, ry, rx, x2)
    sch.bind(sch.fuse(n, c), "blockIdx.y")
    tile = sch.fuse(y0, x0)
    sch.bind(tile, "blockIdx.x")
    pixel = sch.fuse(y1, x1)
    sch.bind(pixel, "threadIdx.x")
    sch.reverse_compute_at(sch.cache_write(conv, 0, "local"), pixel)
    if len(head) == 2:
        pad = sch.get_block("pad_temp")
        sch.set_scope(pad, 0, "shared")
        sch.compute_at(pad, tile)
        fused = sch.fuse(*sch.get_loops(pad)[2:])
        _, tx = sch.split(fused, factors=[None, y_threads * x_threads])
        sch.bind(tx, "threadIdx.x")
    sch.decompose_reduction(conv, ry)
    for loop in (ry, rx):
        sch.unroll(loop)
        sch.annotate(loop, "pragma_unroll_explicit", 1)
    return sch


# ---------------------------------------------------------------------------------------
# register_tiled: the implicit GEMM with a larger register tile (helper conv, issue 20)
# ---------------------------------------------------------------------------------------

REGISTER_MIN_THREADS = 20_000
"""Threads ``register_tiling`` asks a grid for at least (about 150 per multiprocessor of an
H200: each thread of 32-64 accumulators has that many independent FMAs in flight, so
fewer warps hide the latency than ``tiled``'s 16)."""

SHARED_BYTES = 48 * 1024
"""Static shared memory a block may use (both buffers of a double-buffered stage)."""


DOUBLE_BUFFER_MAX_TILE = 32
"""``register_tiled`` double-buffers by default where a thread's tile has at most this many
outputs. ptxas (sm_90): the 8 x 8 tile at resnet18's 56^2 layer takes 255 registers
double-buffered (one 224-thread block a multiprocessor) against 129 single-buffered (two
blocks: one loads while the other computes); the 4 x 7 and 2 x 7 tiles of its 14^2 and
7^2 layers take 121 and 70 (128 and 56 single), where one or two blocks a multiprocessor
wait on each step's global loads."""


def register_tiling(K: int, C: int, P: int, Q: int, N: int = 1) -> ConvTiling:
    """The default tile of ``register_tiled`` for ``K`` output channels, ``C`` input
    channels, a ``P x Q`` output and ``N`` images: each thread ``per_k = 8`` channels
    (fewer when K is small) x ``per_x`` pixels of a row (the first of 8, 7, 4, 2 that
    divides ``Q``), ``k_threads`` of them for 64 channels a block; ``x_threads`` threads
    along a row (the largest divisor of ``Q / per_x`` up to 16) and ``y_threads`` rows
    (the first of 8, 7, 4, 2, 1 dividing ``P`` that keeps the block at most
    ``MAX_BLOCK_THREADS``). While the grid has fewer than ``REGISTER_MIN_THREADS``
    threads (small images), ``per_k`` is halved: with ``k_threads`` doubled while the
    block stays within ``MAX_BLOCK_THREADS``, else with half the channels a block.
    ``c_tile`` (input channels a step) as ``conv_tiling``'s; ``register_tiled`` halves it
    where the shared tiles would not fit.

    >>> register_tiling(64, 64, 56, 56, N=16)
    ConvTiling(k_threads=8, per_k=8, y_threads=4, x_threads=7, per_x=8, c_tile=8, n_threads=1)
    >>> register_tiling(64, 3, 112, 112, N=16)
    ConvTiling(k_threads=8, per_k=8, y_threads=2, x_threads=14, per_x=8, c_tile=3, n_threads=1)
    >>> register_tiling(512, 512, 7, 7, N=16)  # the images folded (``fold_images``)
    ConvTiling(k_threads=8, per_k=2, y_threads=7, x_threads=1, per_x=7, c_tile=8, n_threads=4)
    """
    per_k = 8 if K >= 64 else 4 if K >= 4 else 1
    k_threads = 1 << (min(8, -(-K // per_k)) - 1).bit_length()
    per_x = next((p for p in (8, 7, 4, 2) if Q % p == 0), min(4, Q))
    row = -(-Q // per_x)
    x_threads = next(t for t in range(min(16, row), 0, -1) if row % t == 0)
    if x_threads < 4 and row > 4:  # no divisor: the whole row up to 16 threads, guarded
        x_threads = min(16, row)
    most = max(1, MAX_BLOCK_THREADS // (k_threads * x_threads))
    y_threads = next((o for o in (8, 7, 4, 2, 1) if o <= most and P % o == 0), 1)
    c_tile = C if C <= 8 else _divisor(C, (8, 4, 2, 1))

    def grid_threads(k_threads: int, per_k: int) -> int:
        pixels = -(-P // y_threads) * y_threads * -(-Q // (x_threads * per_x)) * x_threads
        return N * -(-K // (k_threads * per_k)) * k_threads * pixels

    while per_k > 1 and grid_threads(k_threads, per_k) < REGISTER_MIN_THREADS:
        if 2 * k_threads * y_threads * x_threads <= MAX_BLOCK_THREADS:
            k_threads *= 2
        per_k //= 2
    return fold_images(ConvTiling(k_threads, per_k, y_threads, x_threads, per_x, c_tile), N)


FOLD_PIXEL_THREADS = 7
"""``fold_images`` folds the batch into a block whose pixel threads are this few or fewer
(a 7 x 7 image: one thread a row)."""


def fold_images(t: ConvTiling, N: int, most_pixels: int = FOLD_PIXEL_THREADS) -> ConvTiling:
    """Where a block has ``FOLD_PIXEL_THREADS`` pixel threads or fewer (small images), the
    images of the batch folded into the block up to 28 pixel threads, fewer channel threads
    keeping the block within ``MAX_BLOCK_THREADS`` (``most_pixels``: the pixel threads up
    to which a block folds). On an H100, resnet18's layer4 3x3
    (512 channels, 7 x 7, batch 16): 0.775 ms folded (4 images, 8 x 4 x 7 threads) against
    0.935 ms (32 x 7); at 14 x 14 (14 pixel threads) folding changed nothing (0.495 / 0.493).

    >>> fold_images(ConvTiling(32, 2, 7, 1, 7, 8), 16)
    ConvTiling(k_threads=8, per_k=2, y_threads=7, x_threads=1, per_x=7, c_tile=8, n_threads=4)
    """
    pixels = t.y_threads * t.x_threads
    if pixels > most_pixels or N == 1:
        return t
    images = max(1, min(N, 28 // pixels))
    k_threads = t.k_threads
    while k_threads > 1 and k_threads * images * pixels > MAX_BLOCK_THREADS:
        k_threads //= 2
    return replace(t, k_threads=k_threads, n_threads=images)


def conv_window(func: PrimFunc, block: str = "conv2d_nchw") -> tuple[int, int, int, int]:
    """``(stride_h, dilation_h, stride_w, dilation_w)`` of ``block``, read off its access
    ``pad_temp[n, c, y * sh + ry * dh, x * sw + rx * dw]``.

    >>> from workbench import ops
    >>> conv_window(ops.conv2d_nchw(1, 2, 9, 9, 2, 3, 3, stride=2, dilation=(1, 3)))
    (2, 1, 2, 3)
    """
    conv = next(b for b in find_blocks(func) if b.name == block)
    _, _, vy, vx, _, vry, vrx = (iv.var for iv in conv.iter_vars)
    region = conv.reads[1].region
    zero = {v: 0 for v in (vy, vx, vry, vrx)}
    steps = []
    for dim, pixel, tap in ((2, vy, vry), (3, vx, vrx)):
        base = evaluate(region[dim].min, zero)
        steps += [evaluate(region[dim].min, {**zero, pixel: 1}) - base,
                  evaluate(region[dim].min, {**zero, tap: 1}) - base]
    return tuple(int(s) for s in steps)


def _shared_floats(t: ConvTiling, R: int, S: int, window: tuple[int, int, int, int]) -> int:
    """Floats of ``register_tiled``'s shared tiles (one buffer each): the padded input
    window of ``c_tile`` channels and the weights of 64 channels x ``c_tile x R x S``
    (the allocation of the input window rounds up to the cooperative copy, the weights'
    rows are padded by 4: counted too)."""
    sh, dh, sw, dw = window
    rows = (t.y_threads - 1) * sh + (R - 1) * dh + 1
    cols = (t.x_threads * t.per_x - 1) * sw + (S - 1) * dw + 1
    plane = rows * cols
    threads = t.threads
    copies = -(-t.n_threads * t.c_tile * plane // threads) * threads
    pad = (-(-copies // (t.n_threads * plane))) * plane
    channels = t.k_threads * t.per_k
    row = max(4, -(-(channels - 4) // 32) * 32 + 4)  # storage_align(factor=32, offset=4)
    return t.n_threads * pad + row * t.c_tile * R * S


@register("conv2d_nchw", "register_tiled", "cuda")
def register_tiled(func: PrimFunc, tiling: ConvTiling | None = None,
                   double_buffer: bool | None = None, unroll_ry: bool = False,
                   block: str = "conv2d_nchw") -> Schedule:
    """The implicit GEMM of ``tiled`` with a register tile of ``per_k x per_x`` (8 x 8 at
    resnet's large layers) and the inner loads of a GEMM kernel.

    Loop nest as ``tiled``: ``(n, k_0) blockIdx.y / (y_0, x_0) blockIdx.x / k_1
    threadIdx.y / (y_1, x_1) threadIdx.x / c_0`` [input window and weights to shared]
    ``c_1 / ry`` [the thread's input row into registers] ``rx`` [its ``per_k`` weights
    into registers] ``k_2 / x_2``. What differs:

    * the weights are stored transposed in shared memory (``weight_shared[c, ry, rx, k]``),
      so a thread's ``per_k`` channels are consecutive: with ``per_k`` a multiple of 4
      they come in with ``ld.shared.v4``;
    * per ``(c_1, ry)`` the thread loads the input row its ``per_x`` pixels and ``S``
      taps read (``(per_x - 1) * stride + (S - 1) * dilation + 1`` values) once into
      registers (``cache_read`` to ``local``): with ``rx`` and ``k_2, x_2`` unrolled, each
      step is ``per_k x per_x`` FMAs on ``per_k / 4`` vector loads of weights;
    * ``double_buffer``: both shared stages double-buffered where there are two ``c_0``
      steps and both buffers fit in ``SHARED_BYTES`` (the next step's loads issued before
      this step's FMAs, one barrier a step). ``None``: ``DOUBLE_BUFFER_MAX_TILE``
      decides;
    * ``unroll_ry``: also unroll the ``ry`` loop (``rx`` and the register tile always are);
    * ``c_tile`` halved until the shared tiles (both buffers) fit in ``SHARED_BYTES``;
      at one channel a step that still does not fit, single buffers.

    ``tiling`` defaults to ``register_tiling`` of the shape. The epilogue of a graph kernel
    is inlined into the register tile's write-back (``conv_local``) by the rule.

    Example
    -------
    >>> from workbench import ops
    >>> sch = register_tiled(ops.conv2d_nchw(1, 8, 9, 9, 16, 3, 3))
    """
    head = _conv_head(func, block, "register_tiled conv2d", "ops.conv2d_nchw")
    probe = Schedule(func)
    n, k, y, x, rc, ry, rx = probe.get_loops(probe.get_block(block))
    extent = {name: int(probe.get(lp).extent.value) for name, lp in
              (("N", n), ("K", k), ("C", rc), ("P", y), ("Q", x))}
    t = tiling or register_tiling(extent["K"], extent["C"], extent["P"], extent["Q"],
                                  extent["N"])
    if t.threads > MAX_BLOCK_THREADS:
        raise ValueError(f"register_tiled: {t.threads} threads a block, more than "
                         f"MAX_BLOCK_THREADS={MAX_BLOCK_THREADS} ({t})")
    R, S = (int(probe.get(lp).extent.value) for lp in (ry, rx))
    window = conv_window(func, block)
    if double_buffer is None:
        double_buffer = t.per_k * t.per_x <= DOUBLE_BUFFER_MAX_TILE
    copies = 2 if double_buffer and extent["C"] >= 2 else 1
    while copies * 4 * _shared_floats(t, R, S, window) > SHARED_BYTES and t.c_tile > 1:
        t = replace(t, c_tile=_divisor(t.c_tile, range(t.c_tile // 2, 0, -1)))
    steps = -(-extent["C"] // t.c_tile)
    fits = copies * 4 * _shared_floats(t, R, S, window) <= SHARED_BYTES
    return _register_tiled(func, head, block, t, copies == 2 and fits and steps >= 2,
                           unroll_ry)


def _register_tiled(func: PrimFunc, head: list[str], block: str, t: ConvTiling,
                    double_buffer: bool, unroll_ry: bool) -> Schedule:
    sch = Schedule(func)
    conv = sch.get_block(block)
    n, k, y, x, rc, ry, rx = sch.get_loops(conv)
    n0, n1 = sch.split(n, factors=[None, t.n_threads])
    k0, k1, k2 = sch.split(k, factors=[None, t.k_threads, t.per_k])
    y0, y1 = sch.split(y, factors=[None, t.y_threads])
    x0, x1, x2 = sch.split(x, factors=[None, t.x_threads, t.per_x])
    c0, c1 = sch.split(rc, factors=[None, t.c_tile])
    sch.reorder(n0, k0, y0, x0, k1, n1, y1, x1, c0, c1, ry, rx, k2, x2)
    sch.bind(sch.fuse(n0, k0), "blockIdx.y")
    sch.bind(sch.fuse(y0, x0), "blockIdx.x")
    sch.bind(k1, "threadIdx.y")
    pixel = sch.fuse(n1, y1, x1)
    sch.bind(pixel, "threadIdx.x")
    threads = (t.k_threads, t.n_threads * t.y_threads * t.x_threads)
    sch.reverse_compute_at(sch.cache_write(conv, 0, "local"), pixel)
    stages = []
    if len(head) == 2:
        pad = sch.get_block("pad_temp")
        sch.set_scope(pad, 0, "shared")
        sch.compute_at(pad, c0)
        _cooperative(sch, pad, 5, threads)
        stages.append(pad)
    weights = sch.cache_read(conv, 2, "shared")  # reads: conv_local, pad_temp, weight
    sch.compute_at(weights, c0)
    _cooperative(sch, weights, 5, threads)
    sch.transform_layout(weights, ("write", 0), lambda a, b, c, d: (b, c, d, a))
    # rows of channels padded by 4 floats: the copy's consecutive threads write consecutive
    # (c, ry, rx), a row apart (8 banks, 4-way, instead of one bank, 32-way); 16-byte
    # aligned still for the vector loads
    sch.storage_align(weights, 0, axis=2, factor=32, offset=4)
    stages.append(weights)
    # the thread's input row of the (c_1, ry) step, then its weights of the tap, in registers
    row = sch.cache_read(conv, 1, "local")
    sch.compute_at(row, ry)
    weight_row = sch.cache_read(conv, 2, "local")
    sch.compute_at(weight_row, rx)
    if t.per_k % 4 == 0:
        *_, inner = sch.get_loops(weight_row)
        _, lanes = sch.split(inner, factors=[None, 4])
        sch.vectorize(lanes)
    sch.decompose_reduction(conv, c0)
    for loop in ((ry,) if unroll_ry else ()) + (rx, k2, x2):
        sch.unroll(loop)
        sch.annotate(loop, "pragma_unroll_explicit", 1)
    if double_buffer:
        for stage in stages:
            sch.annotate(stage, "double_buffer_scope", 0)
    return sch
