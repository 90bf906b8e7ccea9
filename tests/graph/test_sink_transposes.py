"""``passes.sink_transposes``: the heads' transposes moved below the rotary embedding, down
to the attention that folds them (``fold_views``): Llama-style attention inputs through
``wb.compile`` on cpu and cuda (the simulator) with no transpose kernel, against PyTorch;
graphs where moving would not leave fewer transposes are returned unchanged; values kept
(the interpreter) either way. The mechanism's policies (``Sinking``: the CNHW and NHWC
convolution layouts use it too): which transposes move, plane ops, inserted operand
transposes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo_models  # noqa: E402
from graph_models import Fn  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph.builder import GraphBuilder  # noqa: E402
from workbench.graph.interpreter import run  # noqa: E402
from workbench.graph.ir import TensorType  # noqa: E402
from workbench.graph.passes.sink_transposes import Sinking, sink, sink_transposes  # noqa: E402


class RotaryAttention(nn.Module):
    """Llama's attention inputs: projections viewed as heads, transposed, rotated
    (transformers' ``apply_rotary_pos_emb``), attended."""

    def __init__(self, width: int = 24, heads: int = 2, tokens: int = 7):
        super().__init__()
        tf = zoo_models.import_transformers()
        if tf is None:
            pytest.skip("transformers is not installed")
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        self.rotate, self.heads = apply_rotary_pos_emb, heads
        self.q, self.k, self.v = (nn.Linear(width, width, bias=False) for _ in range(3))
        head_dim = width // heads
        angles = torch.outer(torch.arange(tokens, dtype=torch.float32),
                             torch.rand(head_dim // 2) + 0.1)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos()[None], persistent=False)
        self.register_buffer("sin", angles.sin()[None], persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (p(x).view(b, t, self.heads, -1).transpose(1, 2)
                   for p in (self.q, self.k, self.v))
        q, k = self.rotate(q, k, self.cos, self.sin)
        out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(b, t, -1)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_rotary_attention_has_no_transpose_kernel(target):
    torch.manual_seed(0)
    model, x = RotaryAttention().eval(), torch.randn(2, 7, 24)
    compiled = wb.compile(model, (x,), target=target)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=1e-4, atol=1e-5)
    patterns = [k.pattern for k in compiled.kernels]
    assert "transpose" not in patterns and patterns.count("rotate_half+mul") == 2, patterns


def _graph_with_two_readers_that_never_meet():
    """A transpose read by two elementwise ops whose results leave separately: moving it
    would leave two transposes instead of one."""
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 4)))
    t = b.node("transpose", [x], dict(perm=[1, 0, 2]))
    return b.finish([b.node("exp", [t]), b.node("neg", [t])])


def test_a_move_that_would_not_save_a_transpose_is_not_made(rng):
    graph = _graph_with_two_readers_that_never_meet()
    assert sink_transposes(graph) is graph
    b = GraphBuilder()  # rotate_half along an axis the transpose moves: it cannot pass
    x = b.input("x", TensorType((2, 3, 4)))
    swapped = b.node("transpose", [x], dict(perm=[0, 2, 1]))
    kept = b.finish([b.node("sdpa", [b.node("rotate_half", [swapped])] * 3)])
    assert sink_transposes(kept) is kept


def test_values_are_kept_where_a_transpose_moves(rng):
    b = GraphBuilder()
    x = b.input("x", TensorType((1, 5, 2, 4)))
    cos = b.input("cos", TensorType((1, 1, 5, 4)))
    q = b.node("transpose", [x], dict(perm=[0, 2, 1, 3]))
    scaled = b.node("mul", [q, b.constant("half", np.float32(0.5))])
    rotated = b.node("add", [b.node("mul", [q, cos]), b.node("rotate_half", [scaled])])
    graph = b.finish([b.node("sdpa", [rotated, rotated, rotated])])
    moved = sink_transposes(graph)
    assert moved is not graph
    arrays = [rng.standard_normal((1, 5, 2, 4)).astype(np.float32),
              rng.standard_normal((1, 1, 5, 4)).astype(np.float32)]
    np.testing.assert_allclose(run(moved, *arrays)[0], run(graph, *arrays)[0], rtol=1e-6)


