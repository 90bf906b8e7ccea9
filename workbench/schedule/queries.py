"""Queries: find blocks and loops by structure. They never change the function.

Pure functions returning names (block names, loop-variable names); the ``Schedule``
methods turn the names into handles and record the query in the trace, so a replayed
trace re-derives the same handles.
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.scope import scope_of
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import child_blocks, enclosing_loops, find_block, find_loop


def get_block(func: PrimFunc, name: str) -> str:
    """Check that block ``name`` exists and return its name.

    Raises ``BlockNotFoundError`` (with close names as suggestions) otherwise.

    Example
    -------
    >>> get_block(matmul, "C")
    'C'
    """
    find_block(func, name, "get_block")
    return name


def get_loops(func: PrimFunc, block: str) -> list[str]:
    """The loops around ``block``, outermost first, up to the enclosing block.

    Example
    -------
    >>> get_loops(matmul, "C")
    ['i', 'j', 'k']
    """
    _, ancestors = find_block(func, block, "get_loops")
    return [loop.loop_var.name for loop in enclosing_loops(ancestors)]


def get_child_blocks(func: PrimFunc, name: str, *, target: str = "block") -> list[str]:
    """Blocks directly under a block or a loop (not inside another block), in program order.

    Example
    -------
    >>> get_child_blocks(add_relu, "root")
    ['T_add', 'C']
    """
    if target == "loop":
        node, _ = find_loop(func, name, "get_child_blocks")
    else:
        node, _ = find_block(func, name, "get_child_blocks")
    return [block.name for block in child_blocks(node)]


def get_producers(func: PrimFunc, block: str) -> list[str]:
    """Blocks of the same scope that ``block`` reads from: the sources of the read-after-write
    edges into it (``workbench.schedule.scope``, TVM's ``GetProducers``), in program order.

    Example
    -------
    >>> get_producers(add_relu, "C")
    ['T_add']
    """
    target, _ = find_block(func, block, "get_producers")
    if target is func.root_block:  # the root block has no scope around it
        return []
    return scope_of(func, block, "get_producers").producers(block)


def get_consumers(func: PrimFunc, block: str) -> list[str]:
    """Blocks of the same scope that read what ``block`` writes: the destinations of the
    read-after-write edges out of it (TVM's ``GetConsumers``), in program order.

    Example
    -------
    >>> get_consumers(add_relu, "T_add")
    ['C']
    """
    target, _ = find_block(func, block, "get_consumers")
    if target is func.root_block:
        return []
    return scope_of(func, block, "get_consumers").consumers(block)


# ---------------------------------------------------------------------------------------
# Schedule methods: resolve handles, call the pure function, record the step
# ---------------------------------------------------------------------------------------


class QueryMethods:
    """The query methods of ``Schedule``.

    Mixed into ``Schedule``, which provides ``mod``, ``_name_of``, ``_resolve`` and
    ``_commit`` (see ``workbench/schedule/README.md``).
    """

    def get_block(self, name: str) -> BlockRV:
        """A handle to the block called ``name``.

        Raises ``BlockNotFoundError`` (with "did you mean ...") for an unknown name.

        Example
        -------
        >>> sch.get_block("C")
        BlockRV(b0: C)
        """
        if not isinstance(name, str):
            raise InvalidArgumentError("get_block", "name", "a block name (str)", name)
        found = get_block(self.mod, name)
        return self._commit("get_block", (), {"name": name}, self.mod, [("block", found)])[0]

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """Handles to the loops around ``block``, outermost first.

        Example
        -------
        >>> i, j, k = sch.get_loops(sch.get_block("C"))
        """
        name = self._name_of(block, "get_loops", "block", "block")
        found = get_loops(self.mod, name)
        return self._commit("get_loops", (block,), {}, self.mod, [("loop", n) for n in found])

    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        """Handles to the blocks directly under a block or loop, in program order.

        Example
        -------
        >>> t_add, relu = sch.get_child_blocks(sch.get_block("root"))
        """
        kind, name = self._resolve(
            block_or_loop, "block_or_loop", "get_child_blocks", "block_or_loop"
        )
        found = get_child_blocks(self.mod, name, target=kind)
        return self._commit(
            "get_child_blocks", (block_or_loop,), {}, self.mod, [("block", n) for n in found]
        )

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """Handles to the blocks of the same scope that write what ``block`` reads.

        Example
        -------
        >>> sch.get_producers(sch.get_block("C"))
        [BlockRV(b1: T_add)]
        """
        name = self._name_of(block, "get_producers", "block", "block")
        found = get_producers(self.mod, name)
        return self._commit("get_producers", (block,), {}, self.mod, [("block", n) for n in found])

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """Handles to the blocks of the same scope that read what ``block`` writes.

        Example
        -------
        >>> sch.get_consumers(sch.get_block("T_add"))
        [BlockRV(b1: C)]
        """
        name = self._name_of(block, "get_consumers", "block", "block")
        found = get_consumers(self.mod, name)
        return self._commit("get_consumers", (block,), {}, self.mod, [("block", n) for n in found])


# ---------------------------------------------------------------------------------------
# Trace registration
# ---------------------------------------------------------------------------------------

NAME = AttrSpec("name", lambda v: isinstance(v, str), "a string", positional=True)

register_instruction(InstructionKind("get_block", (), (NAME,), outputs="block"))
register_instruction(InstructionKind("get_loops", ("block",), outputs="loops"))
register_instruction(InstructionKind("get_child_blocks", ("block_or_loop",), outputs="blocks"))
register_instruction(InstructionKind("get_producers", ("block",), outputs="blocks"))
register_instruction(InstructionKind("get_consumers", ("block",), outputs="blocks"))
