"""The base of every IR node.

IR nodes are frozen dataclasses: two nodes are equal when their types and fields are
equal (structural equality), and hashing follows the same rule (cached, since trees
are immutable). Nodes are edited with ``node.replace(...)`` (``dataclasses.replace``),
never in place. Declare a node class with ``@ir_node``.
"""

from __future__ import annotations

import dataclasses
import functools


def ir_node(cls):
    """Class decorator for IR nodes: a frozen dataclass using ``Node``'s equality and hash."""
    return dataclasses.dataclass(frozen=True, eq=False, repr=True)(cls)


class Node:
    """Base class of all IR nodes (expressions, statements, buffers, functions)."""

    def replace(self, **changes):
        """Return a copy of this node with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    def _field_values(self) -> tuple:
        return tuple(getattr(self, name) for name in field_names(type(self)))

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if type(self) is not type(other):
            return NotImplemented if not isinstance(other, Node) else False
        if hash(self) != hash(other):
            return False
        return self._field_values() == other._field_values()

    def __ne__(self, other) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __getstate__(self) -> dict:
        """The fields without the cached hash: string hashes differ between processes, so a
        hash cached here would make the node unequal to its twin in a worker process."""
        state = dict(self.__dict__)
        state.pop("_structural_hash", None)
        return state

    def __hash__(self) -> int:
        cached = self.__dict__.get("_structural_hash")
        if cached is None:
            cached = hash((type(self).__name__,) + self._field_values())
            object.__setattr__(self, "_structural_hash", cached)
        return cached


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """The dataclass field names of node class ``cls``, in order (read once per class: every
    walk asks, and ``dataclasses.fields`` was ~7% of a model's compile)."""
    return tuple(field.name for field in dataclasses.fields(cls))


def node_fields(node: Node):
    """Yield ``(name, value)`` for each dataclass field of ``node``."""
    for name in field_names(type(node)):
        yield name, getattr(node, name)
