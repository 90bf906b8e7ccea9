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
