"""Errors of the graph level."""

from __future__ import annotations


class GraphError(Exception):
    """Base class of the graph level's errors."""


class UnsupportedOperatorError(GraphError):
    """A model uses operators the frontend does not know: ONE error lists all of them.

    Attributes
    ----------
    operators : list of (operator, location)
        Each unsupported operator with the source location (``file:line``) that created it.
    """

    def __init__(self, operators: list[tuple[str, str]], reasons: dict | None = None):
        self.operators = list(operators)
        self.reasons = dict(reasons or {})
        counts: dict[str, int] = {}
        for op, _ in self.operators:
            counts[op] = counts.get(op, 0) + 1
        summary = ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))
        lines = [f"  {op} at {where}" for op, where in self.operators]
        super().__init__(
            f"{len(self.operators)} unsupported operator use(s) ({summary}):\n"
            + "\n".join(lines)
            + "".join(f"\n{op}: {why}" for op, why in sorted(self.reasons.items())))


class IndexOutOfRangeError(GraphError, IndexError):
    """An index tensor holds an index outside the axis it indexes (``embedding``,
    ``index_select``, ``gather``, ``x[idx]``): found in a constant at import, in an input of
    the model when it is called (``workbench.graph.index_bounds``)."""


class ModelInputError(GraphError, ValueError):
    """An input passed to a compiled model (or ``wb.compile``'s ``example_inputs``) does not
    match the model's: its count, shape or dtype. Inputs are never reshaped or cast (a
    same-size array of another shape would be read in the wrong order, a float64 array
    silently rounded).

    Example
    -------
    ``input 'x' of the model: expected float32 array of shape (2, 3, 8, 8), got float64
    array of shape (2, 3, 8, 8)``
    """


class ModelFileError(GraphError, ValueError):
    """A model path given to ``wb.compile`` (or ``python -m workbench tune-model``) that does
    not exist, is a folder, or is not an ONNX model: named before anything is imported."""
