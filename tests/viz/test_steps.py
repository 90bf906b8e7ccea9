"""steps_table / show_steps on the softmax walk-through, with byte counts worked out by hand."""

from __future__ import annotations

import pytest

from workbench import ops
from workbench.ir.traffic import pass_traffic
from workbench.recipes.softmax_lowering import softmax_lowering_steps
from workbench.viz.steps import global_access_bytes, show_steps, steps_html, steps_table, steps_text

M, N = 4, 16  # A and the output are 256 bytes each, a row vector 16 bytes


@pytest.fixture(scope="module")
def steps():
    return softmax_lowering_steps(M, N)


def test_three_pass_traffic_by_hand():
    # max:     reads A (256) and T_softmax_maxelem (16, the update reads it), writes it (16)
    # exp-sum: reads A, maxelem, expsum (256 + 16 + 16), writes expsum (16)
    # norm:    reads A, maxelem, expsum (256 + 16 + 16), writes the output (256)
    assert [p.bytes for p in pass_traffic(ops.softmax(M, N))] == [288, 304, 544]


def test_table_static_columns(steps):
    table = steps_table(steps)
    assert list(table.columns) == ["title", "blocks", "passes", "DRAM bytes", "access bytes",
                                   "global access bytes", "flops"]
    assert table["title"].tolist() == [s.title for s in steps]
    assert table.index.tolist() == [1, 2, 3, 4, 5]
    assert table["passes"].tolist() == [3, 1, 1, 1, 1]
    # fused: one pass reading A (256) and writing the output (256); row values are local
    assert table["DRAM bytes"].tolist() == [288 + 304 + 544, 512, 512, 512, 512]
    # blocks: 3; 3; 3 + 2 rfactor blocks + 4 decomposed inits; online + init + norm;
    # lanes: lane block, row max, row sum, each with its init, + norm
    assert table["blocks"].tolist() == [3, 3, 9, 3, 7]
    # flops: max 1, exp-sum 3 (sub, exp, add), norm 3 (sub, exp, div) per element = 448;
    # step 3 adds two 16-lane final reductions per row (4 x 2 x 16 = 128);
    # online: 9 per element in the reduction (2 max, 2 sub, 2 exp, mul, add + the max store)
    # + norm 3 = 64 x 12; lanes: the same 64 x 12, plus per row and lane the combine:
    # row max 1, row sum 4 (sub, exp, mul, add): 4 x 16 x 5 = 320
    assert table["flops"].tolist() == [448, 448, 576, 768, 768 + 320]


def test_global_access_bytes_by_hand(steps):
    # three passes, per element: max 3 accesses (load max, load A, store max), exp-sum 4,
    # norm 4 -> 64 x 11 x 4 B = 2816, plus two inits of 4 rows = 32
    assert global_access_bytes(steps[0].func) == 2848
    # fused: row values are local; A read by three blocks, the output written once
    assert global_access_bytes(steps[1].func) == 64 * 4 * 4
    assert global_access_bytes(steps[2].func) == 64 * 4 * 4
    # online: A read by the online block (once, however often the text loads it) and norm
    assert global_access_bytes(steps[3].func) == 64 * 3 * 4
    # online across lanes: the same (the lane and combine buffers are local)
    assert global_access_bytes(steps[4].func) == 64 * 3 * 4


def test_access_bytes_of_the_online_lanes_step_by_hand(steps):
    # 4 rows, 16 lanes, one chunk of 16 per row: 64 executions of the lane block, each
    # 9 loads (lane_sum 1, lane_max 3 + 1, A 3 + 1) and 2 stores = 44 B      -> 2816
    # its init: 2 stores per (row, lane)                                      ->  512
    # row max: init 1 store per row; 2 loads + 1 store per (row, lane)        ->   16 + 768
    # row sum: init 1 store per row; 4 loads + 1 store per (row, lane)        ->   16 + 1280
    # norm: 3 loads + 1 store per element                                     -> 1024
    table = steps_table(steps)
    assert table["access bytes"].tolist()[4] == 2816 + 512 + 16 + 768 + 16 + 1280 + 1024


def test_fusion_moves_fewer_dram_bytes(steps):
    table = steps_table(steps)
    three, fused = table["DRAM bytes"].iloc[0], table["DRAM bytes"].iloc[1]
    assert fused < three
    assert three / fused == pytest.approx(1136 / 512)


def test_table_measured(steps):
    table = steps_table(steps, measure=True, shape=(M, N), budget_s=0.02)
    assert {"max abs error", "time ms", "GB/s", "speedup"} <= set(table.columns)
    assert (table["max abs error"] < 1e-6).all()
    assert (table["time ms"] > 0).all()
    assert table["speedup"].iloc[0] == 1.0
    # shown rounded (3 significant digits), so recomputing agrees to the rounding
    assert table["GB/s"].iloc[1] == pytest.approx(512 / (table["time ms"].iloc[1] * 1e-3) / 1e9,
                                                  rel=1e-2)
    from workbench.viz.tables import round_frame

    assert round_frame(table).equals(table)  # already rounded: nothing left to wrap
    assert table["speedup"].round(2).equals(table["speedup"])


def test_table_shape_must_match(steps):
    with pytest.raises(ValueError, match=r"shape=\(8, 16\) but the steps take A of shape \(4, 16\)"):
        steps_table(steps, measure=True, shape=(8, 16))


def test_text_and_html(steps):
    text = steps_text(steps)
    for step in steps:
        assert f"=== {step.title} ===" in text
    assert text.count("Schedule trace:") == 4
    assert "sch.compute_at(" in text and "def online_softmax(" in text
    assert "def online_softmax_lanes(" in text
    html = steps_html(steps)
    assert html.count("<h3>") == 5
    assert "<code>compute_at</code>" in html  # the explanation's markdown is rendered
    assert "<details><summary>schedule trace</summary>" in html


def test_show_steps_prints_outside_a_notebook(steps, capsys):
    show_steps(steps[:2])
    out = capsys.readouterr().out
    assert out.startswith("=== 1. three passes ===")
    assert "=== 2. fused (compute_at) ===" in out
