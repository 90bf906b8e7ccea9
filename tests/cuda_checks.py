"""Shared checks of the cuda recipe tests: a recipe's matmul built and run against numpy."""

from __future__ import annotations

import numpy as np

from workbench import ops, recipes
from workbench.backends import build


def checked_matmul(rng, name: str, m: int, n: int, k: int, **options):
    """``matmul/<name>/cuda`` on ``ops.matmul(m, n, k)`` with ``options``, built and run on
    random A and B (C filled with NaN first: every element must be written), compared with
    numpy in float64; returns the built kernel."""
    sch = recipes.get("matmul", name, "cuda")(ops.matmul(m, n, k), **options)
    kernel = build(sch, target="cuda")
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    return kernel
