"""Layout chains folded into the index maps of the kernels that read them (``fold_views``).

In a transformer's attention the projections' outputs reach ``sdpa`` through data movement
only: GPT-2 slices the fused QKV projection in three, views each third as
``(B, T, H, D)`` and transposes it to ``(B, H, T, D)``; Llama repeats its key/value heads
for grouped-query attention with ``reshape -> broadcast_to -> reshape``; every model
transposes the attention's output back to ``(B, T, H, D)``. Each ``slice``, ``transpose``
and ``broadcast_to`` was a kernel copying the whole tensor (~40% of GPT-2's time at batch
16). The attention kernel can read the projection's output where it lies instead:

- ``fold_views``: an input of a *reader* node (``READERS``) produced by a chain of
  ``LAYOUT`` ops is replaced by the chain's source; the chain is recorded on the reader as
  ``attrs["views"] = [[position, [[op, attrs], ...]], ...]`` (source first). A ``reshape``
  right at the source is kept out of the chain (a reshape is a view, free).
- the reader's output read only by a ``transpose`` is written transposed: the transpose's
  node becomes the reader with ``attrs["out_perm"]``.

``workbench.graph.ops.evaluate`` applies both attributes (the interpreter's semantics);
``workbench.graph.lower_layout.lower_viewed`` turns them into the kernel's index maps (the
loads of a viewed input read the source at the composed map of the chain; the output's
stores go to the transposed position). The layout nodes left without readers are removed.
"""

from __future__ import annotations

from workbench.graph.ir import Graph, Node
from workbench.graph.passes.dce import eliminate_dead_code

READERS = ("sdpa",)
"""Ops whose kernels take index-mapped inputs and output (4-D ``sdpa``: the library
operator's parameters are the node's values in their own shapes)."""
FOLDED = 3
"""Inputs of a reader that may be folded: ``q, k, v`` (an ``sdpa`` mask, its fourth input,
is viewed in grouped axes by the lowering, so it keeps its own layout)."""
LAYOUT = ("transpose", "slice", "select", "reshape", "broadcast_to")
"""Layout ops folded (each has an index map: ``lower_layout.step_map``)."""


def _is_reader(graph: Graph, node: Node) -> bool:
    if node.op not in READERS:
        return False
    views = dict((p, steps) for p, steps in node.attrs.get("views", ()))
    shapes = [graph.type_of(name).shape for p, name in enumerate(node.inputs[:FOLDED])
              if p not in views]
    return all(len(s) == 4 for s in shapes) and len(node.type.shape) == 4


def _chain(graph: Graph, name: str) -> tuple[str, list[Node]]:
    """(source, the layout nodes from it to ``name``, source first)."""
    nodes: list[Node] = []
    producer = graph.producer(name)
    while producer is not None and producer.op in LAYOUT:
        nodes.append(producer)
        producer = graph.producer(producer.inputs[0])
    nodes.reverse()
    while nodes and nodes[0].op == "reshape":  # the source's own view: free already
        nodes.pop(0)
    return (nodes[0].inputs[0], nodes) if nodes else (name, [])


def _fold_inputs(graph: Graph, node: Node) -> Node:
    inputs = list(node.inputs)
    views = {p: list(steps) for p, steps in node.attrs.get("views", ())}
    for position, name in enumerate(node.inputs[:FOLDED]):
        source, nodes = _chain(graph, name)
        if not nodes:
            continue
        steps = [[n.op, dict(n.attrs)] for n in nodes]
        views[position] = steps + views.get(position, [])
        inputs[position] = source
    if inputs == list(node.inputs):
        return node
    attrs = {**node.attrs, "views": [[p, views[p]] for p in sorted(views)]}
    return node.replace(inputs=tuple(inputs), attrs=attrs)


