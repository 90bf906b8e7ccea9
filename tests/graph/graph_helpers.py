"""Helpers of the graph tests that need no torch."""

from __future__ import annotations

import numpy as np


def assert_same_outputs(before, after, *inputs, rtol=1e-4, atol=1e-5):
    """Both graphs compute the same outputs (numpy interpreter) on ``inputs``."""
    from workbench.graph import run

    for x, y in zip(run(before, *inputs), run(after, *inputs), strict=True):
        np.testing.assert_allclose(y, x, rtol=rtol, atol=atol)
