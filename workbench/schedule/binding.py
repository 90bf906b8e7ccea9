"""GPU binding primitive: ``bind`` a loop to a grid axis (``blockIdx``) or a block axis
(``threadIdx``), as in TVM.

A bound loop is not a loop on the GPU: its variable *is* the hardware index, and the
kernel is launched with the loop's extent along that axis. Every statement of a kernel
(the top-level statement of the function that holds the bound loops) runs on every thread
of every block; two loops bound to ``threadIdx.x`` in one kernel (a compute loop and the
cooperative copy of a shared tile) are the same index and must have the same extent.
On the CPU targets a bound loop stays a serial loop.

Legality (TVM's): the loop is serial (or bound already: binding again replaces the axis, as
in TVM), binds no reduction variable (data parallel) unless it is bound to a ``threadIdx``
axis over reduction blocks (a cross-thread reduction, see ``binding_reduction``), has a
constant extent; grid axes enclose thread axes and one grid axis is not nested in itself;
every loop of a kernel bound to one axis has one extent; threads per block (the product of
the threadIdx extents) stay within the device limit (1024 by default).
"""

from __future__ import annotations

from workbench.ir import For, ForKind, PrimFunc, SeqStmt, Stmt, const_value
from workbench.ir.functor import collect
from workbench.schedule.binding_reduction import is_cross_thread_reduction
from workbench.schedule.errors_binding import (
    THREAD_AXES,
    InvalidThreadAxisError,
    LoopNotSerialError,
    ThreadAxisNestingError,
    ThreadExtentMismatchError,
    TooManyThreadsError,
)
from workbench.schedule.errors_loops import NonConstantExtentError, ReductionLoopError
from workbench.schedule.handles import LoopRV
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import find_loop, reduce_binding, replace_loop, walk

MAX_THREADS_PER_BLOCK = 1024
"""Threads per block of every CUDA device since compute capability 2.0."""


def kernel_statements(func: PrimFunc) -> tuple[Stmt, ...]:
    """The top-level statements of ``func``'s root block: each one is one CUDA kernel."""
    body = func.root_block.body
    return body.stmts if isinstance(body, SeqStmt) else (body,)


def _kernel_of(func: PrimFunc, loop: For) -> Stmt:
    for stmt in kernel_statements(func):
        for node, _ in walk(stmt):
            if node is loop:
                return stmt
    return loop


def bound_loops(stmt: Stmt) -> list[For]:
    """Every loop bound to a thread axis in ``stmt``, in program order (any statement
    kind, the backends' ``Allocate`` included)."""
    return collect(stmt, lambda n: isinstance(n, For) and n.kind is ForKind.THREAD_BINDING)


def thread_extents(stmt: Stmt, primitive: str = "bind", func: PrimFunc | None = None):
    """``{axis: (extent, first loop bound to it)}`` of one kernel statement.

    Raises ``ThreadExtentMismatchError`` when two loops bound to one axis disagree.
    """
    extents: dict[str, tuple[int, For]] = {}
    for loop in bound_loops(stmt):
        extent = const_value(loop.extent)
        seen = extents.get(loop.thread_binding)
        if seen is None:
            extents[loop.thread_binding] = (extent, loop)
        elif seen[0] != extent:
            raise ThreadExtentMismatchError(
                primitive, loop.loop_var.name, loop.thread_binding, extent, seen[1], func, loop
            )
    return extents


def threads_per_block(extents: dict) -> int:
    """The product of the threadIdx extents of ``thread_extents``' result."""
    threads = 1
    for axis, (extent, _) in extents.items():
        if axis.startswith("threadIdx"):
            threads *= extent
    return threads


