"""compiled.explore(node) opens a fused kernel's loop nest in the explorer;
compiled.reschedule(node, ...) swaps its schedule; values checked against torch after."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench import recipes  # noqa: E402
from workbench.schedule import Schedule  # noqa: E402


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 12), torch.nn.GELU(),
                                torch.nn.Linear(12, 4)).eval()
    x = torch.randn(6, 8)
    return model, x, wb.compile(model, (x,))


def _fused_node(compiled):
    return next(k.node for k in compiled.kernels if k.pattern == "matmul+add+gelu")


def test_reschedule_with_a_trace_swaps_the_kernel_and_keeps_the_values(mlp):
    model, x, compiled = mlp
    node = _fused_node(compiled)
    sch = Schedule(compiled.func(node))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 2])
    sch.reorder(io, k, ii, j)
    sch.unroll(ii)
    compiled.reschedule(node, sch.trace)
    assert compiled.schedule(node).trace == sch.trace
    assert "unroll" in compiled.schedule(node).mod.script()
    x2 = torch.randn_like(x)
    np.testing.assert_allclose(compiled(x2), model(x2).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_reschedule_with_a_recipe_and_with_json(mlp):
    model, x, compiled = mlp
    node = _fused_node(compiled)
    compiled.reschedule(node, recipes.get("matmul", "parallel_vectorize"))
    assert "parallel" in compiled.schedule(node).mod.script()
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    compiled.reschedule(node, wb.Trace().to_json())  # no schedule at all, as JSON
    assert len(compiled.schedule(node).trace) == 0
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_bad_reschedules_name_the_problem_and_change_nothing(mlp):
    model, x, compiled = mlp
    node = _fused_node(compiled)
    before = compiled.schedule(node)
    with pytest.raises(KeyError, match="no kernel computes 'nope'"):
        compiled.reschedule("nope", wb.Trace())
    with pytest.raises(ValueError, match="not of"):
        compiled.reschedule(node, Schedule(wb.ops.matmul(4, 4, 4)))
    with pytest.raises(TypeError, match="reschedule needs"):
        compiled.reschedule(node, 42)
    assert compiled.schedule(node) is before
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_explore_opens_the_fused_loop_nest_and_its_result_goes_back(mlp):
    model, x, compiled = mlp
    node = _fused_node(compiled)
    explorer = compiled.explore(node, measure=False)
    assert explorer.current.mod == compiled.schedule(node).mod
    current = explorer.current
    assert 'T.block("out")' in current.mod.script()  # the fused epilogue is in the nest
    innermost = current.get(current.get_loops(current.get_block("C"))[-1]).loop_var.name
    assert explorer.apply("unroll", innermost)
    compiled.reschedule(node, explorer)
    assert compiled.schedule(node).trace == explorer.current.trace
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
