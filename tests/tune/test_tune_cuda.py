"""Tuning on the cuda target through the public API, under the CUDA simulator (issue 20,
item 4): a 4-trial ``wb.tune(target="cuda")`` builds and measures every candidate (the
measuring worker keeps the arrays on the device and times with events), the command line
tunes for cuda, and ``wb.compile(..., target="cuda", schedules=records)`` takes each
kernel's tuned schedule from the records."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.tune.runner import LocalRunner

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def _simulator():
    pytest.importorskip("numba.cuda")
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    if not simulator_enabled():
        pytest.skip("these run under the simulator (NUMBA_ENABLE_CUDASIM=1)")


def test_a_four_trial_cuda_tune_builds_and_measures_every_candidate(tmp_path):
    func = ops.matmul(8, 8, 8)
    with LocalRunner(n_build=1) as runner:
        result = wb.tune(func, target="cuda", trials=4, db=str(tmp_path / "r.jsonl"),
                         strategy="random", cost_model=False, progress=False, repeats=1,
                         runner=runner)
    assert len(result.records) == 4
    assert all(r.ok for r in result.records), [r.error for r in result.records]
    assert all(r.latency_s > 0 and r.target == "cuda" for r in result.records)
    kernel = result.build()  # the best one, replayed and built
    a, b = np.random.default_rng(1).uniform(-1, 1, (2, 8, 8)).astype(np.float32)
    c = np.full((8, 8), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_the_command_line_tunes_for_cuda(tmp_path, capsys):
    from workbench.cli import main

    db = tmp_path / "cli.jsonl"
    code = main(["tune", "matmul", "--shape", "8,8,8", "--target", "cuda", "--trials", "2",
                 "--db", str(db), "--strategy", "random", "--no-progress"])
    assert code == 0, capsys.readouterr().out
    assert "target='cuda'" in capsys.readouterr().out
    assert db.exists()


def test_compile_for_cuda_uses_the_tuned_record_of_each_kernel(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8, bias=False).eval()
    x = torch.randn(4, 8)
    compiled = wb.compile(model, (x,), target="cuda")
    (node,) = [k.node for k in compiled.kernels]
    func = compiled.func(node)
    db = str(tmp_path / "model.jsonl")
    with LocalRunner(n_build=1) as runner:
        result = wb.tune(func, target="cuda", trials=2, db=db, strategy="random",
                         cost_model=False, progress=False, repeats=1, runner=runner)
    assert result.best is not None
    tuned = wb.compile(model, (x,), target="cuda", schedules=db)
    assert tuned.kernels[0].trace_json == result.best.trace
    np.testing.assert_allclose(np.asarray(tuned(x)), model(x).detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_tune_model_tunes_the_slowest_kernel_and_recompiles_with_the_records(tmp_path):
    torch = pytest.importorskip("torch")
    from workbench.graph.tune_model import tune_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    x = torch.randn(4, 8)
    db = str(tmp_path / "model.jsonl")
    with LocalRunner(n_build=1) as runner:
        result = tune_model(model, (x,), target="cuda", db=db, time_budget_s=120, top=1,
                            trials=2, repeat=1, strategy="random", cost_model=False,
                            repeats=1, runner=runner)
    table = result.table()
    (node,) = result.tuned
    best = result.tuned[node].best
    assert best is not None
    # the default schedule was measured beside the candidates; the faster one is compiled
    assert [r.space for r in result.tuned[node].records].count("default") == 1
    assert list(table["tuned"]) == [k == node and best.space != "default"
                                    for k in table["kernel"]]
    kernel = next(k for k in result.compiled.kernels if k.node == node)
    assert kernel.trace_json == best.trace
    np.testing.assert_allclose(np.asarray(result.compiled(x)), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_tune_model_without_any_record_recompiles_with_the_defaults(tmp_path):
    """A budget spent before the first measurement leaves no records file: the model is
    compiled again with the default schedules (it raised FileNotFoundError on the H200)."""
    torch = pytest.importorskip("torch")
    from workbench.graph.tune_model import tune_model

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    x = torch.randn(4, 8)
    result = tune_model(model, (x,), target="cpu", db=str(tmp_path / "none.jsonl"),
                        time_budget_s=0, repeat=1)
    assert result.tuned == {} and not (tmp_path / "none.jsonl").exists()
    np.testing.assert_allclose(np.asarray(result.compiled(x)), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


class _FixedTimes:
    """A runner that measures nothing: the default schedule takes ``default_s``, every
    tuned candidate ``tuned_s`` (which one wins is then known, not timed)."""

    def __init__(self, default_s, tuned_s):
        self.default_s, self.tuned_s = default_s, tuned_s

    def run(self, task, candidates, events=None):
        from workbench.tune.runner import Outcome

        return [Outcome(times_s=[self.default_s if "schedule" in c.config else self.tuned_s],
                        build_s=0.0) for c in candidates]

    def close(self):
        pass


@pytest.mark.parametrize("default_s, tuned_s", [(2e-3, 1e-3), (1e-3, 2e-3)])
def test_tune_model_keeps_the_default_where_no_candidate_beats_it(tmp_path, default_s,
                                                                  tuned_s):
    """On an H100 every tuned candidate of the block's matmuls was slower than the default
    and was used; the default is now a measured record, and the faster one is compiled."""
    torch = pytest.importorskip("torch")
    from workbench.graph.tune_model import tune_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.ReLU()).eval()
    x = torch.randn(5, 12)
    result = tune_model(model, (x,), target="cpu", db=str(tmp_path / "r.jsonl"),
                        time_budget_s=60, top=1, trials=2, repeat=1, strategy="random",
                        cost_model=False, runner=_FixedTimes(default_s, tuned_s))
    (node,) = result.tuned
    records = result.tuned[node].records
    assert sorted(r.space == "default" for r in records) == [False, False, True]
    default_won = default_s < tuned_s
    assert (result.tuned[node].best.space == "default") == default_won
    assert list(result.table()["tuned"]) == [k == node and not default_won
                                             for k in result.table()["kernel"]]
    kernel = next(k for k in result.compiled.kernels if k.node == node)
    assert kernel.trace_json == result.tuned[node].best.trace
    np.testing.assert_allclose(np.asarray(result.compiled(x)), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
