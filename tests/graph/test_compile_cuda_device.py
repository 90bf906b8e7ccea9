"""A model compiled for cuda keeps its buffers on the device (issue 20, items 1, 2, 5).

Under the simulator (CI): device inputs (``numba.cuda`` device arrays) make no host copy,
counted by the runtime's own counters and by Numba's copy functions patched to count too;
host inputs are copied in and the output out, nothing else; weights go to the device
once. The graph path's bookkeeping: the first call with an input captures, the next with
the same input replays, another input (another address) captures again (a stale graph
would compute from the old input), the oldest graphs are dropped past the limit, and
rescheduling a kernel invalidates every graph. On a real GPU (skipped in CI): torch CUDA
tensors in and out, on torch's current stream, through a captured CUDA graph.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.backends.cuda import cuda_device  # noqa: E402
from workbench.backends.cuda.numba_cuda import simulator_enabled  # noqa: E402

pytestmark = pytest.mark.cuda


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                               torch.nn.Linear(16, 4)).eval()


@pytest.fixture(scope="module")
def compiled():
    if not simulator_enabled():
        pytest.skip("the simulator's device arrays (NUMBA_ENABLE_CUDASIM=1)")
    model = _mlp()
    x = torch.randn(2, 8)
    return model, wb.compile(model, (x,), target="cuda")


def _expected(model, x: np.ndarray) -> np.ndarray:
    return model(torch.from_numpy(x)).detach().numpy()


@pytest.fixture
def numba_copies(monkeypatch):
    """Count Numba's own host/device copies too (a copy made around the runtime's
    counters would show here)."""
    from numba import cuda

    counts = {"to_device": 0, "copy_to_host": 0}
    real_to_device = cuda.to_device

    def to_device(*args, **kwargs):
        counts["to_device"] += 1
        return real_to_device(*args, **kwargs)

    monkeypatch.setattr(cuda, "to_device", to_device)
    probe = real_to_device(np.zeros(1, np.float32))
    cls = type(probe)
    real_copy = cls.copy_to_host

    def copy_to_host(self, *args, **kwargs):
        counts["copy_to_host"] += 1
        return real_copy(self, *args, **kwargs)

    monkeypatch.setattr(cls, "copy_to_host", copy_to_host)
    return counts


def test_device_inputs_give_device_outputs_without_a_host_copy(compiled, numba_copies):
    from numba import cuda

    model, c = compiled
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    device_x = cuda.to_device(x)
    c(device_x)  # weights on the device, kernels compiled (first call)
    before, numba_before = dict(cuda_device.COPIES), dict(numba_copies)
    for _ in range(3):
        out = c(device_x)
    assert cuda_device.COPIES == before
    assert numba_copies == numba_before
    assert cuda_device.is_device_array(out) and not isinstance(out, np.ndarray)
    np.testing.assert_allclose(out.copy_to_host(), _expected(model, x), rtol=1e-5, atol=1e-6)


def test_host_inputs_copy_the_input_in_and_the_output_out(compiled):
    model, c = compiled
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    c(x)
    before = dict(cuda_device.COPIES)
    out = c(x)
    assert isinstance(out, np.ndarray)
    assert cuda_device.COPIES["to_device"] - before["to_device"] == 1  # the input only
    assert cuda_device.COPIES["to_host"] - before["to_host"] == 1  # the output only
    assert cuda_device.COPIES["bytes_to_device"] - before["bytes_to_device"] == x.nbytes
    np.testing.assert_allclose(out, _expected(model, x), rtol=1e-5, atol=1e-6)


def test_graph_capture_replay_and_invalidation(compiled):
    from numba import cuda

    model, c = compiled
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 8)).astype(np.float32) for _ in range(3)]
    devices = [cuda.to_device(x) for x in xs]
    c(devices[0])
    c.runtime.invalidate()
    c(devices[0])  # a call after invalidation runs the kernels and makes the sequence
    seq = c.runtime.sequence
    stats = seq.stats
    start = (stats.captured, stats.replayed)
    out0 = c(devices[0]).copy_to_host()
    assert (stats.captured, stats.replayed) == (start[0] + 1, start[1] + 1)
    c(devices[0])
    assert (stats.captured, stats.replayed) == (start[0] + 1, start[1] + 2)  # replayed
    out1 = c(devices[1]).copy_to_host()  # another address: captured again
    assert stats.captured == start[0] + 2
    np.testing.assert_allclose(out0, _expected(model, xs[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out1, _expected(model, xs[1]), rtol=1e-5, atol=1e-6)
    # the graph of devices[0] bakes its address in: new contents are read, replayed
    devices[0].copy_to_device(xs[2])
    out2 = c(devices[0]).copy_to_host()
    np.testing.assert_allclose(out2, _expected(model, xs[2]), rtol=1e-5, atol=1e-6)
    # past max_graphs the least recently used graph goes
    seq.max_graphs = 2
    c(devices[2])
    assert len(seq.graphs) == 2 and stats.dropped >= 1
    # rescheduling a kernel drops every graph: the next call runs the kernels again
    node = c.kernels[-1].node
    c.reschedule(node, c.schedule(node))
    assert c.runtime.sequence is None
    out3 = c(devices[1]).copy_to_host()
    np.testing.assert_allclose(out3, _expected(model, xs[1]), rtol=1e-5, atol=1e-6)


def test_lean_and_kernel_modes_compute_the_same(compiled):
    from numba import cuda

    model, c = compiled
    x = np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32)
    device_x = cuda.to_device(x)
    try:
        for mode in ("lean", "kernels"):
            c.runtime.mode = mode
            c(device_x)
            np.testing.assert_allclose(c(device_x).copy_to_host(), _expected(model, x),
                                       rtol=1e-5, atol=1e-6)
        c.runtime.mode = "lean"
        launched = c.runtime.sequence.stats.launched
        c(device_x)
        assert c.runtime.sequence.stats.launched == launched + len(c.runtime.sequence.launches)
    finally:
        c.runtime.mode = "graph"


def test_bad_inputs_are_refused_before_any_launch(compiled):
    from numba import cuda

    from workbench.graph.compiler import ModelInputError

    _, c = compiled
    with pytest.raises(ModelInputError, match=r"expected float32 array of shape \(2, 8\)"):
        c(cuda.to_device(np.zeros((3, 8), np.float32)))
    with pytest.raises(ModelInputError, match="takes 1 input"):
        c()
    with pytest.raises(ModelInputError, match="got list"):
        c([[0.0] * 8] * 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real GPU")
def test_torch_cuda_tensors_in_and_out_on_the_current_stream():
    if simulator_enabled():
        pytest.skip("the real GPU (NUMBA_ENABLE_CUDASIM=0)")
    model = _mlp().cuda()
    x = torch.randn(2, 8, device="cuda")
    c = wb.compile(model.cpu(), (x.cpu(),), target="cuda")
    model.cuda()
    before = dict(cuda_device.COPIES)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            out = c(x)
        want = model(x)
    stream.synchronize()
    assert cuda_device.COPIES["to_host"] == before["to_host"]
    assert isinstance(out, torch.Tensor) and out.is_cuda
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    stats = c.runtime.sequence.stats
    assert stats.replayed >= 1
    captured = stats.captured
    x2 = torch.randn(2, 8, device="cuda")  # another address: a new graph
    torch.testing.assert_close(c(x2), model(x2), rtol=1e-5, atol=1e-5)
    assert stats.captured == captured + 1
    x.copy_(torch.randn(2, 8, device="cuda"))  # same address, new contents: replayed
    torch.testing.assert_close(c(x), model(x), rtol=1e-5, atol=1e-5)
    assert stats.captured == captured + 1
    c.runtime.mode = "lean"
    torch.testing.assert_close(c(x2), model(x2), rtol=1e-5, atol=1e-5)


def test_latency_report_times_each_kernel_on_the_device(compiled):
    from numba import cuda

    _, c = compiled
    x = cuda.to_device(np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32))
    c(x)  # the weights go to the device on the first call, whichever test makes it
    before = dict(cuda_device.COPIES)
    frame = c.latency_report(x, repeat=2)
    assert list(frame["kernel"]) == [k.node for k in c.kernels]
    assert (frame["median_us"] > 0).all()
    assert cuda_device.COPIES == before


def test_the_copy_counters_docstring_example_runs():
    import doctest

    if not simulator_enabled():
        pytest.skip("the simulator")
    outcome = doctest.testmod(cuda_device)
    assert outcome.attempted > 0 and outcome.failed == 0
