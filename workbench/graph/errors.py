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

    def __init__(self, operators: list[tuple[str, str]]):
        self.operators = list(operators)
        names = sorted({op for op, _ in self.operators})
        lines = [f"  {op} at {where}" for op, where in self.operators]
        super().__init__(
            f"{len(self.operators)} unsupported operator use(s) ({', '.join(names)}):\n"
            + "\n".join(lines))
