"""The ``numpy`` target's registration: the reference executor (see ``numpy_ref``)."""

from __future__ import annotations

import time

from workbench.backends.kernel import Kernel
from workbench.backends.target import CPU_FACTS, Target, TargetKind, register_target
from workbench.ir import PrimFunc

NUMPY_DEFAULTS = {"whole_array": True}
"""Options of the ``numpy`` target: ``whole_array=False`` runs every statement as loops."""


def compile_numpy(func: PrimFunc, lowered: PrimFunc, target: Target, written) -> Kernel:
    """The reference program of ``func`` wrapped in a ``Kernel`` (no passes, no cache)."""
    from workbench.backends.numpy_ref import ReferenceProgram

    start = time.perf_counter()
    program = ReferenceProgram(func, whole_array=target.options["whole_array"])
    seconds = time.perf_counter() - start
    source = "\n".join(program.sources) or "# every statement runs as whole numpy arrays\n"
    return Kernel(
        func,
        lowered,
        "numpy",
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
        device=lambda: CPU_FACTS,
        description="reference executor: whole numpy arrays where possible, Python loops elsewhere",
    )
)