def test_gpt2_and_bert_keep_their_folded_heads():
    """Their transposes feed the attention directly (fold_views folds them): nothing to move,
    and no transpose kernel either way."""
    for name in ("gpt2", "bert"):
        models = zoo_models.text_models()
        if name not in models:
            pytest.skip("transformers is not installed")
        model, inputs = models[name]
        compiled = wb.compile(model, inputs, target="cpu")
        assert "transpose" not in [k.pattern for k in compiled.kernels], name
        zoo_models.assert_close(zoo_models.first(compiled(*[t.numpy() for t in inputs])),
                                zoo_models.reference(model, inputs))


def test_a_lone_transpose_model_still_compiles():
    x = torch.randn(3, 4, 5)
    compiled = wb.compile(Fn(lambda t: t.transpose(0, 1).exp()), (x,), target="cpu")
    np.testing.assert_allclose(compiled(x.numpy()), x.transpose(0, 1).exp().numpy(), rtol=1e-6)


def _ops(graph):
    return [n.op for n in graph.nodes]


def _pool_and_residual():
    """``swap(x)`` read by a max pool, whose output meets ``y`` (not transposed) in an add."""
    b = GraphBuilder()
    x, y = b.input("x", TensorType((3, 2, 6, 5))), b.input("y", TensorType((2, 3, 3, 2)))
    swapped = b.node("transpose", [x], dict(perm=[1, 0, 2, 3]))
    pooled = b.node("max_pool2d", [swapped], dict(kernel=[2, 2], stride=[2, 2]))
    return b.finish([b.node("relu", [b.node("add", [pooled, y])])])


def test_policies_choose_what_moves(rng):
    graph = _pool_and_residual()
    arrays = [rng.standard_normal((3, 2, 6, 5)).astype(np.float32),
              rng.standard_normal((2, 3, 3, 2)).astype(np.float32)]
    want = run(graph, *arrays)[0]
    # the pool commutes with the swap (it keeps the (h, w) plane); the add's other operand
    # is no view of it: the mechanism stops there unless the policy inserts its transpose
    assert _ops(sink(graph)) == ["max_pool2d", "transpose", "add", "relu"]
    inserted = sink(graph, Sinking(operand_transposes=True))
    assert _ops(inserted) == ["max_pool2d", "transpose", "add", "relu", "transpose"]
    assert sink(graph, Sinking(perm=(0, 1, 3, 2))) is graph  # another permutation only
    for moved in (sink(graph), inserted):
        np.testing.assert_array_equal(run(moved, *arrays)[0], want)


def test_a_plane_op_does_not_pass_a_transpose_of_its_plane():
    b = GraphBuilder()
    x = b.input("x", TensorType((1, 2, 6, 5)))
    swapped = b.node("transpose", [x], dict(perm=[0, 1, 3, 2]))
    graph = b.finish([b.node("avg_pool2d", [swapped], dict(kernel=[2, 2], stride=[2, 2]))])
    assert sink(graph) is graph


def test_single_reader_policy_leaves_a_shared_transpose(rng):
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 4)))
    t = b.node("transpose", [x], dict(perm=[1, 0, 2]))
    graph = b.finish([b.node("add", [b.node("exp", [t]), b.node("neg", [t])])])
    assert sink(graph, Sinking(single_reader=True)) is graph
    moved = sink(graph)  # both readers at once; the two transposes meet in the add
    assert _ops(moved) == ["exp", "neg", "add", "transpose"]
    array = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(run(moved, array)[0], run(graph, array)[0], rtol=1e-6)
