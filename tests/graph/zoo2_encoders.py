"""Encoder models from Hugging Face ``transformers`` built as a user would (small configs,
random weights, no hub access) for ``test_zoo2_encoders``: each name -> a builder returning
``(model, inputs)``; the inputs are positional, in the order of the model's ``forward``."""

from __future__ import annotations

import torch
import zoo_models

SMALL = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64, max_position_embeddings=32)
"""The common tiny text config (as ``zoo_models.text_models``)."""


def _ids(batch: int = 1, length: int = 8, vocab: int = 64) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, length))


def _padded_mask(batch: int = 2, length: int = 8) -> torch.Tensor:
    """An attention mask whose last row is padded (zeros after three tokens)."""
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[-1, 3:] = 0
    return mask


def _ready(model):
    model.config.use_cache = False
    return model.eval()


def text_builders() -> dict:
    """name -> (transformers class name, config factory) for the encoder models."""
    tf = zoo_models.import_transformers()
    distil = dict(vocab_size=64, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                  max_position_embeddings=32)
    return {
        "distilbert": lambda: tf.DistilBertModel(tf.DistilBertConfig(**distil)),
        "roberta": lambda: tf.RobertaModel(tf.RobertaConfig(**SMALL), add_pooling_layer=False),
        "albert": lambda: tf.AlbertModel(tf.AlbertConfig(**SMALL, embedding_size=16),
                                          add_pooling_layer=False),
        "electra": lambda: tf.ElectraModel(tf.ElectraConfig(**SMALL, embedding_size=16)),
        "deberta_v2": lambda: tf.DebertaV2Model(tf.DebertaV2Config(**SMALL)),
        "xlm_roberta": lambda: tf.XLMRobertaModel(tf.XLMRobertaConfig(**SMALL),
                                                  add_pooling_layer=False),
        "mpnet": lambda: tf.MPNetModel(tf.MPNetConfig(**SMALL), add_pooling_layer=False),
        "t5_encoder": lambda: tf.T5EncoderModel(tf.T5Config(
            vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
            relative_attention_num_buckets=8, relative_attention_max_distance=16)),
        "bert_cls": lambda: tf.BertForSequenceClassification(tf.BertConfig(**SMALL, num_labels=3)),
        "bert_mlm": lambda: tf.BertForMaskedLM(tf.BertConfig(**SMALL)),
        "clip_text": lambda: tf.CLIPTextModel(tf.CLIPTextConfig(**SMALL)),
    }


def vision_builders() -> dict:
    tf = zoo_models.import_transformers()
    return {
        "vit_hf": lambda: tf.ViTModel(tf.ViTConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            image_size=16, patch_size=8, num_channels=3), add_pooling_layer=False),
        "clip_vision": lambda: tf.CLIPVisionModel(tf.CLIPVisionConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            image_size=16, patch_size=8, num_channels=3)),
    }


def build(name: str):
    """The model ``name`` in eval mode (seeded, so every call builds the same weights)."""
    torch.manual_seed(0)
    builders = {**text_builders(), **vision_builders()}
    return _ready(builders[name]())


TOKEN_TYPES = {"roberta", "albert", "electra", "deberta_v2", "xlm_roberta", "bert_cls", "bert_mlm"}
"""Models whose ``forward`` takes ``token_type_ids`` as its third positional argument."""


def inputs(name: str, case: str) -> tuple:
    """``case``: "ids" (1, 8) ids alone; "mask": batch 2 with a padded row; "types": batch 2
    with the mask and token type ids (only for ``TOKEN_TYPES``)."""
    torch.manual_seed(1)
    if name in vision_builders():
        return (torch.randn(1 if case == "ids" else 2, 3, 16, 16),)
    if case == "ids":
        return (_ids(),)
    if case == "mask":
        return (_ids(2), _padded_mask())
    types = torch.zeros(2, 8, dtype=torch.long)
    types[:, 4:] = 1
    return (_ids(2), _padded_mask(), types)
