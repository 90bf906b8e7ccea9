"""Layout primitive: ``transform_layout``.

``transform_layout(block, buffer, index_map)`` gives a buffer a new shape and rewrites every
access to it: ``index_map`` maps the old indices to the new ones, e.g. packing ``B`` into
panels of 16 columns, ``lambda k, j: (j // 16, k, j % 16)``, or NCHW to NHWC,
``lambda n, c, h, w: (n, h, w, c)``.

The map is a Python lambda evaluated once on index variables (the IR's operators build
the new index expressions), so it must be made of ``+ - * // %`` of its arguments and
integer constants. The new shape is the interval bound of each new index
(``workbench.ir.arith.int_bounds``) and the map must be a bijection from the old shape
onto it, which is proved symbolically (``layout_injective.proves_injective``: the map's
affine inverse, or mixed-radix digits of the old indices; never enumerated, so a map beyond
both proofs is refused whatever the buffer's size).

Loads, stores, block read/write regions, ``alloc_buffers`` and function parameters all
change. **Transforming a parameter changes the function's signature** (as in TVM): the
kernel then takes the array in the new layout, e.g. ``data.transpose(0, 2, 3, 1).copy()``
after NCHW -> NHWC.

In the trace the map is stored as canonical text printed from its IR
(``"lambda k, j: (j // 16, k, j % 16)"``) and read back by a small parser that accepts only
that grammar (never ``eval``), so traces replay from JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from workbench.ir import (
    Block,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    FloatImm,
    For,
    IntImm,
    IRMapper,
    PrimExpr,
    PrimFunc,
    Range,
    Var,
    substitute,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_layout import (
    BufferNotFoundError,
    PaddingRequiredError,
)
from workbench.schedule.handles import BlockRV
from workbench.schedule.layout_index_map import (
    IndexMap,
    check_bijective,
    make_index_map,
    new_shape,
)
from workbench.schedule.layout_padding import fill_padding, padding_predicate
from workbench.schedule.memory import buffer_region, replace_buffers
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import find_block, walk

# ---------------------------------------------------------------------------------------
# Rewriting the accesses
# ---------------------------------------------------------------------------------------


class _Relayout(IRMapper):
    """Rewrite every access to ``old`` through ``imap`` into ``new``, simplifying the new
    indices with the ranges of the loops and block iteration variables around them."""

    def __init__(self, old: Buffer, new: Buffer, imap: IndexMap):
        self.old, self.new, self.imap = old, new, imap
        self.ranges: dict[Var, tuple[int, int]] = {}

    def _with_ranges(self, node, items):
        saved = dict(self.ranges)
        for var, low, extent in items:
            if isinstance(low, IntImm) and isinstance(extent, IntImm) and extent.value > 0:
                self.ranges[var] = (low.value, low.value + extent.value - 1)
        result = self.generic_visit(node)
        self.ranges = saved
        return result

    def visit_For(self, node: For):
        return self._with_ranges(node, [(node.loop_var, node.min, node.extent)])

    def visit_Block(self, node: Block):
        return self._with_ranges(
            node, [(iv.var, iv.dom.min, iv.dom.extent) for iv in node.iter_vars]
        )

    def visit_Buffer(self, node: Buffer):
        return self.new if node == self.old else node

    def _map(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(simplify(e, self.ranges) for e in self.imap.apply(indices))

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        if node.buffer != self.new:
            return node
        return BufferLoad(self.new, self._map(node.indices))

    def visit_BufferStore(self, node: BufferStore):
        node = self.generic_visit(node)
        if node.buffer != self.new:
            return node
        return BufferStore(self.new, node.value, self._map(node.indices))

    def visit_BufferRegion(self, node: BufferRegion):
        if node.buffer != self.old:
            return node
        # old index d = min_d + t_d with t_d in [0, extent_d): bound each new index over t
        offsets, ranges = [], dict(self.ranges)
        for d, rng in enumerate(node.region):
            if isinstance(rng.extent, IntImm) and rng.extent.value == 1:
                offsets.append(rng.min)
                continue
            t = Var(f"_t{d}")
            ext = rng.extent.value if isinstance(rng.extent, IntImm) else self.old.shape[d]
            ranges[t] = (0, ext - 1)
            offsets.append(rng.min + t)
        at_zero = {Var(f"_t{d}"): IntImm(0) for d in range(len(node.region))}
        region = []
        for expr, size in zip(self.imap.apply(offsets), self.new.shape, strict=True):
            base = simplify(substitute(expr, at_zero), self.ranges)
            lo = int_bounds(simplify(expr - base, ranges), ranges)[0]
            hi = int_bounds(simplify(expr - base, ranges), ranges)[1]
            if lo is None or hi is None or hi - lo + 1 > size:
                region.append(Range(IntImm(0), IntImm(size)))
            else:
                start = simplify(base + IntImm(lo), self.ranges)
                region.append(Range(start, IntImm(hi - lo + 1)))
        return BufferRegion(self.new, tuple(region))


def _find_buffer(primitive: str, func: PrimFunc, block: Block, name: str) -> Buffer:
    buffers = list(func.params)
    for stmt, _ in walk(func.body):
        if isinstance(stmt, Block):
            buffers.extend(stmt.alloc_buffers)
    for buf in buffers:
        if buf.name == name:
            return buf
    raise BufferNotFoundError(primitive, block, name, [b.name for b in buffers], func)


def _resolve_buffer(primitive: str, func: PrimFunc, block: Block, buffer: object) -> Buffer:
    if isinstance(buffer, str):
        return _find_buffer(primitive, func, block, buffer)
    if isinstance(buffer, (tuple, list)) and len(buffer) == 2 and buffer[0] in ("read", "write"):
        return buffer_region(primitive, func, block, buffer[0], buffer[1]).buffer
    raise InvalidArgumentError(
        primitive, "buffer", 'a buffer name or ("read" | "write", index)', buffer
    )


def transform_layout(
    func: PrimFunc,
    block: str,
    buffer: str | tuple[str, int],
    index_map,
    pad_value: float | int | None = None,
    unset_padding: bool = False,
) -> tuple[PrimFunc, IndexMap]:
    """Give a buffer a new layout: ``new[index_map(i...)] = old[i...]``, every access rewritten.

    Before (``transform_layout(func, "C", ("read", 2), lambda k, j: (j // 4, k, j % 4))``,
    ``B`` of shape (16, 16))::

        def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), ...):
            ...
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    After (the parameter changes shape: the caller passes B packed into panels)::

        def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((4, 16, 4), "float32"), ...):
            ...
                    T.reads(C[vi, vj], A[vi, vk], B[vj // 4, vk, vj % 4])
                    ...
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj // 4, vk, vj % 4]

    Parameters
    ----------
    func : PrimFunc
    block : str
        A block; ``buffer`` indexes its reads or writes when given as a pair.
    buffer : str or (str, int)
        A buffer name (a parameter or an allocated buffer), or ``("read", i)`` /
        ``("write", i)``.
    index_map : callable or str or IndexMap
        A lambda taking one index per dimension and returning the new indices (a tuple),
        or its canonical text.
    pad_value : int or float, optional
        TVM's argument: allows a map onto a larger shape (``lambda i: (i // 4, i % 4)`` on
        14 elements gives (4, 4)). A block ``<buffer>_pad`` writes ``pad_value`` into the
        padding right before the first block writing the buffer; accesses see the original
        elements. A buffer nobody writes (an input) is not filled: the caller's padding is
        never read.
    unset_padding : bool
        Allow a map onto a larger shape without filling the padding, for a buffer the
        function allocates (not a parameter): every access is rewritten from a position
        of the old shape, so the padding is never read or written (a per-thread register
        stage ``lambda r, q: (r, q // 32, q % 32)`` on rows of 100). Refused with
        ``pad_value`` and on parameters (``InvalidArgumentError``).

    Returns
    -------
    (PrimFunc, IndexMap)
        The new function and the map (``.text()`` is what the trace stores).

    Raises
    ------
    BlockNotFoundError, BufferNotFoundError, BufferIndexError, InvalidArgumentError,
    IndexMapArityError, IndexMapOperationError, IndexMapNotBijectiveError,
    PaddingRequiredError (padding without pad_value), PaddingNotInvertibleError

    Example
    -------
    >>> new_func, imap = transform_layout(conv, "pad_temp", "data",
    ...                                   lambda n, c, h, w: (n, h, w, c))
    >>> new_func.param("data").shape
    (1, 8, 8, 4)
    """
    primitive = "transform_layout"
    target, _ = find_block(func, block, primitive)
    old = _resolve_buffer(primitive, func, target, buffer)
    imap = make_index_map(primitive, func, target, old, index_map)
    shape = new_shape(primitive, func, target, old, imap)
    padded = math.prod(shape) > math.prod(old.shape)
    fill = _pad_constant(primitive, old, pad_value)
    if not isinstance(unset_padding, bool):
        raise InvalidArgumentError(primitive, "unset_padding", "a bool", unset_padding)
    if unset_padding:
        _check_unset_padding(primitive, func, old, fill)
    if padded and fill is None and not unset_padding:
        raise PaddingRequiredError(primitive, target, old, imap.text(), shape, func)
    check_bijective(
        primitive, func, target, old, imap, shape, allow_padding=fill is not None or unset_padding
    )
    new = old.replace(shape=shape)
    if padded and fill is not None:
        is_padding = padding_predicate(primitive, func, target, old, imap, shape)
    mapper = _Relayout(old, new, imap)
    body = mapper.visit(func.body)
    params = replace_buffers(func.params, {old: new})
    new_func = func.replace(params=params, body=body)
    if padded and fill is not None:
        new_func = fill_padding(new_func, new, is_padding, fill)
    return new_func, imap


def _check_unset_padding(
    primitive: str, func: PrimFunc, buffer: Buffer, fill: PrimExpr | None
) -> None:
    """``unset_padding`` only for a buffer the function allocates, and never with a fill."""
    if fill is not None:
        raise InvalidArgumentError(
            primitive, "unset_padding", "False when pad_value is given", True
        )
    if any(param is buffer or param.name == buffer.name for param in func.params):
        raise InvalidArgumentError(
            primitive,
            "unset_padding",
            f"False for parameter {buffer.name!r} (the caller's array would change shape "
            "with undefined positions)",
            True,
        )


def _pad_constant(primitive: str, buffer: Buffer, pad_value: object) -> PrimExpr | None:
    if pad_value is None:
        return None
    if isinstance(pad_value, bool) or not isinstance(pad_value, (int, float)):
        raise InvalidArgumentError(primitive, "pad_value", "an int or a float", pad_value)
    # as TVM, the value's type must match the buffer's (no silent int -> float)
    if buffer.dtype.startswith("float"):
        if not isinstance(pad_value, float):
            raise InvalidArgumentError(
                primitive, "pad_value", f"a float for {buffer.dtype}", pad_value
            )
        return FloatImm(pad_value, buffer.dtype)
    if not isinstance(pad_value, int):
        raise InvalidArgumentError(primitive, "pad_value", f"an int for {buffer.dtype}", pad_value)
    return IntImm(pad_value, buffer.dtype)


# ---------------------------------------------------------------------------------------
# Schedule method
# ---------------------------------------------------------------------------------------


class LayoutMethods:
    """The ``transform_layout`` method of ``Schedule``."""

    def transform_layout(
        self,
        block: BlockRV,
        buffer: str | tuple[str, int],
        index_map: Callable | str,
        pad_value: float | int | None = None,
        unset_padding: bool = False,
    ) -> None:
        """Give a buffer a new layout through ``index_map`` and rewrite every access to it.

        ``buffer`` is ``("read", i)``, ``("write", i)`` (of ``block``) or a buffer name;
        ``index_map`` a lambda over the buffer's indices returning the new ones, e.g.
        ``lambda k, j: (j // 16, k, j % 16)`` (panels) or ``lambda n, c, h, w: (n, h, w, c)``.
        Transforming a parameter changes the function's signature: the kernel takes
        that array in the new layout. The trace stores the map as canonical text.
        To pack a cache per tile, transform it after ``compute_at`` (TVM's order): the
        copy then fills one panel per tile iteration instead of the whole buffer.
        See ``workbench.schedule.layout.transform_layout``.

        ``pad_value`` (TVM) allows a map onto a larger shape, e.g. ``lambda i: (i // 4, i %
        4)`` on 14 elements: the padding is filled with ``pad_value`` (block
        ``<buffer>_pad``, before the first writer) and accesses see the original elements.
        ``unset_padding=True`` allows the larger shape without a fill, for a buffer the
        function allocates: the padding is never read (every access comes from the old
        shape), e.g. a per-thread register stage of a row that is not a multiple of the
        threads.

        Raises ``IndexMapArityError``, ``IndexMapOperationError``,
        ``IndexMapNotBijectiveError``, ``PaddingRequiredError``, ``PaddingNotInvertibleError``,
        ``BufferIndexError``, ``BufferNotFoundError``.

        Example
        -------
        >>> b_global = sch.cache_read(sch.get_block("C"), 2, "global")
        >>> sch.transform_layout(b_global, ("write", 0), lambda k, j: (j // 16, k, j % 16))
        """
        name = self._name_of(block, "transform_layout", "block", "block")
        new_func, imap = transform_layout(
            self.mod, name, buffer, index_map, pad_value, unset_padding
        )
        attrs = {
            "buffer": list(buffer) if isinstance(buffer, (tuple, list)) else buffer,
            "index_map": imap.text(),
        }
        if pad_value is not None:
            attrs["pad_value"] = pad_value
        if unset_padding:
            attrs["unset_padding"] = True
        self._commit("transform_layout", (block,), attrs, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probe
# ---------------------------------------------------------------------------------------


def _is_buffer_attr(value: object) -> bool:
    if isinstance(value, str):
        return True
    return (
        isinstance(value, list)
        and len(value) == 2
        and value[0] in ("read", "write")
        and isinstance(value[1], int)
        and not isinstance(value[1], bool)
    )


def _is_map_text(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        IndexMap.from_text(value)
    except ValueError:
        return False
    return True


def _probe_transform_layout(sch, block: BlockRV):
    """Reverse the dimensions of the first buffer the block reads (or writes)."""
    node = find_block(sch.mod, sch.name(block), "legal_primitives")[0]
    kind = "read" if node.reads else "write"
    regions = node.reads or node.writes
    ndim = regions[0].buffer.ndim if regions else 1
    names = [f"i{d}" for d in range(ndim)]
    text = f"lambda {', '.join(names)}: ({', '.join(reversed(names))}{',' if ndim == 1 else ''})"
    return (block, (kind, 0), text), {}


register_instruction(
    InstructionKind(
        "transform_layout",
        ("block",),
        (
            AttrSpec(
                "buffer",
                _is_buffer_attr,
                'a buffer name or ["read" | "write", index]',
                positional=True,
            ),
            AttrSpec("index_map", _is_map_text, "an index map text (lambda ...)", positional=True),
            AttrSpec(
                "pad_value",
                lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
                "a number",
                default=None,
            ),
            AttrSpec(
                "unset_padding", lambda v: isinstance(v, bool), "a bool", default=False
            ),
        ),
        applies_to=("block",),
        probe=_probe_transform_layout,
    )
)
