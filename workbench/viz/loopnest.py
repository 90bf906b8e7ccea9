"""The loop nest as a drawing (graphviz) and as indented text.

One node per loop, block and buffer:

- **loops** show their variable, extent and kind; each kind has its own style
  (``KIND_STYLES``): serial plain, parallel blue and bold, vectorized green with a double
  border, unrolled orange and dashed, bound (thread binding) violet with the thread tag;
- **blocks** show their name, reads and writes; a block that writes an intermediate buffer
  (a ``cache_read``/``cache_write`` stage, a producer kept by ``compute_at``) is a *stage*
  with a dashed border and the scope it fills;
- **buffers** show shape, dtype, scope and size; allocated buffers hang from the block that
  allocates them.

Nesting edges (solid) go from each loop or block to what its body runs, in program order,
so a stage moved by ``compute_at`` sits under the loop where it now runs. Data edges
(dashed, not constraining the layout) go from a buffer to the blocks that read it (blue)
and from a block to the buffers it writes (red).

Example
-------
>>> from workbench import ops
>>> g = loop_nest_graph(ops.matmul(8, 8, 8))
>>> 'loop_k [label="k\\\\n8 · serial"' in g.source
True
"""

from __future__ import annotations

import html as html_module
import re
import shutil
from dataclasses import dataclass

from workbench.ir.buffer import Buffer
from workbench.ir.function import PrimFunc
from workbench.ir.names import fresh_name
from workbench.ir.regions import region_text
from workbench.ir.stmt import (
    BlockRealize,
    For,
    ForKind,
    IfThenElse,
    SeqStmt,
    Stmt,
)

KIND_NAMES = {ForKind.SERIAL: "serial", ForKind.PARALLEL: "parallel",
              ForKind.VECTORIZED: "vectorized", ForKind.UNROLLED: "unrolled",
              ForKind.THREAD_BINDING: "bound"}
"""The name each loop kind is shown with."""

KIND_STYLES = {
    "serial": {"shape": "box", "style": "rounded"},
    "parallel": {"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#cfe3ff",
                 "color": "#1f5fbf"},
    "vectorized": {"shape": "box", "style": "rounded,filled", "fillcolor": "#d7f5dd",
                   "color": "#2e8b57", "peripheries": "2"},
    "unrolled": {"shape": "box", "style": "rounded,filled,dashed", "fillcolor": "#ffe3c2",
                 "color": "#c06000"},
    "bound": {"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#ead7ff",
              "color": "#6a3fb5"},
}
"""Graphviz attributes of a loop node, by kind."""

NL = "\\n"
"""A line break inside a DOT label (the two characters backslash and n)."""

BLOCK_STYLE = {"shape": "box", "style": "filled", "fillcolor": "#fff8dc"}
STAGE_STYLE = {"shape": "box", "style": "filled,dashed", "fillcolor": "#fdebd0"}
BUFFER_STYLES = {"global": {"shape": "cylinder", "style": "filled", "fillcolor": "#eeeeee"},
                 "shared": {"shape": "cylinder", "style": "filled", "fillcolor": "#ffd9e8"},
                 "local": {"shape": "cylinder", "style": "filled", "fillcolor": "#e0f7fa"}}
READ_EDGE = {"style": "dashed", "color": "#1f5fbf", "constraint": "false", "arrowsize": "0.6"}
WRITE_EDGE = {"style": "dashed", "color": "#c0392b", "constraint": "false", "arrowsize": "0.6"}
ALLOC_EDGE = {"style": "dotted", "color": "#888888", "arrowhead": "none"}


