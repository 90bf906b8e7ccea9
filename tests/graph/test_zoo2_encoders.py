"""Encoder models a user tries after BERT (``zoo2_encoders``): DistilBERT, RoBERTa, ALBERT,
ELECTRA, DeBERTa-v2, XLM-RoBERTa, MPNet, the T5 encoder, BERT's classification and masked-LM
heads, CLIP's text and vision towers and the Hugging Face ViT, at tiny configs with random
weights, each compared with PyTorch (max relative error <= 1e-4).

Every model runs with a batch of two whose second row is padded (an ``attention_mask`` with
zeros), with ``token_type_ids`` too where its ``forward`` takes them. ``make test`` compiles
each for the ``numpy`` target (unscheduled kernels) and CLIP's text tower (its pooler is an
``argmax``) for the cpu; ``WB_ZOO_CPU=1`` compiles every model and every input case (ids
alone, the padded mask, the token types) for the cpu with its default schedules (about 25 s a
model on two loaded cores). Three of them also go through ONNX (the dynamo exporter), with the
padded mask.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo_models  # noqa: E402

if zoo_models.import_transformers() is None:
    pytest.skip("transformers is not installed", allow_module_level=True)

import zoo2_encoders  # noqa: E402

import workbench as wb  # noqa: E402

ALL_CPU = os.environ.get("WB_ZOO_CPU") == "1"
MODELS = tuple(zoo2_encoders.text_builders()) + tuple(zoo2_encoders.vision_builders())


def _cases(name: str) -> tuple[str, ...]:
    """The input cases of ``name``: the richest one by default, all with ``WB_ZOO_CPU``."""
    richest = "types" if name in zoo2_encoders.TOKEN_TYPES else "mask"
    if not ALL_CPU:
        return (richest,)
    return ("ids", "mask", "types") if richest == "types" else ("ids", "mask")


@pytest.mark.parametrize("name", MODELS)
def test_encoder_matches_torch(name):
    model = zoo2_encoders.build(name)
    for case in _cases(name):
        inputs = zoo2_encoders.inputs(name, case)
        expected = zoo_models.reference(model, inputs)
        if ALL_CPU or name == "clip_text":
            compiled = wb.compile(model, inputs, target="cpu")
        else:
            compiled = wb.compile(model, inputs, target="numpy", schedules="none")
        zoo_models.assert_close(zoo_models.first(compiled(*[x.numpy() for x in inputs])), expected)


def test_padded_rows_change_only_their_own_outputs():
    """The mask reaches the attention: the padded row differs from the same ids unpadded,
    the unpadded row does not."""
    model = zoo2_encoders.build("roberta")
    ids, mask = zoo2_encoders.inputs("roberta", "mask")
    compiled = wb.compile(model, (ids, mask), target="numpy", schedules="none")
    padded = zoo_models.first(compiled(ids.numpy(), mask.numpy()))
    full = zoo_models.first(compiled(ids.numpy(), np.ones_like(mask.numpy())))
    np.testing.assert_array_equal(padded[0], full[0])
    assert np.abs(padded[1, :3] - full[1, :3]).max() > 1e-3


class _ArgExtremes(torch.nn.Module):
    def forward(self, x, i):
        return torch.argmax(x, 1) * 100 + torch.argmin(i, -1, keepdim=True)


def test_argmax_and_argmin_give_the_first_index_on_the_cpu():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3, 7, 13, generator=gen)
    i = torch.randint(0, 3, (3, 13), generator=gen).to(torch.int32)  # ties
    model = _ArgExtremes()
    compiled = wb.compile(model, (x, i), target="cpu")
    got = zoo_models.first(compiled(x.numpy(), i.numpy()))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, model(x, i).numpy())


@pytest.mark.parametrize("name", ["distilbert", "bert_cls", "roberta"])
def test_encoder_through_onnx(name):
    """With the padded attention mask: DistilBERT's and BERT's bool constant ``And`` the
    int64 mask, RoBERTa's ``CumSum`` / ``GatherElements`` position ids."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    model = zoo2_encoders.build(name)
    inputs = zoo2_encoders.inputs(name, "mask")
    expected = zoo_models.reference(model, inputs)
    proto = torch.onnx.export(model, inputs, dynamo=True, verbose=False).model_proto
    compiled = wb.compile(proto, target="numpy", schedules="none")
    zoo_models.assert_close(zoo_models.first(compiled(*[x.numpy() for x in inputs])), expected)
