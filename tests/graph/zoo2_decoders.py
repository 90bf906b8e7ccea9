"""Decoder-only language models a user would try after GPT-2 and Llama (issue 19, "unseen
models"): Hugging Face transformers' OPT, GPT-NeoX, Qwen2, Mistral, Phi, Phi-3, Gemma, Gemma 2,
Falcon (multi-query and the new decoder architecture), BLOOM, GPT-J, CodeGen, StableLM and
OLMo, built from small configs (2 layers, width 32-64, 4 heads, vocabulary 64-128) with random
weights and no hub access, ``config.use_cache=False`` as ``zoo_models.text_models``; plus the
``*ForCausalLM`` heads of two of them (tied embeddings).

Inputs: ``ids`` (1, 8), and a batch of 2 with an attention mask that left-pads one row (what
batched generation passes).
"""

from __future__ import annotations

import functools

import torch
import zoo_models

VOCAB = 96


def _small(tf, name: str):
    """The config of model ``name`` at 2 layers, width 32 (64 where the head size needs it),
    4 heads."""
    common = dict(vocab_size=VOCAB, num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=64)
    if name == "opt":
        return tf.OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=4, ffn_dim=64, word_embed_proj_dim=32,
                            max_position_embeddings=64)
    if name == "gpt_neox":
        return tf.GPTNeoXConfig(**common, hidden_size=32, intermediate_size=64,
                                rotary_pct=0.5, use_parallel_residual=True)
    if name == "qwen2":
        return tf.Qwen2Config(**common, hidden_size=32, intermediate_size=64,
                              num_key_value_heads=2, use_sliding_window=False)
    if name == "mistral":
        return tf.MistralConfig(**common, hidden_size=32, intermediate_size=64,
                                num_key_value_heads=2, sliding_window=None)
    if name == "phi":
        return tf.PhiConfig(**common, hidden_size=32, intermediate_size=64,
                            partial_rotary_factor=0.5)
    if name == "phi3":
        return tf.Phi3Config(**common, hidden_size=32, intermediate_size=64,
                             num_key_value_heads=4, pad_token_id=0)
    if name == "gemma":
        return tf.GemmaConfig(**common, hidden_size=32, intermediate_size=64,
                              num_key_value_heads=2, head_dim=8)
    if name == "gemma2":
        return tf.Gemma2Config(**common, hidden_size=32, intermediate_size=64,
                               num_key_value_heads=2, head_dim=8, sliding_window=4,
                               attn_logit_softcapping=50.0, final_logit_softcapping=30.0)
    if name == "falcon":
        return tf.FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, multi_query=True, alibi=False,
                               parallel_attn=True, new_decoder_architecture=False)
    if name == "falcon_new":
        return tf.FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, num_kv_heads=2,
                               new_decoder_architecture=True)
    if name == "bloom":
        return tf.BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4)
    if name == "gptj":
        return tf.GPTJConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                             n_positions=64)
    if name == "codegen":
        return tf.CodeGenConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                                n_positions=64, n_ctx=64)
    if name == "stablelm":
        return tf.StableLmConfig(**common, hidden_size=32, intermediate_size=64,
                                 num_key_value_heads=4, partial_rotary_factor=0.25)
    if name == "olmo":
        return tf.OlmoConfig(**common, hidden_size=32, intermediate_size=64,
                             num_key_value_heads=4, pad_token_id=0)
    raise KeyError(name)


CLASSES = {
    "opt": "OPTModel", "gpt_neox": "GPTNeoXModel", "qwen2": "Qwen2Model",
    "mistral": "MistralModel", "phi": "PhiModel", "phi3": "Phi3Model", "gemma": "GemmaModel",
    "gemma2": "Gemma2Model", "falcon": "FalconModel", "falcon_new": "FalconModel",
    "bloom": "BloomModel", "gptj": "GPTJModel", "codegen": "CodeGenModel",
    "stablelm": "StableLmModel", "olmo": "OlmoModel",
    "qwen2_lm": "Qwen2ForCausalLM", "gemma_lm": "GemmaForCausalLM",
}
"""name -> the transformers class; the ``_lm`` names are causal-LM heads with tied
embeddings."""

DECODERS = tuple(CLASSES)


@functools.cache
def decoder(name: str):
    """The model ``name`` (eval mode, random weights), or None when transformers (or this
    class) is not installed."""
    tf = zoo_models.import_transformers()
    if tf is None or not hasattr(tf, CLASSES[name]):
        return None
    torch.manual_seed(0)
    config = _small(tf, name.removesuffix("_lm"))
    config.use_cache = False
    if name.endswith("_lm"):
        config.tie_word_embeddings = True
    net = getattr(tf, CLASSES[name])(config)
    return net.eval()


def ids_input() -> tuple:
    """(ids,): one row of 8 token ids."""
    gen = torch.Generator().manual_seed(1)
    return (torch.randint(1, VOCAB, (1, 8), generator=gen),)


def padded_batch() -> dict:
    """Keyword inputs of a batch of 2 rows of 8 where row 1 is left-padded by 3 tokens:
    ``input_ids`` and ``attention_mask`` (int64, zeros over the padding)."""
    gen = torch.Generator().manual_seed(2)
    ids = torch.randint(1, VOCAB, (2, 8), generator=gen)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, :3] = 0
    ids[1, :3] = 0
    return {"input_ids": ids, "attention_mask": mask}
