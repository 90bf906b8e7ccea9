"""Explicit unrolling on the ``cuda`` target: TVM's ``pragma_unroll_explicit`` loop annotation.

NVVM leaves a loop with a large body rolled (the ``k_1`` loop of a register-blocked matmul:
64 FMAs and 4 shared loads per iteration), so each iteration pays its index arithmetic and
branch, and loads of step ``k + 1`` cannot be scheduled among the FMAs of step ``k``. A loop
of kind ``unroll`` with a constant trip count and the annotation
``sch.annotate(loop, "pragma_unroll_explicit", 1)`` is replaced here by one copy of its
body per iteration, the loop variable substituted by the constant (loops inside stay
loops; LLVM unrolls the small ones itself).
"""

from __future__ import annotations

from workbench.backends.common.target import Target
from workbench.ir import For, ForKind, IntImm, PrimFunc, seq
from workbench.ir.functor import IRMapper, collect, substitute

ANNOTATION = "pragma_unroll_explicit"


def _explicit(loop: For) -> bool:
    return (
        loop.kind is ForKind.UNROLLED
        and any(key == ANNOTATION and value for key, value in loop.annotations)
        and isinstance(loop.min, IntImm)
        and isinstance(loop.extent, IntImm)
    )


class _Unroll(IRMapper):
    def visit_For(self, loop: For):
        body = self.visit(loop.body)
        loop = loop if body is loop.body else loop.replace(body=body)
        if not _explicit(loop):
            return loop
        start, extent = loop.min.value, loop.extent.value
        var = loop.loop_var
        return seq(
            *(substitute(loop.body, {var: IntImm(start + n, var.dtype)}) for n in range(extent))
        )


def unroll_explicit_pass(func: PrimFunc, target: Target | None = None) -> PrimFunc:
    """Unroll the ``pragma_unroll_explicit`` loops (module docstring)."""
    if not collect(func.body, lambda n: isinstance(n, For) and _explicit(n)):
        return func
    return func.replace(body=_Unroll().visit(func.body))
