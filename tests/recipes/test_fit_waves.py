"""``bench/gpu/fit_waves.py``: the ``"waves"`` policy's constants refit from a sweep of
``gpu_plan.py``. On the committed H100 sweep (run 6) the fit at the committed counts gives
back the committed ``WAVE_US_PER_K`` (they were made that way) and their picks are within
8% of the fastest measured plan, as ``graph_cuda_ops`` states; the refit's picks are no
worse; bad input is refused by name."""

from __future__ import annotations

import json

import pytest
from bench_scripts import BENCH_GPU, bench_module

from workbench.recipes import graph_cuda_ops as g

SWEEP = BENCH_GPU / "results" / "h100_run6_sweep.json"


@pytest.fixture(scope="module")
def fit_waves():
    with bench_module("fit_waves") as module:
        yield module


@pytest.fixture(scope="module")
def rows(fit_waves):
    return fit_waves.sweep_rows(json.loads(SWEEP.read_text()))


def test_the_committed_counts_give_back_the_committed_constants(fit_waves, rows):
    assert len(rows) == 48 and {r["tile"] for r in rows} == {32, 64, 128}
    fitted = fit_waves.fit_sides(rows, fit_waves.current_per_sm((32, 64, 128)))
    for tile, side in fitted.items():
        assert side["us_per_k"] == pytest.approx(g.WAVE_US_PER_K[tile], abs=5e-4)
        assert side["rows"] == 16
    picks = fit_waves.picks(rows, fitted)
    assert [p["shape"] for p in picks] == [(64, 50176, 576), (128, 12544, 1152),
                                           (256, 3136, 2304), (512, 784, 4608)]
    assert all(0 <= p["loss"] <= 0.08 for p in picks)
    assert picks[2]["pick"][:2] == (64, 8) == picks[2]["best"][:2]


def test_the_refit_picks_no_worse_than_the_committed_counts(fit_waves, rows):
    committed = fit_waves.picks(rows, fit_waves.fit_sides(
        rows, fit_waves.current_per_sm((32, 64, 128))))
    refit = fit_waves.picks(rows, fit_waves.fit(rows, per_sm=(2, 4, 8)))
    assert sum(p["loss"] for p in refit) <= sum(p["loss"] for p in committed)
    assert all(p["loss"] >= 0 for p in refit)


def test_the_model_brackets_a_rows_time(fit_waves):
    """``_per_unit`` inverts ``predicted_matmul_s``: a row timed at the model's own
    prediction fits back to the constant it was predicted with."""
    row = {"m": 1024, "n": 768, "k": 3072, "tile": 64, "split": 4}
    row["s"] = g.predicted_matmul_s(1024, 768, 3072, 64, 4, slots=528, us_per_k=0.2)
    assert fit_waves._per_unit(row, 528) == pytest.approx(0.2)


def test_a_plan_without_a_sweep_is_refused(fit_waves, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"parts": {"models": {}}}))
    with pytest.raises(SystemExit) as exit_info:
        fit_waves.main([str(plan)])
    assert exit_info.value.code == 2
    assert "no part 'sweep'" in capsys.readouterr().err


def test_the_report_prints_the_constants(fit_waves, capsys):
    assert fit_waves.main([str(SWEEP)]) == 0
    out = capsys.readouterr().out
    assert "| 64 | 4 -> " in out and "(in use: 0.166)" in out
    assert "| 256 x 3136 x 2304 | 64, 8, 154 us |" in out
    assert "WAVE_US_PER_K = {32: " in out


def test_an_unreadable_plan_is_refused_by_name(fit_waves, tmp_path, capsys):
    plan = tmp_path / "broken.json"
    plan.write_text("{not json")
    with pytest.raises(SystemExit):
        fit_waves.main([str(plan)])
    assert "broken.json: not a readable plan JSON" in capsys.readouterr().err


def test_the_refit_written_for_gpu_plan_sets_the_policy(fit_waves, tmp_path, monkeypatch):
    """``--json`` writes the refit constants; ``gpu_plan.py --waves`` reads them back and sets
    ``WAVE_SLOTS`` and ``WAVE_US_PER_K`` from them; a file naming a tile the policy has no
    constant of is refused."""
    path = tmp_path / "waves.json"
    assert fit_waves.main([str(SWEEP), "--json", str(path)]) == 0
    written = json.loads(path.read_text())
    assert set(written["per_sm"]) == set(written["us_per_k"]) == {"32", "64", "128"}
    assert 0 <= written["loss"]["refit"] <= written["loss"]["committed"] <= 0.08
    with bench_module("gpu_plan") as plan:
        constants = plan.parse_args(["--waves", str(path)]).waves
        assert constants[64] == (written["per_sm"]["64"], written["us_per_k"]["64"])
        monkeypatch.setattr(g, "WAVE_SLOTS", dict(g.WAVE_SLOTS))
        monkeypatch.setattr(g, "WAVE_US_PER_K", dict(g.WAVE_US_PER_K))
        plan.set_wave_constants(constants)
        assert g.WAVE_SLOTS[64] == written["per_sm"]["64"] * fit_waves.MIN_BLOCKS
        assert g.WAVE_US_PER_K[128] == written["us_per_k"]["128"]
        written["per_sm"]["48"], written["us_per_k"]["48"] = 2, 0.1
        path.write_text(json.dumps(written))
        with pytest.raises(SystemExit):
            plan.parse_args(["--waves", str(path)])
