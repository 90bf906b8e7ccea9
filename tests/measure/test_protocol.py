from pathlib import Path

import numpy as np
import pytest

import ir_examples
from workbench.ir import analysis
from workbench.measure import MachinePeaks, MeasureResult, measure, protocol

PEAKS = MachinePeaks(gflops=100.0, gbps=10.0)
M = N = K = 16


class FakeMatmulKernel:
    """Stands in for a built kernel: ``.func`` is the PrimFunc, the call does numpy work.

    Records the arrays of every call so tests can see the rotation."""

    target = "numpy"

    def __init__(self):
        self.func = ir_examples.matmul(M, N, K)
        self.calls = []

    def __call__(self, a, b, c):
        self.calls.append((a, b, c))
        np.matmul(a, b, out=c)


class ScriptedTimes:
    """A kernel that times itself (like a CUDA kernel with events), with known times."""

    target = "cuda"

    def __init__(self, times):
        self.times = list(times)
        self.calls = 0

    def __call__(self, *args):
        raise AssertionError("measure must use time_call when the kernel has one")

    def time_call(self, *args):
        self.calls += 1
        return self.times.pop(0)


@pytest.fixture
def matmul_args(rng):
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    return a, b, c


def test_kernel_result_lands_in_callers_arrays(matmul_args):
    a, b, c = matmul_args
    kernel = FakeMatmulKernel()
    res = measure(kernel, a, b, c, budget_s=0.0, flops=1, bytes=1, peaks=PEAKS)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert isinstance(res, MeasureResult)
    assert (res.name, res.target) == ("matmul", "numpy")


def test_budget_zero_gives_min_repeats(matmul_args):
    kernel = FakeMatmulKernel()
    res = measure(
        kernel, *matmul_args, min_repeats=7, warmup=3, budget_s=0.0, flops=1, bytes=1, peaks=PEAKS
    )
    assert res.repeats == 7 == len(res.times_s)
    assert len(kernel.calls) == 3 + 7
    assert res.warmup == 3


def test_large_budget_stops_at_max_repeats(matmul_args):
    kernel = FakeMatmulKernel()
    res = measure(
        kernel, *matmul_args, max_repeats=12, budget_s=60.0, flops=1, bytes=1, peaks=PEAKS
    )
    assert res.repeats == 12
    assert len(kernel.calls) == 2 + 12


def test_budget_bounds_the_timed_calls(matmul_args, monkeypatch):
    """10 ms calls in a 100 ms budget: about 10 timed calls. The clock is a fake one that
    each call advances by exactly 10 ms (a real sleep on a loaded CI machine took longer
    and left 2 calls)."""
    import types

    from workbench.measure import protocol

    now = [0]
    monkeypatch.setattr(protocol, "time", types.SimpleNamespace(perf_counter_ns=lambda: now[0]))

    def slow(*args):
        now[0] += 10_000_000

    res = measure(
        slow, *matmul_args, min_repeats=2, max_repeats=1000, budget_s=0.1, warmup=0, peaks=PEAKS
    )
    assert 9 <= res.repeats <= 11
    assert res.median_s == pytest.approx(0.01)


def test_median_and_iqr_of_the_timed_calls():
    times = [9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0]  # first two are warm-up
    kernel = ScriptedTimes(times)
    res = measure(
        kernel, min_repeats=5, max_repeats=5, warmup=2, flops=10**9, bytes=10**9, peaks=PEAKS
    )
    assert res.times_s == (2.0, 3.0, 4.0, 5.0, 100.0)
    assert res.median_s == 4.0
    assert res.iqr_s == 5.0 - 3.0
    assert res.gflops == pytest.approx(0.25) and res.gbps == pytest.approx(0.25)
    assert res.target == "cuda" and kernel.calls == 7


def test_rotation_cycles_through_copies(matmul_args, monkeypatch):
    a, b, c = matmul_args
    set_bytes = a.nbytes + b.nbytes + c.nbytes  # 3 KiB
    monkeypatch.setattr(protocol, "llc_bytes", lambda: 2 * set_bytes)  # -> 5 sets
    kernel = FakeMatmulKernel()
    res = measure(
        kernel, a, b, c, min_repeats=8, budget_s=0.0, warmup=2, flops=1, bytes=1, peaks=PEAKS
    )
    assert res.rotation_sets == 5
    ids = [tuple(id(x) for x in call) for call in kernel.calls]
    assert len(set(ids)) == 5
    assert ids[:5] == ids[5:10]  # cycled in order
    assert kernel.calls[0][0] is a  # the caller's own arrays are the first set
    for copy_a, copy_b, copy_c in kernel.calls[1:5]:
        np.testing.assert_array_equal(copy_a, a)
        np.testing.assert_array_equal(copy_b, b)
        np.testing.assert_allclose(copy_c, a @ b, rtol=1e-5)  # each set got its own output


