"""wb.compile(model, target="cuda") under Numba's CUDA simulator, at tiny sizes: every kernel
bound to threads by rule (recipes/graph_cuda), outputs equal PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench import ops  # noqa: E402
from workbench.recipes.graph_cuda import cuda_schedule  # noqa: E402


def test_every_nest_of_a_library_kernel_is_bound_to_threads():
    sch = cuda_schedule(ops.layernorm(3, 5))
    script = sch.mod.script()
    assert script.count("threadIdx.x") == 3 and script.count("blockIdx.x") == 3  # 3 nests
    kernel = wb.build(sch, target="cuda")
    rng = np.random.default_rng(0)
    x, g, b = (rng.standard_normal(s).astype("float32") for s in ((3, 5), (5,), (5,)))
    out = np.empty((3, 5), "float32")
    kernel(x, g, b, out)
    np.testing.assert_allclose(out, ops.reference.layernorm(x, g, b, eps=1e-5), rtol=1e-4,
                               atol=1e-5)


def test_compiled_cnn_on_cuda_matches_torch(cnn):
    model, x, graph = cnn
    x = x[:1, :, :6, :6].contiguous()
    compiled = wb.compile(model, (x,), target="cuda")
    assert compiled.target == "cuda"
    for kernel in compiled.kernels:
        assert "threadIdx.x" in kernel.schedule.mod.script()
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_compiled_transformer_block_on_cuda_matches_torch(block):
    model, x, _ = block
    x = x[:1, :3].contiguous()
    compiled = wb.compile(model, (x,), target="cuda")
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
