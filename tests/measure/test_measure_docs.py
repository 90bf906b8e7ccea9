"""The Examples in the measurement docstrings run and print what they say."""

import doctest

import pytest

from workbench.measure import peaks, result, rotation
from workbench.viz import roofline


@pytest.mark.parametrize("module", [peaks, result, rotation, roofline], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0
