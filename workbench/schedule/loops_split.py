"""``split`` (TVM semantics): one loop becomes nested loops whose extents multiply to at
least its extent, with a ``T.where`` guard where they overshoot; and the argument checks the
loop primitives share (``normalize_factors``, ``check_replaceable``). A pure function
``func -> func`` taking the loop by its loop-variable name; the ``Schedule`` method
(``workbench.schedule.loops.LoopMethods``) resolves handles and calls it.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from workbench.ir import (
    LT,
    For,
    ForKind,
    IntImm,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    const_value,
    substitute,
)
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_loops import (
    AnnotatedLoopError,
    MultipleNoneFactorsError,
    NonConstantExtentError,
    NonDividingFactorError,
    NonPositiveFactorError,
    ThreadBoundLoopError,
    WrongFactorProductError,
)
from workbench.schedule.tree import (
    add_predicate,
    enclosing_loops,
    find_loop,
    fresh_name,
    is_zero,
    loop_ranges,
    prove,
    replace_loop,
    simplify_realizes,
    used_names,
)


def normalize_factors(primitive: str, factors: object) -> list[int | None]:
    """Check the factors' types (ints or None, at least two) and return them as a list."""
    if isinstance(factors, (str, bytes)) or not isinstance(factors, Sequence):
        raise InvalidArgumentError(
            primitive, "factors", "a list of ints with at most one None", factors
        )
    result: list[int | None] = []
    for factor in factors:
        if factor is None:
            result.append(None)
            continue
        if isinstance(factor, bool):
            raise InvalidArgumentError(
                primitive, "factors", "a list of ints with at most one None", factors
            )
        value = const_value(factor) if isinstance(factor, IntImm) else None
        if value is None:
            try:
                value = operator.index(factor)
            except TypeError:
                raise InvalidArgumentError(
                    primitive, "factors", "a list of ints with at most one None", factors
                ) from None
        result.append(int(value))
    if len(result) < 2:
        raise InvalidArgumentError(primitive, "factors", "a list of at least two factors", factors)
    return result


def check_replaceable(primitive: str, func: PrimFunc, loop: For) -> None:
    """Refuse to replace a loop that carries something the new loops cannot inherit: as
    TVM, a thread binding (``ThreadBoundLoopError``) or annotations (``AnnotatedLoopError``).
    """
    name = loop.loop_var.name
    if loop.thread_binding is not None or loop.kind is ForKind.THREAD_BINDING:
        thread = loop.thread_binding or "a thread axis"
        raise ThreadBoundLoopError(primitive, name, thread, func, loop)
    if loop.annotations:
        raise AnnotatedLoopError(primitive, name, [k for k, _ in loop.annotations], func, loop)


def _split_kinds(kind: ForKind, count: int) -> list[ForKind]:
    """The kinds of the loops a split of a ``kind`` loop gives (TVM makes them all serial):
    a parallel loop's outermost piece stays parallel (its iterations are groups of the old
    ones, which did not conflict), a vectorized loop's innermost piece stays vectorized, an
    unrolled loop's pieces all stay unrolled (together they still unroll it fully)."""
    kinds = [ForKind.SERIAL] * count
    if kind is ForKind.PARALLEL:
        kinds[0] = kind
    elif kind is ForKind.VECTORIZED:
        kinds[-1] = kind
    elif kind is ForKind.UNROLLED:
        kinds = [kind] * count
    return kinds


def split(
    func: PrimFunc, loop: str, *, factors: Sequence[int | None], disable_predication: bool = False
) -> tuple[PrimFunc, list[str]]:
    """Split a loop into ``len(factors)`` nested loops, outermost first.

    One factor may be ``None``: it is inferred as ``ceil(extent / product(others))``. When
    the factors multiply to more than the extent, the blocks inside get a guard in their
    predicate (``T.where``), as in TVM.

    Before (``split(func, "i", factors=[None, 32])`` on a loop of 100)::

        for i in range(100):
            with T.block("B"):
                vi = T.axis.spatial(100, i)
                B[vi] = A[vi] * 2.0

    After::

        for i_0 in range(4):
            for i_1 in range(32):
                with T.block("B"):
                    vi = T.axis.spatial(100, i_0 * 32 + i_1)
                    T.where(i_0 * 32 + i_1 < 100)
                    B[vi] = A[vi] * 2.0

    Parameters
    ----------
    func : PrimFunc
    loop : str
        The loop variable's name.
    factors : list of int or None
        Extents of the new loops, outermost first; at most one ``None``.
    disable_predication : bool
        Refuse (``NonDividingFactorError``) instead of adding a guard when the factors do
        not divide the extent.

    Returns
    -------
    (PrimFunc, list of str)
        The new function and the new loops' names (``i_0, i_1, ...``).

    Raises
    ------
    InvalidArgumentError, MultipleNoneFactorsError, NonPositiveFactorError,
    NonConstantExtentError, WrongFactorProductError, NonDividingFactorError, LoopNotFoundError,
    ThreadBoundLoopError, AnnotatedLoopError (TVM refuses both)

    Loop kinds (TVM makes every new loop serial): a parallel loop's outermost piece stays
    parallel, a vectorized loop's innermost piece stays vectorized, an unrolled loop's
    pieces all stay unrolled.

    Example
    -------
    >>> new_func, (outer, inner) = split(func, "i", factors=[None, 32])
    >>> outer, inner
    ('i_0', 'i_1')
    """
    primitive = "split"
    given = normalize_factors(primitive, factors)
    target, ancestors = find_loop(func, loop, primitive)
    check_replaceable(primitive, func, target)
    if given.count(None) > 1:
        raise MultipleNoneFactorsError(primitive, loop, given, func, target)
    if any(f is not None and f <= 0 for f in given):
        raise NonPositiveFactorError(primitive, loop, given, func, target)
    extent = const_value(target.extent)
    if not isinstance(extent, int):
        raise NonConstantExtentError(primitive, loop, target.extent, func, target)

    known = 1
    for f in given:
        known *= f if f is not None else 1
    sizes = [f if f is not None else -(-extent // known) for f in given]
    product = known * (sizes[given.index(None)] if None in given else 1)
    if product < extent:
        raise WrongFactorProductError(primitive, loop, given, extent, func, target)
    if product != extent and disable_predication:
        raise NonDividingFactorError(primitive, loop, given, extent, func, target)

    taken = used_names(func)
    dtype = target.loop_var.dtype
    new_vars = [Var(fresh_name(f"{loop}_{n}", taken), dtype) for n in range(len(sizes))]

    # i = min + ((i_0 * f1 + i_1) * f2 + i_2) ...
    index: PrimExpr = new_vars[0]
    for var, size in zip(new_vars[1:], sizes[1:], strict=True):
        index = index * IntImm(size, dtype) + var
    value = index if is_zero(target.min) else target.min + index
    body: Stmt = substitute(target.body, {target.loop_var: value})

    # the loops around the body: the original's outer loops, then the new ones
    new_loops = [
        For(v, IntImm(0, dtype), IntImm(s, dtype), kind, body)
        for v, s, kind in zip(new_vars, sizes, _split_kinds(target.kind, len(sizes)), strict=True)
    ]
    around = enclosing_loops(ancestors) + new_loops
    if product != extent:
        guard = LT(index, IntImm(extent, dtype))
        if not prove(guard, loop_ranges(around)):
            body = add_predicate(body, guard)
    body = simplify_realizes(body, around)
    for new_loop in reversed(new_loops):
        body = new_loop.replace(body=body)
    return replace_loop(func, loop, lambda _: body), [v.name for v in new_vars]
