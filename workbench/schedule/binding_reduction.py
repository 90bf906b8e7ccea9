"""When ``bind`` may put a reduction loop on GPU threads: a cross-thread reduction (TVM).

TVM lets ``bind(k, "threadIdx.x")`` bind a loop that carries a reduction variable when the
blocks under it are reduction blocks: the CUDA backend then lowers the block to a
cross-thread allreduce (TVM's ``LowerCrossThreadReduction``; here
``workbench.backends.cuda.cuda_reduction``): each thread reduces its own slice into a register,
the threads combine their partials with warp shuffles (and shared memory across warps),
and every thread gets the result. On the CPU targets the bound loop stays a serial loop.

The rule, as TVM's ``CheckLoopParallelizableInBlock``: the axis is a ``threadIdx`` axis
(never ``blockIdx``: blocks cannot combine values within one kernel), and every block
whose reduction variable the loop binds

* is a reduction block with a recognised commutative reducer and an identity init
  (``C = C + x``, ``C = max(C, x)``..., ``reducers.check_reduction``);
* does not use the loop in a spatial binding (the loop would then decide both which
  element is written and which values are combined).
"""

from __future__ import annotations

from workbench.ir import BlockRealize, For, IterKind, PrimFunc
from workbench.schedule.errors import ScheduleError
from workbench.schedule.tree import uses_var, walk


def is_cross_thread_reduction(func: PrimFunc, loop: For, thread_axis: str) -> bool:
    """Whether binding ``loop`` (which binds a reduction variable) to ``thread_axis`` is a
    legal cross-thread reduction (see the module docstring)."""
    from workbench.schedule.reducers import check_reduction

    if not thread_axis.startswith("threadIdx"):
        return False
    name = loop.loop_var.name
    for stmt, _ in walk(loop.body):
        if not isinstance(stmt, BlockRealize):
            continue
        pairs = list(zip(stmt.block.iter_vars, stmt.iter_values, strict=True))
        kinds = {iv.kind for iv, value in pairs if uses_var(value, name)}
        if not kinds:
            continue
        if kinds != {IterKind.REDUCE}:
            return False
        try:
            check_reduction(func, "bind", stmt.block)
        except ScheduleError:
            return False
    return True
