"""Reductions over a row on ``target="cuda"`` (``graph_cuda_ops.row_reduce``,
``recipes.reduce_cuda.warp_rows``): ``sum``/``mean``/``amax`` of the last axes and a row
statistic with its epilogue (an inverse RMS) get a warp (or more) per row, the threads' partials combined by shuffles, under
Numba's CUDA simulator at sizes that are not multiples of the warp or of the rows a block
holds; a reduction over an outer axis and rows shorter than a warp keep the baseline."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from graph_models import Fn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import T, ops, recipes  # noqa: E402
from workbench.backends import build  # noqa: E402
from workbench.recipes.graph_cuda_ops import RULES  # noqa: E402
from workbench.recipes.reduce_cuda import match, row_threads  # noqa: E402

pytestmark = pytest.mark.cuda


def _rules(compiled) -> dict[str, str]:
    """Kernel pattern -> the rule that schedules it (``baseline`` when none does)."""
    return {k.pattern: next((r.__name__ for r in RULES if r(k.func) is not None), "baseline")
            for k in compiled.kernels}


def _compiled(model, x):
    compiled = wb.compile(model.eval(), (x,), target="cuda")
    with torch.no_grad():
        want = model(x).numpy()
    got = compiled(x.numpy())
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    return compiled


@pytest.mark.parametrize(("fn", "shape"), [
    (lambda x: x.sum(-1), (5, 3, 129)),
    (lambda x: x.mean((2, 3)), (2, 3, 7, 9)),     # the trailing 63 flattened into one row
    (lambda x: x.amax(-1), (7, 1000)),           # 1000: 32 threads of 32 elements a row
    (lambda x: x.mean(-1, keepdim=True) * 3 + 1, (9, 40)),
])
def test_a_row_reduction_gets_a_warp_per_row(fn, shape):
    torch.manual_seed(0)
    compiled = _compiled(Fn(fn), torch.randn(*shape) * 3 + 1)
    assert "row_reduce" in _rules(compiled).values(), _rules(compiled)
    source = "\n".join(k.kernel.source for k in compiled.kernels)
    assert "shfl_xor_sync" in source and "threadIdx.y" in source  # 4 rows a block, warp each


def test_an_inverse_rms_is_one_warp_row_kernel():
    """The statistics of an RMS norm alone (the whole norm is ``rms_norm``, a row kernel of
    its own: tests/graph/test_rms_norm.py)."""
    torch.manual_seed(0)
    inverse_rms = Fn(lambda x: torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))
    compiled = _compiled(inverse_rms, torch.randn(2, 7, 100))  # 14 rows: a guarded block
    rules = _rules(compiled)
    assert rules["mean+add+rsqrt"] == "row_reduce", rules
    (stats,) = [k for k in compiled.kernels if k.pattern == "mean+add+rsqrt"]
    assert "if" in stats.kernel.source and "< 14" in stats.kernel.source  # the last block's guard


def test_an_outer_axis_and_short_rows_keep_the_baseline():
    torch.manual_seed(0)
    outer = _compiled(Fn(lambda x: x.amax(1)), torch.randn(2, 40, 33))
    short = _compiled(Fn(lambda x: x.sum(-1)), torch.randn(6, 31))
    assert set(_rules(outer).values()) == {"baseline"}
    assert set(_rules(short).values()) == {"baseline"}


def test_the_recipe_on_the_library_reductions(rng):
    for op, m, n in (("reduce_sum", 7, 33), ("reduce_mean", 5, 300), ("reduce_max", 3, 3000)):
        func = getattr(ops, op)(m, n)
        kernel = build(recipes.get(op, "warp_rows", "cuda")(func), target="cuda")
        a = rng.standard_normal((m, n), dtype=np.float32) * 3
        got, want = np.full(m, np.nan, np.float32), np.zeros(m, np.float32)
        kernel(a, got)
        build(func, target="numpy")(a, want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=op)
    with pytest.raises(ValueError, match="innermost axis"):
        recipes.get("reduce_sum", "warp_rows", "cuda")(ops.reduce_sum(40, 40, axis=0))
    assert match(ops.reduce_sum(4, 31)) is None  # shorter than a warp
    assert match(ops.matmul(64, 64, 64)) is None  # B[k, j] is not read along its row
    assert [row_threads(n) for n in (32, 1024, 1025, 3000, 40000)] == [
        (32, 4), (32, 4), (64, 2), (128, 1), (512, 1)]



@T.prim_func
def _centred(A: T.Buffer((6, 64), "float32"), B: T.Buffer((6, 64), "float32")):
    total = T.alloc_buffer((6,), "float32")
    for i, k in T.grid(6, 64):
        with T.block("total"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                total[vi] = T.float32(0)
            total[vi] = total[vi] + A[vi, vk]
    for i, j in T.grid(6, 64):
        with T.block("out"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] - total[vi]


def test_an_epilogue_over_the_rows_elements_is_not_a_row_reduction():
    """``x - x.sum(-1)`` in one kernel: a warp per output would recompute the row's sum for
    every element; ``match`` refuses a spatial block larger than the rows, and the graph's
    default (the baseline) still computes it."""
    assert match(_centred) is None
    sch = recipes.get("reduce_sum", "warp_rows", "cuda")
    with pytest.raises(ValueError, match="one value"):
        sch(_centred)
