"""Decoder-only language models of ``zoo2_decoders`` (transformers' OPT, GPT-NeoX, Qwen2,
Mistral, Phi, Phi-3, Gemma, Gemma 2, Falcon in both architectures, BLOOM, GPT-J, CodeGen,
StableLM, OLMo and two causal-LM heads) imported and compiled, each compared with PyTorch
(max relative error <= 1e-4), on one row of token ids and on a left-padded batch of 2 with
its attention mask (the padding rows attend to no key: PyTorch's ``sdpa`` gives 0 there).

The default run checks every model through the interpreter and ``wb.compile(target="numpy",
schedules="none")`` (whole-array numpy kernels, under a second each) and compiles Qwen2 on
the padded batch for the cpu; ``WB_ZOO_CPU=1`` compiles every model for the cpu with its
default schedules (about 20 s of Numba compiles per model on two cores). Two models go
through ONNX with the dynamo exporter.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo2_decoders  # noqa: E402
import zoo_models  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph import from_torch, run  # noqa: E402

ALL_CPU = os.environ.get("WB_ZOO_CPU") == "1"
CPU_BY_DEFAULT = {("qwen2", "batch")}


class Keywords(torch.nn.Module):
    """``model(input_ids=..., attention_mask=...)`` called with positional tensors (the
    graph's inputs are positional)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)


def _case(name, inputs):
    model = zoo2_decoders.decoder(name)
    if model is None:
        pytest.skip(f"transformers (with {zoo2_decoders.CLASSES[name]}) is not installed")
    if inputs == "ids":
        return model, zoo2_decoders.ids_input()
    batch = zoo2_decoders.padded_batch()
    return Keywords(model), (batch["input_ids"], batch["attention_mask"])


@pytest.mark.parametrize("inputs", ["ids", "batch"])
@pytest.mark.parametrize("name", zoo2_decoders.DECODERS)
def test_decoder_matches_torch(name, inputs):
    model, args = _case(name, inputs)
    expected = zoo_models.reference(model, args)
    arrays = [x.numpy() for x in args]
    graph = from_torch(model, args)
    zoo_models.assert_close(zoo_models.first(run(graph, *arrays)), expected)
    if ALL_CPU or (name, inputs) in CPU_BY_DEFAULT:
        compiled = wb.compile(graph, target="cpu")
    else:
        compiled = wb.compile(graph, target="numpy", schedules="none")
    zoo_models.assert_close(zoo_models.first(compiled(*arrays)), expected)


@pytest.mark.parametrize("name", ["qwen2", "phi"])
def test_decoder_through_onnx_dynamo(name):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    model, args = _case(name, "ids")
    expected = zoo_models.reference(model, args)
    proto = torch.onnx.export(model, args, dynamo=True, verbose=False).model_proto
    compiled = wb.compile(proto, target="numpy", schedules="none")
    zoo_models.assert_close(zoo_models.first(compiled(*[x.numpy() for x in args])), expected)


# ---- the ops these models needed -------------------------------------------------------


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_baddbmm_with_alpha_and_beta(target):
    """BLOOM's ALiBi scores: ``baddbmm(alibi, q, k, beta=1, alpha=1/sqrt(d))``; other
    ``beta`` scale the bias, ``beta=0`` ignores it (NaN included)."""
    gen = torch.Generator().manual_seed(0)
    b, x, w = (torch.randn(s, generator=gen) for s in [(3, 7, 13), (3, 7, 5), (3, 5, 13)])
    nan = torch.full((3, 7, 13), float("nan"))

    class Net(torch.nn.Module):
        def forward(self, b, x, w):
            return (torch.baddbmm(b, x, w, beta=1.0, alpha=0.37)
                    + torch.baddbmm(b, x, w, beta=-2.5, alpha=1.0)
                    + torch.baddbmm(nan, x, w, beta=0.0, alpha=0.5))

    net = Net()
    expected = net(b, x, w).numpy()
    compiled = wb.compile(net, (b, x, w), target=target)
    zoo_models.assert_close(compiled(b.numpy(), x.numpy(), w.numpy()), expected)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_sdpa_rows_with_no_key_give_zero(target, causal):
    """A boolean mask computed at run time that keeps no key of some query rows (left
    padding): PyTorch's ``sdpa`` gives 0 on those rows, not NaN; with ``is_causal`` both
    masks apply."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 5, generator=gen) for _ in range(3))
    pad = torch.ones(2, 7, dtype=torch.int64)
    pad[1, :4] = 0

    class Net(torch.nn.Module):
        def forward(self, q, k, v, pad):
            keep = (pad[:, None, :, None] * pad[:, None, None, :]) > 0
            return torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=keep, is_causal=causal)

    net = Net()
    expected = net(q, k, v, pad).numpy()
    assert (expected[1, :, :4] == 0).all() and np.isfinite(expected).all()
    compiled = wb.compile(net, (q, k, v, pad), target=target)
    zoo_models.assert_close(compiled(q.numpy(), k.numpy(), v.numpy(), pad.numpy()), expected)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_positions_from_the_mask_cumsum(target):
    """OPT's positions, ``(cumsum(mask) * mask).long() - 1 + 2``: the cumsum is a matmul whose
    epilogue reads the int64 mask and ends in an int64 cast (its kernel's output is int64)."""
    gen = torch.Generator().manual_seed(0)
    mask = torch.ones(3, 13, dtype=torch.int64)
    mask[1, :5] = 0
    table = torch.randn(20, 7, generator=gen)

    class Net(torch.nn.Module):
        def forward(self, mask):
            positions = (torch.cumsum(mask, dim=1) * mask).long() - 1
            return torch.nn.functional.embedding(positions + 2, table)

    net = Net()
    expected = net(mask).numpy()
    compiled = wb.compile(net, (mask,), target=target)
    zoo_models.assert_close(compiled(mask.numpy()), expected)
