"""The explorer's controls: ipywidgets made from the operator and the schedule's state.

Controls hold no logic: each one, when used, calls one ``Explorer`` action (which calls the
public ``Schedule`` method). ``update_controls`` re-reads the state after every change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from workbench.ir.buffer import SCOPES
from workbench.schedule.legality import TABLE_ORDER
from workbench.schedule.trace import INSTRUCTIONS
from workbench.widgets.actions import (
    BLOCK_ARGUMENTS,
    LoopInfo,
    all_loops,
    block_arguments,
    block_buffers,
    divisors,
    loops_above,
)

if TYPE_CHECKING:
    from workbench.widgets.explorer import Explorer

TOGGLES = ("parallel", "vectorize", "unroll")
KIND_OF_TOGGLE = {"parallel": "parallel", "vectorize": "vectorized", "unroll": "unroll"}
CHECKING = "checking legality…"
KEY_HINT = (
    "<small class='wb-keys' style='color:#666'>keys in the loop list or the IR: ↑↓ select · "
    "⇧↑↓ move · 8s split by 8 · f fuse · p parallel · v vectorize · r unroll · u undo</small>"
)


def loop_label(info: LoopInfo) -> str:
    kind = "" if info.kind == "serial" else f"  {info.kind}"
    return f"{'  ' * info.depth}{info.name}  {info.extent}{kind}"


class Controls:
    """Every control of one explorer, wired to its actions."""

    def __init__(self, explorer: Explorer, targets: tuple[str, ...]):
        self.explorer = explorer
        layout = widgets.Layout(width="auto")
        self.block = widgets.Dropdown(description="block", layout=layout)
        self.loop = widgets.Select(description="loop", rows=7, layout=widgets.Layout(width="280px"))
        self.split = widgets.Dropdown(
            description="split by",
            options=[("-", None)],
            value=None,
            layout=widgets.Layout(width="180px"),
        )
        self.free_factor = widgets.BoundedIntText(
            value=3, min=2, max=1 << 20, description="free", layout=widgets.Layout(width="140px")
        )
        self.split_free = widgets.Button(
            description="split (free factor)",
            tooltip="any factor; a non-divisor adds a T.where guard",
        )
        self.order = widgets.TagsInput(
            allowed_tags=[],
            allow_duplicates=False,
            description="order",
            tooltip="drag a loop to reorder (sch.reorder)",
            layout=widgets.Layout(width="400px"),
        )
        self.order_note = widgets.HTML("")
        self.move_out = widgets.Button(
            description="▲ move out", tooltip="reorder with the loop above"
        )
        self.move_in = widgets.Button(
            description="▼ move in", tooltip="reorder with the loop below"
        )
        self.toggles = {
            name: widgets.ToggleButton(description=name, value=False) for name in TOGGLES
        }
        order = sorted(INSTRUCTIONS, key=lambda n: (TABLE_ORDER + (n,)).index(n))
        self.primitives = {
            name: widgets.Button(description=name, layout=widgets.Layout(width="auto"))
            for name in order
            if "loop" in INSTRUCTIONS[name].applies_to
        }
        self.block_primitives = {
            name: widgets.Button(description=name, layout=widgets.Layout(width="auto"))
            for name in order
            if "block" in INSTRUCTIONS[name].applies_to
        }
        self.target = widgets.Dropdown(
            description="target",
            options=list(targets),
            value=explorer.target.name,
            layout=widgets.Layout(width="160px"),
        )
        narrow = widgets.Layout(width="200px")
        self.at_loop = widgets.Dropdown(description="at loop", layout=narrow,
                                        tooltip="compute_at / reverse_compute_at / "
                                        "decompose_reduction: the target loop")
        self.read_buffer = widgets.Dropdown(description="read", layout=narrow,
                                            tooltip="cache_read: which buffer the block reads")
        self.write_buffer = widgets.Dropdown(description="write", layout=narrow,
                                             tooltip="cache_write / set_scope / "
                                             "transform_layout: which buffer it writes")
        self.scope = widgets.Dropdown(description="scope", options=list(SCOPES), value="local",
                                      layout=narrow)
        self.index_map = widgets.Text(value="", placeholder="lambda i, j: (j, i)",
                                      description="index map", layout=widgets.Layout(width="300px"))
        self.undo = widgets.Button(description="undo", icon="undo")
        self.jump = widgets.Dropdown(description="node", layout=widgets.Layout(width="220px"))
        self.diff_a = widgets.Dropdown(description="diff", layout=widgets.Layout(width="150px"))
        self.diff_b = widgets.Dropdown(description="with", layout=widgets.Layout(width="150px"))
        self.export = widgets.Button(description="export node", icon="download")
        self.checking = widgets.HTML("", layout=widgets.Layout(flex="0 0 auto"))
        self._applied = dict.fromkeys(TOGGLES, False)
        self._at_block: str | None = None
        self._updating = False
        self._wire()

    # --- wiring: each control calls one explorer action ---------------------------------

    def _wire(self) -> None:
        ex = self.explorer
        self.block.observe(self._on_block, names="value")
        self.loop.observe(self._on_loop, names="value")
        self.split.observe(self._on_split, names="value")
        self.split_free.on_click(
            lambda _: ex.split(self.loop.value, [None, self.free_factor.value])
        )
        self.order.observe(self._on_order, names="value")
        self.move_out.on_click(lambda _: self._move(-1))
        self.move_in.on_click(lambda _: self._move(+1))
        for name, toggle in self.toggles.items():
            toggle.observe(lambda change, name=name: self._on_toggle(name, change), names="value")
        for name, button in self.primitives.items():
            button.on_click(lambda _, name=name: ex.apply_default(name, loop=self.loop.value))
        for name, button in self.block_primitives.items():
            button.on_click(lambda _, name=name: self.apply_block(name))
        self.target.observe(
            lambda c: None if self._updating else ex.set_target(c["new"]), names="value"
        )
        self.undo.on_click(lambda _: ex.undo())
        self.jump.observe(self._on_jump, names="value")
        self.diff_a.observe(lambda _: None if self._updating else ex.show_diff(), names="value")
        self.diff_b.observe(lambda _: None if self._updating else ex.show_diff(), names="value")
        self.export.on_click(lambda _: ex.show_export())

    def block_call(self, primitive: str) -> tuple[tuple, dict]:
        """The arguments of block primitive ``primitive`` as the controls choose them."""
        return block_arguments(
            primitive,
            self.block.value,
            loop=self.at_loop.value,
            read=self.read_buffer.value or 0,
            write=self.write_buffer.value or 0,
            scope=self.scope.value,
            index_map=self.index_map.value,
        )

    def apply_block(self, primitive: str) -> bool:
        """A block primitive button: the arguments from the dropdowns (target loop, buffer,
        scope, index map) or, for one that takes none of them, the probe's defaults."""
        ex = self.explorer
        if primitive not in BLOCK_ARGUMENTS:
            return ex.apply_default(primitive, block=self.block.value)
        try:
            args, kwargs = self.block_call(primitive)
        except ValueError as err:
            ex.show_message(str(err))
            return False
        return ex.apply(primitive, *args, **kwargs)

    def _on_block(self, change) -> None:
        if not self._updating and change["new"]:
            self.explorer.select(block=change["new"])

    def _on_loop(self, change) -> None:
        if not self._updating and change["new"]:
            self.explorer.select(loop=change["new"])

    def _on_split(self, change) -> None:
        if self._updating or change["new"] is None:
            return
        self.explorer.split(self.loop.value, [None, change["new"]])

    def _on_toggle(self, name: str, change) -> None:
        if self._updating or not change["new"]:
            return
        getattr(self.explorer, name)(self.loop.value)

    def _on_jump(self, change) -> None:
        if not self._updating and change["new"] is not None:
            self.explorer.jump(change["new"])

    def _on_order(self, change) -> None:
        """A loop dragged to a new place: reorder the span of loops that moved."""
        if self._updating:
            return
        names = [value for _, value in self.loop.options]
        new = list(change["new"])
        if sorted(new) != sorted(names):
            self._show_order(names)
            self.order_note.value = (
                "<span style='color:#b35900'>drag the tags to reorder; a loop cannot be added "
                "or removed here</span>"
            )
            return
        moved = [i for i, (a, b) in enumerate(zip(new, names, strict=True)) if a != b]
        if not moved:
            return
        self.order_note.value = ""
        if not self.explorer.reorder(*new[moved[0] : moved[-1] + 1]):
            self._show_order(names)  # refused: the error is shown, the order is as it was

    def _show_order(self, names: list[str]) -> None:
        self._updating = True
        try:
            self.order.allowed_tags = list(names)
            self.order.value = list(names)
        finally:
            self._updating = False

    def _move(self, step: int) -> None:
        names = [value for _, value in self.loop.options]
        index = names.index(self.loop.value)
        other = index + step
        if 0 <= other < len(names):
            first, second = sorted((index, other))
            self.explorer.reorder(names[second], names[first])

    # --- state -> controls --------------------------------------------------------------

    def update_block_arguments(self, func, block: str, blocks: list[str]) -> None:
        """The block panel's choices for ``block``: every loop of the function, the
        outermost loop of the next block first chosen (where ``compute_at`` moves a
        producer; the previous block's for the last one), kept while the block stays
        selected; and the block's read and write buffers by index."""
        names = all_loops(func)
        reads, writes = block_buffers(func, block)
        same_block = self._at_block == block
        keep = self.at_loop.value if same_block else None
        self._at_block = block
        index = blocks.index(block)
        neighbours = blocks[index + 1:] + blocks[:index][::-1]
        preferred = next((loops[0].name for other in neighbours
                          if (loops := loops_above(func, other))), None)
        self.at_loop.options = names
        self.at_loop.value = (keep if keep in names else preferred if preferred in names
                              else names[0] if names else None)
        for box, names in ((self.read_buffer, reads), (self.write_buffer, writes)):
            keep = box.value if same_block else None
            box.options = [(f"{i}: {n}", i) for i, n in enumerate(names)]
            box.value = keep if keep is not None and keep < len(names) else (0 if names else None)

    def update(self, blocks: list[str], loops: list[LoopInfo], history) -> None:
        """Re-read the selection, the loops and the history from the explorer's state (no
        action fires while doing so). The primitive panel waits for ``set_legality``."""
        ex = self.explorer
        self._updating = True
        try:
            self.target.value = ex.target.name
            self.block.options = blocks
            self.block.value = ex.block
            self.loop.options = [(loop_label(info), info.name) for info in loops]
            self.loop.value = ex.loop
            self.order.allowed_tags = [info.name for info in loops]
            self.order.value = [info.name for info in loops]
            info = next((i for i in loops if i.name == ex.loop), None)
            extent = info.extent if info and info.extent else 0
            self.split.options = [("-", None)] + [(str(d), d) for d in divisors(extent)]
            self.split.value = None
            self.move_out.disabled = not loops or loops[0].name == ex.loop
            self.move_in.disabled = not loops or loops[-1].name == ex.loop
            for name, toggle in self.toggles.items():
                self._applied[name] = info is not None and info.kind == KIND_OF_TOGGLE[name]
                toggle.value = self._applied[name]
            nodes = [(f"[{n.id}] {n.label}", n.id) for n in history.nodes.values()]
            self.jump.options = nodes
            self.jump.value = history.current_id
            self.diff_a.options = nodes
            self.diff_b.options = nodes
            current = history.current
            self.diff_a.value = current.parent if current.parent is not None else current.id
            self.diff_b.value = current.id
            self.undo.disabled = current.parent is None
            self.update_block_arguments(current.func, ex.block, list(blocks))
        finally:
            self._updating = False

    def set_legality(self, legal, block_legal) -> None:
        """Enable the legal primitives and toggles, each disabled one with its reason.

        ``legal is None`` means the table is being computed (on a worker thread): every
        primitive is disabled with "checking legality…" until it arrives.
        """
        if legal is None and block_legal is None:
            self.checking.value = CHECKING
            for button in [*self.primitives.values(), *self.block_primitives.values()]:
                button.disabled, button.tooltip, button.button_style = True, CHECKING, ""
            for name, toggle in self.toggles.items():
                toggle.disabled = True
                toggle.tooltip = "applied; undo to remove it" if self._applied[name] else CHECKING
            return
        rows = {row.primitive: row for row in legal} if legal is not None else {}
        for name, toggle in self.toggles.items():
            row = rows.get(name)
            applied = self._applied[name]
            toggle.disabled = applied or row is None or not row.legal
            toggle.tooltip = (
                "applied; undo to remove it"
                if applied
                else ""
                if row is None or row.legal
                else row.reason
            )
        _set_buttons(self.primitives, rows, "a loop")
        _set_buttons(self.block_primitives, {r.primitive: r for r in block_legal or []}, "a block")
        self.checking.value = ""

    def box(self) -> widgets.Widget:
        """The left column: selection, loop edits, toggles, primitives, history controls."""
        return widgets.VBox(
            [
                self.target,
                self.block,
                self.loop,
                widgets.HTML(KEY_HINT),
                widgets.HBox([self.move_out, self.move_in]),
                self.order,
                self.order_note,
                widgets.HBox([self.split]),
                widgets.HBox([self.free_factor, self.split_free]),
                widgets.HBox(list(self.toggles.values())),
                widgets.HBox(  # one line of fixed height: "checking…" never moves a control
                    [
                        widgets.HTML(
                            "<b>primitives at the selected loop</b> (hover a disabled one: why)",
                            layout=widgets.Layout(flex="0 1 auto", min_width="0px"),
                        ),
                        self.checking,
                    ],
                    layout=widgets.Layout(height="28px", overflow="hidden",
                                          flex_flow="row nowrap"),
                ),
                widgets.Box(
                    list(self.primitives.values()), layout=widgets.Layout(flex_flow="row wrap")
                ),
                widgets.HTML("<b>primitives at the selected block</b> (arguments below)"),
                widgets.Box(
                    [self.at_loop, self.read_buffer, self.write_buffer, self.scope,
                     self.index_map],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                widgets.Box(
                    list(self.block_primitives.values()),
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                widgets.HBox([self.undo, self.export]),
                self.jump,
                widgets.HBox([self.diff_a, self.diff_b]),
            ],
            layout=widgets.Layout(width="420px"),
        )


def _set_buttons(buttons: dict, rows: dict, what: str) -> None:
    """Enable the legal primitives; a disabled one says why in its tooltip."""
    for name, button in buttons.items():
        row = rows.get(name)
        button.disabled = row is None or not row.legal
        button.tooltip = (
            f"not applicable to {what}"
            if row is None
            else f"{name}: legal here"
            if row.legal
            else row.reason
        )
        button.button_style = "" if button.disabled else "info"
