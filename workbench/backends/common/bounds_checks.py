"""The bounds-checked debug build: ``wb.build(func, target=..., debug=True)``.

Before lowering, every buffer index that ``workbench.ir.verify`` cannot prove inside its
buffer (with the loop and block domains and the guards around the access) is wrapped in a
``Call("bounds_check", (index, extent, check_id, v0, v1, ...))``. The code generators
print it as ``rt.checked_index(index, extent, check_id, (v0, v1, ...))``, which returns the
index or raises ``IndexError(check_id, index, values)``; ``v0, v1...`` are the variables
the original index used (block iteration variables, or loops in opaque blocks), so after
lowering they carry the values the iteration variables had. ``Kernel`` turns that
``IndexError`` into a ``KernelBoundsError`` with the table made here::

    block 'B': A[vi + 1] reads index 128 of dimension 0 of 'A', out of range 0..127
    (vi=127)

Accesses proven in bounds get no check, so a debug kernel of a well-tiled schedule costs
little. Debug builds are separate kernels (``debug`` is part of the cache key).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.ir import BufferLoad, BufferStore, Call, IntImm, PrimFunc, Var
from workbench.ir.functor import IRMapper, collect
from workbench.ir.verify import access_text, accesses, index_in_bounds

CHECK_OP = "bounds_check"


@dataclass(frozen=True)
class BoundsCheck:
    """What one runtime check guards: one dimension of one access."""

    check_id: int
    block: str | None
    buffer: str
    access: str
    verb: str
    dim: int
    extent: int
    var_names: tuple[str, ...]


class KernelBoundsError(IndexError):
    """A debug kernel (``debug=True``) found an index outside its buffer at run time.

    Attributes: ``block``, ``buffer``, ``access`` (the DSL text, e.g. ``A[vi + 1]``),
    ``dim``, ``index`` (the value) and ``values`` (``{variable name: value}``).
    """

    def __init__(self, check: BoundsCheck, index: int, values: tuple):
        self.block = check.block
        self.buffer = check.buffer
        self.access = check.access
        self.dim = check.dim
        self.index = _signed(index)
        self.values = {n: _signed(v) for n, v in zip(check.var_names, values, strict=False)}
        where = f"block {check.block!r}: " if check.block else ""
        at = ", ".join(f"{name}={value}" for name, value in self.values.items())
        super().__init__(
            f"{where}{check.access} {check.verb} index {self.index} of dimension {check.dim} "
            f"of {check.buffer!r}, out of range 0..{check.extent - 1}"
            + (f" ({at})" if at else "")
        )


def _signed(value) -> int:
    value = int(value)
    return value - 2**64 if value >= 2**63 else value  # an unsigned wrap-around


def add_bounds_checks(func: PrimFunc) -> tuple[PrimFunc, tuple[BoundsCheck, ...]]:
    """``func`` with every index not proven in bounds wrapped in a ``bounds_check`` call,
    and the table of the checks (``check_id`` is the position in it)."""
    plan: dict[int, dict[int, BoundsCheck]] = {}
    table: list[BoundsCheck] = []
    for access in accesses(func):
        node = access.node
        for dim, (index, extent) in enumerate(zip(node.indices, node.buffer.shape,
                                                  strict=True)):
            if index_in_bounds(index, extent, access.ranges):
                continue
            if dim in plan.get(id(node), {}):
                continue
            names = tuple(dict.fromkeys(
                v.name for v in collect(index, lambda n: isinstance(n, Var))))
            verb = "writes" if isinstance(node, BufferStore) else "reads"
            check = BoundsCheck(len(table), access.block, node.buffer.name, access_text(node),
                                verb, dim, extent, names)
            table.append(check)
            plan.setdefault(id(node), {})[dim] = check
    if not table:
        return func, ()
    return _Instrument(plan).visit(func), tuple(table)


def has_bounds_checks(node) -> bool:
    """Whether ``node`` contains a ``bounds_check`` call."""
    return bool(collect(node, lambda n: isinstance(n, Call) and n.op == CHECK_OP))


class _Instrument(IRMapper):
    def __init__(self, plan: dict):
        self.plan = plan

    def visit_BufferLoad(self, node: BufferLoad):
        return self._wrap(node, self.generic_visit(node))

    def visit_BufferStore(self, node: BufferStore):
        return self._wrap(node, self.generic_visit(node))

    def _wrap(self, original, node):
        checks = self.plan.get(id(original))
        if not checks:
            return node
        indices = list(node.indices)
        for dim, check in checks.items():
            index = indices[dim]
            variables = tuple(dict.fromkeys(
                v for v in collect(original.indices[dim], lambda n: isinstance(n, Var))))
            indices[dim] = Call(CHECK_OP, (index, IntImm(check.extent, index.dtype),
                                           IntImm(check.check_id), *variables), index.dtype)
        return node.replace(indices=tuple(indices))


def reraise_bounds_error(error: IndexError, table: tuple[BoundsCheck, ...]) -> None:
    """Raise the ``KernelBoundsError`` that ``error`` (from ``rt.checked_index``) stands for;
    return when ``error`` is some other IndexError."""
    args = error.args
    if len(args) != 3 or not isinstance(args[2], tuple):
        return
    try:
        check = table[int(args[0])]
    except (IndexError, TypeError, ValueError):
        return
    raise KernelBoundsError(check, args[1], args[2]) from None
