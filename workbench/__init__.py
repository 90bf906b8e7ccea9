"""Workbench: a Jupyter-first interactive scheduling workbench for tensor operators.

The public API (see DESIGN.md)::

    import workbench as wb
    from workbench import T

Names are imported lazily on first use so that ``import workbench`` stays fast (Numba
and pandas load only when a backend or a measurement needs them).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it
_PUBLIC = {
    "T": "workbench.script",
    "prim_func": "workbench.script",
    "from_source": "workbench.script",
    "DSLError": "workbench.script",
    "PrimFunc": "workbench.ir",
    "Schedule": "workbench.schedule",
    "ScheduleError": "workbench.schedule",
    "Trace": "workbench.schedule",
    "build": "workbench.backends",
    "Kernel": "workbench.backends",
    "Target": "workbench.backends",
    "KernelArgumentError": "workbench.backends",
    "KernelArgumentAliasError": "workbench.backends",
    "KernelBoundsError": "workbench.backends",
    "IRVerifyError": "workbench.ir.verify",
    "verify": "workbench.ir.verify",
    "measure": "workbench.measure",
    "machine_peaks": "workbench.measure",
    "MeasureResult": "workbench.measure",
    "ops": "workbench.ops",
    "analysis": "workbench.ir.analysis",
    "explore": "workbench.widgets",
    "Explorer": "workbench.widgets",
    # visualizers (issue 8): each usable alone, rich in a notebook, text elsewhere
    "ir_html": "workbench.viz",
    "code_html": "workbench.viz",
    "ir_diff": "workbench.viz",
    "code_diff": "workbench.viz",
    "loop_nest_graph": "workbench.viz",
    "loop_nest": "workbench.viz",
    "access_map": "workbench.viz",
    "access_figure": "workbench.viz",
    "tile_footprint": "workbench.viz",
    "footprint_warnings": "workbench.viz",
    "plot_roofline": "workbench.viz",
    "analytic_point": "workbench.viz",
    "latency_figure": "workbench.viz",
    "sweep_heatmap": "workbench.viz",
    "graph_figure": "workbench.viz",
    "peaks_consistent": "workbench.measure.peaks",
    "viz": "workbench.viz",
    # auto-tuning (issue 10)
    "tune": "workbench.tune",
    "load_best": "workbench.tune",
    "TuneResult": "workbench.tune",
    "load_artifact": "workbench.tune.artifact",
    "export_artifact": "workbench.tune.artifact",
    # graph level (issue 11)
    "compile": "workbench.graph",
    "load": "workbench.graph",
    "ModelInputError": "workbench.graph.compiler",
    # artifacts (issue 17): files checked by hash, kernels generated again on load
    "ArtifactIntegrityError": "workbench.integrity",
    "graph": "workbench.graph",
}


def __getattr__(name: str):
    module_name = _PUBLIC.get(name)
    if module_name is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    # a module of the same name is the value itself (``wb.ops``, ``wb.viz``) unless it is
    # not callable and holds a function of that name (``wb.verify``: the function, not the
    # module ``workbench.ir.verify``); ``wb.tune`` and ``wb.measure`` are callable modules
    whole = module_name.endswith("." + name) and (callable(module) or not hasattr(module, name))
    value = module if whole else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_PUBLIC))
