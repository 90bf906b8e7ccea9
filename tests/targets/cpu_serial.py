"""A test target, ``cpu-serial``, registered from the test suite: the ``cpu`` target with
every parallel loop run serially (a pass of its own) and serial graph schedules.

It proves that adding a target adds files, not branches: every entry point (``build``,
``measure``, ``tune``, ``explore``, ``compile``, artifacts, ``recipes.get``) accepts it
without a line of theirs naming it. Import this module to register it (a ``Target("cpu-serial")``
unpickled in a tuning worker imports it again, through ``TargetKind.module``).
"""

from __future__ import annotations

import dataclasses

from workbench.backends.common.target import Target, get_target_kind, register_target
from workbench.ir import PrimFunc
from workbench.ir.functor import IRMapper
from workbench.ir.stmt import ForKind

NAME = "cpu-serial"


class _Serialize(IRMapper):
    def visit_For(self, node):
        node = self.generic_visit(node)
        if node.kind == ForKind.PARALLEL:
            return node.replace(kind=ForKind.SERIAL)
        return node


def serialize_parallel(func: PrimFunc, target: Target) -> PrimFunc:
    """The target's own pass: parallel loops become serial loops."""
    body = _Serialize().visit(func.body)
    return func if body is func.body else func.replace(body=body)


def serial_graph_schedule(func, target, parallel: bool = True):
    """Graph kernels get the cpu schedules, never parallel."""
    from workbench.recipes.graph_cpu import cpu_schedule

    return cpu_schedule(func, target, parallel=False)


_CPU = get_target_kind("cpu")
CPU_SERIAL = register_target(dataclasses.replace(
    _CPU,
    name=NAME,
    passes=(serialize_parallel, *_CPU.passes),
    graph_schedule=serial_graph_schedule,
    recipes="cpu",
    description="test target: the cpu target, every loop serial",
    module=__name__,
))
