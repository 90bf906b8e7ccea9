"""The tuning dashboard: pins from its dropdowns, plots from records."""

from __future__ import annotations

import pytest

from workbench import ops
from workbench.tune.database import Record

pytest.importorskip("ipywidgets")


def test_dashboard_plots_records_and_reads_pins():
    from workbench.widgets.tuning_dashboard import TuningDashboard

    dash = TuningDashboard(ops.matmul(16, 16, 16), space="matmul")
    widget = dash._build()
    assert set(dash._dropdowns) == {"tile_i", "tile_j", "tile_k", "order", "unroll"}
    assert dash.pins() == {}
    dash._dropdowns["unroll"].value = "true"
    dash._dropdowns["tile_i"].value = "[4, 4]"
    assert dash.pins() == {"unroll": True, "tile_i": [4, 4]}
    for i, (lat, pred) in enumerate([(2e-3, 3e-3), (1e-3, 1.5e-3), (None, None)]):
        rec = Record("w", "cpu", {"t": i}, latency_s=lat, times_s=[lat] if lat else [],
                     gflops=8192 / lat / 1e9 if lat else None, predicted_s=pred,
                     error=None if lat else "boom", error_kind=None if lat else "crash")
        dash.callback(rec)
    assert dash.best_so_far() == pytest.approx([8192 / 2e-3 / 1e9, 8192 / 1e-3 / 1e9] * 1
                                               + [8192 / 1e-3 / 1e9])
    fig = dash.figure()
    curve, scatter, model = fig.axes
    assert len(scatter.collections) == 2  # measured and failed
    assert len(model.collections) == 1
    assert "3 records" in dash._status.value
    assert widget is dash._widget


def test_dashboard_and_explorer_make_the_space_of_their_target():
    from workbench.widgets.explorer import Explorer
    from workbench.widgets.tuning_dashboard import TuningDashboard

    func = ops.matmul(16, 16, 16)
    cuda = TuningDashboard(func, target="cuda")
    assert cuda.space.target == "cuda" and "shared:C" in cuda.space.knobs
    cpu = TuningDashboard(func, target="cpu")
    assert cpu.space.target == "cpu" and "pack:C" in cpu.space.knobs
    ex = Explorer(func, target="cpu", measure=False)
    dash = ex.tuning_dashboard(db="unused.jsonl", trials=4)
    assert dash.target == "cpu" and dash.space.target == "cpu" and dash.func.same_as(func)
    assert dash.trials == 4 and "pack:C" in dash.space.knobs