def test_rotation_never_allocates_more_sets_than_calls(matmul_args):
    kernel = FakeMatmulKernel()
    res = measure(
        kernel, *matmul_args, min_repeats=3, max_repeats=3, warmup=1, flops=1, bytes=1, peaks=PEAKS
    )
    assert res.rotation_sets == 4


def test_no_rotation_reuses_the_callers_arrays(matmul_args):
    kernel = FakeMatmulKernel()
    res = measure(kernel, *matmul_args, rotate=False, budget_s=0.0, flops=1, bytes=1, peaks=PEAKS)
    assert res.rotation_sets == 1
    assert all(call[0] is matmul_args[0] for call in kernel.calls)


def test_plain_callable_with_work_overrides(rng):
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    c = np.empty((32, 32), np.float32)
    res = measure(
        np.matmul,
        a,
        b,
        c,
        flops=2 * 32**3,
        bytes=3 * 32 * 32 * 4,
        name="numpy mm",
        budget_s=0.0,
        peaks=PEAKS,
    )
    assert (res.name, res.target) == ("numpy mm", "python")
    assert res.flops == 65536 and res.bytes == 12288
    assert res.gflops == pytest.approx(65536 / res.median_s / 1e9)
    assert res.arithmetic_intensity == pytest.approx(65536 / 12288)
    assert res.peaks is PEAKS


def test_plain_callable_without_work_has_no_throughput(matmul_args):
    res = measure(np.copyto, matmul_args[2], matmul_args[2], budget_s=0.0, peaks=PEAKS)
    assert res.name == "copyto"
    assert res.flops is None and res.gflops is None and res.roofline_fraction is None


def test_work_comes_from_the_ir_analysis(matmul_args):
    kernel = FakeMatmulKernel()
    res = measure(kernel, *matmul_args, budget_s=0.0, peaks=PEAKS)
    assert res.flops == analysis.flops(kernel.func) > 0
    assert res.bytes == analysis.min_bytes(kernel.func) > 0
    # an override replaces one of the two only
    res = measure(kernel, *matmul_args, budget_s=0.0, flops=5, peaks=PEAKS)
    assert res.flops == 5 and res.bytes == analysis.min_bytes(kernel.func)


@pytest.mark.parametrize(
    "options, error, words",
    [
        ({"min_repeats": 0}, ValueError, "min_repeats must be >= 1, got 0"),
        (
            {"min_repeats": 10, "max_repeats": 5},
            ValueError,
            "max_repeats (5) must be >= min_repeats (10)",
        ),
        ({"budget_s": -1}, ValueError, "budget_s must be >= 0"),
        ({"warmup": -1}, ValueError, "warmup must be >= 0"),
    ],
)
def test_bad_options_are_named(options, error, words):
    with pytest.raises(error) as info:
        measure(np.negative, np.ones(3), peaks=PEAKS, **options)
    assert words in str(info.value)


def test_non_callable_kernel():
    with pytest.raises(TypeError, match="kernel must be callable, got ndarray"):
        measure(np.ones(3), peaks=PEAKS)


def test_public_names():
    import workbench as wb

    assert wb.MeasureResult is MeasureResult
    assert callable(wb.machine_peaks)


@pytest.mark.parametrize("first_import", ["workbench.measure", "workbench"])
def test_wb_measure_is_callable_whatever_was_imported_first(first_import):
    """Importing the package workbench.measure sets the attribute workbench.measure to the
    package; calling it must still measure."""
    import subprocess
    import sys

    code = (
        f"import {first_import}\n"
        "import numpy as np, workbench as wb\n"
        "from workbench.measure import MachinePeaks\n"
        "r = wb.measure(np.negative, np.ones(3), budget_s=0.0, warmup=0,\n"
        "               peaks=MachinePeaks(gflops=1.0, gbps=1.0))\n"
        "print(type(r).__name__, r.repeats)\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MeasureResult", "5"]


def test_given_argument_sets_are_cycled_without_copying():
    from workbench.measure.rotation import make_argument_sets

    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((M, K)).astype(np.float32) for _ in range(2))
    sets = make_argument_sets((a, b, np.empty((M, N), np.float32)), 3)
    kernel = FakeMatmulKernel()
    res = measure(kernel, a, b, sets[0][2], warmup=1, min_repeats=5, max_repeats=5,
                  budget_s=0.0, peaks=PEAKS, argument_sets=sets)
    assert res.rotation_sets == 3 and res.repeats == 5
    # every call ran on one of the given sets (by identity), in order, none copied
    assert [next(i for i, s in enumerate(sets) if s[0] is call[0]) for call in kernel.calls] == [
        0, 1, 2, 0, 1, 2]
    for s in sets:
        np.testing.assert_allclose(s[2], a @ b, rtol=1e-5, atol=1e-5)