def fold_views(graph: Graph) -> Graph:
    """``graph`` with layout chains folded into the readers' ``views``/``out_perm``.

    Example
    -------
    >>> from workbench.graph.builder import GraphBuilder
    >>> from workbench.graph.ir import TensorType
    >>> b = GraphBuilder()
    >>> qkv = b.input("qkv", TensorType((1, 8, 3 * 2 * 4)))
    >>> heads = [b.node("transpose", [b.node("reshape", [b.node("slice", [qkv], dict(
    ...     axis=2, start=8 * i, stop=8 * i + 8))], dict(shape=[1, 8, 2, 4]))],
    ...     dict(perm=[0, 2, 1, 3])) for i in range(3)]
    >>> out = b.node("transpose", [b.node("sdpa", heads, dict(causal=True))],
    ...              dict(perm=[0, 2, 1, 3]))
    >>> g = fold_views(b.finish([out]))
    >>> [(n.name, n.op, n.inputs) for n in g.nodes], g.outputs   # named after the attention
    ([('sdpa', 'sdpa', ('qkv', 'qkv', 'qkv'))], ('sdpa',))
    >>> g.nodes[0].attrs["out_perm"], g.nodes[0].type.shape
    ([0, 2, 1, 3], (1, 8, 2, 4))
    """
    nodes = [_fold_inputs(graph, n) if _is_reader(graph, n) else n for n in graph.nodes]
    graph = eliminate_dead_code(graph.replace(nodes=tuple(nodes)))
    readers = {n.name: n for n in graph.nodes if n.op in READERS and "out_perm" not in n.attrs
               and len(n.type.shape) == 4}
    consumers = graph.consumers()
    moved: dict[str, Node] = {}  # reader name -> the reader producing its transpose's value
    renamed: dict[str, str] = {}  # the transpose's value -> the reader's name (the kernel's)
    for node in graph.nodes:
        reader = readers.get(node.inputs[0]) if node.op == "transpose" else None
        if reader is None or reader.name in graph.outputs or \
                [c.name for c in consumers.get(reader.name, [])] != [node.name]:
            continue
        out_perm = [int(p) for p in node.attrs["perm"]]
        moved[reader.name] = reader.replace(type=node.type,
                                            attrs={**reader.attrs, "out_perm": out_perm})
        renamed[node.name] = reader.name
    if not moved:
        return graph
    nodes = [moved.get(n.name, n) for n in graph.nodes if n.name not in renamed]
    return graph.replace(nodes=tuple(nodes)).renamed_uses(renamed)


def views_layout(graph: Graph, target="numpy") -> Graph:
    """The numpy and cuda targets' ``graph_layout`` hook: ``fold_views`` (the reference
    executor runs the cpu target's kernels, so it checks the folded ones too; on cuda the
    attention kernel, ``attention_cuda.warp_rows``, reads Q, K and V where the projections
    wrote them: GPT-2's fused QKV, a grouped-query key head at ``h // group``); the
    transposes that reach the attention through elementwise ops and ``rotate_half`` (Llama's
    rotary) moved down to it first (``sink_transposes``)."""
    from workbench.graph.passes.sink_transposes import sink_transposes

    return fold_views(sink_transposes(graph))


def cpu_layout(graph: Graph, target="cpu") -> Graph:
    """The cpu target's ``graph_layout`` hook: conv weights packed
    (``layout.pack_conv_weights``), a matmul by a constant whose columns no register tile
    divides padded to one (``pad_matmul``, with the tile of ``graph_cpu_ops.matmul_columns``),
    a big one's weight packed in panels (``pack_matmul``), then ``sink_transposes`` and
    ``fold_views`` (the cuda target's hook, ``views_layout``, does the last two only)."""
    from workbench.graph.passes.layout import pack_conv_weights
    from workbench.graph.passes.pack_matmul import pack_matmul
    from workbench.graph.passes.pad_matmul import pad_matmul
    from workbench.graph.passes.sink_transposes import sink_transposes
    from workbench.recipes.graph_cpu_ops import matmul_columns, panel_width

    graph = pad_matmul(pack_conv_weights(graph, target), matmul_columns)
    graph = pack_matmul(graph, panel_width)
    return fold_views(sink_transposes(graph))
