"""Export the best kernel to a folder; load it in a fresh process.

Loading checks every file's hash and builds the kernel again from the artifact's function,
trace and options (the generated source must equal the stored one): nothing of the folder
is imported. Numba's machine code is not shipped, so the first load on a machine compiles
once into the user's kernel cache and later loads find it there. The tamper matrix is in
``tests/test_artifact_integrity.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.backends.arguments import KernelArgumentAliasError, KernelArgumentError
from workbench.recipes.matmul import packed_cpu
from workbench.tune.artifact import export_artifact, load_artifact
from workbench.tune.runner import random_arguments

_LOAD = """
import json, sys
import numpy as np
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


def _load_in_fresh_process(folder, cache) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "WORKBENCH_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", _LOAD, str(folder)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_export_then_load_in_fresh_processes_compiles_once(tmp_path):
    func = ops.matmul(16, 16, 16)
    sch = wb.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(i, jo, k, ji)
    sch.vectorize(ji)
    folder = export_artifact(sch, tmp_path / "best", func=func)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["function"] and (folder / manifest["module"]).exists()
    assert not (folder / "__pycache__").exists()  # no machine code (a pickle) shipped
    assert sorted(manifest["files"]) == sorted(["func.py", "trace.json", manifest["module"]])
    assert wb.Trace.from_json((folder / "trace.json").read_text()) == sch.trace
    cache = str(tmp_path / "user-cache")
    first = _load_in_fresh_process(folder, cache)
    assert first["ok"] and first["same_trace"]
    assert first["misses"] == 1 and first["hits"] == 0  # compiled once, into the user's cache
    second = _load_in_fresh_process(folder, cache)
    assert second["ok"] and second["hits"] == 1 and second["misses"] == 0
    assert not list(folder.rglob("*.nb*")) and not list(folder.rglob("*.pyc"))


def test_packed_matmul_with_a_workspace_exports_loads_and_computes(tmp_path):
    func = ops.matmul(16, 16, 16)
    sch = packed_cpu(func, ti=4, tj=8, tk=8)
    built = wb.build(sch, target="cpu")
    assert built.workspace  # the packed panel: a workspace buffer passed after the params
    folder = export_artifact(sch, tmp_path / "packed", func=func)
    kernel = load_artifact(folder)
    a, b, c = random_arguments(func, seed=3)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4)


def test_loaded_kernel_checks_arguments_like_a_built_one(tmp_path):
    func = ops.add(4, 8)
    folder = export_artifact(wb.Schedule(func), tmp_path / "a", func=func)
    kernel = load_artifact(folder)
    a, b, c = random_arguments(func, seed=1)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    with pytest.raises(KernelArgumentError, match="expected float32"):
        kernel(a, b, np.zeros((4, 7), "float32"))
    with pytest.raises(KernelArgumentError, match="expects 3 arrays"):
        kernel(a, b)
    with pytest.raises(KernelArgumentError, match="float32"):
        kernel(a, b, np.zeros((4, 8), "float64"))
    with pytest.raises(KernelArgumentError, match="C-contiguous"):
        kernel(a, b, np.zeros((8, 4), "float32").T)
    frozen = c.copy()
    frozen.flags.writeable = False
    with pytest.raises(KernelArgumentError, match="read-only"):
        kernel(a, b, frozen)
    with pytest.raises(KernelArgumentAliasError):
        kernel(a, b, a)


def test_export_of_a_schedule_needs_its_function(tmp_path):
    with pytest.raises(TypeError, match="needs the unscheduled"):
        export_artifact(wb.Schedule(ops.add(4, 4)), tmp_path / "x")


def test_export_refuses_a_function_the_trace_does_not_start_from(tmp_path):
    sch = wb.Schedule(ops.add(4, 8))
    with pytest.raises(ValueError, match="does not give"):
        export_artifact(sch, tmp_path / "x", func=ops.add(4, 4))
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("space_name", ["generated", "matmul"])
def test_schedules_the_tuner_samples_export_load_and_compute(space_name, tmp_path):
    """tune -> export -> load for candidates of the tuner's spaces (its default and random
    draws: tiling, packing with a workspace, write caches, parallel loops)."""
    import random

    from workbench.tune.api import make_space

    func = ops.matmul(16, 16, 16)
    space = make_space(space_name, func, target="cpu")
    rng = random.Random(7)
    configs = [space.default_config()] + [space.random_config(rng) for _ in range(3)]
    a, b, _ = random_arguments(func, seed=2)
    for index, config in enumerate(configs):
        sch = space.schedule(config)
        kernel = load_artifact(export_artifact(sch, tmp_path / f"c{index}", func=func))
        c = np.empty((16, 16), "float32")
        kernel(a, b, c)
        np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4,
                                   err_msg=str(config))
