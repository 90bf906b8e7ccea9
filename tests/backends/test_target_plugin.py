"""A target registered from the test suite (``tests/targets/cpu_serial.py``) passes every
public entry point: adding a target adds files, not branches (issue 18)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import workbench as wb
from tests.targets.cpu_serial import NAME
from workbench import ops, recipes
from workbench.backends.common.target import Target, resolve_target, target_names
from workbench.tune.artifact import export_artifact, load_artifact


def _parallel_matmul(n=16):
    sch = wb.Schedule(ops.matmul(n, n, n))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    return sch


def test_the_test_target_is_registered_and_resolves_from_names_and_objects():
    assert NAME in target_names()
    target = resolve_target(NAME)
    assert target == Target(NAME) == NAME and target.recipe_target == "cpu"
    assert pickle.loads(pickle.dumps(target.with_options(fastmath=False))) == \
        Target(NAME, fastmath=False)
    with pytest.raises(ValueError, match="build: unknown target 'tpu'"):
        resolve_target("tpu", "build")
    with pytest.raises(TypeError, match="tune: target must be a name or a Target"):
        resolve_target(3, "tune")


def test_build_runs_the_targets_own_passes_and_measure_accepts_it(rng):
    sch = _parallel_matmul()
    a, b = (rng.standard_normal((16, 16), dtype=np.float32) for _ in range(2))
    kernels = {name: wb.build(sch, target=name) for name in ("cpu", NAME)}
    assert "prange" in kernels["cpu"].source and "prange" not in kernels[NAME].source
    serial = kernels[NAME]
    assert serial.target == NAME and serial.target_info == Target(NAME)
    c = np.zeros((16, 16), np.float32)
    serial(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    result = wb.measure(serial, a, b, c, min_repeats=1, max_repeats=2, budget_s=0.01,
                        rotate=False)
    assert result.target == NAME and result.median_s > 0


def test_tune_with_a_few_trials_and_load_best(tmp_path):
    func = ops.matmul(16, 16, 16)
    db = tmp_path / "records.jsonl"
    result = wb.tune(func, target=wb.Target(NAME), trials=2, db=str(db), strategy="random",
                     progress=False, repeats=1, batch_size=2)
    assert result.target == NAME and len(result.records) == 2
    assert any(r.ok for r in result.records), [r.error for r in result.records]
    assert result.space.target == NAME
    sch = wb.load_best(str(db), func, target=NAME)
    assert sch.mod.name == func.name


def test_compile_a_tiny_graph_and_save_and_load_it(tmp_path, rng):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    compiled = wb.compile(model, (x,), target=NAME)
    assert compiled.target == NAME
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert all("prange" not in k.source for k in compiled.kernels)
    compiled.save(tmp_path / "model")
    loaded = wb.load(tmp_path / "model")
    assert loaded.target == NAME
    np.testing.assert_allclose(loaded(x), compiled(x), rtol=1e-6)


def test_artifact_export_and_load(tmp_path, rng):
    func = ops.matmul(16, 16, 16)
    folder = export_artifact(_parallel_matmul(), tmp_path / "art", target=NAME, func=func)
    kernel = load_artifact(folder)
    assert kernel.manifest["target"] == NAME and "prange" not in kernel.source
    a, b = (rng.standard_normal((16, 16), dtype=np.float32) for _ in range(2))
    c = np.zeros((16, 16), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_recipes_and_generated_space_accept_it():
    recipe = recipes.get("matmul", "packed", NAME)
    assert recipe is recipes.get("matmul", "packed", Target("cpu"))
    sch = recipe(ops.matmul(64, 64, 64))
    assert "cache_read" in str(sch.trace)
    from workbench.viz.advice import schedule_warnings

    assert schedule_warnings(sch, target=NAME) == schedule_warnings(sch, target="cpu")


def test_explore_opens_on_it_and_shows_its_kernel():
    pytest.importorskip("ipywidgets")
    ex = wb.explore(_parallel_matmul(), target=NAME, measure=False)
    ex.wait()
    assert ex.target == Target(NAME) and ex.runner.target == NAME
    assert NAME in ex.controls.target.options
    code = ex.views["code"].value
    assert "B[k, j]" in code and "prange" not in code  # its own pass ran: no parallel loop
    ex.set_target("cpu")
    ex.wait()
    assert "prange" in ex.views["code"].value
