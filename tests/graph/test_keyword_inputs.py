"""Keyword example inputs (``wb.compile(model, args, example_kwargs={...})``, as
``torch.export.export(model, args, kwargs)`` takes them) and a compiled model called by
name, as the torch module is."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.graph.errors import ModelInputError  # noqa: E402


class Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(5, 4)

    def forward(self, x, mask=None, bias=None, scale: float = 1.0):
        y = self.linear(x) * scale
        if mask is not None:
            y = y * mask
        return y if bias is None else y - bias


def _inputs():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((3, 5)).astype("float32"))
    mask = torch.from_numpy((rng.random((3, 4)) > 0.5).astype("float32"))
    bias = torch.from_numpy(rng.standard_normal((3, 4)).astype("float32"))
    return x, mask, bias


@pytest.fixture(scope="module")
def compiled():
    torch.manual_seed(0)
    model = Masked().eval()
    x, mask, bias = _inputs()
    # keywords in another order than forward's parameters; a float keyword is a constant
    return model, wb.compile(model, (x,), example_kwargs={"bias": bias, "mask": mask,
                                                          "scale": 2.0}, jobs=1)


def test_keyword_inputs_compile_and_are_called_by_name(compiled):
    model, cm = compiled
    x, mask, bias = _inputs()
    with torch.no_grad():
        expected = model(x, mask=mask, bias=bias, scale=2.0).numpy()
    assert cm.input_names == ("x", "bias", "mask")
    for out in (cm(x, mask=mask, bias=bias), cm(x=x, bias=bias, mask=mask), cm(x, bias, mask)):
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_a_positional_model_is_called_by_its_parameter_names():
    model = Masked().eval()
    x, mask, _ = _inputs()
    cm = wb.compile(model, (x, mask), jobs=1)
    with torch.no_grad():
        expected = model(x, mask).numpy()
    np.testing.assert_allclose(cm(mask=mask, x=x), expected, rtol=1e-5, atol=1e-6)


def test_keyword_inputs_survive_save_and_load(compiled, tmp_path):
    model, cm = compiled
    x, mask, bias = _inputs()
    cm.save(tmp_path / "m")
    loaded = wb.load(tmp_path / "m")
    assert loaded.input_names == cm.input_names
    np.testing.assert_allclose(loaded(x, mask=mask, bias=bias), cm(x, mask=mask, bias=bias))


def test_bad_keywords_are_named(compiled):
    _, cm = compiled
    x, mask, bias = _inputs()
    with pytest.raises(ModelInputError, match="no input named 'masks'"):
        cm(x, masks=mask, bias=bias)
    with pytest.raises(ModelInputError, match="'x' of the model given both"):
        cm(x, x=x, mask=mask, bias=bias)
    with pytest.raises(ModelInputError, match="'mask' of the model is missing"):
        cm(x, bias=bias)


def test_bad_example_kwargs_are_refused_before_tracing():
    model = Masked().eval()
    x, mask, _ = _inputs()
    with pytest.raises(ModelInputError, match="example_kwargs="):
        wb.compile(model, {"x": x})
    with pytest.raises(ModelInputError, match="does not take 1 input.*keyword.*masks"):
        wb.compile(model, (x,), example_kwargs={"masks": mask})
    with pytest.raises(ModelInputError, match="expected a dict"):
        wb.compile(model, (x,), example_kwargs=[mask])


def test_tiny_bert_with_an_attention_mask_by_keyword():
    from zoo_models import import_transformers

    tf = import_transformers()
    if tf is None:
        pytest.skip("transformers is not installed")
    torch.manual_seed(0)
    config = tf.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                           num_attention_heads=2, intermediate_size=32,
                           max_position_embeddings=16)
    model = tf.BertModel(config, add_pooling_layer=False).eval()
    ids = torch.randint(0, 40, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.int64)
    mask[1, 3:] = 0  # a padded second sequence
    cm = wb.compile(model, (), example_kwargs={"input_ids": ids, "attention_mask": mask})
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
    out = cm(input_ids=ids, attention_mask=mask)
    np.testing.assert_allclose(out["last_hidden_state"], expected, rtol=1e-4, atol=1e-5)
