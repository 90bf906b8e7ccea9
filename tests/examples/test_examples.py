"""The README examples run as plain scripts and print what the README says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_first_schedule_script_prints_its_measurement(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "first_schedule.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "for i_0 in T.parallel(16):" in out
    assert "l4, l5 = sch.split(l1, factors=[None, 32])" in out
    assert re.search(r"matmul \[cpu\]: median [\d.]+ (ms|s|µs), .*GFLOP/s [\d.]+", out), out[-800:]


@pytest.mark.slow
def test_compile_model_script_matches_torch_and_reloads(tmp_path):
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "compile_model.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"<CompiledModel: \d+ kernels, target='cpu'", out), out[-800:]
    error = float(re.search(r"max abs error vs torch: (\S+)", out).group(1))
    assert error < 1e-5
    assert "conv2d+gelu" in out  # the depthwise conv and its GELU are one kernel
    assert "reloaded model equals the compiled one: True" in out
