"""Accumulator promotion: keep a reduction's output tile in a local array (IR -> IR).

A reduction loop such as ``k`` in ``for k: for i_1: for j_1: C[i, j] = C[i, j] + A * B``
reads and writes the same ``C`` elements on every iteration. LLVM cannot keep them in
registers across ``k``: Numba arrays may alias, so every store to ``C`` might change ``A``
or ``B`` and ``C`` is loaded and stored again each time (measured on a 1024 matmul with a
4x64 tile: 62 GFLOP/s). Copying the tile into a fresh local array before the loop and
back after it removes that doubt (a fresh allocation aliases nothing) and LLVM keeps the
tile in vector registers (the same schedule: 210 GFLOP/s)::

    for k in range(K):                       C_acc = np.empty((4, 64))   # scope local
        for i_1 in range(4):                 for i_1_in, j_1_in: C_acc[..] = C[..]
            for j_1 in range(64):            for k in range(K):
                C[i_0*4 + i_1, j_0*64 + j_1]  ->    for i_1: for j_1:
                   += A[..] * B[..]                      C_acc[i_1, j_1] += A[..] * B[..]
                                             for i_1_out, j_1_out: C[..] = C_acc[..]

It is TVM's ``cache_write`` + ``reverse_compute_at`` done by the code generator where the IR
proves it legal. A loop ``L`` is promoted for a buffer ``C`` it writes when

* ``L`` is not ``parallel`` and contains no ``parallel`` loop;
* every access to ``C`` inside ``L`` (load or store) has the same indices, and each index
  is ``base + v`` or ``base``, where ``base`` uses only variables of loops *outside* ``L``
  and ``v`` is the variable of a constant-range loop inside ``L`` starting at 0 (one ``v``
  per dimension, distinct): the tile is the box of those ``v``;
* guards around the accesses either leave the tile's variables alone (the init's
  ``k == 0``) or mention only outer and tile variables (an imperfect split's
  ``i_0 * 4 + i_1 < 18``, which then also guards the copies), the same ones for every access;
* the tile has at most ``MAX_ELEMENTS`` elements.

When ``C`` is itself a non-global intermediate whose shape is exactly that tile, accessed at
``(v_0, v_1, ...)`` (``cache_write(block, 0, "local")`` + ``reverse_compute_at`` under the
tile loop, compacted by ``compact``), it is already a fresh local array: the loop is only
peeled (below), with no second tile and no copies.

A tile with no ``v`` (``C[i, j]`` in a naive ``i, j, k`` nest) becomes a one-element array:
the scalar accumulator of a dot product. Loops are tried outermost first and a promoted
loop is not searched again for the same buffer.
"""

from __future__ import annotations

from workbench.ir import (
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    PrimExpr,
    Stmt,
    Var,
    seq,
)
from workbench.ir.arith import simplify
from workbench.ir.functor import IRMapper, IRVisitor, collect

MAX_ELEMENTS = 1024
"""Largest promoted tile (elements): a register tile is small; 1024 floats is 4 KiB."""


def promote_accumulators(
    stmt: Stmt, taken_names: set[str], *, max_elements: int = MAX_ELEMENTS
) -> tuple[Stmt, list[Buffer]]:
    """Promote the reduction outputs of ``stmt`` into local tiles (see the module docstring).

    ``taken_names`` holds every buffer and variable name of the function; new names avoid
    them (and are added to it). Returns the new statement and the new local buffers, which
    the caller adds to the root block's ``alloc_buffers``.

    Example
    -------
    ``for k in range(16): C[i, j] = C[i, j] + A[i, k] * B[k, j]`` becomes
    ``C_acc[0] = C[i, j]; for k ...: C_acc[0] = C_acc[0] + ...; C[i, j] = C_acc[0]``.
    """
    promoter = _Promoter(taken_names, max_elements)
    return promoter.visit(stmt), promoter.buffers


class _Access(IRVisitor):
    """Every access to one buffer below a loop, with the guards around it."""

    def __init__(self, name: str):
        self.name = name
        self.accesses: list[tuple[tuple[PrimExpr, ...], tuple[PrimExpr, ...]]] = []
        self.guards: list[PrimExpr] = []

    def visit_IfThenElse(self, node: IfThenElse):
        self.visit(node.condition)
        self.guards.append(node.condition)
        self.visit(node.then_case)
        self.guards.pop()
        if node.else_case is not None:
            self.guards.append(None)  # an else branch: its condition is not a plain guard
            self.visit(node.else_case)
            self.guards.pop()

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer.name == self.name:
            self.accesses.append((node.indices, tuple(self.guards)))
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        if node.buffer.name == self.name:
            self.accesses.append((node.indices, tuple(self.guards)))
        self.generic_visit(node)


