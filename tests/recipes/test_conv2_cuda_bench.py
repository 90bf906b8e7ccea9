"""``bench/gpu/bench_conv2.py`` without a GPU: its arguments, and (``WB_GPU_PLAN_DRY=1``, as
``tests/backends/test_gpu_plan.py``) its ``--dry-run`` on the simulator: every row built and
checked against torch, the JSON written."""

from __future__ import annotations

import json
import os

import pytest
from bench_scripts import bench_module


@pytest.fixture(scope="module")
def bench():
    with bench_module("bench_conv2") as module:
        yield module


def test_arguments_and_cases(bench):
    args = bench.parse_args(["--deadline", "120", "--dry-run", "--kernels", "l1 3x3 64"])
    assert (args.deadline, args.dry_run, args.kernels) == (120.0, True, "l1 3x3 64")
    with pytest.raises(SystemExit):
        bench.parse_args(["--deadline", "0"])
    names = [c[0] for c in bench.CASES]
    assert len(set(names)) == len(names) and set(bench.DRY) <= set(names)
    assert {c[1] for c in bench.CASES} == {1, 16}
    assert sum(c[-1] for c in bench.CASES if c[1] == 16) == 20  # resnet18's 20 convolutions
    rows = [{"kernel": "a", "batch": 16, "torch_ms": 1.0, "variant": v, "ms": ms,
             "vs_torch": 1.0 / ms} for v, ms in (("new (register_tiled)", 0.5),
                                                  ("old (tiled)", 2.0))]
    rows.append({"kernel": "b", "batch": 1, "torch_ms": 1.0, "variant": "old (tiled)",
                 "skipped": "deadline"})
    lines = bench.table(rows).splitlines()
    assert lines[0] == "| kernel | batch | torch ms | new (register_tiled) | old (tiled) | new / old |"
    assert lines[2] == "| a | 16 | 1.000 | 0.500 (2.00x) | 2.000 (0.50x) | 4.00x |"
    assert lines[3] == "| b | 1 | 1.000 | - | deadline | - |"


@pytest.mark.cuda
@pytest.mark.skipif(os.environ.get("WB_GPU_PLAN_DRY") != "1",
                    reason="WB_GPU_PLAN_DRY=1 runs the dry run's kernels on the simulator")
def test_the_dry_run_builds_and_checks_every_variant(bench, tmp_path):
    pytest.importorskip("torch")
    assert bench.main(["--dry-run", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "conv2.json").read_text())["rows"]
    assert len(rows) == 2 * 2 + 3  # two cases x (new, old), flipped for both, l1 folded
    assert all(r.get("rel_err", 1) < 1e-5 for r in rows), rows
    lines = bench.table(rows).splitlines()
    assert len(lines) == 2 + 2 and lines[2].startswith("| l1 3x3 64 | 1 |")
