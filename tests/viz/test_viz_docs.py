"""The Examples in the visualizers' docstrings run and print what they say."""

import doctest
import importlib

import matplotlib
import pytest

matplotlib.use("Agg")

MODULES = ["html", "diff", "loopnest", "iteration", "access", "footprint", "roofline", "perf",
           "tables", "graph", "advice", "figures", "access_image"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"workbench.viz.{name}")
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0
