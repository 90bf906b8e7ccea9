"""``bench/gpu/bench_attn.py``, the attention bench of the H200: its table, and (with
``WB_GPU_PLAN_DRY=1``, like ``tests/backends/test_gpu_plan.py``) its ``--dry-run`` on the
simulator: tiny shapes, variants built and checked against torch, nothing timed."""

from __future__ import annotations

import json
import os

import pytest
from bench_scripts import bench_module


@pytest.fixture(scope="module")
def bench():
    with bench_module("bench_attn") as module:
        yield module


def test_the_table_of_a_report(bench):
    base = {"shape": "s", "B": 1, "H": 1, "L": 4, "D": 4, "causal": False}
    report = {"rows": [
        {**base, "variant": "torch sdpa (default)", "ms": 0.02},
        {**base, "variant": "warp_tiles (default)", "ms": 0.04, "gflops": 10.0,
         "x_torch": 0.5, "x_torch_math": 1.5, "rel_err": 1e-7},
        {**base, "variant": "warp_rows (before)", "skipped": "deadline"},
    ]}
    lines = bench.table(report).splitlines()
    assert lines[2] == "| s | torch sdpa (default) | 0.020 | | | | |"
    assert lines[3] == "| s | warp_tiles (default) | 0.040 | 10 | 0.50x | 1.50x | 1.0e-07 |"
    assert lines[4].startswith("| s | warp_rows (before) | deadline |")
    assert set(bench.VARIANTS) == set(bench._variants())


@pytest.mark.cuda
@pytest.mark.skipif(os.environ.get("WB_GPU_PLAN_DRY") != "1",
                    reason="WB_GPU_PLAN_DRY=1 runs the dry run's kernels on the simulator")
def test_the_dry_run_builds_and_checks_every_variant(bench, tmp_path):
    out = tmp_path / "attn.json"
    assert bench.main(["--dry-run", "--out", str(out)]) == 0
    rows = [r for r in json.loads(out.read_text())["rows"]
            if not r["variant"].startswith("torch")]
    assert len(rows) == 2 * len(bench.VARIANTS)
    for row in rows:
        assert "error" not in row, row
        assert "skipped" in row or row["rel_err"] < 1e-5, row