def format_bytes(n: int) -> str:
    """``1536 -> '1.5 KiB'``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _extent_text(loop: For) -> str:
    from workbench.ir.expr_text import expr_text

    return expr_text(loop.extent)


@dataclass
class _Item:
    """One node of the nest: a loop or a block, with its children in program order."""

    kind: str  # "loop" | "block" | "func"
    node_id: str
    node: object
    children: list


class _NestBuilder:
    def __init__(self, func: PrimFunc):
        self.func = func
        self.used_ids: set[str] = set()
        self.allocs: list[tuple[str, Buffer]] = []  # (allocating node id, buffer)
        self.blocks: list[_Item] = []

    def unique(self, prefix: str, name: str) -> str:
        base = f"{prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
        return fresh_name(base, self.used_ids)

    def build(self) -> _Item:
        root = self.func.root_block
        item = _Item("func", self.unique("func", self.func.name), self.func, [])
        for buffer in root.alloc_buffers:
            self.allocs.append((item.node_id, buffer))
        item.children = self.walk(root.body)
        return item

    def walk(self, stmt: Stmt | None) -> list[_Item]:
        if stmt is None:
            return []
        if isinstance(stmt, SeqStmt):
            return [child for s in stmt.stmts for child in self.walk(s)]
        if isinstance(stmt, IfThenElse):
            return self.walk(stmt.then_case) + self.walk(stmt.else_case)
        if isinstance(stmt, For):
            item = _Item("loop", self.unique("loop", stmt.loop_var.name), stmt, [])
            item.children = self.walk(stmt.body)
            return [item]
        if isinstance(stmt, BlockRealize):
            block = stmt.block
            item = _Item("block", self.unique("block", block.name), block, [])
            for buffer in block.alloc_buffers:
                self.allocs.append((item.node_id, buffer))
            self.blocks.append(item)
            item.children = self.walk(block.init) + self.walk(block.body)
            return [item]
        return []


def _loop_label(loop: For) -> tuple[str, str]:
    kind = KIND_NAMES[loop.kind]
    label = f"{loop.loop_var.name}{NL}{_extent_text(loop)} · {kind}"
    if loop.thread_binding:
        label += f" {loop.thread_binding}"
    return kind, label


def _intermediates(func: PrimFunc) -> set[Buffer]:
    from workbench.ir.functor import collect

    blocks = collect(func.body, lambda n: isinstance(n, BlockRealize))
    return {buf for realize in blocks for buf in realize.block.alloc_buffers}


def _block_label(block, intermediates: set[Buffer]) -> tuple[bool, str]:
    staged = [r.buffer for r in block.writes if r.buffer in intermediates]
    lines = [f"block {block.name}"]
    if staged:
        lines[0] += "  (stage → " + ", ".join(f"{b.name} {b.scope}" for b in staged) + ")"
    if block.reads:
        lines.append("reads " + ", ".join(region_text(r) for r in block.reads))
    if block.writes:
        lines.append("writes " + ", ".join(region_text(r) for r in block.writes))
    return bool(staged), NL.join(lines)


def _buffer_label(buffer: Buffer) -> str:
    shape = "×".join(str(n) for n in buffer.shape) or "scalar"
    size = format_bytes(buffer.nbytes)
    return f"{buffer.name}{NL}{shape} {buffer.dtype}{NL}{buffer.scope} · {size}"


def _buffers(func: PrimFunc, allocs: list[tuple[str, Buffer]]) -> list[Buffer]:
    seen: list[Buffer] = list(func.params)
    for _, buffer in allocs:
        if buffer not in seen:
            seen.append(buffer)
    return seen


def loop_nest_graph(obj, *, data_edges: bool = True, rankdir: str = "TB"):
    """The loop nest of a PrimFunc or a Schedule's current function as a graphviz Digraph.

    Parameters
    ----------
    obj : PrimFunc or Schedule
        What to draw.
    data_edges : bool
        Draw buffers and the read/write edges between buffers and blocks.
    rankdir : str
        Graphviz layout direction (``"TB"`` top to bottom, ``"LR"`` left to right).

    Returns
    -------
    graphviz.Digraph
        Node ids: ``func_<name>``, ``loop_<var>``, ``block_<name>``, ``buf_<name>`` (a
        repeated name gets ``_2``, ``_3``...). ``.source`` is the DOT text.

    Example
    -------
    >>> import workbench as wb
    >>> sch = wb.Schedule(wb.ops.matmul(64, 64, 64))
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> sch.parallel(i)
    >>> 'fillcolor="#cfe3ff"' in loop_nest_graph(sch).source
    True
    """
    import graphviz

    from workbench.viz.html import _function_of

    func = _function_of(obj)
    builder = _NestBuilder(func)
    root = builder.build()
    intermediates = _intermediates(func)

    graph = graphviz.Digraph(name=func.name, graph_attr={"rankdir": rankdir, "ordering": "out",
                                                         "fontsize": "11"},
                             node_attr={"fontname": "monospace", "fontsize": "10"},
                             edge_attr={"arrowsize": "0.7"})
    graph.node(root.node_id, label=f"{func.name}", shape="plaintext", fontsize="12")

    def add(item: _Item, parent: _Item) -> None:
        if item.kind == "loop":
            kind, label = _loop_label(item.node)
            graph.node(item.node_id, label=label, **KIND_STYLES[kind])
        else:
            staged, label = _block_label(item.node, intermediates)
            graph.node(item.node_id, label=label, **(STAGE_STYLE if staged else BLOCK_STYLE))
        graph.edge(parent.node_id, item.node_id)
        for child in item.children:
            add(child, item)

    for child in root.children:
        add(child, root)

    if data_edges:
        ids = {}
        for buffer in _buffers(func, builder.allocs):
            ids[buffer] = builder.unique("buf", buffer.name)
            graph.node(ids[buffer], label=_buffer_label(buffer),
                       **BUFFER_STYLES.get(buffer.scope, BUFFER_STYLES["global"]))
        for owner, buffer in builder.allocs:
            if owner != root.node_id:
                graph.edge(owner, ids[buffer], label="alloc", fontsize="8", **ALLOC_EDGE)
        for item in builder.blocks:
            block = item.node
            for region in block.reads:
                if region.buffer in ids:
                    graph.edge(ids[region.buffer], item.node_id, **READ_EDGE)
            for region in block.writes:
                if region.buffer in ids:
                    graph.edge(item.node_id, ids[region.buffer], **WRITE_EDGE)
    return graph


def loop_nest_text(obj) -> str:
    """The loop nest as indented text: one line per loop (extent, kind) and block
    (reads, writes), then the buffers.

    Example
    -------
    >>> from workbench import ops
    >>> print(loop_nest_text(ops.matmul(8, 8, 8)))
    matmul
      i  8  serial
        j  8  serial
          k  8  serial
            block C  reads C[vi, vj], A[vi, vk], B[vk, vj]  writes C[vi, vj]
    buffers:
      A  8×8 float32  global  256 B
      B  8×8 float32  global  256 B
      C  8×8 float32  global  256 B
    """
    from workbench.viz.html import _function_of

    func = _function_of(obj)
    builder = _NestBuilder(func)
    root = builder.build()
    intermediates = _intermediates(func)
    lines = [func.name]

    def add(item: _Item, depth: int) -> None:
        pad = "  " * depth
        if item.kind == "loop":
            loop = item.node
            kind = KIND_NAMES[loop.kind]
            bound = f" {loop.thread_binding}" if loop.thread_binding else ""
            lines.append(f"{pad}{loop.loop_var.name}  {_extent_text(loop)}  {kind}{bound}")
        else:
            _, label = _block_label(item.node, intermediates)
            lines.append(pad + "  ".join(label.split(NL)))
        for child in item.children:
            add(child, depth + 1)

    for child in root.children:
        add(child, 1)
    lines.append("buffers:")
    for buffer in _buffers(func, builder.allocs):
        shape = "×".join(str(n) for n in buffer.shape) or "scalar"
        lines.append(f"  {buffer.name}  {shape} {buffer.dtype}  {buffer.scope}  "
                     f"{format_bytes(buffer.nbytes)}")
    return "\n".join(lines)


def dot_available() -> bool:
    """Whether Graphviz's ``dot`` program is installed (needed for SVG, not for DOT text)."""
    return shutil.which("dot") is not None


