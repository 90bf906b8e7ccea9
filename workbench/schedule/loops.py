"""Loop primitives: ``split`` (``workbench.schedule.loops_split``), ``fuse``, ``reorder``.

Each is a pure function ``func -> func`` taking loops by their loop-variable names (unique
in a function) and returning the new function (and the names of the new loops). The
``Schedule`` methods of the same names resolve handles and call these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.ir import (
    BlockRealize,
    For,
    ForKind,
    IntImm,
    IterKind,
    PrimExpr,
    PrimFunc,
    Var,
    collect,
    const_value,
    substitute,
)
from workbench.schedule.affine import first_non_affine
from workbench.schedule.errors import InvalidArgumentError, ScheduleError
from workbench.schedule.errors_loops import (
    DependentLoopBoundError,
    DuplicateLoopError,
    LoopsNotAdjacentError,
    LoopsNotInSameNestError,
    MixedLoopReorderError,
    NonAffineBindingError,
    NonConstantExtentError,
    NonSerialLoopError,
    NotPerfectlyNestedError,
)
from workbench.schedule.handles import LoopRV
from workbench.schedule.loops_split import check_replaceable, normalize_factors, split
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import (
    describe_stmt,
    enclosing_loops,
    find_loop,
    fresh_name,
    is_zero,
    replace_loop,
    simplify_realizes,
    used_names,
    uses_var,
)

# ---------------------------------------------------------------------------------------
# fuse
# ---------------------------------------------------------------------------------------


def _mark_fused(func: PrimFunc, loops: list[For], fused: str) -> PrimFunc:
    """Give the fused loop the one non-serial kind its loops had (TVM makes it serial).

    Loops that all had it keep it. A mix of that kind and serial loops keeps it when the
    kind's own primitive accepts the fused loop (``parallel`` checks the fused loop for
    reductions and races); otherwise ``NonSerialLoopError``, as for two different kinds.
    """
    from workbench.schedule import annotations  # the kind primitives' checks

    kinds = {loop.kind for loop in loops} - {ForKind.SERIAL}
    if not kinds:
        return func
    marked = next(loop for loop in loops if loop.kind is not ForKind.SERIAL)
    name, kind = marked.loop_var.name, marked.kind
    if len(kinds) > 1:
        raise NonSerialLoopError("fuse", name, kind.value, "loops of different kinds", func, marked)
    apply = {
        ForKind.PARALLEL: annotations.parallel,
        ForKind.VECTORIZED: annotations.vectorize,
        ForKind.UNROLLED: annotations.unroll,
    }[kind]
    try:
        return apply(func, fused)
    except ScheduleError as err:
        raise NonSerialLoopError("fuse", name, kind.value, err.message, func, marked) from None


def _check_unique(primitive: str, func: PrimFunc, loops: Sequence[str]) -> list[tuple[For, tuple]]:
    found = []
    seen: set[str] = set()
    for name in loops:
        loop, ancestors = find_loop(func, name, primitive)
        if name in seen:
            raise DuplicateLoopError(primitive, name, func, loop)
        seen.add(name)
        found.append((loop, ancestors))
    return found


def _is_inside(ancestors: tuple, name: str) -> bool:
    return any(isinstance(a, For) and a.loop_var.name == name for a in ancestors)


def _path_down(primitive: str, func: PrimFunc, outer: For, inner: str) -> list[For]:
    """Loops strictly between ``outer`` and its descendant loop ``inner``, when every body on
    the way is exactly one loop; else ``NotPerfectlyNestedError``."""
    between: list[For] = []
    node = outer
    while True:
        body = node.body
        if not isinstance(body, For):
            raise NotPerfectlyNestedError(
                primitive, node.loop_var.name, describe_stmt(body), func, node
            )
        if body.loop_var.name == inner:
            return between
        between.append(body)
        node = body


def fuse(func: PrimFunc, *loops: str) -> tuple[PrimFunc, str]:
    """Fuse directly nested loops (outermost first) into one loop.

    Before (``fuse(func, "i", "j")``)::

        for i in range(16):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * 2.0

    After::

        for i_j_fused in range(128):
            with T.block("B"):
                vi = T.axis.spatial(16, i_j_fused // 8)
                vj = T.axis.spatial(8, i_j_fused % 8)
                B[vi, vj] = A[vi, vj] * 2.0

    Parameters
    ----------
    func : PrimFunc
    *loops : str
        Two or more loop names, each loop the whole body of the one before.

    Returns
    -------
    (PrimFunc, str)
        The new function and the fused loop's name (``i_j_fused``).

    Raises
    ------
    InvalidArgumentError, DuplicateLoopError, LoopsNotInSameNestError,
    LoopsNotAdjacentError, NotPerfectlyNestedError, NonConstantExtentError,
    ThreadBoundLoopError, AnnotatedLoopError (TVM refuses both), NonSerialLoopError (loops
    of different non-serial kinds, or a kind the fused loop cannot have)

    Loop kinds (TVM makes the fused loop serial): the fused loop gets the one non-serial
    kind among the loops when that kind's primitive accepts it (``parallel(i)`` then
    ``fuse(i, j)`` gives a parallel fused loop when ``j``'s iterations do not conflict).

    Example
    -------
    >>> new_func, fused = fuse(func, "i", "j")
    >>> fused
    'i_j_fused'
    """
    primitive = "fuse"
    if len(loops) < 2:
        raise InvalidArgumentError(primitive, "loops", "two or more loops", loops)
    found = _check_unique(primitive, func, loops)
    for (outer, _), (inner, inner_anc) in zip(found, found[1:], strict=False):
        outer_name, inner_name = outer.loop_var.name, inner.loop_var.name
        if outer.body is inner or outer.body == inner:
            continue
        if _is_inside(inner_anc, outer_name):
            between = _path_down(primitive, func, outer, inner_name)
            raise LoopsNotAdjacentError(
                primitive, outer_name, inner_name, [b.loop_var.name for b in between], func, inner
            )
        if _is_inside(_ancestors_of(found, outer), inner_name):
            raise LoopsNotAdjacentError(primitive, outer_name, inner_name, [], func, inner)
        raise LoopsNotInSameNestError(primitive, outer_name, inner_name, func, inner)

    for loop, _ in found:
        check_replaceable(primitive, func, loop)
    for loop, _ in found:
        if not isinstance(const_value(loop.extent), int):
            raise NonConstantExtentError(primitive, loop.loop_var.name, loop.extent, func, loop)

    loop_list = [loop for loop, _ in found]
    outer_loop, outer_anc = found[0]
    extents = [const_value(loop.extent) for loop in loop_list]
    total = 1
    for e in extents:
        total *= e
    dtype = outer_loop.loop_var.dtype
    fused = Var(fresh_name("_".join(loops) + "_fused", used_names(func)), dtype)

    mapping: dict[Var, PrimExpr] = {}
    stride = total
    for position, (loop, extent) in enumerate(zip(loop_list, extents, strict=True)):
        stride //= extent
        if extent == 1:
            value: PrimExpr = IntImm(0, dtype)
        else:
            value = fused if stride == 1 else fused // IntImm(stride, dtype)
            if position > 0:
                value = value % IntImm(extent, dtype)
        mapping[loop.loop_var] = value if is_zero(loop.min) else loop.min + value

    new_loop = For(
        fused,
        IntImm(0, dtype),
        IntImm(total, dtype),
        ForKind.SERIAL,
        substitute(loop_list[-1].body, mapping),
    )
    outer = enclosing_loops(outer_anc)
    new_loop = new_loop.replace(body=simplify_realizes(new_loop.body, outer + [new_loop]))
    new_func = replace_loop(func, loops[0], lambda _: new_loop)
    return _mark_fused(new_func, loop_list, fused.name), fused.name


def _ancestors_of(found: list[tuple[For, tuple]], loop: For) -> tuple:
    for candidate, ancestors in found:
        if candidate is loop:
            return ancestors
    return ()


# ---------------------------------------------------------------------------------------
# reorder
# ---------------------------------------------------------------------------------------


def reorder(func: PrimFunc, *loops: str) -> PrimFunc:
    """Reorder loops of one nest so that they appear in the given order, outermost first.

    The loops must lie on one chain of perfectly nested loops (each loop's body is exactly
    the next loop, from the outermost given loop down to the innermost). Loops on that
    chain that are not listed keep their positions, as in TVM. Each loop moves with its
    kind, annotations and thread binding (TVM). The bindings of the blocks below must be
    quasi-affine in the loops of the chain (``NonAffineBindingError``; loops outside the
    chain count as constants, TVM's partial affineness).

    Before (``reorder(func, "k", "i")``)::

        for i in range(16):
            for j in range(16):
                for k in range(16):
                    with T.block("C"): ...

    After::

        for k in range(16):
            for j in range(16):
                for i in range(16):
                    with T.block("C"): ...

    Parameters
    ----------
    func : PrimFunc
    *loops : str
        The loop names in their new order.

    Returns
    -------
    PrimFunc

    Raises
    ------
    InvalidArgumentError, DuplicateLoopError, LoopsNotInSameNestError,
    NotPerfectlyNestedError, DependentLoopBoundError, MixedLoopReorderError,
    NonAffineBindingError

    Example
    -------
    >>> new_func = reorder(func, "i_0", "j_0", "k", "i_1", "j_1")
    """
    primitive = "reorder"
    if not loops:
        raise InvalidArgumentError(primitive, "loops", "at least one loop", loops)
    found = _check_unique(primitive, func, loops)
    by_depth = sorted(found, key=lambda item: len(item[1]))
    for (outer, _), (inner, inner_anc) in zip(by_depth, by_depth[1:], strict=False):
        if not _is_inside(inner_anc, outer.loop_var.name):
            raise LoopsNotInSameNestError(
                primitive, outer.loop_var.name, inner.loop_var.name, func, inner
            )

    top, bottom = by_depth[0][0], by_depth[-1][0]
    if top is bottom:
        return func
    chain = [top, *_path_down(primitive, func, top, bottom.loop_var.name), bottom]
    listed = set(loops)
    order = iter(loop for loop, _ in found)
    new_chain = [next(order) if loop.loop_var.name in listed else loop for loop in chain]

    chain_vars = {loop.loop_var.name for loop in chain}
    bad = first_non_affine(
        collect(top.body, lambda n: isinstance(n, BlockRealize)), chain_vars
    )
    if bad is not None:
        realize, iter_var, value = bad
        raise NonAffineBindingError(
            primitive, top.loop_var.name, realize.block.name, iter_var, value, func,
            realize.block,
        )
    for old, new in zip(chain, new_chain, strict=True):
        if old is not new:
            _check_not_mixed(primitive, func, old)
    for position, loop in enumerate(new_chain):
        for inner in new_chain[position + 1 :]:
            name = inner.loop_var.name
            if uses_var(loop.min, name) or uses_var(loop.extent, name):
                raise DependentLoopBoundError(primitive, loop.loop_var.name, name, func, loop)

    body = bottom.body
    for loop in reversed(new_chain):
        body = loop.replace(body=body)
    return replace_loop(func, top.loop_var.name, lambda _: body)


def _check_not_mixed(primitive: str, func: PrimFunc, loop: For) -> None:
    """Refuse to move a loop that drives both spatial and reduction variables of a block."""
    name = loop.loop_var.name
    for realize in collect(loop.body, lambda n: isinstance(n, BlockRealize)):
        spatial = reduce = None
        for iter_var, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
            if not uses_var(value, name):
                continue
            if iter_var.kind is IterKind.REDUCE:
                reduce = reduce or iter_var.var.name
            else:
                spatial = spatial or iter_var.var.name
        if spatial and reduce:
            raise MixedLoopReorderError(
                primitive, name, realize.block.name, spatial, reduce, func, loop
            )


# ---------------------------------------------------------------------------------------
# Schedule methods: resolve handles, call the pure function, record the step
# ---------------------------------------------------------------------------------------


class LoopMethods:
    """The ``split``/``fuse``/``reorder`` methods of ``Schedule``.

    Mixed into ``Schedule``, which provides ``mod``, ``_name_of``, ``_resolve`` and
    ``_commit`` (see ``workbench/schedule/README.md``).
    """

    def split(
        self, loop: LoopRV, factors: Sequence[int | None], *, disable_predication: bool = False
    ) -> list[LoopRV]:
        """Split a loop into ``len(factors)`` nested loops (one factor may be None).

        Non-dividing factors add a guard to the blocks inside (``T.where``).

        Before (``sch.split(i, factors=[None, 32])``, ``i`` of extent 100)::

            for i in range(100):
                with T.block("B"):
                    vi = T.axis.spatial(100, i)

        After::

            for i_0, i_1 in T.grid(4, 32):
                with T.block("B"):
                    vi = T.axis.spatial(100, i_0 * 32 + i_1)
                    T.where(i_0 * 32 + i_1 < 100)

        Raises ``MultipleNoneFactorsError``, ``NonPositiveFactorError``,
        ``WrongFactorProductError``, ``NonDividingFactorError`` (with
        ``disable_predication=True``), ``NonConstantExtentError``.
        See ``workbench.schedule.loops.split``.

        Example
        -------
        >>> io, ii = sch.split(i, factors=[None, 32])
        """
        name = self._name_of(loop, "split")
        new_func, new_loops = split(
            self.mod, name, factors=factors, disable_predication=disable_predication
        )
        attrs: dict[str, Any] = {"factors": normalize_factors("split", factors)}
        if disable_predication:
            attrs["disable_predication"] = True
        return self._commit("split", (loop,), attrs, new_func, [("loop", n) for n in new_loops])

    def fuse(self, *loops_: LoopRV) -> LoopRV:
        """Fuse directly nested loops (outermost first) into one.

        Before (``sch.fuse(i, j)``)::

            for i, j in T.grid(16, 8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])

        After::

            for i_j_fused in range(128):
                with T.block("B"):
                    vi = T.axis.spatial(16, i_j_fused // 8)
                    vj = T.axis.spatial(8, i_j_fused % 8)

        Raises ``LoopsNotAdjacentError``, ``NotPerfectlyNestedError``,
        ``LoopsNotInSameNestError``, ``DuplicateLoopError``. See
        ``workbench.schedule.loops.fuse``.

        Example
        -------
        >>> ij = sch.fuse(i, j)
        """
        names = [self._name_of(loop, "fuse") for loop in loops_]
        new_func, fused = fuse(self.mod, *names)
        return self._commit("fuse", loops_, {}, new_func, [("loop", fused)])[0]

    def reorder(self, *loops_: LoopRV) -> None:
        """Put loops of one perfectly nested chain into the given order (outermost first).

        Before (``sch.reorder(k, i)``)::

            for i, j, k in T.grid(16, 16, 16):
                with T.block("C"): ...

        After::

            for k, j, i in T.grid(16, 16, 16):
                with T.block("C"): ...

        Raises ``LoopsNotInSameNestError``, ``NotPerfectlyNestedError``,
        ``DuplicateLoopError``, ``DependentLoopBoundError``. See
        ``workbench.schedule.loops.reorder``.

        Example
        -------
        >>> sch.reorder(io, jo, k, ii, ji)
        """
        names = [self._name_of(loop, "reorder") for loop in loops_]
        new_func = reorder(self.mod, *names)
        self._commit("reorder", loops_, {}, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------


def _is_factor_list(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) >= 2
        and all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in value)
    )


FACTORS = AttrSpec("factors", _is_factor_list, "a list of at least two ints or None")
DISABLE_PREDICATION = AttrSpec(
    "disable_predication", lambda v: isinstance(v, bool), "a bool", default=False
)


def _loop_node(sch, loop: LoopRV) -> For:
    return find_loop(sch.mod, sch.name(loop), "legal_primitives")[0]


def _probe_split(sch, loop: LoopRV):
    """Split by the smallest divisor above 1 (or 1 for a loop of one iteration)."""
    extent = const_value(_loop_node(sch, loop).extent)
    if not isinstance(extent, int):
        return (loop,), {"factors": [None, 2]}
    factor = next((d for d in range(2, extent + 1) if extent % d == 0), 1)
    return (loop,), {"factors": [None, factor]}


def _inner_loop(sch, loop: LoopRV, primitive: str) -> LoopRV:
    """A handle to the loop that is the whole body of ``loop`` (else the primitive's error)."""
    node = _loop_node(sch, loop)
    if not isinstance(node.body, For):
        raise NotPerfectlyNestedError(
            primitive, node.loop_var.name, describe_stmt(node.body), sch.mod, node
        )
    return sch._handle_for_name("loop", node.body.loop_var.name)


def _probe_fuse(sch, loop: LoopRV):
    return (loop, _inner_loop(sch, loop, "fuse")), {}


def _probe_reorder(sch, loop: LoopRV):
    return (_inner_loop(sch, loop, "reorder"), loop), {}


register_instruction(
    InstructionKind(
        "split",
        ("loop",),
        (FACTORS, DISABLE_PREDICATION),
        outputs="loops",
        applies_to=("loop",),
        probe=_probe_split,
    )
)
register_instruction(
    InstructionKind("fuse", ("*loop",), outputs="loop", applies_to=("loop",), probe=_probe_fuse)
)
register_instruction(
    InstructionKind("reorder", ("*loop",), applies_to=("loop",), probe=_probe_reorder)
)
