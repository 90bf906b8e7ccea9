"""Bounds of run-time index tensors, checked before any kernel runs.

The kernels of ``take``/``gather``/``embedding`` (``workbench.ops.gather``) clamp their
index (a kernel cannot raise), so an out-of-range index is found here where it can be known:

- an index that is a constant: ``check_constants`` at compile time;
- an index that is one of the model's inputs or a view of one (``reshape``, ``select``,
  ``slice``, ``transpose``, ``broadcast_to``, an integer ``cast``: the column ``idx[..., k]``
  that ONNX's GatherND indexes axis ``k`` by, for one): ``IndexCheck``, run on each call of
  the compiled model (the view taken with numpy, then a min/max).

An index computed inside the model (arithmetic on an input) reads the clamped element
(docs/decisions.md). The interpreter (``workbench.graph.run``) checks every index.

Example
-------
>>> import numpy as np
>>> from workbench.graph.builder import GraphBuilder
>>> from workbench.graph.ir import TensorType
>>> b = GraphBuilder()
>>> w = b.constant("w", np.zeros((10, 4), np.float32))
>>> i = b.input("ids", TensorType((3,), "int64"))
>>> graph = b.finish([b.node("take", [w, i], {"axis": 0})])
>>> checks = index_checks(graph)
>>> [(c.input, c.extent, c.wrap) for c in checks]
[('ids', 10, False)]
>>> try:
...     check_inputs(checks, {"ids": np.array([0, 9, 10])})
... except IndexOutOfRangeError as error:
...     print(error)  # doctest: +ELLIPSIS
input 'ids' of the model: index 10 is out of range for axis 0 (size 10) of take node take...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.graph.errors import IndexOutOfRangeError
from workbench.graph.ir import Graph
from workbench.graph.ops import evaluate

INDEX_OPS = ("take", "gather", "embedding")
"""Operators whose second input is an index along ``attrs["axis"]`` (0 by default)."""

VIEW_OPS = ("reshape", "select", "slice", "transpose", "broadcast_to")
"""Operators that only move an index tensor's elements: a check follows an index back
through them (and through a ``cast`` between integer types) to a model input."""


@dataclass(frozen=True)
class IndexCheck:
    """The model input ``input`` indexes an axis of ``extent`` (``wrap``: negatives count
    from the end) in node ``node``."""

    input: str
    extent: int
    wrap: bool
    node: str
    op: str
    axis: int
    view: tuple = field(default=())
    """``(op, attrs)`` steps from the input to the index tensor, applied before the check."""

    def index(self, value: np.ndarray) -> np.ndarray:
        """The index tensor this check bounds, from the input's ``value``."""
        for op, attrs in self.view:
            value = evaluate(op, [value], attrs)
        return value


def _index_nodes(graph: Graph):
    """(the graph holding it, node) for every index node, fused groups' members too."""
    for node in graph.nodes:
        if node.op == "fused":
            yield from _index_nodes(node.attrs["graph"])
        elif node.op in INDEX_OPS:
            yield graph, node


def _is_view(graph: Graph, node) -> bool:
    if node.op in VIEW_OPS:
        return True
    if node.op != "cast":
        return False
    source = graph.type_of(node.inputs[0]).dtype
    return np.dtype(source).kind in "iu" and np.dtype(node.attrs["dtype"]).kind in "iu"


def _source(graph: Graph, name: str) -> tuple[str, tuple]:
    """``name`` followed back through views: the value it is a view of, and the steps."""
    producers = {n.name: n for n in graph.nodes}
    steps = []
    while name in producers and _is_view(graph, producers[name]):
        node = producers[name]
        if node.op != "cast":
            steps.append((node.op, dict(node.attrs)))
        name = node.inputs[0]
    return name, tuple(reversed(steps))


def _message(check: IndexCheck, bad: int) -> str:
    return (f"index {bad} is out of range for axis {check.axis} (size {check.extent}) of "
            f"{check.op} node {check.node}" + ("" if check.wrap else
                                              " (negative indices are out of range too)"))


def _first_bad(index: np.ndarray, extent: int, wrap: bool) -> int | None:
    if index.size == 0:
        return None
    low = -extent if wrap else 0
    lo, hi = int(index.min()), int(index.max())
    if lo < low:
        return lo
    if hi >= extent:
        return hi
    return None


def index_checks(graph: Graph) -> list[IndexCheck]:
    """The checks of the model's integer inputs used as indices; constant indices are
    checked here, once (``IndexOutOfRangeError``)."""
    checks = []
    for owner, node in _index_nodes(graph):
        x, index = node.inputs[:2]
        axis = node.attrs.get("axis", 0)
        extent = owner.type_of(x).shape[axis]
        source, view = _source(graph, index)
        check = IndexCheck(source, int(extent), bool(node.attrs.get("wrap")), node.name,
                           node.op, axis, view)
        if check.input in graph.constants:
            bad = _first_bad(check.index(np.asarray(graph.constants[check.input])),
                             check.extent, check.wrap)
            if bad is not None:
                raise IndexOutOfRangeError(f"a constant index: {_message(check, bad)}")
        elif check.input in graph.inputs:
            checks.append(check)
    return checks


def check_inputs(checks: list[IndexCheck], values: dict[str, np.ndarray]) -> None:
    """Raise ``IndexOutOfRangeError`` naming the input and the node for the first index of
    ``values`` outside its axis."""
    for check in checks:
        bad = _first_bad(check.index(values[check.input]), check.extent, check.wrap)
        if bad is not None:
            raise IndexOutOfRangeError(f"input {check.input!r} of the model: "
                                       f"{_message(check, bad)}")


__all__ = ["INDEX_OPS", "VIEW_OPS", "IndexCheck", "check_inputs", "index_checks"]
