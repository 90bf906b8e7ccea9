"""RMS normalisation (``passes.rms_norm.match_rms_norm``, ``ops.rms_norm``): transformers' own
``LlamaRMSNorm`` and ``T5LayerNorm`` compiled on cpu and cuda (the simulator) against PyTorch
as one ``rms_norm`` kernel (``pow``, ``mean+add+rsqrt`` and ``mul`` before), the weight inside
it or folded into the next projection; written-out look-alikes left as they are."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo_models  # noqa: E402
from graph_models import Fn  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph.compiler import import_graph  # noqa: E402
from workbench.graph.interpreter import run  # noqa: E402
from workbench.graph.passes.pipeline import Pipeline  # noqa: E402
from workbench.graph.passes.rms_norm import match_rms_norm  # noqa: E402
from workbench.recipes.graph_cuda_ops import RULES  # noqa: E402


def _norm(kind: str, width: int):
    if zoo_models.import_transformers() is None:
        pytest.skip("transformers is not installed")
    if kind == "llama":
        from transformers.models.llama.modeling_llama import LlamaRMSNorm as Norm
    else:
        from transformers.models.t5.modeling_t5 import T5LayerNorm as Norm
    torch.manual_seed(0)
    norm = Norm(width, eps=1e-5)
    nn.init.normal_(norm.weight, 1.0, 0.3)  # ones by default
    return norm.eval()


def _check(model, x, target: str):
    compiled = wb.compile(model, (x,), target=target)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=2e-5, atol=2e-5)
    return compiled


@pytest.mark.parametrize("kind", ["llama", "t5"])
def test_a_transformers_rms_norm_is_one_kernel_on_the_cpu(kind):
    x = torch.randn(2, 7, 100) * 3
    compiled = _check(_norm(kind, 100), x, "cpu")
    assert [k.pattern for k in compiled.kernels] == ["rms_norm"]


@pytest.mark.cuda
@pytest.mark.parametrize("width", [100, 768])  # 768: the row in registers, 128-bit loads
def test_a_transformers_rms_norm_on_cuda_is_one_row_kernel(width):
    compiled = _check(_norm("llama", width), torch.randn(2, 5, width) * 3, "cuda")
    (kernel,) = compiled.kernels
    assert kernel.pattern == "rms_norm"
    assert next(r.__name__ for r in RULES if r(kernel.func) is not None) == "rows"
    assert "shfl_xor_sync" in kernel.kernel.source


def test_the_weight_is_gamma_before_a_projection():
    class NormThenLinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.proj = _norm("llama", 12), nn.Linear(12, 5)

        def forward(self, x):
            return self.proj(self.norm(x))

    model, x = NormThenLinear().eval(), torch.randn(3, 12)
    graph = Pipeline().without("fuse")(import_graph(model, (x,)))
    (norm,) = [n for n in graph.nodes if n.op == "rms_norm"]
    np.testing.assert_array_equal(graph.constants[norm.inputs[1]],
                                  model.norm.weight.detach().numpy())
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(run(graph, x.numpy())[0], want, rtol=1e-5, atol=1e-6)


def test_llama_has_no_pow_kernel_left():
    models = zoo_models.text_models()
    if "llama" not in models:
        pytest.skip("transformers is not installed")
    model, inputs = models["llama"]
    compiled = wb.compile(model, inputs, target="cpu")
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns.count("rms_norm") == 5 and not any("pow" in p for p in patterns), patterns
    want = zoo_models.reference(model, inputs)
    zoo_models.assert_close(zoo_models.first(compiled(*[t.numpy() for t in inputs])), want)


def _rsqrt_mean(x, axis=-1, keepdim=True, power=2):
    return torch.rsqrt(x.pow(power).mean(axis, keepdim=keepdim) + 1e-6)


@pytest.mark.parametrize(("fn", "matched"), [
    (lambda x: x * _rsqrt_mean(x), True),
    (lambda x: _rsqrt_mean(x) * x, True),                      # either order
    (lambda x: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6), True),
    (lambda x: x * _rsqrt_mean(x, axis=1), False),             # not the last axis
    (lambda x: x * _rsqrt_mean(x, power=3), False),            # not the squares
    (lambda x: (x + 1) * _rsqrt_mean(x), False),               # another value normalised
    (lambda x: x * _rsqrt_mean(x, keepdim=False)[..., None], False),
])
def test_look_alikes_are_left_and_values_kept(fn, matched):
    x = torch.randn(2, 4, 6)
    graph = match_rms_norm(import_graph(Fn(fn), (x,)))
    assert ("rms_norm" in [n.op for n in graph.nodes]) == matched
    np.testing.assert_allclose(run(graph, x.numpy())[0], fn(x).numpy(), rtol=1e-5, atol=1e-6)
