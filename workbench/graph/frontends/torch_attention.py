"""``scaled_dot_product_attention`` in graph operators: the fused ``sdpa`` node where it fits
(no mask, or a constant mask that is all true or exactly causal; equal head counts), else
its definition: ``softmax(q @ k^T * scale + mask) @ v``.

A boolean mask keeps the scores where it is true (``-inf`` elsewhere, PyTorch's rule); a
floating mask is added. A query row whose boolean mask keeps no key (the padding rows of a
left-padded batch, as transformers builds them for batched generation) gives 0, as PyTorch's
``sdpa`` does (its ``_safe_softmax``; a plain softmax would give NaN): a mask computed at run
time is made to keep every key of such a row and the row's output is multiplied by 0
(``_empty_rows``). Grouped-query attention (fewer key/value heads than query heads,
``enable_gqa`` or transformers' ``repeat_kv``) repeats each key/value head over its group.
"""

from __future__ import annotations

import math

import numpy as np


def _mask_kind(mask: np.ndarray, length: int, source: int) -> str | None:
    """``"none"`` (all true), ``"causal"`` (PyTorch's ``is_causal``) or None."""
    if mask.dtype != np.bool_ or mask.shape[-2:] not in ((length, source), (1, source)):
        return None
    full = np.broadcast_to(mask, mask.shape[:-2] + (length, source))
    if full.all():
        return "none"
    if (full == np.tril(np.ones((length, source), dtype=bool))).all():
        return "causal"
    return None


def _repeat_heads(conv, x: str, heads: int) -> str:
    shape = conv._shape(x)
    *batch, kv, s, d = shape
    if kv == heads:
        return x
    group = heads // kv
    x = conv._reshape_to(x, [*batch, kv, 1, s, d])
    x = conv._emit("broadcast_to", [x], {"shape": [*batch, kv, group, s, d]})
    return conv._reshape_to(x, [*batch, heads, s, d])


def _full_rank(conv, mask: str, rank: int) -> str:
    """``mask`` with leading 1-axes up to ``rank`` (a broadcastable mask of the attention's
    rank is 1 or full on every axis: what the fused kernel's mask parameter takes)."""
    shape = conv._shape(mask)
    if len(shape) == rank:
        return mask
    return conv._emit("reshape", [mask], {"shape": [1] * (rank - len(shape)) + list(shape)})


def attention(conv, q: str, k: str, v: str, mask, causal: bool, scale) -> str:
    """The graph value of ``sdpa(q, k, v, mask, causal, scale)`` built through ``conv``."""
    length, source = conv._shape(q)[-2], conv._shape(k)[-2]
    constant = conv._const(mask)
    if mask is not None and constant is None and mask in conv.booleans:
        if causal:  # one mask, so that the rows it empties are seen
            tril = np.tril(np.ones((length, source), dtype=conv.b.types[mask].dtype))
            mask = conv._emit("mul", [mask, conv.b.constant("causal_mask", tril)])
            conv.booleans.add(mask)
        mask, kept = _empty_rows(conv, q, mask)
        out = _attention(conv, q, k, v, mask, False, scale, None)
        return conv._emit("mul", [out, kept])
    return _attention(conv, q, k, v, mask, causal, scale, constant)


def _empty_rows(conv, q: str, mask: str) -> tuple[str, str]:
    """``(mask', kept)`` for a 0/1 ``mask`` computed at run time: ``kept`` is 1 on the query
    rows that keep some key and 0 on the others (the last axis reduced, kept as 1);
    ``mask'`` keeps every key of the empty rows (their softmax stays finite; ``kept``
    zeroes their output afterwards); both in ``q``'s dtype."""
    dtype = conv.b.types[q].dtype
    if conv.b.types[mask].dtype != dtype:  # a 0/1 mask may be float64 (integer sources)
        mask = conv._emit("cast", [mask], {"dtype": dtype})
    kept = conv._emit("reduce", [mask], {"axes": [-1], "keepdims": True, "kind": "max"})
    empty = conv._emit("sub", [conv._tensor(1.0, mask), kept])
    full = conv._emit("add", [mask, empty])
    conv.booleans.update((kept, full))
    return full, kept


def _attention(conv, q: str, k: str, v: str, mask, causal: bool, scale, constant) -> str:
    length, source = conv._shape(q)[-2], conv._shape(k)[-2]
    if constant is not None:
        kind = _mask_kind(constant, length, source)
        if kind == "none" or (kind == "causal" and not causal):
            mask, causal = None, causal or kind == "causal"
        elif kind == "causal" and causal:
            mask = None
    heads = conv._shape(q)[-3] if len(conv._shape(q)) >= 3 else 1
    same_heads = conv._shape(k)[:-2] == conv._shape(q)[:-2]
    if same_heads and (mask is None or (constant is None and len(conv._shape(q)) <= 4)):
        attrs = {"scale": None if scale is None else float(scale), "causal": causal}
        if mask is None:
            return conv._emit("sdpa", [q, k, v], attrs)
        kind = "bool" if mask in conv.booleans else "additive"
        if conv._dtype(mask) == "float64":  # a mask built from int64 ids: the kernel's float32
            mask = conv._cast(mask, "float32")
        return conv._emit("sdpa", [q, k, v, _full_rank(conv, mask, len(conv._shape(q)))],
                          {**attrs, "mask_kind": kind})
    k, v = _repeat_heads(conv, k, heads), _repeat_heads(conv, v, heads)
    scale = 1.0 / math.sqrt(conv._shape(q)[-1]) if scale is None else float(scale)
    n = len(conv._shape(k))
    kt = conv._emit("transpose", [k], {"perm": list(range(n - 2)) + [n - 1, n - 2]})
    scores = conv._emit("mul", [conv._emit("matmul", [q, kt]), conv._tensor(scale, q)])
    additive = None
    if causal:
        additive = np.where(np.tril(np.ones((length, source), dtype=bool)), 0.0, -np.inf)
    if mask is not None:
        if constant is not None:
            values = (np.where(constant, 0.0, -np.inf) if constant.dtype == np.bool_
                      else constant.astype(np.float64))
            additive = values if additive is None else additive + values
        elif mask in conv.booleans:
            scores = conv._emit("where", [scores, conv._tensor(-math.inf, q), mask])
        else:
            scores = conv._emit("add", [scores, mask])
    if additive is not None:
        dtype = conv.b.types[q].dtype
        scores = conv._emit("add", [scores, conv.b.constant("attn_mask",
                                                            additive.astype(dtype))])
    probs = conv._emit("softmax", [scores], {"axis": n - 1})
    return conv._emit("matmul", [probs, v])
