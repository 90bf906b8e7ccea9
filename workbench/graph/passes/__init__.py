"""Graph passes, one file each; ``Pipeline`` runs a configurable list of them."""

from workbench.graph.passes.constant_fold import fold_constants
from workbench.graph.passes.cse import eliminate_common_subexpressions
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.graph.passes.fold_batchnorm import fold_batchnorm
from workbench.graph.passes.fusion import FusionPlan, NotFused, fuse, plan_fusion
from workbench.graph.passes.layout import convert_layout_nhwc, count_transposes
from workbench.graph.passes.memory_plan import MemoryPlan, plan_memory
from workbench.graph.passes.pipeline import PASSES, Pipeline, PipelineStep
from workbench.graph.passes.simplify import simplify

__all__ = ["PASSES", "FusionPlan", "MemoryPlan", "NotFused", "Pipeline", "PipelineStep",
           "convert_layout_nhwc", "count_transposes", "eliminate_common_subexpressions",
           "eliminate_dead_code", "fold_batchnorm", "fold_constants", "fuse", "plan_fusion",
           "plan_memory", "simplify"]
