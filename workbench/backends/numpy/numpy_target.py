"""The ``numpy`` target's registration: the reference executor (see ``numpy_ref``)."""

from __future__ import annotations

import time

from workbench.backends.common.kernel import Kernel
from workbench.backends.common.machine import host_device_facts
from workbench.backends.common.target import Target, TargetKind, register_target
from workbench.ir import PrimFunc

NUMPY_DEFAULTS = {
    "whole_array": True,
    "iteration_order": "program",
    "order_seed": 0,
    "debug": False,
}
"""Options of the ``numpy`` target: ``whole_array=False`` runs every statement as loops;
``iteration_order="reversed"``/``"shuffled"`` (seeded by ``order_seed``) runs parallel and
vectorized loops out of order, to detect races (``workbench.backends.numpy.numpy_ref``);
``debug=True`` checks the accesses not proven in bounds (as for ``cpu``; statements with a
check run as loops)."""


def compile_numpy(func: PrimFunc, lowered: PrimFunc, target: Target, written) -> Kernel:
    """The reference program of ``func`` wrapped in a ``Kernel`` (no passes, no cache)."""
    from workbench.backends.numpy.numpy_ref import ReferenceProgram

    start = time.perf_counter()
    program = ReferenceProgram(
        func,
        whole_array=target.options["whole_array"],
        iteration_order=target.options["iteration_order"],
        order_seed=target.options["order_seed"],
    )
    seconds = time.perf_counter() - start
    source = "\n".join(program.sources) or "# every statement runs as whole numpy arrays\n"
    return Kernel(
        func,
        lowered,
        target.name,
        program,
        options=dict(target.options),
        source=source,
        written=written,
        compile_seconds=seconds,
        target_info=target,
    )


NUMPY = register_target(
    TargetKind(
        "numpy",
        NUMPY_DEFAULTS,
        passes=(),
        compile=compile_numpy,
        kernel_class=Kernel,
        device=host_device_facts,
        description="reference executor: whole numpy arrays where possible, Python loops elsewhere",
        tuning_rules="workbench.tune.rules_cpu:cpu_rules",  # runs the cpu space's schedules
        cost_prior=True,
        warnings="workbench.viz.advice:cpu_schedule_warnings",
        explore_as="cpu",
        graph_layout="workbench.graph.passes.fold_views:views_layout",
        module=__name__,
    )
)