class LoopNestView:
    """The loop-nest drawing for a notebook (SVG when ``dot`` is installed, else the text),
    and the text in a terminal.

    Attributes
    ----------
    graph : graphviz.Digraph
    source : str
        The DOT text.
    text : str
        ``loop_nest_text`` of the same function.
    """

    def __init__(self, obj, **options):
        self.graph = loop_nest_graph(obj, **options)
        self.text = loop_nest_text(obj)

    @property
    def source(self) -> str:
        return self.graph.source

    def svg(self) -> str | None:
        """The drawing as SVG text (at most ``MAX_WIDTH_PT`` wide), or None without ``dot``."""
        if not dot_available():
            return None
        return fit_svg(self.graph.pipe(format="svg", encoding="utf-8"))

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        svg = self.svg()
        bundle = {"text/plain": self.text}
        if svg is not None:
            bundle["image/svg+xml"] = svg
        else:
            bundle["text/html"] = f"<pre>{html_module.escape(self.text)}</pre>"
        return bundle

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


MAX_WIDTH_PT = 680
"""Widest drawing shown at its natural size: a notebook's output area (and the explorer's
tab) is about this wide, and a wider SVG was cut off on the right."""


def fit_svg(svg: str, max_width_pt: float = MAX_WIDTH_PT) -> str:
    """``svg`` scaled down (its ``viewBox`` kept) when wider than ``max_width_pt``.

    Example
    -------
    >>> fit_svg('<svg width="1360pt" height="100pt" viewBox="0 0 1360 100">', 680)
    '<svg width="680pt" height="50pt" viewBox="0 0 1360 100">'
    """
    import re

    match = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if match is None or float(match.group(1)) <= max_width_pt:
        return svg
    width, height = float(match.group(1)), float(match.group(2))
    scale = max_width_pt / width
    return (svg[:match.start()] + f'<svg width="{width * scale:g}pt" '
            f'height="{height * scale:g}pt"' + svg[match.end():])


def loop_nest(obj, **options) -> LoopNestView:
    """A ``LoopNestView`` of a PrimFunc or a Schedule (see ``loop_nest_graph``)."""
    return LoopNestView(obj, **options)
