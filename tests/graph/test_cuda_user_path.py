"""A user's path through a model compiled for ``cuda`` (issue 20), walked under the
simulator: what broke there, or would have broken on the first real GPU, kept fixed.

* a new input where an old one was (a freed array's ``id`` reused) replayed the old
  input's graph under the simulator: graphs are keyed by data address, as on the device;
* a strided device array was accepted (only torch's were checked) while the launch
  sequence and the graphs pack C strides: on a GPU the second call read it as contiguous;
* a torch tensor that requires grad: its ``__cuda_array_interface__`` raises
  ``RuntimeError``, which ``hasattr`` does not catch (real GPU test below);
* ``EventTimer`` (``latency_report``, ``tune_model``) handed Numba's ``Event.record`` a raw
  stream handle: ``TypeError`` on a GPU whenever torch's current stream is not the default;
* numpy 2.5 (the H200's) has no ``np.row_stack``, which numba-cuda 0.30 overloads;
* a model compiled for cuda could not be saved (``ValueError``), nor a tuned cuda kernel
  exported (``python -m workbench tune --target cuda --export`` failed after tuning).
"""

from __future__ import annotations

import gc
import importlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.backends.cuda.numba_cuda import simulator_enabled  # noqa: E402
from workbench.graph.compiler import ModelInputError  # noqa: E402
from workbench.integrity import ArtifactIntegrityError, write_manifest  # noqa: E402

pytestmark = pytest.mark.cuda

on_gpu = pytest.mark.skipif(simulator_enabled() or not torch.cuda.is_available(),
                            reason="a real GPU and torch's CUDA build")


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 5)).eval()


def _want(model, x: np.ndarray) -> np.ndarray:
    return model(torch.from_numpy(x)).detach().numpy()


@pytest.fixture(scope="module")
def compiled():
    if not simulator_enabled():
        pytest.skip("the simulator's device arrays (NUMBA_ENABLE_CUDASIM=1)")
    model = _model()
    return model, wb.compile(model, (torch.randn(2, 3, 4),), target="cuda", progress=False)


def test_a_new_input_where_an_old_one_was_is_not_given_the_old_graph(compiled, monkeypatch):
    from numba import cuda

    from workbench.backends.cuda import cuda_graph

    # each input is freed after its call, so the next may get its id (it did, now and
    # then): every id made equal here, deterministically; the key must not depend on it
    monkeypatch.setattr(cuda_graph, "id", lambda obj: 0, raising=False)
    model, c = compiled
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((2, 3, 4)).astype(np.float32)
        out = c(cuda.to_device(x)).copy_to_host()
        np.testing.assert_allclose(out, _want(model, x), rtol=1e-5, atol=1e-6)
        gc.collect()


def test_a_strided_device_input_is_refused_before_any_launch(compiled):
    from numba import cuda

    _, c = compiled
    wide = cuda.to_device(np.ones((2, 3, 8), np.float32))
    with pytest.raises(ModelInputError, match="'input' of the model is not C-contiguous"):
        c(wide[:, :, ::2])


def test_a_torch_cpu_tensor_that_requires_grad_is_a_host_input(compiled):
    model, c = compiled
    x = torch.randn(2, 3, 4, requires_grad=True)
    out = c(x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, _want(model, x.detach().numpy()), rtol=1e-5, atol=1e-6)


def test_the_event_timer_gives_numba_a_stream_object_for_a_raw_handle(monkeypatch):
    from numba import cuda

    from workbench.backends.cuda import cuda_device, numba_cuda

    recorded = []

    class Event:
        def record(self, stream=0):
            assert stream == 0 or not isinstance(stream, int), "a raw handle reached Numba"
            recorded.append(stream)

    monkeypatch.setattr(numba_cuda, "simulator_enabled", lambda: False)
    monkeypatch.setattr(cuda, "event", Event, raising=False)
    monkeypatch.setattr(cuda, "external_stream", lambda handle: ("stream", handle),
                        raising=False)
    cuda_device.EventTimer(0x1234).start()
    cuda_device.EventTimer(0).start()
    assert recorded == [("stream", 0x1234), 0]


def test_numba_cuda_finds_row_stack_on_a_numpy_without_it(monkeypatch):
    import workbench.backends.cuda as package

    monkeypatch.delattr(np, "row_stack", raising=False)
    importlib.reload(package)
    assert np.row_stack is np.vstack


