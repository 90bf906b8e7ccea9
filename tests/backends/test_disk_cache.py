"""A kernel built again in a fresh process is loaded from Numba's disk cache."""

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent

SCRIPT = f"""
import json, sys
sys.path[:0] = [{str(REPO)!r}, {str(TESTS)!r}]
import ir_examples
from workbench.backends import build
kernel = build(ir_examples.matmul(8, 8, 4), target="cpu")
print(json.dumps({{"hit": kernel.cache_hit, "seconds": kernel.compile_seconds}}))
"""


def _build_in_fresh_process(cache_dir: Path) -> dict:
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(cache_dir))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_hits_numba_disk_cache(tmp_path):
    first = _build_in_fresh_process(tmp_path)
    assert first["hit"] is None
    modules = sorted(p.name for p in tmp_path.glob("workbench_kernel_matmul_*.py"))
    assert len(modules) == 1
    index_files = list((tmp_path / "__pycache__").glob("*.nbi"))
    assert index_files, "numba wrote no cache index next to the generated module"
    second = _build_in_fresh_process(tmp_path)
    assert second["hit"] == "disk"
    assert sorted(p.name for p in tmp_path.glob("workbench_kernel_matmul_*.py")) == modules
    # no timing assertion: "disk" is Numba's cache index answering (a timed comparison
    # failed under load); bench/bench_compile.py measures the time saved


def test_clear_memory_cache_forces_a_fresh_compile(tmp_path, monkeypatch):
    import numpy as np

    sys.path.insert(0, str(TESTS))
    import ir_examples
    from workbench.backends import build
    from workbench.backends.cpu.numba_cpu import clear_memory_cache

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "first"))
    func = ir_examples.add_relu(16)
    build(func, target="cpu")
    assert build(func, target="cpu").cache_hit == "memory"

    assert clear_memory_cache() >= 1
    assert not any(name.startswith("workbench_kernel_") for name in sys.modules)
    # same directory: Numba's disk cache answers
    assert build(func, target="cpu").cache_hit == "disk"

    clear_memory_cache()
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "second"))
    kernel = build(func, target="cpu")  # empty directory: a real compile
    assert kernel.cache_hit is None and kernel.compile_seconds > 0
    a, b = np.random.default_rng(0).standard_normal((2, 16)).astype("float32")
    c = np.empty(16, "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, np.maximum(a + b, 0), rtol=1e-6)
