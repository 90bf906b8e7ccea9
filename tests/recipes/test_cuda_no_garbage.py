"""No ``cuda`` recipe computes on uninitialised on-chip memory (issue 20, the CI log's
``RuntimeWarning: overflow encountered in scalar multiply`` from the split-K SGEMM).

Under the simulator every ``cuda.local.array`` and ``cuda.shared.array`` is poisoned with
the largest float32 (instead of ``np.empty``'s whatever-was-there) and numpy's
RuntimeWarnings raise (``warnings`` filters reach the simulator's threads; ``np.errstate``
does not). A kernel that multiplies a value no load wrote overflows at once. The edge
blocks of a partitioned kernel (``cuda_partition``) run the register tile's FMA loop
unguarded: the fragments past the edge are then loaded as zeros, never left as garbage.
"""

import warnings

import numpy as np
import pytest
from numba import cuda

from workbench import ops, recipes
from workbench.backends import build

pytestmark = pytest.mark.cuda


class _Poisoned:
    """``numpy`` as the simulator's kernel API sees it, ``empty`` filled with float max."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float):
        out = np.empty(shape, dtype)
        if np.issubdtype(out.dtype, np.floating):
            out.fill(np.finfo(out.dtype).max)
        return out


@pytest.fixture
def poisoned(monkeypatch):
    """On-chip arrays start as float max and numpy's RuntimeWarnings raise."""
    from numba.cuda.simulator import kernelapi

    monkeypatch.setattr(kernelapi, "np", _Poisoned())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _check(rng, func, sch, reference):
    arrays = [rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:-1]]
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel = build(sch, target="cuda")
    kernel(*arrays, out)
    np.testing.assert_allclose(out, reference(*[a.astype(np.float64) for a in arrays]),
                               rtol=1e-4, atol=1e-4)
    return kernel


@pytest.mark.parametrize(("m", "n", "k", "options"), [
    (9, 11, 64, {}),                # the CI log's kernel: default split-K, one edge block
    (40, 72, 24, {}),               # edge blocks past a full 32 x 32 tile (shared rows)
    (17, 33, 45, {"split_k": 3}),   # odd K slices
])
def test_register_blocked_edges_compute_no_garbage(rng, poisoned, m, n, k, options):
    func = ops.matmul(m, n, k)
    sch = recipes.get("matmul", "register_blocked", "cuda")(func, **options)
    kernel = _check(rng, func, sch, lambda a, b: a @ b)
    assert "= np.float32(0.0)" in kernel.source.split("else:", 1)[-1]  # zero-filled edges


def test_the_poison_catches_a_garbage_read(rng, poisoned):
    """The fixture itself: a kernel reading a register it never wrote raises."""
    @cuda.jit
    def garbage(out):
        tmp = cuda.local.array(2, np.float32)
        tmp[0] = 2.0
        out[0] = tmp[0] * tmp[1]

    with pytest.raises(RuntimeWarning, match="overflow"):
        garbage[1, 1](np.zeros(1, np.float32))


@pytest.mark.parametrize("func", [
    ops.conv2d_nchw(1, 6, 9, 9, 20, 3, 3, stride=2, padding=1),  # edges of every tile
    ops.attention(1, 2, 7, 8, causal=True),                       # 7 keys of 32 lanes
    ops.softmax(3, 100),
], ids=["conv2d", "attention", "softmax"])
def test_graph_defaults_compute_no_garbage(rng, poisoned, func):
    """The other cuda defaults of a compiled graph at sizes off their tiles."""
    from workbench.recipes.graph_cuda import graph_schedule
    from workbench.schedule import Schedule

    kernel = build(graph_schedule(func), target="cuda")
    arrays = [rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:-1]]
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel(*arrays, out)
    want = np.full_like(out, np.nan)
    build(Schedule(func), target="numpy")(*arrays, want)  # the reference executor
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