def bind(
    func: PrimFunc,
    loop: str,
    thread_axis: str,
    *,
    max_threads_per_block: int = MAX_THREADS_PER_BLOCK,
) -> PrimFunc:
    """Bind a loop to a GPU thread axis: its iterations run on that axis's threads or blocks.

    Before (``bind(func, "i_0", "blockIdx.x")``, then ``bind(func, "i_1", "threadIdx.x")``)::

        for i_0 in range(8):
            for i_1 in range(32):
                with T.block("B"): ...

    After::

        for i_0 in T.thread_binding(8, thread="blockIdx.x"):
            for i_1 in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("B"): ...

    Parameters
    ----------
    func : PrimFunc
    loop : str
        The loop variable's name.
    thread_axis : str
        ``"blockIdx.x"``, ``"blockIdx.y"``, ``"blockIdx.z"``, ``"threadIdx.x"``,
        ``"threadIdx.y"`` or ``"threadIdx.z"``.
    max_threads_per_block : int
        The device limit checked here (the CUDA target's verifier checks the real device's).

    Raises
    ------
    InvalidThreadAxisError, LoopNotSerialError, NonConstantExtentError, ReductionLoopError,
    ThreadAxisNestingError, ThreadExtentMismatchError, TooManyThreadsError

    Example
    -------
    >>> new_func = bind(func, "i_0", "blockIdx.x")
    """
    primitive = "bind"
    target, ancestors = find_loop(func, loop, primitive)
    if thread_axis not in THREAD_AXES:
        raise InvalidThreadAxisError(primitive, loop, thread_axis, func, target)
    if target.kind not in (ForKind.SERIAL, ForKind.THREAD_BINDING):
        raise LoopNotSerialError(primitive, target, func)
    extent = const_value(target.extent)
    if not isinstance(extent, int):
        raise NonConstantExtentError(primitive, loop, target.extent, func, target)
    bound = reduce_binding(target)
    if bound is not None and not is_cross_thread_reduction(func, target, thread_axis):
        raise ReductionLoopError(primitive, loop, bound[0], bound[1], func, target)
    if target.kind is ForKind.THREAD_BINDING:  # rebinding: check nesting without the old axis
        target = target.replace(kind=ForKind.SERIAL, thread_binding=None)
    _check_nesting(func, target, ancestors, thread_axis)
    new_func = replace_loop(
        func,
        loop,
        lambda node: node.replace(kind=ForKind.THREAD_BINDING, thread_binding=thread_axis),
    )
    new_loop, _ = find_loop(new_func, loop, primitive)
    extents = thread_extents(_kernel_of(new_func, new_loop), primitive, func)
    threads = threads_per_block(extents)
    if threads > max_threads_per_block:
        raise TooManyThreadsError(
            primitive, loop, threads, max_threads_per_block, "the kernel", func, target
        )
    return new_func


def _check_nesting(func: PrimFunc, target: For, ancestors: tuple, axis: str) -> None:
    outer_loops = [a for a in ancestors if isinstance(a, For) and a.kind is ForKind.THREAD_BINDING]
    inner_loops = [
        node
        for node, _ in walk(target.body)
        if isinstance(node, For) and node.kind is ForKind.THREAD_BINDING
    ]
    name = target.loop_var.name
    for outer in outer_loops:
        nested_grid = axis.startswith("blockIdx") and outer.thread_binding.startswith("threadIdx")
        if nested_grid or (axis.startswith("blockIdx") and outer.thread_binding == axis):
            raise ThreadAxisNestingError("bind", name, axis, outer, func, target)
    for inner in inner_loops:
        inner_axis = inner.thread_binding
        grid_inside_thread = axis.startswith("threadIdx") and inner_axis.startswith("blockIdx")
        if grid_inside_thread or (axis.startswith("blockIdx") and inner_axis == axis):
            raise ThreadAxisNestingError(
                "bind",
                inner.loop_var.name,
                inner_axis,
                target.replace(kind=ForKind.THREAD_BINDING, thread_binding=axis),
                func,
                inner,
            )


# ---------------------------------------------------------------------------------------
# Schedule method
# ---------------------------------------------------------------------------------------


class BindingMethods:
    """The GPU binding method of ``Schedule`` (mixed in; see ``workbench/schedule/README.md``)."""

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind a loop to a GPU thread axis (``"blockIdx.x"`` ... ``"threadIdx.z"``).

        Before / after (``sch.bind(i_0, "blockIdx.x")``)::

            for i_0 in range(8):         for i_0 in T.thread_binding(8, thread="blockIdx.x"):

        Raises ``InvalidThreadAxisError``, ``LoopNotSerialError``, ``ReductionLoopError``,
        ``ThreadAxisNestingError``, ``ThreadExtentMismatchError``, ``TooManyThreadsError``.
        See ``workbench.schedule.binding.bind``.

        Example
        -------
        >>> sch.bind(io, "blockIdx.x"); sch.bind(ii, "threadIdx.x")
        """
        new_func = bind(self.mod, self._name_of(loop, "bind"), thread_axis)
        self._commit("bind", (loop,), {"thread_axis": thread_axis}, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probe
# ---------------------------------------------------------------------------------------


def _probe_bind(sch, loop: LoopRV):
    """Default: blockIdx.x outside every bound loop, else the first threadIdx axis unused
    by the loops around it."""
    node = sch.get(loop)
    _, ancestors = find_loop(sch.mod, node.loop_var.name, "bind")
    used = {a.thread_binding for a in ancestors if isinstance(a, For) and a.thread_binding}
    if not used:
        return (loop,), {"thread_axis": "blockIdx.x"}
    free = [a for a in THREAD_AXES if a.startswith("threadIdx") and a not in used]
    return (loop,), {"thread_axis": free[0] if free else "threadIdx.x"}


register_instruction(
    InstructionKind(
        "bind",
        ("loop",),
        (
            AttrSpec(
                "thread_axis", lambda v: v in THREAD_AXES, "a thread axis name", positional=True
            ),
        ),
        applies_to=("loop",),
        probe=_probe_bind,
    )
)

__all__ = ["bind", "BindingMethods", "thread_extents", "threads_per_block", "kernel_statements"]
