"""Building PrimFuncs from Python: a small ``te.compute`` for the graph lowering.

The library's operators are written in the DSL, one fixed loop nest each. The graph level
also needs kernels whose *structure* depends on the model: an elementwise chain of any
length over any rank, a transpose by any permutation, an epilogue appended to a library
operator. ``FuncBuilder`` builds those block by block, with the same IR the DSL parser
makes (a root block allocating the intermediates, one loop nest per block, reads and
writes inferred from the body); ``append_epilogue`` turns a library operator's output into
an intermediate and adds one elementwise block after it.

Example
-------
>>> from workbench.ir.expr import Call
>>> fb = FuncBuilder("k_relu")
>>> x, out = fb.param("x", (2, 3)), fb.param("out", (2, 3))
>>> fb.spatial("out", out, lambda v: Call("exp", (x[v],)))
>>> func = fb.finish()
>>> [b.name for b in func.params], func.params[-1].shape
(['x', 'out'], (2, 3))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workbench.ir.buffer import Buffer
from workbench.ir.expr import BufferLoad, Cast, FloatImm, IntImm, PrimExpr, Var
from workbench.ir.function import PrimFunc
from workbench.ir.regions import block_access_regions
from workbench.ir.stmt import (
    TRUE,
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    IterVar,
    Range,
    Stmt,
    seq,
)

Index = list[PrimExpr]
"""A list of index expressions (the block's iteration variables, or expressions of them)."""


class Tensor:
    """A buffer that can be indexed with a list of expressions: ``t[v]`` is a ``BufferLoad``."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer

    @property
    def shape(self) -> tuple[int, ...]:
        return self.buffer.shape

    def __getitem__(self, index: Sequence[PrimExpr | int]) -> BufferLoad:
        return BufferLoad(self.buffer, tuple(_index(i) for i in index))


def _index(value: PrimExpr | int) -> PrimExpr:
    return IntImm(value) if isinstance(value, int) else value


def const(value: float, dtype: str = "float32") -> FloatImm:
    """A float literal."""
    return FloatImm(float(value), dtype)


def loop_nest(name: str, prefix: str, extents: Sequence[int], kinds: str,
              body_of: Callable[[list[Var]], tuple[Stmt, Stmt | None]],
              annotations: tuple[tuple[str, object], ...] = ()) -> Stmt:
    """``for ... in T.grid(*extents): with T.block(name): ...`` as IR.

    ``body_of(vs)`` gets the block's iteration variables and returns ``(body, init)``;
    ``kinds`` has one ``S`` (spatial) or ``R`` (reduce) per extent; ``annotations`` are
    the block's (``T.block_attr``). A zero-rank nest gets one loop of extent 1 (the DSL
    has no loop-free block).
    """
    if not extents:
        extents, kinds = [1], "S"
    loops = [Var(f"{prefix}_{d}") for d in range(len(extents))]
    vs = [Var(f"v{prefix}_{d}") for d in range(len(extents))]
    body, init = body_of(vs)
    reads, writes = block_access_regions(body, init)
    iter_vars = tuple(
        IterVar(v, Range.from_extent(int(e)), IterKind.REDUCE if k == "R" else IterKind.SPATIAL)
        for v, e, k in zip(vs, extents, kinds, strict=True))
    stmt: Stmt = BlockRealize(tuple(loops), TRUE,
                              Block(name, iter_vars, reads, writes, body, init,
                                    annotations=tuple(annotations)))
    for loop, extent in zip(reversed(loops), reversed(list(extents)), strict=True):
        stmt = For(loop, IntImm(0), IntImm(int(extent)), ForKind.SERIAL, stmt)
    return stmt


class FuncBuilder:
    """A PrimFunc built one block at a time (see the module docstring).

    ``param`` declares the parameters in order (the output last, by convention), ``alloc``
    the intermediates; ``spatial`` and ``reduce`` add one block each, run in the order
    added.
    """

    def __init__(self, name: str, dtype: str = "float32"):
        self.name, self.dtype = name, dtype
        self.params: list[Buffer] = []
        self.allocs: list[Buffer] = []
        self.stmts: list[Stmt] = []

    def param(self, name: str, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """A parameter (in the builder's dtype unless ``dtype`` is given: integer indices)."""
        buffer = Buffer(name, tuple(int(s) for s in shape), dtype or self.dtype)
        self.params.append(buffer)
        return Tensor(buffer)

    def alloc(self, name: str, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """A scratch buffer in ``dtype`` (the builder's by default)."""
        buffer = Buffer(name, tuple(int(s) for s in shape) or (1,), dtype or self.dtype)
        self.allocs.append(buffer)
        return Tensor(buffer)

    def _prefix(self) -> str:
        return f"i{len(self.stmts)}"

    def spatial(self, name: str, out: Tensor, value: Callable[[Index], PrimExpr],
                annotations: tuple[tuple[str, object], ...] = ()) -> None:
        """``out[v] = value(v)`` over the whole of ``out`` (``annotations``: the block's)."""
        shape = out.shape

        def body(vs):
            index = vs if shape else [IntImm(0)]
            return BufferStore(out.buffer, value(vs), tuple(index[:len(out.shape)])), None

        self.stmts.append(loop_nest(name, self._prefix(), shape, "S" * len(shape), body,
                                    annotations))

    def reduce(self, name: str, out: Tensor, extents: Sequence[int], kinds: str,
               out_index: Callable[[Index], Index], init: PrimExpr,
               update: Callable[[PrimExpr, Index], PrimExpr]) -> None:
        """``out[out_index(v)] = update(out[out_index(v)], v)`` over ``extents``, starting
        from ``init`` (``kinds`` marks the reduced axes ``R``)."""

        def body(vs):
            index = tuple(_index(i) for i in out_index(vs)) or (IntImm(0),)
            current = BufferLoad(out.buffer, index)
            return (BufferStore(out.buffer, update(current, vs), index),
                    BufferStore(out.buffer, init, index))

        self.stmts.append(loop_nest(name, self._prefix(), extents, kinds, body))

    def finish(self) -> PrimFunc:
        root = Block("root", (), (), (), seq(*self.stmts), None, tuple(self.allocs))
        return PrimFunc(self.name, tuple(self.params), BlockRealize((), TRUE, root))


def append_epilogue(func: PrimFunc, operands: Sequence[tuple[str, tuple[int, ...]]],
                    value: Callable[[PrimExpr, Index, list[Tensor]], PrimExpr],
                    *, block: str = "epilogue", out: str = "out",
                    name: str | None = None, dtypes: Sequence[str] | None = None,
                    out_dtype: str | None = None) -> PrimFunc:
    """``func`` with its output made an intermediate and one elementwise block after it.

    The new parameters are ``func``'s inputs, then ``operands`` (``(name, shape)``), then
    ``out`` (the old output's shape). The new block computes
    ``out[v] = value(head[v], v, operand_tensors)`` where ``head`` is the old output.
    ``dtypes`` (one per operand, None for the default) and ``out_dtype`` default to the old
    output's dtype (an epilogue may read integers and end in a cast: OPT's positions, a
    matmul's float running sum of the mask made int64).

    Example
    -------
    >>> from workbench import ops
    >>> from workbench.ir.expr import Max
    >>> f = append_epilogue(ops.matmul(4, 3, 2), [("bias", (3,))],
    ...                     lambda h, v, t: Max(h + t[0][[v[1]]], const(0)))
    >>> [b.name for b in f.params], [b.name for b in f.root_block.alloc_buffers]
    (['A', 'B', 'bias', 'out'], ['C'])
    """
    head = func.params[-1]
    taken = {b.name for b in func.params} | {b.name for b in func.root_block.alloc_buffers}
    for operand, _ in operands:
        if operand in taken or operand == out:
            raise ValueError(f"append_epilogue: the name {operand!r} is taken in {func.name}")
    if out in taken:
        raise ValueError(f"append_epilogue: the output name {out!r} is taken in {func.name}")
    dtypes = [head.dtype] * len(operands) if dtypes is None else list(dtypes)
    extra = [Tensor(Buffer(n, tuple(s), d or head.dtype))
             for (n, s), d in zip(operands, dtypes, strict=True)]
    result = Tensor(Buffer(out, head.shape, out_dtype or head.dtype))
    source = Tensor(head)

    def body(vs):
        index = vs if head.shape else [IntImm(0)]
        stored = value(source[index], vs, extra)
        if stored.dtype != result.buffer.dtype:
            stored = Cast(result.buffer.dtype, stored)
        return BufferStore(result.buffer, stored, tuple(index)), None

    nest = loop_nest(block, f"e{len(func.root_block.alloc_buffers)}", head.shape,
                     "S" * len(head.shape), body)
    root = func.root_block
    root = root.replace(body=seq(root.body, nest), alloc_buffers=root.alloc_buffers + (head,))
    params = func.params[:-1] + tuple(t.buffer for t in extra) + (result.buffer,)
    return func.replace(name=name or func.name, params=params,
                        body=func.body.replace(block=root))


def chain(producer: PrimFunc, consumer: PrimFunc) -> PrimFunc:
    """``consumer`` with ``producer`` computed first, into an intermediate.

    ``consumer``'s first parameter is ``producer``'s output (the same buffer: name, shape,
    dtype). The result is named after ``consumer``; its parameters are ``producer``'s
    inputs, then ``consumer``'s other parameters; its root block runs ``producer``'s loop
    nests then ``consumer``'s and allocates ``producer``'s intermediates, its output, then
    ``consumer``'s intermediates: the function one DSL body of both stages would give. A
    stage several operators share (the padding of the convolutions and poolings, the sum of
    a mean) is written once and chained.

    Example
    -------
    >>> from workbench import ops
    >>> fb = FuncBuilder("mean")
    >>> total, out = fb.param("A_red", (4,)), fb.param("out", (4,))
    >>> fb.spatial("out", out, lambda v: total[v] * const(0.125))
    >>> f = chain(ops.reduce_sum(4, 8), fb.finish())
    >>> f.name, [b.name for b in f.params], [b.name for b in f.root_block.alloc_buffers]
    ('mean', ['A', 'out'], ['A_red'])
    """
    stage = producer.params[-1]
    if not consumer.params or consumer.params[0] != stage:
        first = consumer.params[0].name if consumer.params else "nothing"
        raise ValueError(f"chain: the first parameter of {consumer.name} is {first}, not the "
                         f"output {stage.name} of {producer.name}")
    first_root, second_root = producer.root_block, consumer.root_block
    root = second_root.replace(
        body=seq(first_root.body, second_root.body),
        alloc_buffers=first_root.alloc_buffers + (stage,) + second_root.alloc_buffers)
    return consumer.replace(params=producer.params[:-1] + consumer.params[1:],
                            body=consumer.body.replace(block=root))


__all__ = ["FuncBuilder", "Tensor", "append_epilogue", "chain", "const", "loop_nest"]
