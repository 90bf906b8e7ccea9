"""Memory planning: liveness-based reuse of intermediate buffers.

Each node's output needs a buffer from the node's step until its last use. ``reshape``
outputs are views of their input's buffer (they extend its life instead of taking one).
Walking the nodes in order, a node takes the smallest free buffer big enough for its output
(a new one if none fits); a buffer is freed after the last step that reads it. Graph outputs
get buffers of their own that are never reused (the caller keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.graph.ir import Graph

VIEW_OPS = ("reshape",)


@dataclass(frozen=True)
class MemoryPlan:
    """Where every intermediate value lives.

    Attributes
    ----------
    buffers : tuple of int
        Byte size of each buffer.
    assignment : dict
        value name -> buffer index (views share their source's index).
    bytes_without_reuse : int
        Every node output in its own buffer (views excluded): the peak without planning.
    bytes_with_reuse : int
        The sum of ``buffers``: the peak with planning.
    """

    buffers: tuple[int, ...]
    assignment: dict
    bytes_without_reuse: int
    bytes_with_reuse: int

    def __str__(self) -> str:
        return (f"memory plan: {len(self.assignment)} values in {len(self.buffers)} buffers, "
                f"{self.bytes_without_reuse} B without reuse -> {self.bytes_with_reuse} B")


def _root(graph: Graph, name: str, views: dict[str, str]) -> str:
    while name in views:
        name = views[name]
    return name


def plan_memory(graph: Graph, reuse: bool = True) -> MemoryPlan:
    """Assign buffers to node outputs by liveness (``reuse=False``: one buffer per value).

    Example
    -------
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> t = TensorType((256,))
    >>> g = Graph(inputs={"x": t}, nodes=tuple(
    ...     Node(f"v{i}", "relu", (f"v{i-1}" if i else "x",), {}, t) for i in range(4)),
    ...     outputs=("v3",))
    >>> plan = plan_memory(g)
    >>> plan.bytes_without_reuse, plan.bytes_with_reuse
    (4096, 3072)
    """
    views = {n.name: n.inputs[0] for n in graph.nodes if n.op in VIEW_OPS
             and graph.producer(n.inputs[0]) is not None}
    last_use: dict[str, int] = {}
    for step, node in enumerate(graph.nodes):
        for name in node.inputs:
            last_use[_root(graph, name, views)] = step
    for name in graph.outputs:
        last_use[_root(graph, name, views)] = len(graph.nodes)
    sizes: list[int] = []
    free: list[int] = []
    assignment: dict[str, int] = {}
    total = 0
    for step, node in enumerate(graph.nodes):
        if node.name in views:
            assignment[node.name] = assignment[_root(graph, node.name, views)]
            continue
        need = node.type.nbytes
        total += need
        fits = sorted((sizes[b], b) for b in free if sizes[b] >= need)
        if reuse and fits and node.name not in graph.outputs:
            buffer = fits[0][1]
            free.remove(buffer)
        else:
            buffer = len(sizes)
            sizes.append(need)
        assignment[node.name] = buffer
        roots = {_root(graph, name, views) for name in node.inputs} | {node.name}
        for root in roots:
            if root in assignment and last_use.get(root, step) <= step and \
                    root not in graph.outputs:
                free.append(assignment[root])
    return MemoryPlan(tuple(sizes), assignment, total, sum(sizes))
