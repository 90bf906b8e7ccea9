"""The tuning dashboard draws while it tunes (issue 21 items 1 and 6), and tqdm's best is one
record's latency and GFLOP/s (item 5)."""

from __future__ import annotations

import threading

import pytest

from workbench import ops
from workbench.tune.database import Record
from workbench.tune.progress import Progress, Stage

pytest.importorskip("ipywidgets")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def record(trial: int, latency_s: float | None, flops: float = 8.192e6) -> Record:
    return Record("w", "cpu", {"t": trial}, latency_s=latency_s,
                  times_s=[latency_s] if latency_s else [],
                  gflops=flops / latency_s / 1e9 if latency_s else None,
                  predicted_s=latency_s * 1.5 if latency_s else None, trial=trial,
                  error=None if latency_s else "boom", error_kind=None if latency_s else "crash")


def test_records_from_a_background_thread_redraw_the_image_widget():
    """What a tuning thread does: its callback's records reach the plots (PNG bytes in an
    ``Image``'s value, a synced trait) without anything printed into an output area."""
    from ipywidgets import Image

    from workbench.widgets.tuning_dashboard import TuningDashboard

    dash = TuningDashboard(ops.matmul(16, 16, 16), space="matmul")
    widget = dash._build()
    images = [c for c in widget.children if isinstance(c, Image)]
    assert images == [dash._image] and bytes(dash._image.value).startswith(PNG_MAGIC)
    empty, drawn = bytes(dash._image.value), []

    def tune_thread():
        for i, latency in enumerate([2e-3, 1e-3, None]):
            dash.callback(record(i, latency))
            dash.wait_drawn()
            drawn.append(bytes(dash._image.value))

    worker = threading.Thread(target=tune_thread)
    worker.start()
    worker.join(60)
    assert len(drawn) == 3 and all(png.startswith(PNG_MAGIC) for png in drawn)
    assert drawn[0] != empty and drawn[1] != drawn[0]  # each record changes the picture
    assert "3 records, best 8.2 GFLOP/s" in dash._status.value
    assert "plots drawn with 3 records" in dash._drawn.value  # what the picture shows
    curve, scatter, model = dash.figure().axes
    assert list(curve.lines[0].get_ydata()) == pytest.approx([4.096, 8.192, 8.192])
    assert len(scatter.collections) == 2 and len(model.collections) == 1


def test_many_records_at_once_are_merged_into_few_drawings():
    from workbench.widgets.tuning_dashboard import TuningDashboard

    dash = TuningDashboard(ops.matmul(16, 16, 16), space="matmul")
    dash._build()
    before = dash.draws
    for i in range(20):
        dash.callback(record(i, 1e-3 * (1 + i % 3)))
    dash.wait_drawn()
    assert 1 <= dash.draws - before < 20
    assert "20 records" in dash._status.value


def test_stage_events_show_the_candidate_and_the_time_so_far():
    from workbench.widgets.tuning_dashboard import TuningDashboard

    dash = TuningDashboard(ops.matmul(16, 16, 16), space="matmul")
    dash._build()
    dash.stage(Stage(3, "measuring", 12.34))
    # the busy mark is a CSS ring, not a glyph (headless Chromium drew the hourglass emoji
    # as a box): the text is the event alone
    assert dash._stage.value.endswith("trial 3: measuring (12.3 s)</span>")
    assert "wb-spinner" in dash._stage.value and "⏳" not in dash._stage.value
    assert str(Stage(None, "starting", 0.5)) == "workers: starting (0.5 s)"


def test_progress_best_pairs_the_fastest_latency_with_its_own_gflops():
    """Issue 21 item 5: ``best 0.024 ms 27.6 GFLOP/s`` paired the best latency with the
    latest record's GFLOP/s; both numbers now come from the fastest record."""
    seen, stages = [], []
    bar = Progress(3, "w", enabled=False, callbacks=[seen.append], stages=[stages.append])
    fast, slow = record(0, 1e-4, flops=7.33e6), record(1, 3e-4, flops=7.33e6)
    bar.update(fast)
    bar.update(slow)
    bar.update(record(2, None))
    assert bar.best is fast and seen[1] is slow
    assert bar.postfix() == "best 0.100 ms 73.3 GFLOP/s"
    bar.stage(4, "building")
    assert stages[0].trial == 4 and stages[0].state == "building" and stages[0].elapsed_s >= 0


def test_tune_reports_every_candidate_stage_before_its_record(tmp_path):
    """A real (small) run: each trial is heard building, measuring, then measured, and its
    record comes after its stages."""
    from workbench import tune

    events = []
    result = tune(ops.matmul(8, 8, 8), trials=2, db=str(tmp_path / "r.jsonl"), space="matmul",
                  strategy="random", batch_size=2, progress=False, repeats=1,
                  callbacks=[lambda r: events.append(("record", r.trial))],
                  stages=[lambda s: events.append((s.state, s.trial))])
    assert len(result.records) == 2
    for trial in (0, 1):
        mine = [e[0] for e in events if e[1] == trial]
        assert mine == ["building", "measuring", "measured", "record"]
    assert events[0] == ("starting", None)


def test_a_finished_result_is_shown_as_the_live_widget_with_its_last_plots(tmp_path):
    """Notebook 06 shows ``from_result``'s widget, not a static figure: its picture holds
    every record (what a saved or static page keeps), and Tune goes on into ``db``."""
    from workbench.tune.api import TuneResult, make_space
    from workbench.widgets.tuning_dashboard import TuningDashboard

    func = ops.matmul(16, 16, 16)
    result = TuneResult(func, "cpu", [record(i, 1e-3 * (i + 1)) for i in range(3)],
                        space=make_space("matmul", func, "cpu"))
    dash = TuningDashboard.from_result(result, db=tmp_path / "records.jsonl")
    dash._build()
    assert bytes(dash._image.value).startswith(PNG_MAGIC)
    assert "plots drawn with 3 records" in dash._drawn.value
    assert dash.db == str(tmp_path / "records.jsonl") and dash._dropdowns  # knobs to pin
