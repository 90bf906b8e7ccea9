"""Recipes: named hand-written schedules per operator and target.

The operator library (``workbench.ops``) says *what* is computed; a recipe says *how*, for
one target: ``recipes.matmul.packed_cpu(func)`` packs B into panels and keeps a register
tile, ``recipes.softmax.fused_cpu(func)`` fuses the three softmax passes into one. The
notebooks, the benches and the tuner's hand baselines import them from here. Vector loops
and register tiles are sized from the machine (``workbench.backends.cpu.cpu_facts``).

The default schedules of a compiled graph's kernels live here too (``graph_cpu``,
``graph_cpu_ops``, ``graph_cuda``, ``graph_cuda_ops``): rules that recognise a kernel by its
blocks and apply the matching recipe, chosen through the target's ``graph_schedule`` hook
and imported on first use.

Example
-------
>>> from workbench import ops, recipes
>>> [f"{r.op}/{r.name}" for r in recipes.list(target="cpu")][:3]
['attention/row_blocks', 'attention/rows', 'avg_pool2d/direct']
>>> sch = recipes.get("softmax", "fused", "cpu")(ops.softmax(64, 256))
"""

from workbench.recipes import (
    attention,
    attention_cuda,
    bmm_cuda,
    conv2d_1x1_cpu,
    conv2d_cpu,
    conv2d_cuda,
    conv2d_depthwise_cpu,
    conv2d_packed_cpu,
    elementwise_cuda,
    gemv_cuda,
    layernorm,
    matmul,
    matmul_cuda,
    pool_cpu,
    reduce_cuda,
    rows_cuda,
    softmax,
    softmax_lowering,
)
from workbench.recipes.registry import RECIPES, Recipe, get, list_recipes, register

list = list_recipes  # noqa: A001 (the public name is recipes.list(), as the issue asks)

__all__ = ["RECIPES", "Recipe", "get", "list", "list_recipes", "register", "attention",
           "attention_cuda", "bmm_cuda", "conv2d_1x1_cpu", "conv2d_cpu", "conv2d_depthwise_cpu",
           "conv2d_packed_cpu",
           "layernorm", "matmul", "softmax", "conv2d_cuda",
           "elementwise_cuda", "gemv_cuda", "matmul_cuda", "pool_cpu", "reduce_cuda", "rows_cuda",
           "softmax_lowering"]
