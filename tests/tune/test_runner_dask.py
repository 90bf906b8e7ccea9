"""DaskRunner on a LocalCluster of two worker processes: same results, crash isolated."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workbench import ops
from workbench.tune import TemplateSpace, tune

distributed = pytest.importorskip("distributed")
sys.path.insert(0, str(Path(__file__).parent))
from tune_faults import fault_template  # noqa: E402


def test_dask_runner_measures_and_isolates_a_crash(tmp_path):
    from workbench.tune.runner_dask import DaskRunner

    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        runner = DaskRunner(client, measure_timeout_s=20.0)
        func = ops.matmul(8, 8, 8)
        space = TemplateSpace(fault_template, func).pin(tile_j=[4, 2])
        space._domains["fault"] = ["none", "segfault", "wrong"]
        result = tune(func, target="numpy", trials=3, db=tmp_path / "r.jsonl", space=space,
                      strategy="grid", runner=runner, progress=False, repeats=2,
                      kernel_hook="tune_faults:faulty", batch_size=3)
        workers_after = len(client.scheduler_info()["workers"])
    by_fault = {r.config["fault"]: r for r in result.records}
    assert by_fault["none"].ok and len(by_fault["none"].times_s) == 2
    assert by_fault["segfault"].error_kind == "crash"
    assert by_fault["wrong"].error_kind == "wrong_result"
    assert workers_after == 2  # the segfault killed an isolated child, not a Dask worker
