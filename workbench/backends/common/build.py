"""``build``: from a PrimFunc (or a Schedule) to a callable ``Kernel``."""

from __future__ import annotations

from workbench.backends.common.bounds_checks import add_bounds_checks
from workbench.backends.common.codegen_python import generate_source
from workbench.backends.common.kernel import Kernel
from workbench.backends.common.kernel_cache import LRUCache
from workbench.backends.common.lower import lower
from workbench.backends.common.target import Target, as_target, resolve_target
from workbench.ir import BufferStore, PrimFunc
from workbench.ir.functor import collect
from workbench.ir.verify import verify


def __getattr__(name: str):
    if name == "TARGETS":  # one list: the target registry's (built in and registered)
        from workbench.backends.common.target import target_names

        return target_names()
    # CPU_DEFAULTS / NUMPY_DEFAULTS moved to the targets' modules; kept readable from here
    # through the registry (common imports no target package)
    kinds = {"CPU_DEFAULTS": "cpu", "NUMPY_DEFAULTS": "numpy"}
    if name in kinds:
        from workbench.backends.common.target import get_target_kind

        return get_target_kind(kinds[name]).defaults
    raise AttributeError(name)


_LOWERED = LRUCache()
"""``lower``'s result by function, this process's (bounded): ``wb.compile`` asks whether a
kernel is cached (which needs its lowering) just before building it."""


def lowered_of(func: PrimFunc) -> PrimFunc:
    """``lower(func)``, computed once per process for equal functions (kept in a bounded
    LRU; ``clear_lowered`` empties it)."""
    lowered = _LOWERED.get(func)
    if lowered is None:
        lowered = lower(func)
        _LOWERED[func] = lowered
    return lowered


def clear_lowered() -> int:
    """Forget the kept lowerings (``numba_cpu.clear_memory_cache`` calls it, so that a timed
    build lowers again); return how many there were."""
    return _LOWERED.clear()


def build(func_or_schedule, target: str | Target = "numpy", **options) -> Kernel:
    """Build a PrimFunc (or a Schedule's ``.mod``) into a callable ``Kernel``.

    Parameters
    ----------
    func_or_schedule
        A ``PrimFunc``, or anything with a ``.mod`` PrimFunc attribute (a ``Schedule``).
    target
        A target name or a ``Target`` (``workbench.backends.common.target``). ``"numpy"``: the
        reference executor (any function, numpy whole-array evaluation where possible,
        plain Python loops elsewhere). ``"cpu"``: Python source compiled with
        ``numba.njit`` (see ``CPU_DEFAULTS`` for the options). ``"cuda"``: ``@cuda.jit``
        kernels launched from a host function (see ``numba_cuda``).
    **options
        Target options, part of the kernel cache key: ``fastmath``, ``fast_exp``,
        ``boundscheck``, ``promote`` for ``cpu``; ``whole_array``, ``iteration_order``,
        ``order_seed`` for ``numpy``; ``debug`` for both (a bounds-checked build, see
        ``CPU_DEFAULTS``); ``fastmath``, ``max_threads_per_block`` for ``cuda``.

    Raises
    ------
    IRVerifyError
        When ``func`` is not well formed (``workbench.ir.verify``): checked before any
        code is generated, for every target.

    Build steps: the common lowering (``lower``), then the target's passes
    (``Target.run_passes``), then its printer and compile step; the result is cached in
    memory (bounded LRU) and, where the compiler can, on disk.

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
    try:
        resolved = as_target(target, options)
    except ValueError as err:
        raise ValueError(f"build: {err}") from None
    verify(func)
    checked, checks = func, ()
    if resolved.options.get("debug"):
        checked, checks = add_bounds_checks(func)
        if "promote" in resolved.options:  # a promoted tile would hide the accesses it replaces
            resolved = resolved.with_options(promote=False)
    lowered = lowered_of(checked)
    written = frozenset(
        store.buffer.name for store in collect(lowered.body, lambda n: isinstance(n, BufferStore))
    )
    kernel = resolved.kind.compile(checked, lowered, resolved, written)
    if checks:
        kernel.func = func  # arguments are checked against the user's function
        kernel.bounds_checks = checks
    return kernel


def lower_to_numba_source(func, target: Target | str = "cpu", **options) -> str:
    """The Python (Numba) source ``target`` (the ``cpu`` kind, or a kind made from it)
    generates for ``func``: its passes, its printer; ``options`` override the target's.

    Example
    -------
    >>> from tests.ir_examples import add_relu
    >>> print(lower_to_numba_source(add_relu(8)).splitlines()[-1].strip())
    C[i1] = max(T_add[i1], np.float32(0.0))
    """
    func = getattr(func, "mod", func)
    target = resolve_target(target, "lower_to_numba_source")
    unknown = sorted(set(options) - set(target.kind.defaults))
    if unknown:
        raise TypeError(f"lower_to_numba_source: unknown option(s) {', '.join(unknown)}")
    options = {**target.options, **options}
    if options.get("debug"):
        func = add_bounds_checks(func)[0]
        options["promote"] = False
    return generate_source(lower(func), target=target.name, **options).source
