"""Visitor and mapper base classes for the IR.

``IRVisitor.visit(node)`` walks a tree; ``IRMapper.visit(node)`` rebuilds one. Both
dispatch on the node's class name: define ``visit_For(self, node)`` to handle ``For``
nodes, and call ``self.generic_visit(node)`` inside it to go on into the children.

The mapper returns the node itself when none of its children changed, so untouched
subtrees are shared between the old and the new tree (as in Exo's ``LoopIR_Rewrite``).
"""

from __future__ import annotations

from workbench.ir.expr import Var
from workbench.ir.node import Node, node_fields


class _Dispatch:
    """``visit(node)`` calls ``visit_<ClassName>(node)`` when defined, else ``generic_visit``."""

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def generic_visit(self, node):
        raise NotImplementedError


class IRVisitor(_Dispatch):
    """Read-only walk over an IR tree, children in field order."""

    def generic_visit(self, node):
        for _, value in node_fields(node):
            self._visit_value(value)

    def _visit_value(self, value):
        if isinstance(value, Node):
            self.visit(value)
        elif isinstance(value, tuple):
            for item in value:
                self._visit_value(item)


class IRMapper(_Dispatch):
    """Rebuilding walk over an IR tree that shares unchanged subtrees."""

    def generic_visit(self, node):
        changes = {}
        for name, value in node_fields(node):
            new_value = self._map_value(value)
            if new_value is not value:
                changes[name] = new_value
        if not changes:
            return node
        return node.replace(**changes)

    def _map_value(self, value):
        if isinstance(value, Node):
            return self.visit(value)
        if isinstance(value, tuple):
            mapped = tuple(self._map_value(item) for item in value)
            if all(new is old for new, old in zip(mapped, value, strict=True)):
                return value
            return mapped
        return value


class ExprSubstituter(IRMapper):
    """Replace variables by expressions: ``substitute(node, {var: expr})``."""

    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Var(self, node):
        return self.mapping.get(node, node)


def substitute(node, mapping):
    """Return ``node`` with every variable in ``mapping`` replaced by its expression."""
    if not mapping:
        return node
    return ExprSubstituter(mapping).visit(node)


def collect(node, predicate) -> list:
    """All sub-nodes of ``node`` (itself included) for which ``predicate`` holds, in walk order."""
    found = []

    class _Collector(IRVisitor):
        def visit(self, sub):
            if predicate(sub):
                found.append(sub)
            return super().visit(sub)

    _Collector().visit(node)
    return found


def expr_vars(node) -> set[Var]:
    """The variables used in ``node`` (an expression or a statement)."""
    return set(collect(node, lambda n: isinstance(n, Var)))
