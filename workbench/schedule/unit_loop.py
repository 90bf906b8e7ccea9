"""``add_unit_loop``: wrap a loop or a block in a new loop of extent 1 (TVM's ``add_unit_loop``).

Useful to give a block with no loops (a 0-d computation, or a block ``compute_at`` left
without loops) a loop that other primitives (``blockize``, ``compute_at``, annotations)
can take.
"""

from __future__ import annotations

from workbench.ir import BlockRealize, For, ForKind, IntImm, PrimFunc, Var
from workbench.ir.functor import IRMapper
from workbench.schedule.errors_blockize import UnitLoopAboveRootError
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.trace import InstructionKind, register_instruction
from workbench.schedule.tree import find_block, find_loop, fresh_name, replace_loop, used_names


def _unit_loop(name: str, body) -> For:
    return For(Var(name), IntImm(0), IntImm(1), ForKind.SERIAL, body)


class _WrapRealize(IRMapper):
    def __init__(self, block: str, loop_name: str):
        self.block = block
        self.loop_name = loop_name

    def visit_BlockRealize(self, node: BlockRealize):
        if node.block.name == self.block:
            return _unit_loop(self.loop_name, node)
        return self.generic_visit(node)

    def visit_BufferStore(self, node):
        return node


def add_unit_loop(func: PrimFunc, name: str, *, target: str) -> tuple[PrimFunc, str]:
    """Put a new ``for u in range(1)`` directly above loop or block ``name``.

    Before / after (``add_unit_loop(func, "C", target="block")``)::

        with T.block("C"):                 for u in range(1):
            ...                                with T.block("C"):
                                                   ...

    On a loop the new loop goes above that loop. Returns the new function and the new
    loop's name (``u``, or ``u_1``... when taken).

    Raises ``LoopNotFoundError`` / ``BlockNotFoundError``, ``UnitLoopAboveRootError``.
    """
    primitive = "add_unit_loop"
    new_name = fresh_name("u", used_names(func))
    if target == "loop":
        find_loop(func, name, primitive)
        return replace_loop(func, name, lambda loop: _unit_loop(new_name, loop)), new_name
    block, _ = find_block(func, name, primitive)
    if block is func.root_block:
        raise UnitLoopAboveRootError(primitive, block, func)
    body = _WrapRealize(name, new_name).visit(func.body)
    return func.replace(body=body), new_name


class UnitLoopMethods:
    """The ``add_unit_loop`` method of ``Schedule``."""

    def add_unit_loop(self, block_or_loop: BlockRV | LoopRV) -> LoopRV:
        """Add a loop of extent 1 above a loop or a block; returns it.

        Example
        -------
        >>> u = sch.add_unit_loop(sch.get_block("C"))
        """
        kind, name = self._resolve(block_or_loop, "block_or_loop", "add_unit_loop", "block_or_loop")
        new_func, loop = add_unit_loop(self.mod, name, target=kind)
        (handle,) = self._commit("add_unit_loop", (block_or_loop,), {}, new_func, [("loop", loop)])
        return handle


def _probe_add_unit_loop(sch, handle):
    return (handle,), {}


register_instruction(
    InstructionKind(
        "add_unit_loop",
        ("block_or_loop",),
        outputs="loop",
        applies_to=("loop", "block"),
        probe=_probe_add_unit_loop,
    )
)
