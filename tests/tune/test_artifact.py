"""Export the best kernel to a folder; load it in a fresh process without compiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.tune.artifact import export_artifact, load_artifact
from workbench.tune.runner import random_arguments

_LOAD = """
import json, sys, time
import numpy as np
start = time.perf_counter()
from workbench.tune.artifact import load_artifact
from workbench.tune.runner import random_arguments
kernel = load_artifact(sys.argv[1])
func = kernel.func()
a, b, c = random_arguments(func, seed=5)
kernel(a, b, c)
ok = bool(np.allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4))
from workbench.schedule import Trace
sch = kernel.schedule()
same = sch.trace == Trace.from_json(kernel.trace_json) and len(sch.trace) > 0
print(json.dumps({"ok": ok, "hits": kernel.cache_hits, "misses": kernel.cache_misses,
                  "same_trace": same}))
"""


def test_export_then_load_in_a_fresh_process_without_compiling(tmp_path):
    func = ops.matmul(16, 16, 16)
    sch = wb.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(i, jo, k, ji)
    sch.vectorize(ji)
    folder = export_artifact(sch, tmp_path / "best", func=func)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["function"] and (folder / manifest["module"]).exists()
    assert any((folder / "__pycache__").glob("*.nbi")) and any((folder / "__pycache__").glob("*.nbc"))
    assert wb.Trace.from_json((folder / "trace.json").read_text()) == sch.trace
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "WORKBENCH_CACHE_DIR": str(tmp_path / "empty-cache")}
    out = subprocess.run([sys.executable, "-c", _LOAD, str(folder)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["ok"] and facts["same_trace"]
    assert facts["hits"] == 1 and facts["misses"] == 0  # machine code from the folder
    assert not (tmp_path / "empty-cache").exists()


def test_loaded_kernel_checks_arguments(tmp_path):
    func = ops.add(4, 8)
    folder = export_artifact(wb.Schedule(func), tmp_path / "a", func=func)
    kernel = load_artifact(folder)
    a, b, c = random_arguments(func, seed=1)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    with pytest.raises(TypeError, match="expected float32"):
        kernel(a, b, np.zeros((4, 7), "float32"))
    with pytest.raises(TypeError, match="takes 3 arrays"):
        kernel(a, b)


def test_export_of_a_schedule_needs_its_function(tmp_path):
    with pytest.raises(TypeError, match="needs the unscheduled"):
        export_artifact(wb.Schedule(ops.add(4, 4)), tmp_path / "x")
