"""Reductions of a ``(M, N)`` input along one axis: sum, mean, max.

``axis=1`` reduces each row (output ``(M,)``), ``axis=0`` each column (output ``(N,)``).
The two axes are two small DSL bodies rather than one generic one: the DSL describes a
loop nest literally, and the literal nest is what a reader of the IR should see. The
maximum is the sum's nest with its init and update replaced; the mean is the sum chained
(``workbench.ops.compose.chain``) with a divide block.
"""

from __future__ import annotations

from workbench import T
from workbench.ir.expr import FloatImm, Max, Var
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRMapper, substitute
from workbench.ir.stmt import Block
from workbench.ops.compose import chain


def _check_axis(axis: int) -> None:
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 or 1 for a 2-D input, got {axis}")


def reduce_sum(M: int = 32, N: int = 64, axis: int = 1, dtype: str = "float32") -> PrimFunc:
    """Sum along ``axis`` (block ``A_red``).

    Example
    -------
    >>> reduce_sum(4, 8, axis=0).params[-1].shape
    (8,)
    """
    _check_axis(axis)
    if axis == 1:

        @T.prim_func
        def reduce_sum(A: T.Buffer((M, N), dtype), A_red: T.Buffer((M,), dtype)):
            for i, k in T.grid(M, N):
                with T.block("A_red"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        A_red[vi] = 0.0
                    A_red[vi] = A_red[vi] + A[vi, vk]

        return reduce_sum

    @T.prim_func
    def reduce_sum(A: T.Buffer((M, N), dtype), A_red: T.Buffer((N,), dtype)):
        for j, k in T.grid(N, M):
            with T.block("A_red"):
                vj, vk = T.axis.remap("SR", [j, k])
                with T.init():
                    A_red[vj] = 0.0
                A_red[vj] = A_red[vj] + A[vk, vj]

    return reduce_sum


def reduce_max(M: int = 32, N: int = 64, axis: int = 1, dtype: str = "float32") -> PrimFunc:
    """Maximum along ``axis`` (block ``A_red``, initialised to ``-inf``).

    Example
    -------
    >>> reduce_max(4, 8).params[-1].shape
    (4,)
    """
    total = reduce_sum(M, N, axis, dtype)  # checks the axis
    return total.replace(name="reduce_max", body=_SumToMax().visit(total.body))


class _SumToMax(IRMapper):
    """The sum's block ``A_red`` made a maximum: ``-inf`` for its init, ``T.max`` for its
    ``+`` (one loop nest for both reductions; the IR is what the DSL writes for either)."""

    def visit_Block(self, block: Block) -> Block:
        if block.name != "A_red":
            return self.generic_visit(block)
        init, update = block.init, block.body
        neg_inf = FloatImm(float("-inf"), init.buffer.dtype)
        return block.replace(init=init.replace(value=neg_inf),
                             body=update.replace(value=Max(update.value.a, update.value.b)))


def reduce_mean(M: int = 32, N: int = 64, axis: int = 1, dtype: str = "float32") -> PrimFunc:
    """Mean along ``axis``: a sum block ``A_red`` then a divide block ``T_divide``.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(reduce_mean(4, 8))]
    ['A_red', 'T_divide']
    """
    total = reduce_sum(M, N, axis, dtype)  # checks the axis
    (L,) = total.params[-1].shape
    inv = 1.0 / (N if axis == 1 else M)

    @T.prim_func
    def reduce_mean(A_red: T.Buffer((L,), dtype), T_divide: T.Buffer((L,), dtype)):
        for i1 in T.serial(L):
            with T.block("T_divide"):
                vi1 = T.axis.spatial(L, i1)
                T_divide[vi1] = A_red[vi1] * inv

    if axis == 0:  # a column's loop is j, as in the sum's nest
        reduce_mean = substitute(reduce_mean, {Var("i1"): Var("j1"), Var("vi1"): Var("vj1")})
    return chain(total, reduce_mean)
