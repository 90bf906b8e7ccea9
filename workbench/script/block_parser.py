"""Blocks of the DSL: ``with T.block(...)``, iteration variables, ``T.init()``, regions.

A mixin of the parser (``workbench.script.parser.Parser``); the statement parser
calls ``stmt_With`` for ``with T.block("name"):`` and ``with T.init():``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from workbench.ir.buffer import Buffer
from workbench.ir.expr import Add, IntImm, PrimExpr, Sub, Var
from workbench.ir.function import PrimFunc
from workbench.ir.functor import collect
from workbench.ir.regions import block_access_regions, split_offset
from workbench.ir.stmt import (
    TRUE,
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    IterKind,
    IterVar,
    Range,
    Stmt,
    seq,
)
from workbench.ir.verify import (
    DuplicateNameError,
    IRVerifyError,
    OperandDTypeError,
    OutOfBoundsError,
    VarScopeError,
    verify,
)
from workbench.ir.walk import uses_var
from workbench.script.expr_parser import ExprParser, subscript_items
from workbench.script.namespace import DSLFunction

_VERIFY_KINDS = {
    OutOfBoundsError: "out-of-bounds",
    DuplicateNameError: "duplicate-name",
    OperandDTypeError: "dtype",
    VarScopeError: "scope",
}


@dataclass
class Frame:
    """A block being parsed (the root block included)."""

    name: str
    node: ast.AST | None
    iter_vars: list[IterVar] = field(default_factory=list)
    iter_values: list[PrimExpr] = field(default_factory=list)
    predicate: PrimExpr = TRUE
    reads: tuple[BufferRegion, ...] | None = None
    writes: tuple[BufferRegion, ...] | None = None
    writes_node: ast.AST | None = None  # the T.writes(...) call, for errors
    init: Stmt | None = None
    allocs: list[Buffer] = field(default_factory=list)
    annotations: tuple = ()
    stored: list[Buffer] = field(default_factory=list)
    explicit: bool = True
    # (iter var, its domain, bound loop var, AST node): checked when the block ends, since a
    # later T.where may guard a loop that overshoots the domain (split with a non-divisor)
    loop_bindings: list[tuple[Var, Range, Var, ast.AST]] = field(default_factory=list)
    # where each iter var was declared (its name in the assignment), for errors
    iter_nodes: dict[str, ast.AST] = field(default_factory=dict)


class BlockParser(ExprParser):
    """Block half of the statement parser (needs its scopes, frames and ``parse_body``)."""

    # ---- blocks -------------------------------------------------------------------------

    def stmt_With(self, node: ast.With) -> Stmt | None:
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.error(node, "expected `with T.block(\"name\"):` or `with T.init():`",
                             "unsupported")
        call = node.items[0].context_expr
        func = self.resolve(call.func) if isinstance(call, ast.Call) else None
        name = func.dsl_name if isinstance(func, DSLFunction) else None
        if name == "init":
            return self.init(node, call)
        if name != "block":
            raise self.error(call, "expected `with T.block(\"name\"):` or `with T.init():`",
                             "unsupported")
        args = self.call_args(call, ("name",), 1, what="T.block")
        block_name = self.static_str(args["name"], "a block name")
        if block_name in self.block_nodes or block_name == "root":
            first = self.block_nodes.get(block_name)
            where = f" (first defined on line {first.lineno + self.source.line_offset})" \
                if first is not None else " (the function's root block)"
            raise self.error(args["name"], f"block {block_name!r} is already defined{where}; "
                             "block names must be unique", "duplicate-name")
        self.block_nodes[block_name] = node
        frame = Frame(block_name, node)
        self.frames.append(frame)
        self.scopes.append({})
        stmts = self.parse_body(node.body)
        self.scopes.pop()
        self.frames.pop()
        body = seq(*stmts)
        reads, writes = frame.reads, frame.writes
        if writes is not None:
            self.check_declared_writes(frame, writes)
        if reads is None or writes is None:
            inferred_reads, inferred_writes = block_access_regions(
                body, frame.init, tuple(frame.allocs))
            reads = inferred_reads if reads is None else reads
            writes = inferred_writes if writes is None else writes
        self.check_reduction(frame, node)
        self.check_spatial_axes_written(frame, body)
        self.check_bindings(frame)
        self.written.update(region.buffer for region in writes)
        block = Block(block_name, tuple(frame.iter_vars), reads, writes, body, frame.init,
                      tuple(frame.allocs), frame.annotations)
        return BlockRealize(tuple(frame.iter_values), frame.predicate, block)

    def check_declared_writes(self, frame: Frame, writes: tuple) -> None:
        """Every buffer the block's own body stores into (not one it allocates) must be in
        its ``T.writes(...)``: the schedule primitives trust the declared regions."""
        declared = {region.buffer for region in writes}
        for buffer in frame.stored:
            if buffer not in declared and buffer not in frame.allocs:
                names = ", ".join(repr(region.buffer.name) for region in writes) or "nothing"
                raise self.error(frame.writes_node or frame.node,
                                 f"block {frame.name!r} stores into {buffer.name!r} but its "
                                 f"T.writes(...) names {names}", "region")

    def init(self, node: ast.With, call: ast.Call) -> None:
        if not self.in_block():
            raise self.error(call, "T.init() must be inside a T.block", "unsupported")
        if self.frame.init is not None:
            raise self.error(call, "a block has one T.init()", "unsupported")
        self.call_args(call, (), 0, what="T.init")
        saved = len(self.frame.stored)
        self.frame.init = seq(*self.parse_body(node.body))
        del self.frame.stored[saved:]
        return None

    def check_reduction(self, frame: Frame, node: ast.With) -> None:
        reduce_vars = [iv.var.name for iv in frame.iter_vars if iv.kind is IterKind.REDUCE]
        if not reduce_vars or frame.init is not None:
            return
        for buffer in frame.stored:
            if buffer not in self.written:
                raise self.error(node.items[0].context_expr,
                                 f"block {frame.name!r} reduces over {', '.join(reduce_vars)} "
                                 f"into {buffer.name!r} but has no `with T.init():` to "
                                 "initialise it", "missing-init")

    def check_spatial_axes_written(self, frame: Frame, body: Stmt) -> None:
        """A block with a ``T.init()`` reduces: a spatial iter var (extent > 1) that indexes
        none of its stores makes every one of its values update the same element, i.e. it
        is a reduction axis declared spatial (TVM's reduction blocks require the written
        indices to be the spatial axes). Refused at its declaration; checked on leaf blocks
        (a block with child blocks stores through them)."""
        if frame.init is None or collect(body, lambda n: isinstance(n, Block)):
            return
        stores = collect(body, lambda n: isinstance(n, BufferStore))
        if not stores:
            return
        indices = [index for store in stores for index in store.indices]
        for iv in frame.iter_vars:
            extent = iv.dom.extent
            if iv.kind is not IterKind.SPATIAL or (isinstance(extent, IntImm)
                                                    and extent.value <= 1):
                continue
            if any(uses_var(index, iv.var.name) for index in indices):
                continue
            names = ", ".join(dict.fromkeys(repr(store.buffer.name) for store in stores))
            raise self.error(frame.iter_nodes.get(iv.var.name, frame.node),
                             f"block {frame.name!r} reduces (it has a T.init()) but its "
                             f"spatial iter var {iv.var.name!r} indexes none of what it "
                             f"writes ({names}): every {iv.var.name} updates the same "
                             "element, so it is a reduction axis; declare it with 'R' in "
                             "T.axis.remap or T.axis.reduce", "axis-kind")

    def check_store_indices(self, buffer: Buffer, items: list, indices) -> None:
        """A reduce iter var of the enclosing block used to index a store: each of its
        values would write a different element, which is no reduction (TVM requires
        the written indices to be spatial). Refused at the index."""
        if not self.in_block():
            return
        reduce_vars = [iv.var.name for iv in self.frame.iter_vars
                       if iv.kind is IterKind.REDUCE]
        for item, index in zip(items, indices, strict=True):
            for name in reduce_vars:
                if uses_var(index, name):
                    raise self.error(item, f"reduce iter var {name!r} indexes the store to "
                                     f"{buffer.name!r} in block {self.frame.name!r}: a "
                                     "reduction writes the same element for every value of "
                                     "its reduce axes; declare it spatial ('S' in "
                                     "T.axis.remap or T.axis.spatial), or index by the "
                                     "spatial axes only", "axis-kind")

    def iter_vars(self, target: ast.expr, call: ast.Call, name: str) -> None:
        if not self.in_block():
            raise self.error(call, f"T.{name}(...) must be inside a T.block", "unsupported")
        if name == "axis.remap":
            return self.remap(target, call)
        if not isinstance(target, ast.Name):
            raise self.error(target, f"T.{name}(...) binds one name", "shape")
        args = self.call_args(call, ("dom", "value"), 2, what=f"T.{name}")
        dom = self.iter_domain(args["dom"])
        value = self.strong(self.expr(args["value"]), args["value"])
        kind = IterKind.SPATIAL if name == "axis.spatial" else IterKind.REDUCE
        var = self.declare_var(target.id)
        self.frame.iter_nodes[var.name] = target
        self.check_binding(var, dom, value, args["value"])
        self.frame.iter_vars.append(IterVar(var, dom, kind))
        self.frame.iter_values.append(value)
        return None

    def iter_domain(self, node: ast.expr) -> Range:
        if isinstance(node, ast.Tuple):
            if len(node.elts) != 2:
                raise self.error(node, "an iter var domain is an extent or (start, stop)",
                                 "shape")
            start = self.static_int(node.elts[0], "a domain start")
            stop = self.static_int(node.elts[1], "a domain stop")
            return Range(IntImm(start), IntImm(stop - start))
        return Range(IntImm(0), IntImm(self.static_int(node, "an iter var extent")))

    def check_binding(self, var: Var, dom: Range, value: PrimExpr, node: ast.AST) -> None:
        if isinstance(value, Var) and value in self.loop_domains:
            self.frame.loop_bindings.append((var, dom, value, node))

    def check_bindings(self, frame: Frame) -> None:
        """An iter var bound to a plain loop must not run past its domain, unless a
        ``T.where`` guards the block. (A loop shorter than the domain is fine: compute_at
        makes blocks that compute part of their domain.)"""
        if frame.predicate != TRUE:
            return
        for var, dom, loop_var, node in frame.loop_bindings:
            _, extent = self.loop_domains[loop_var]
            if isinstance(extent, IntImm) and isinstance(dom.extent, IntImm) \
                    and extent.value > dom.extent.value:
                raise self.error(node, f"block iter var {var.name!r} has extent "
                                 f"{dom.extent.value} but is bound to loop {loop_var.name!r} "
                                 f"of extent {extent.value}", "shape")

    def remap(self, target: ast.expr, call: ast.Call) -> None:
        args = self.call_args(call, ("kinds", "values"), 2, what="T.axis.remap")
        kinds = self.static_str(args["kinds"], "the T.axis.remap kinds")
        values_node = args["values"]
        if not isinstance(values_node, (ast.List, ast.Tuple)):
            raise self.error(values_node, "T.axis.remap takes a list of loop variables",
                             "unsupported")
        names = target_names(target)
        if names is None:
            raise self.error(target, "T.axis.remap must be assigned to names", "unsupported")
        if not (len(kinds) == len(values_node.elts) == len(names)):
            raise self.error(call, f"T.axis.remap({kinds!r}, ...) has {len(kinds)} kind letters, "
                             f"{len(values_node.elts)} loop variables and {len(names)} names; "
                             "they must agree", "shape")
        values = []  # read every loop variable before any new name can shadow one
        for letter, value_node in zip(kinds, values_node.elts, strict=True):
            if letter not in "SR":
                raise self.error(args["kinds"], f"unknown iter var kind {letter!r} (use 'S' "
                                 "for spatial, 'R' for reduce)", "unsupported")
            value = self.expr(value_node)
            if not isinstance(value, Var) or value not in self.loop_domains:
                raise self.error(value_node, f"T.axis.remap binds loop variables; "
                                 f"{ast.unparse(value_node)!r} is not one (use "
                                 "T.axis.spatial(extent, value))", "unsupported")
            values.append(value)
        name_nodes = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        for letter, name, value, name_node in zip(kinds, names, values, name_nodes,
                                                  strict=True):
            start, extent = self.loop_domains[value]
            kind = IterKind.SPATIAL if letter == "S" else IterKind.REDUCE
            var = self.declare_var(name)
            self.frame.iter_nodes[var.name] = name_node
            self.frame.iter_vars.append(IterVar(var, Range(start, extent), kind))
            self.frame.iter_values.append(value)
        return None

    # ---- well-formedness -----------------------------------------------------------------

    def check_well_formed(self, func: PrimFunc, fdef: ast.FunctionDef) -> None:
        """Run ``workbench.ir.verify`` on the parsed function; its errors become DSLErrors
        at the user's line (the offending index for an out-of-bounds access)."""
        try:
            verify(func)
        except IRVerifyError as err:
            raise self.error(self.verify_error_node(err, fdef), err.message,
                             _VERIFY_KINDS.get(type(err), "verify")) from None

    def verify_error_node(self, err: IRVerifyError, fdef: ast.FunctionDef) -> ast.AST:
        for ir_node, node, index_nodes in self.access_nodes:
            if ir_node is err.node:
                dim = getattr(err, "dim", None)
                if dim is not None and dim < len(index_nodes):
                    return index_nodes[dim]
                return node
        return self.block_nodes.get(err.block, fdef)

    # ---- regions and literals -----------------------------------------------------------

    def regions(self, call: ast.Call) -> tuple[BufferRegion, ...]:
        if call.keywords:
            raise self.error(call, "T.reads/T.writes take buffer regions only", "unsupported")
        nodes = call.args
        if len(nodes) == 1 and isinstance(nodes[0], (ast.List, ast.Tuple)):
            nodes = nodes[0].elts
        return tuple(self.region(node) for node in nodes)

    def region(self, node: ast.expr) -> BufferRegion:
        if isinstance(node, (ast.Name, ast.Attribute)):
            buffer = self.buffer_of(node)
            return BufferRegion(buffer, tuple(Range.from_extent(n) for n in buffer.shape))
        if not isinstance(node, ast.Subscript):
            raise self.error(node, "expected a buffer region such as A[vi, 0:16]",
                             "unsupported")
        buffer = self.buffer_of(node.value)
        items = subscript_items(node)
        self.check_index_count(buffer, items, node)
        ranges = []
        for dim, item in enumerate(items):
            if not isinstance(item, ast.Slice):
                ranges.append(Range(self.index(item), IntImm(1)))
                continue
            if item.step is not None:
                raise self.error(item, "a region slice has no step", "unsupported")
            start = self.index(item.lower) if item.lower is not None else IntImm(0)
            stop = self.index(item.upper) if item.upper is not None \
                else IntImm(buffer.shape[dim])
            ranges.append(Range(start, range_extent(start, stop)))
        return BufferRegion(buffer, tuple(ranges))

    def literal_items(self, node: ast.expr) -> tuple:
        if not isinstance(node, ast.Dict):
            raise self.error(node, "expected a dict literal such as {\"key\": 1}",
                             "unsupported")
        try:
            value = ast.literal_eval(node)
        except ValueError:
            raise self.error(node, "annotation keys and values must be Python literals",
                             "unsupported") from None
        return tuple((key, hashable(item)) for key, item in value.items())


def range_extent(start: PrimExpr, stop: PrimExpr) -> PrimExpr:
    """The extent of ``start:stop``, recovering what the printer wrote.

    ``stop`` written as ``start + e`` gives ``e``; two bounds that differ by a constant
    (``vi - 1:vi + 2``) give that constant; anything else gives ``stop - start``.
    """
    if isinstance(stop, Add) and stop.a == start:
        return stop.b
    base_start, offset_start = split_offset(start)
    base_stop, offset_stop = split_offset(stop)
    if base_start == base_stop:
        return IntImm(offset_stop - offset_start, stop.dtype)
    return Sub(stop, start)


def target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(
            isinstance(elt, ast.Name) for elt in target.elts):
        return [elt.id for elt in target.elts]
    return None

def hashable(value):
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, hashable(v)) for k, v in value.items())
    return value
