"""``Pipeline``: an ordered, printable, configurable list of graph passes, run step by step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.graph.ir import Graph
from workbench.graph.passes.constant_fold import fold_constants
from workbench.graph.passes.cse import eliminate_common_subexpressions
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.graph.passes.epilogues import match_gelu, sink_reshapes
from workbench.graph.passes.fold_batchnorm import fold_batchnorm
from workbench.graph.passes.fold_views import fold_views
from workbench.graph.passes.fusion import fuse
from workbench.graph.passes.layout import convert_layout_nhwc
from workbench.graph.passes.rms_norm import match_rms_norm
from workbench.graph.passes.rotary import match_rotate_half
from workbench.graph.passes.simplify import simplify

PASSES: dict[str, Callable[[Graph], Graph]] = {
    "fold_constants": fold_constants,
    "simplify": simplify,
    "cse": eliminate_common_subexpressions,
    "dce": eliminate_dead_code,
    "fold_batchnorm": fold_batchnorm,
    "layout_nhwc": convert_layout_nhwc,
    "match_gelu": match_gelu,
    "match_rotate_half": match_rotate_half,
    "match_rms_norm": match_rms_norm,
    "sink_reshapes": sink_reshapes,
    "fold_views": fold_views,
    "fuse": fuse,
}
"""Every pass by name (graph -> graph)."""

DEFAULT = ("fold_constants", "simplify", "cse", "fold_batchnorm", "fold_constants", "dce",
           "match_gelu", "match_rotate_half", "match_rms_norm", "sink_reshapes", "simplify",
           "fuse")


@dataclass(frozen=True)
class PipelineStep:
    """The graph after one pass."""

    name: str
    graph: Graph

    def figure(self):
        from workbench.graph.draw import graph_drawing

        return graph_drawing(self.graph, title=f"after {self.name}")


class Pipeline:
    """Passes by name, in order.

    Example
    -------
    >>> p = Pipeline().without("fuse", "cse", "match_gelu", "match_rotate_half",
    ...                        "match_rms_norm", "sink_reshapes")
    >>> print(p.with_pass("layout_nhwc", after="fold_batchnorm"))  # doctest: +NORMALIZE_WHITESPACE
    Pipeline: fold_constants -> simplify -> fold_batchnorm -> layout_nhwc -> fold_constants
              -> dce -> simplify
    """

    def __init__(self, names=DEFAULT):
        unknown = [n for n in names if n not in PASSES]
        if unknown:
            raise ValueError(f"unknown pass(es) {unknown}; known: {', '.join(PASSES)}")
        self.names = tuple(names)

    def __str__(self) -> str:
        return "Pipeline: " + " -> ".join(self.names)

    __repr__ = __str__

    def without(self, *names: str) -> Pipeline:
        return Pipeline([n for n in self.names if n not in names])

    def with_pass(self, name: str, after: str | None = None) -> Pipeline:
        names = list(self.names)
        index = names.index(after) + 1 if after else len(names)
        names.insert(index, name)
        return Pipeline(names)

    def steps(self, graph: Graph) -> list[PipelineStep]:
        """The input graph, then the graph after each pass."""
        steps = [PipelineStep("import", graph)]
        for name in self.names:
            graph = PASSES[name](graph)
            steps.append(PipelineStep(name, graph))
        return steps

    def __call__(self, graph: Graph, layout: Callable[[Graph], Graph] | None = None) -> Graph:
        """The graph after every pass; ``layout`` (a target's layout pass, ``wb.compile``
        passes it) runs just before ``fuse`` (at the end without one)."""
        for name in self.names:
            if name == "fuse" and layout is not None:
                graph, layout = layout(graph), None
            graph = PASSES[name](graph)
        return layout(graph) if layout is not None else graph
