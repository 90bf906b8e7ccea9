"""Visualisers: every one usable alone, rich in a notebook, plain text elsewhere.

============================  =====================================================================
``ir_html`` / ``code_html``   IR (TVMScript-like text) and generated code as highlighted HTML
``ir_diff`` / ``code_diff``   two schedules' IR, or two generated sources, side by side
``loop_nest_graph``           the loop nest as a graphviz drawing (``loop_nest`` gives a view)
``access_map`` / ``..figure`` which elements of a buffer one tile touches, and in which order
``access_images``             the same as small images per buffer (no Matplotlib, for widgets)
``tile_footprint``            bytes per buffer touched by one iteration of a loop's body
``footprint_warnings``        that footprint against the machine's L1/L2 or a GPU's shared memory
``schedule_warnings``         vector-width alignment, cores, unroll size, threads per block
``plot_roofline``             measured and analytic points on the machine's roofs, arrows per step
``latency_figure``            median latency with spread, GFLOP/s and GB/s against a baseline
``sweep_heatmap``             two tile sizes to a measured value
``graph_figure``              a dataflow graph (ops, tensor types, fused groups)
``steps_table``               lowering steps side by side
============================  =====================================================================

Names are imported lazily, so ``import workbench.viz`` does not import matplotlib.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "HTMLView": "workbench.viz.html",
    "ir_html": "workbench.viz.html",
    "code_html": "workbench.viz.html",
    "ir_text": "workbench.viz.html",
    "DiffView": "workbench.viz.diff",
    "ir_diff": "workbench.viz.diff",
    "code_diff": "workbench.viz.diff",
    "LoopNestView": "workbench.viz.loopnest",
    "loop_nest_graph": "workbench.viz.loopnest",
    "loop_nest": "workbench.viz.loopnest",
    "loop_nest_text": "workbench.viz.loopnest",
    "KIND_STYLES": "workbench.viz.loopnest",
    "access_map": "workbench.viz.access",
    "access_figure": "workbench.viz.access",
    "access_images": "workbench.viz.access_image",
    "AccessImages": "workbench.viz.access_image",
    "tile_footprint": "workbench.viz.footprint",
    "footprint_warnings": "workbench.viz.footprint",
    "cache_sizes": "workbench.viz.footprint",
    "schedule_warnings": "workbench.viz.advice",
    "plot_roofline": "workbench.viz.roofline",
    "roofline_figure": "workbench.viz.roofline",
    "analytic_point": "workbench.viz.roofline",
    "AnalyticPoint": "workbench.viz.roofline",
    "new_figure": "workbench.viz.figures",
    "peaks_consistent": "workbench.measure.peaks",
    "latency_figure": "workbench.viz.perf",
    "sweep_heatmap": "workbench.viz.perf",
    "styled_frame": "workbench.viz.tables",
    "round_frame": "workbench.viz.tables",
    "graph_figure": "workbench.viz.graph",
    "GraphNode": "workbench.viz.graph",
    "GraphEdge": "workbench.viz.graph",
    "GraphView": "workbench.viz.graph",
    "graph_text": "workbench.viz.graph",
    "place_labels": "workbench.viz.roofline",
    "refresh_if_inconsistent": "workbench.measure.peaks",
    "steps_table": "workbench.viz.steps",
    "show_steps": "workbench.viz.steps",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    module_name = _PUBLIC.get(name)
    if module_name is None:
        raise AttributeError(f"module 'workbench.viz' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_PUBLIC))
