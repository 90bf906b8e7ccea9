"""PrimFunc: a tensor function over buffer parameters."""

from __future__ import annotations

from workbench.ir.buffer import Buffer
from workbench.ir.node import Node, ir_node
from workbench.ir.stmt import Block, BlockRealize, Stmt


@ir_node
class PrimFunc(Node):
    """A tensor function. ``body`` is always a ``BlockRealize`` of the root block ``"root"``,
    whose ``alloc_buffers`` hold the function's intermediate buffers (as in TVM)."""

    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    attrs: tuple[tuple[str, object], ...] = ()

    __hash__ = Node.__hash__

    @property
    def root_block(self) -> Block:
        assert isinstance(self.body, BlockRealize)
        return self.body.block

    def param(self, name: str) -> Buffer:
        for buf in self.params:
            if buf.name == name:
                return buf
        raise KeyError(f"{self.name} has no parameter named {name!r}")

    def same_as(self, other: PrimFunc) -> bool:
        """Structural equality (names of variables and buffers included)."""
        return self == other

    def script(self) -> str:
        """The function as TVMScript-like text, parseable by ``wb.from_source``."""
        from workbench.script.printer import script

        return script(self)

    def show(self) -> None:
        """Print the script, syntax-highlighted where the terminal or notebook allows."""
        from workbench.script.printer import show

        show(self)

    def _repr_html_(self) -> str:
        from workbench.script.printer import script_html

        return script_html(self)
