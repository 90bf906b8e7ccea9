"""The DSL's check of ``T.parallel`` / ``T.vectorized`` loops: a loop the user marked must not
bind a reduction variable nor carry a dependence (``workbench.ir.dependence``, the one
dependence analysis); the refusal is a ``DSLError`` with a caret under the loop variable.
"""

from __future__ import annotations

import ast
import re

from workbench.ir import For, ForKind, PrimFunc
from workbench.ir.dependence import (
    PARALLEL_KINDS,
    describe_conflict,
    loop_conflicts,
    reduction_binding,
)
from workbench.ir.walk import walk


def check_parallel_loop_kinds(func: PrimFunc, fdef, make_error) -> None:
    """Refuse a DSL function whose ``T.parallel`` / ``T.vectorized`` loop binds a reduction
    variable or carries a dependence: raise ``make_error(ast_node, message, kind)`` (the
    parser's ``DSLError`` with a caret under the loop variable).

    Example
    -------
    Called by the parser after it built ``func`` from ``fdef`` (``ast.FunctionDef``).
    """
    for node, _ in walk(func.body):
        if not isinstance(node, For) or node.kind not in PARALLEL_KINDS:
            continue
        name = node.loop_var.name
        kind = "T.parallel" if node.kind is ForKind.PARALLEL else "T.vectorized"
        bound = reduction_binding(func, name)
        if bound is not None:
            block, iter_var = bound
            message = (f"loop {name!r} is {kind} but binds the reduction variable "
                       f"{iter_var!r} of block {block!r}: its iterations update the same "
                       "elements; make it a serial loop (range/T.serial)")
            raise make_error(_loop_node(func, fdef, name), message, "loop-kind")
        conflicts = loop_conflicts(func, name)
        if conflicts:
            message = f"loop {name!r} is {kind} but {describe_conflict(conflicts[0])}"
            raise make_error(_loop_node(func, fdef, name), message, "loop-kind")


def _loop_node(func: PrimFunc, fdef, name: str):
    """The AST name node declaring loop variable ``name`` (the parser renames a repeated
    name ``i`` to ``i_1``: matched by base name and position), else the function."""
    targets = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.For):
            found = [node.target] if isinstance(node.target, ast.Name) else [
                t for t in getattr(node.target, "elts", []) if isinstance(t, ast.Name)]
            targets.extend(found)
    targets.sort(key=lambda t: (t.lineno, t.col_offset))
    ids = {t.id for t in targets}
    base = name if name in ids else re.sub(r"_\d+$", "", name)
    same_base = [lp.loop_var.name for lp, _ in walk(func.body)
                 if isinstance(lp, For) and (lp.loop_var.name == base
                                              or re.sub(r"_\d+$", "", lp.loop_var.name) == base)]
    candidates = [t for t in targets if t.id == base]
    position = same_base.index(name) if name in same_base else 0
    if position < len(candidates):
        return candidates[position]
    return candidates[0] if candidates else fdef
