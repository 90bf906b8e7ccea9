"""Smoke test of the benchmark scripts: each runs with ``--quick`` (tiny sizes, a round or
two), exits 0, prints a ratio, and leaves bench/RESULTS.md alone."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RESULTS = BENCH / "RESULTS.md"
SCRIPTS = [
    "bench_matmul_cpu.py",
    "bench_matmul_packed_cpu.py",
    "bench_elementwise_cpu.py",
    "bench_compile.py",
]
RATIO = re.compile(r"\d+\.\d\dx")


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_quick(script: str) -> None:
    before = _digest(RESULTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, f"{script} --quick failed:\n{done.stdout}\n{done.stderr}"
    assert RATIO.search(done.stdout), f"{script} --quick printed no ratio:\n{done.stdout}"
    assert _digest(RESULTS) == before, f"{script} --quick rewrote {RESULTS}"


def test_write_section_replaces_only_its_own_block(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from benchlib import write_section
    finally:
        sys.path.remove(str(BENCH))
    path = tmp_path / "RESULTS.md"
    write_section("one", "first", path)
    write_section("two", "second", path)
    write_section("one", "first again", path)
    assert path.read_text() == (
        "# Benchmark results\n\n"
        "<!-- one:start -->\nfirst again\n<!-- one:end -->\n\n"
        "<!-- two:start -->\nsecond\n<!-- two:end -->\n"
    )
