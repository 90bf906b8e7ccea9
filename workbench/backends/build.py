"""``build``: from a PrimFunc (or a Schedule) to a callable ``Kernel``."""

from __future__ import annotations

import time

from workbench.backends.bounds_checks import add_bounds_checks
from workbench.backends.codegen_python import generate_source
from workbench.backends.kernel import Kernel
from workbench.backends.lower import lower
from workbench.ir import BufferStore, PrimFunc
from workbench.ir.functor import collect
from workbench.ir.verify import verify

TARGETS = ("numpy", "cpu")

CPU_DEFAULTS = {
    "fastmath": True, "fast_exp": True, "boundscheck": False, "promote": True, "debug": False,
}
"""Options of the ``cpu`` target.

fastmath
    Numba/LLVM fast-math flags. On by default: a reduction (``acc = acc + x``) vectorizes
    only when LLVM may reassociate the additions, which changes rounding slightly (compare
    with ``rtol`` ~1e-4 for float32). Turn off for bit-reproducible sequential sums.
fast_exp
    float32 ``exp`` (and ``sigmoid``) use ``runtime.fast_exp_f32``, a vectorizable
    polynomial accurate to < 1e-6 relative, instead of libm's scalar ``expf``. On by
    default: float32 kernels already accept that error, and a loop calling libm stays
    scalar. float64 always uses ``np.exp``.
boundscheck
    Numba's index bounds checks (an ``IndexError`` instead of memory corruption), off by
    default because they block vectorization; turn on to debug a schedule.
promote
    Keep the output tile of a reduction loop in a local array while the loop runs
    (``workbench.backends.promote``): LLVM then holds it in registers instead of loading
    and storing it on every iteration (a 1024 matmul with a 4x64 tile: 62 -> 210 GFLOP/s).
    On by default; turn off to see the difference.
debug
    The bounds-checked debug build (``workbench.backends.bounds_checks``): every access
    that cannot be proven inside its buffer is checked at run time and raises a
    ``KernelBoundsError`` naming the block, the access and the index values. Implies
    ``promote=False`` (a promoted tile would hide the accesses it replaces).
"""

NUMPY_DEFAULTS = {
    "whole_array": True,
    "iteration_order": "program",
    "order_seed": 0,
    "debug": False,
}
"""Options of the ``numpy`` target: ``whole_array=False`` runs every statement as loops;
``iteration_order="reversed"``/``"shuffled"`` (seeded by ``order_seed``) runs parallel and
vectorized loops out of order, to detect races (``workbench.backends.numpy_ref``);
``debug=True`` checks the accesses not proven in bounds (as for ``cpu``; statements with a
check run as loops)."""


def build(func_or_schedule, target: str = "numpy", **options) -> Kernel:
    """Build a PrimFunc (or a Schedule's ``.mod``) into a callable ``Kernel``.

    Parameters
    ----------
    func_or_schedule
        A ``PrimFunc``, or anything with a ``.mod`` PrimFunc attribute (a ``Schedule``).
    target
        ``"numpy"``: the reference executor (any function, numpy whole-array evaluation
        where possible, plain Python loops elsewhere). ``"cpu"``: Python source compiled
        with ``numba.njit`` (see ``CPU_DEFAULTS`` for the options).
    **options
        Target options, part of the kernel cache key: ``fastmath``, ``fast_exp``,
        ``boundscheck``, ``promote`` for ``cpu``; ``whole_array`` for ``numpy``; ``debug``
        for both (a bounds-checked build, see ``CPU_DEFAULTS``).

    Raises
    ------
    IRVerifyError
        When ``func`` is not well formed (``workbench.ir.verify``): checked before any
        code is generated, for every target.

    Returns
    -------
    Kernel
        Call it with one array per parameter; it writes outputs in place.

    Example
    -------
    >>> import numpy as np
    >>> from tests.ir_examples import matmul
    >>> kernel = build(matmul(16, 16, 16), target="cpu")
    >>> a, b = np.ones((16, 16), "float32"), np.ones((16, 16), "float32")
    >>> c = np.empty((16, 16), "float32")
    >>> kernel(a, b, c)
    >>> float(c[0, 0])
    16.0
    """
    func = getattr(func_or_schedule, "mod", func_or_schedule)
    if not isinstance(func, PrimFunc):
        raise TypeError(
            f"build expects a PrimFunc or a Schedule, got {type(func_or_schedule).__name__}"
        )
    if target not in TARGETS:
        raise ValueError(
            f"build: unknown target {target!r}; choose one of {', '.join(map(repr, TARGETS))}"
        )
    defaults = CPU_DEFAULTS if target == "cpu" else NUMPY_DEFAULTS
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise TypeError(
            f"build: unknown option(s) {', '.join(unknown)} for target {target!r}; "
            f"known: {', '.join(defaults)}"
        )
    options = {**defaults, **options}
    verify(func)
    checked, checks = func, ()
    if options["debug"]:
        checked, checks = add_bounds_checks(func)
        if target == "cpu":
            options["promote"] = False
    lowered = lower(checked)
    written = frozenset(
        store.buffer.name for store in collect(lowered.body, lambda n: isinstance(n, BufferStore))
    )
    if target == "numpy":
        kernel = _build_numpy(func, checked, lowered, options, written)
    else:
        kernel = _build_cpu(func, lowered, options, written)
    kernel.bounds_checks = checks
    return kernel


def lower_to_numba_source(func, **options) -> str:
    """The Python (Numba) source the ``cpu`` target generates for ``func``.

    Example
    -------
    >>> from tests.ir_examples import add_relu
    >>> print(lower_to_numba_source(add_relu(8)).splitlines()[-1].strip())
    C[i1] = max(T_add[i1], np.float32(0.0))
    """
    func = getattr(func, "mod", func)
    unknown = sorted(set(options) - set(CPU_DEFAULTS))
    if unknown:
        raise TypeError(f"lower_to_numba_source: unknown option(s) {', '.join(unknown)}")
    options = {**CPU_DEFAULTS, **options}
    if options["debug"]:
        func = add_bounds_checks(func)[0]
        options["promote"] = False
    return generate_source(lower(func), target="cpu", **options).source


def _build_numpy(
    func: PrimFunc, checked: PrimFunc, lowered: PrimFunc, options: dict, written
) -> Kernel:
    from workbench.backends.numpy_ref import ReferenceProgram

    start = time.perf_counter()
    program = ReferenceProgram(
        checked,
        whole_array=options["whole_array"],
        iteration_order=options["iteration_order"],
        order_seed=options["order_seed"],
    )
    seconds = time.perf_counter() - start
    source = "\n".join(program.sources) or "# every statement runs as whole numpy arrays\n"
    return Kernel(
        func,
        lowered,
        "numpy",
        program,
        options=options,
        source=source,
        written=written,
        compile_seconds=seconds,
    )


def _build_cpu(func: PrimFunc, lowered: PrimFunc, options: dict, written) -> Kernel:
    from workbench.backends.numba_cpu import compile_cpu

    compiled, hit = compile_cpu(lowered, options)
    seconds = 0.0 if hit == "memory" else compiled.compile_seconds
    return Kernel(
        func,
        lowered,
        "cpu",
        compiled.dispatcher,
        options=options,
        source=compiled.generated.source,
        written=written,
        compile_seconds=seconds,
        cache_hit=hit,
        compiled=compiled,
    )
