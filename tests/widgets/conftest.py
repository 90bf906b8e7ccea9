"""The explorer the widget tests drive (peaks fixed, no measuring)."""

import pytest
from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops


@pytest.fixture
def ex():
    explorer = wb.explore(ops.matmul(64, 64, 64), peaks=PEAKS, measure=False)
    yield explorer.wait()
    explorer.close()
