"""The rotary embedding (``passes.rotary.match_rotate_half``, ``ops.rotate_half``):
transformers' own ``apply_rotary_pos_emb`` (Llama's) compiled on cpu and cuda (the
simulator) against PyTorch, its two slices, negation and concatenation one ``rotate_half``
whose kernel also computes ``* sin`` (four kernels a rotation fewer); look-alikes that are not
``rotate_half`` left as they are."""

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
from workbench.graph.ops import evaluate  # noqa: E402
from workbench.graph.passes.rotary import match_rotate_half  # noqa: E402


def _llama_rotary():
    tf = zoo_models.import_transformers()
    if tf is None:
        pytest.skip("transformers is not installed")
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    return apply_rotary_pos_emb


class Rotary(nn.Module):
    """Llama's attention inputs rotated by transformers' ``apply_rotary_pos_emb``."""

    def __init__(self, rotate, head_dim: int, tokens: int):
        super().__init__()
        self.rotate = rotate
        angles = torch.outer(torch.arange(tokens, dtype=torch.float32),
                             torch.rand(head_dim // 2) + 0.1)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos()[None], persistent=False)
        self.register_buffer("sin", angles.sin()[None], persistent=False)

    def forward(self, q, k):
        q, k = self.rotate(q, k, self.cos, self.sin)
        return q + 2 * k


def _inputs(head_dim: int, tokens: int = 7):
    torch.manual_seed(0)
    return torch.randn(2, 3, tokens, head_dim), torch.randn(2, 3, tokens, head_dim)


def _compiled_rotary(head_dim: int, target: str) -> list[str]:
    """Llama's rotary compiled for ``target``, checked against torch; its kernels' patterns."""
    model = Rotary(_llama_rotary(), head_dim, 7).eval()
    q, k = _inputs(head_dim)
    compiled = wb.compile(model, (q, k), target=target)
    with torch.no_grad():
        want = model(q, k).numpy()
    np.testing.assert_allclose(compiled(q.numpy(), k.numpy()), want, rtol=1e-5, atol=1e-5)
    return [kernel.pattern for kernel in compiled.kernels]


@pytest.mark.parametrize("head_dim", [10, 128])
def test_llama_rotary_on_the_cpu_is_one_rotate_half_kernel_a_rotation(head_dim):
    patterns = _compiled_rotary(head_dim, "cpu")
    assert patterns.count("rotate_half+mul") == 2, patterns
    assert not {"slice", "neg", "concat"} & {op for p in patterns for op in p.split("+")}


@pytest.mark.cuda
@pytest.mark.parametrize("head_dim", [10, 128])  # 128: the v4 schedule (rows of 128)
def test_llama_rotary_on_cuda_matches_torch(head_dim):
    assert _compiled_rotary(head_dim, "cuda").count("rotate_half+mul") == 2


def test_the_operator_is_torch_rotate_half():
    from transformers.models.llama.modeling_llama import rotate_half

    x = torch.randn(3, 5, 12)
    np.testing.assert_array_equal(evaluate("rotate_half", [x.numpy()], {}),
                                  rotate_half(x).numpy())


@pytest.mark.parametrize(("fn", "why"), [
    (lambda x: torch.cat((x[..., 4:], -x[..., :4]), dim=-1), "the negation on the other half"),
    (lambda x: torch.cat((-x[..., 3:], x[..., :3]), dim=-1), "halves of 5 and 3"),
    (lambda x: torch.cat((-x[:, 2:], x[:, :2]), dim=1), "along another axis"),
    (lambda x: torch.cat((-x[..., 4:], x[..., :4]), dim=-1)[..., :6], "of a slice: matched"),
])
def test_look_alikes_are_left_and_values_kept(fn, why):
    x = torch.randn(2, 4, 8)
    graph = import_graph(Fn(fn), (x,))
    matched = match_rotate_half(graph)
    ops = [n.op for n in matched.nodes]
    assert ("rotate_half" in ops) == why.endswith("matched"), (why, ops)
    np.testing.assert_allclose(run(matched, x.numpy())[0], fn(x).numpy(), rtol=0, atol=0)


def test_a_half_read_elsewhere_stays_for_its_other_reader():
    def fn(x):
        low = x[..., :4]
        return torch.cat((-x[..., 4:], low), dim=-1) * 2 + low.sum(-1, keepdim=True)

    x = torch.randn(3, 8)
    graph = match_rotate_half(import_graph(Fn(fn), (x,)))
    ops = [n.op for n in graph.nodes]
    assert "rotate_half" in ops and ops.count("slice") == 1 and "neg" not in ops
    np.testing.assert_allclose(run(graph, x.numpy())[0], fn(x).numpy(), rtol=1e-6)
