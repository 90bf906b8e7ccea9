"""Schedules: primitives that rewrite a PrimFunc's loops, with handles and a replayable trace.

Example
-------
>>> from workbench.schedule import Schedule
>>> sch = Schedule(matmul)
>>> i, j, k = sch.get_loops(sch.get_block("C"))
>>> io, ii = sch.split(i, factors=[None, 4])
>>> print(sch.trace)
b0 = sch.get_block("C")
l1, l2, l3 = sch.get_loops(b0)
l4, l5 = sch.split(l1, factors=[None, 4])
"""

from workbench.schedule import (  # noqa: E402
    errors_binding,
    errors_blockize,
    errors_compute_location,
    errors_layout,
    errors_memory,
    errors_padding,
    errors_reduction,
    errors_reindex,
    errors_sampling,
    errors_storage,
    scope_errors,
)
from workbench.schedule.errors import (
    AmbiguousNameError,
    BlockNotFoundError,
    ForeignHandleError,
    InvalidAnnotationError,
    InvalidArgumentError,
    LoopNotFoundError,
    NameNotFoundError,
    NothingToUndoError,
    RemovedHandleError,
    ScheduleError,
    WrongHandleKindError,
)
from workbench.schedule.errors_binding import *  # noqa: F403
from workbench.schedule.errors_blockize import *  # noqa: F403
from workbench.schedule.errors_compute_location import *  # noqa: F403
from workbench.schedule.errors_layout import *  # noqa: F403
from workbench.schedule.errors_loops import (
    AnnotatedLoopError,
    DependentLoopBoundError,
    DuplicateLoopError,
    HasAnnotationOrThreadBindingError,
    LoopsNotAdjacentError,
    LoopsNotInSameNestError,
    MixedLoopReorderError,
    MultipleNoneFactorsError,
    NonAffineBindingError,
    NonConstantExtentError,
    NonDividingFactorError,
    NonPositiveFactorError,
    NonSerialLoopError,
    NotInnermostLoopError,
    NotPerfectlyNestedError,
    ReductionLoopError,
    ThreadBoundLoopError,
    WrongFactorProductError,
)
from workbench.schedule.errors_memory import *  # noqa: F403
from workbench.schedule.errors_padding import *  # noqa: F403
from workbench.schedule.errors_reduction import *  # noqa: F403
from workbench.schedule.errors_reindex import *  # noqa: F403
from workbench.schedule.errors_sampling import *  # noqa: F403
from workbench.schedule.errors_storage import *  # noqa: F403
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.legality import Legality, LegalityTable
from workbench.schedule.schedule import Schedule
from workbench.schedule.scope_errors import *  # noqa: F403
from workbench.schedule.trace import (
    INSTRUCTIONS,
    Instruction,
    Trace,
    TraceError,
    register_instruction,
)

__all__ = [
    "Schedule",
    "Trace",
    "TraceError",
    "Instruction",
    "INSTRUCTIONS",
    "register_instruction",
    "BlockRV",
    "LoopRV",
    "Legality",
    "LegalityTable",
    "ScheduleError",
    "AmbiguousNameError",
    "BlockNotFoundError",
    "DependentLoopBoundError",
    "DuplicateLoopError",
    "ForeignHandleError",
    "InvalidAnnotationError",
    "InvalidArgumentError",
    "LoopNotFoundError",
    "NameNotFoundError",
    "LoopsNotAdjacentError",
    "LoopsNotInSameNestError",
    "MixedLoopReorderError",
    "MultipleNoneFactorsError",
    "NonConstantExtentError",
    "NonDividingFactorError",
    "NonPositiveFactorError",
    "NotInnermostLoopError",
    "NothingToUndoError",
    "NotPerfectlyNestedError",
    "ReductionLoopError",
    "RemovedHandleError",
    "WrongFactorProductError",
    "WrongHandleKindError",
    "AnnotatedLoopError",
    "HasAnnotationOrThreadBindingError",
    "NonAffineBindingError",
    "NonSerialLoopError",
    "ThreadBoundLoopError",
    *errors_compute_location.__all__,
    *errors_memory.__all__,
    *errors_layout.__all__,
    *errors_reduction.__all__,
    *scope_errors.__all__,
    *errors_blockize.__all__,
    *errors_padding.__all__,
    *errors_reindex.__all__,
    *errors_sampling.__all__,
    *errors_storage.__all__,
    *errors_binding.__all__,
]
