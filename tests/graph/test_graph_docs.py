"""The Examples in the graph level's docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = ["ir", "printer", "builder", "interpreter", "passes.dce", "passes.constant_fold",
           "passes.cse", "passes.simplify", "passes.memory_plan", "passes.pipeline", "passes.rotary", "passes.rms_norm", "passes.sink_transposes", "passes.pad_matmul", "passes.pack_matmul",
           "frontends.onnx", "lower_ops"]
# the graph's default schedules (recipes chosen through the target's ``graph_schedule``)
RECIPE_MODULES = ["graph_cpu", "graph_cpu_ops", "graph_cuda", "graph_cuda_ops", "reduce_cuda"]


@pytest.mark.parametrize("name", MODULES + [f"workbench.recipes.{m}" for m in RECIPE_MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name if name.startswith("workbench.") else f"workbench.graph.{name}")
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0


def test_package_and_torch_frontend_examples():
    pytest.importorskip("torch")
    for name in ("workbench.graph", "workbench.graph.frontends.torch_fx"):
        outcome = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        assert outcome.attempted > 0 and outcome.failed == 0, name