class _Retarget(IRMapper):
    """Replace every access to ``buffer`` by an access to ``tile`` at ``tile_indices``."""

    def __init__(self, name: str, tile: Buffer, tile_indices: tuple[PrimExpr, ...]):
        self.name = name
        self.tile = tile
        self.tile_indices = tile_indices

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        if node.buffer.name != self.name:
            return node
        return BufferLoad(self.tile, self.tile_indices)

    def visit_BufferStore(self, node: BufferStore):
        node = self.generic_visit(node)
        if node.buffer.name != self.name:
            return node
        return BufferStore(self.tile, node.value, self.tile_indices)


def _vars(expr) -> set[Var]:
    return set(collect(expr, lambda n: isinstance(n, Var)))


class _Promoter(IRMapper):
    def __init__(self, taken: set[str], max_elements: int):
        self.taken = taken
        self.max_elements = max_elements
        self.buffers: list[Buffer] = []
        self.ranges: dict[Var, tuple[int, int]] = {}  # loops around the one visited

    def _fresh(self, name: str) -> str:
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def visit_For(self, node: For) -> Stmt:
        inner = collect(node.body, lambda n: isinstance(n, For))
        if node.kind is not ForKind.PARALLEL and not any(
            loop.kind is ForKind.PARALLEL for loop in inner
        ):
            written = {}
            for store in collect(node.body, lambda n: isinstance(n, BufferStore)):
                written.setdefault(store.buffer.name, store.buffer)
            for buffer in written.values():
                promoted = self._promote(node, buffer, inner)
                if promoted is not None:
                    return promoted
        if isinstance(node.min, IntImm) and isinstance(node.extent, IntImm):
            low = node.min.value
            self.ranges[node.loop_var] = (low, low + node.extent.value - 1)
        result = self.generic_visit(node)
        self.ranges.pop(node.loop_var, None)
        return result

    def _promote(self, loop: For, buffer: Buffer, inner: list[For]) -> Stmt | None:
        finder = _Access(buffer.name)
        finder.visit(loop.body)
        indices, guards = finder.accesses[0]
        if any(access[0] != indices for access in finder.accesses):
            return None
        inner_ranges = {
            f.loop_var: f
            for f in inner
            if isinstance(f.min, IntImm) and f.min.value == 0 and isinstance(f.extent, IntImm)
        }
        inner_vars = {f.loop_var for f in inner} | {loop.loop_var}
        tile_vars: list[Var] = []
        bases: list[PrimExpr] = []
        for index in indices:
            used = _vars(index) & inner_vars
            if len(used) > 1:
                return None
            if not used:
                tile_vars.append(None)
                bases.append(index)
                continue
            (var,) = used
            if var not in inner_ranges or var in tile_vars:
                return None
            base = simplify(index - var)
            if _vars(base) & inner_vars:
                return None
            tile_vars.append(var)
            bases.append(base)
        box = [v for v in tile_vars if v is not None]
        region_guards = self._region_guards(finder.accesses, set(box), inner_vars)
        if region_guards is None:
            return None
        shape = tuple(inner_ranges[v].extent.value for v in box) or (1,)
        elements = 1
        for n in shape:
            elements *= n
        if elements > self.max_elements:
            return None
        if _is_whole_local_tile(buffer, tile_vars, bases, shape):
            # already a fresh local array holding exactly this tile (``cache_write`` to
            # "local" + ``reverse_compute_at``, compacted): a copy would only double it
            return peel_first_iteration(loop, self.ranges)
        tile = Buffer(self._fresh(f"{buffer.name}_acc"), shape, buffer.dtype, "local")
        self.buffers.append(tile)
        index_dtype = indices[0].dtype if indices else "int32"
        tile_indices = tuple(box) or (IntImm(0, index_dtype),)
        body = _Retarget(buffer.name, tile, tile_indices).visit(loop.body)
        copy_in = self._copy(buffer, tile, tile_vars, bases, region_guards, "in", into_tile=True)
        copy_out = self._copy(buffer, tile, tile_vars, bases, region_guards, "out", into_tile=False)
        peeled = peel_first_iteration(loop.replace(body=body), self.ranges)
        return seq(copy_in, peeled, copy_out)

    @staticmethod
    def _region_guards(accesses, box: set[Var], inner_vars: set[Var]):
        """The guards that bound the tile (the same for every access), or None when a guard
        mixes the tile's variables with the loop's own or reads memory."""
        found = None
        for _, guards in accesses:
            region = []
            for guard in guards:
                if guard is None or collect(guard, lambda n: isinstance(n, BufferLoad)):
                    return None
                used = _vars(guard)
                iterating = used & (inner_vars - box)
                if iterating and used & box:
                    return None
                if not iterating:
                    region.append(guard)
            if found is None:
                found = region
            elif region != found:
                return None
        return found or []

    def _copy(self, buffer, tile, tile_vars, bases, guards, suffix, *, into_tile: bool) -> Stmt:
        box = [v for v in tile_vars if v is not None]
        fresh = {v: Var(self._fresh(f"{v.name}_{suffix}"), v.dtype) for v in box}
        global_indices = tuple(
            base if v is None else simplify(base + fresh[v])
            for v, base in zip(tile_vars, bases, strict=True)
        )
        tile_indices = tuple(fresh[v] for v in box) or (
            IntImm(0, bases[0].dtype if bases else "int32"),
        )
        if into_tile:
            body = BufferStore(tile, BufferLoad(buffer, global_indices), tile_indices)
        else:
            body = BufferStore(buffer, BufferLoad(tile, tile_indices), global_indices)
        for guard in reversed(guards):
            body = IfThenElse(_substitute_vars(guard, fresh), body)
        for v, extent in reversed([(v, tile.shape[n]) for n, v in enumerate(box)]):
            body = For(fresh[v], IntImm(0, v.dtype), IntImm(extent, v.dtype), ForKind.SERIAL, body)
        return body