def _rehash(folder) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    for key in ("files", "manifest_sha256"):
        manifest.pop(key)
    write_manifest(folder, manifest)


def test_a_cuda_model_saves_loads_and_a_tampered_one_is_refused(compiled, tmp_path):
    from numba import cuda

    model, c = compiled
    c.save(tmp_path / "model")
    loaded = wb.load(tmp_path / "model")
    assert loaded.target == "cuda" and loaded.runtime is not None
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(loaded(cuda.to_device(x)).copy_to_host(), _want(model, x),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded(x), _want(model, x), rtol=1e-5, atol=1e-6)
    (module,) = (tmp_path / "model" / "kernels").glob("workbench_kernel_*.py")
    module.write_text(module.read_text().replace("cuda.blockIdx.x", "0"))
    with pytest.raises(ArtifactIntegrityError, match="content changed"):
        wb.load(tmp_path / "model")
    _rehash(tmp_path / "model")  # a careful tamperer: every hash written again
    with pytest.raises(ArtifactIntegrityError, match="not what workbench generates"):
        wb.load(tmp_path / "model")


def test_a_tuned_cuda_kernel_exports_and_loads(tmp_path):
    if not simulator_enabled():
        pytest.skip("the simulator")
    from workbench import ops
    from workbench.recipes.graph_cuda import graph_schedule
    from workbench.tune.artifact import export_artifact, load_artifact

    func = ops.matmul(5, 3, 7)
    folder = export_artifact(graph_schedule(func), tmp_path / "best", target="cuda", func=func)
    kernel = load_artifact(folder)
    assert kernel.manifest["target"] == "cuda"
    assert kernel.cache_hits == 0 and kernel.cache_misses == 0  # no disk cache on cuda
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (5, 7)).astype(np.float32)
    b = rng.uniform(-1, 1, (7, 3)).astype(np.float32)
    c = np.full((5, 3), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


# ---- on a real GPU (the plan's pytest run; skipped under the simulator) -----------------


@on_gpu
def test_gpu_a_cuda_tensor_that_requires_grad_runs_in_place():
    model = _model()
    c = wb.compile(model, (torch.randn(2, 3, 4),), target="cuda", progress=False)
    layer = torch.nn.Linear(4, 4).cuda()  # its output requires grad
    x = layer(torch.randn(2, 3, 4, device="cuda"))
    assert x.requires_grad
    with torch.no_grad():
        want = model.cuda()(x)
    for _ in range(2):  # the checked call, then the graph
        torch.testing.assert_close(c(x), want, rtol=1e-5, atol=1e-5)


@on_gpu
def test_gpu_a_strided_tensor_is_refused_and_latency_report_runs_on_a_side_stream():
    c = wb.compile(_model(), (torch.randn(2, 3, 4),), target="cuda", progress=False)
    with pytest.raises(ModelInputError, match="not C-contiguous"):
        c(torch.randn(2, 3, 8, device="cuda")[:, :, ::2])
    x = torch.randn(2, 3, 4, device="cuda")
    with torch.cuda.stream(torch.cuda.Stream()):
        frame = c.latency_report(x, repeat=2)
    assert (frame["median_us"] > 0).all()


@on_gpu
def test_gpu_a_model_on_the_gpu_compiles_from_its_cuda_example_input():
    """The natural GPU user's call: the model and its example input already on the GPU."""
    model = _model().cuda()
    x = torch.randn(2, 3, 4, device="cuda")
    c = wb.compile(model, (x,), target="cuda", progress=False)
    assert next(model.parameters()).is_cuda  # the model is left where it was
    with torch.no_grad():
        torch.testing.assert_close(c(x), model(x), rtol=1e-5, atol=1e-5)


@on_gpu
def test_gpu_cupy_arrays_in_and_out_and_a_strided_one_refused():
    cupy = pytest.importorskip("cupy")
    model = _model()
    c = wb.compile(model, (torch.randn(2, 3, 4),), target="cuda", progress=False)
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    for _ in range(2):
        out = c(cupy.asarray(x))
        assert isinstance(out, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(out), _want(model, x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ModelInputError, match="not C-contiguous"):
        c(cupy.ones((2, 3, 8), np.float32)[:, :, ::2])