def _is_whole_local_tile(buffer: Buffer, tile_vars, bases, shape) -> bool:
    """Whether ``buffer`` is a non-global intermediate that the loop's accesses cover
    exactly, at indices ``(v_0, v_1, ...)``: then it is already what promotion would make.

    Such a buffer (a ``cache_write(..., "local")`` accumulator placed with
    ``reverse_compute_at`` and compacted to its tile by ``workbench.backends.common.compact``) is a
    fresh ``np.empty`` allocated inside the loops around it, so nothing else can alias it
    and LLVM keeps it in registers as it would keep the promoted copy.
    """
    if buffer.scope == "global" or None in tile_vars:
        return False
    if tuple(buffer.shape) != tuple(shape):
        return False
    return all(isinstance(b, IntImm) and b.value == 0 for b in bases)


def peel_first_iteration(loop: For, outer_ranges: dict | None = None) -> Stmt:
    """Run the first iteration of ``loop`` on its own when a guard in its body tests the
    loop's variable (a reduction's init, ``if k == 0``), so both copies lose the guard.

    LLVM keeps the promoted tile in registers only when the loop body stores to it on every
    path; the init branch inside the loop defeats that (measured: 4x64 tile, 51 GFLOP/s
    with the branch, 90-200 without). ``for k in range(K): if k == 0: init; update``
    becomes ``init; update (k = 0); for k in range(1, K): update``. Loops inside the peeled
    iteration are peeled the same way (a split reduction ``k_0 * 4 + k_1 == 0``), and a
    one-iteration loop is replaced by its body. ``outer_ranges`` (``{Var: (min, max)}``)
    bounds the variables of loops around ``loop``, so that a guard mixing them with the
    loop's own variable (``k_0 * 8 + k_1 == 0`` peeling ``k_1``) resolves in the rest.
    """
    return _Peeler(dict(outer_ranges or {})).visit(loop)


class _Peeler(IRMapper):
    def __init__(self, ranges: dict):
        self.ranges = ranges

    def visit_For(self, node: For) -> Stmt:
        from workbench.backends.common.lower import simplify_stmt
        from workbench.ir.functor import substitute

        guards = collect(node.body, lambda n: isinstance(n, IfThenElse))
        tested = any(node.loop_var in _vars(g.condition) for g in guards)
        constant = isinstance(node.min, IntImm) and isinstance(node.extent, IntImm)
        if not tested or not constant or node.kind is ForKind.PARALLEL:
            return node
        first = simplify_stmt(substitute(node.body, {node.loop_var: node.min}), self.ranges)
        if node.extent.value == 1:
            return self.visit(first)
        start = IntImm(node.min.value + 1, node.min.dtype)
        rest = node.replace(min=start, extent=IntImm(node.extent.value - 1, node.extent.dtype))
        return seq(self.visit(first), simplify_stmt(rest, self.ranges))


def _substitute_vars(expr: PrimExpr, mapping: dict[Var, Var]) -> PrimExpr:
    from workbench.ir.functor import substitute

    return substitute(expr, mapping)
