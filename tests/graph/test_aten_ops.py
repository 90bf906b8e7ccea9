"""Every ATen op the PyTorch frontend handles, checked against PyTorch on random inputs.

``CASES`` has one entry per op of ``torch_aten.supported_ops()`` (a test checks that it
covers them all): a function of torch tensors and the inputs' shapes. Each case is exported,
its graph run by the numpy interpreter and compiled for the ``numpy`` target (the lowered
kernels, evaluated by the reference executor), both compared with PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.graph import from_torch, run  # noqa: E402
from workbench.graph.frontends.torch_aten import REFUSED, supported_ops  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional
X = (2, 3, 4)
IMG = (1, 4, 5, 5)
SEQ = (1, 4, 8)
W = (3, 4)
VOL = (1, 4, 4, 3, 4)


def _conv_w(k, c, *kernel):
    return torch.randn(k, c, *kernel) * 0.3


CASES = {
    # plumbing
    "contiguous": (lambda x: x.transpose(0, 1).contiguous() * 2, [X]),
    "clone": (lambda x: aten.clone(x) + 1, [X]),
    "dropout": (lambda x: aten.dropout(x, 0.5, False) + 1, [X]),
    "feature_dropout": (lambda x: aten.feature_dropout(x, 0.5, False) + 1, [X]),
    "alpha_dropout": (lambda x: aten.alpha_dropout(x, 0.5, False) + 1, [X]),
    "alias": (lambda x: aten.alias(x) + 1, [X]),
    "detach": (lambda x: aten.detach(x) + 1, [X]),
    "lift_fresh_copy": (lambda x: x + aten.lift_fresh_copy(torch.ones(4)), [X]),
    "lift_fresh": (lambda x: x + aten.lift_fresh(torch.ones(4)), [X]),
    "_assert_tensor_metadata": (lambda x: x + 1, [X]),
    "_assert_async": (lambda x: x + 1, [X]),
    "_to_copy": (lambda x: aten._to_copy(x, dtype=torch.float32) + 1, [X]),
    "to": (lambda x: x.to(torch.float32) + 1, [X]),
    "type_as": (lambda x, y: x.type_as(y) + 1, [X, X]),
    "getitem": (lambda x: torch.split(x, 2, -1)[1] * 2, [X]),
    "empty": (lambda x: F.batch_norm(x, torch.zeros(3), torch.ones(3)), [X]),
    "new_ones": (lambda x: x + x.new_ones(X), [X]),
    "new_zeros": (lambda x: x + x.new_zeros(X), [X]),
    "new_full": (lambda x: x + x.new_full(X, 2.0), [X]),
    "new_empty": (lambda x: x + 0 * x.new_empty(X).zero_(), [X]),
    "zeros_like": (lambda x: x + torch.zeros_like(x), [X]),
    "ones_like": (lambda x: x + torch.ones_like(x), [X]),
    "full_like": (lambda x: x + torch.full_like(x, 3.0), [X]),
    "empty_like": (lambda x: x + 0 * torch.empty_like(x).zero_(), [X]),
    # contractions
    "linear": (lambda x, w: F.linear(x, w), [X, W]),
    "addmm": (lambda b, x, w: torch.addmm(b, x, w), [(3,), (2, 4), (4, 3)]),
    "baddbmm": (lambda b, x, w: torch.baddbmm(b, x, w), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "matmul": (lambda a, b: aten.matmul(a, b), [X, (4, 5)]),
    "mm": (lambda a, b: torch.mm(a, b), [(3, 4), (4, 5)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [X, (2, 4, 5)]),
    "einsum": (lambda a, b: torch.einsum("bhid,bhjd->bhij", a, b), [(1, 2, 5, 7), (1, 2, 3, 7)]),
    "conv2d": (lambda x: F.conv2d(x, _CONST["w2"], stride=2, padding=1), [IMG]),
    "conv1d": (lambda x: F.conv1d(x, _CONST["w1"], padding=1, groups=2), [SEQ]),
    "convolution": (lambda x: aten.convolution(x, _CONST["w2"], None, [1, 1], [1, 1], [1, 1],
                                               False, [0, 0], 1), [IMG]),
    "conv3d": (lambda x: F.conv3d(x, _CONST["w3"], _CONST["b3"], stride=(1, 2, 1), padding=1,
                                  groups=2), [VOL]),
    # normalizations
    "batch_norm": (lambda x: aten.batch_norm(x, _CONST["g"], _CONST["b"], _CONST["m"],
                                             _CONST["v"], False, 0.1, 1e-5, False), [IMG]),
    "native_batch_norm": (lambda x: aten.native_batch_norm(
        x, _CONST["g"], _CONST["b"], _CONST["m"], _CONST["v"], False, 0.1, 1e-5)[0], [IMG]),
    "_native_batch_norm_legit_no_training": (lambda x: aten._native_batch_norm_legit_no_training(
        x, _CONST["g"], _CONST["b"], _CONST["m"], _CONST["v"], 0.1, 1e-5)[0], [IMG]),
    "layer_norm": (lambda x: F.layer_norm(x, (4,), _CONST["g"], _CONST["b"]), [X]),
    "native_layer_norm": (lambda x: aten.native_layer_norm(x, [4], None, None, 1e-5)[0], [X]),
    "group_norm": (lambda x: F.group_norm(x, 2, _CONST["g"], _CONST["b"]), [IMG]),
    "native_group_norm": (lambda x: aten.native_group_norm(x, _CONST["g"], _CONST["b"], 1, 4,
                                                           25, 2, 1e-5)[0], [IMG]),
    "rms_norm": (lambda x: F.rms_norm(x, (4,), _CONST["g"], 1e-6), [X]),
    # elementwise
    "relu": (torch.relu, [X]), "silu": (F.silu, [X]), "sigmoid": (torch.sigmoid, [X]),
    "tanh": (torch.tanh, [X]), "exp": (torch.exp, [X]), "neg": (torch.neg, [X]),
    "sqrt": (lambda x: torch.sqrt(x.abs() + 0.1), [X]),
    "rsqrt": (lambda x: torch.rsqrt(x.abs() + 0.1), [X]),
    "log": (lambda x: torch.log(x.abs() + 0.1), [X]),
    "sin": (torch.sin, [X]), "cos": (torch.cos, [X]), "abs": (torch.abs, [X]),
    "erf": (torch.erf, [X]), "hardsigmoid": (F.hardsigmoid, [X]),
    "hardswish": (F.hardswish, [X]), "mish": (F.mish, [X]), "softplus": (F.softplus, [X]),
    "gelu": (lambda x: F.gelu(x, approximate="tanh") + F.gelu(x), [X]),
    "hardtanh": (lambda x: F.hardtanh(x * 3, -1.5, 2.0), [X]),
    "relu6": (lambda x: aten.relu6(x * 5), [X]),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.7), [X]),
    "clamp_min": (lambda x: torch.clamp_min(x, -0.5), [X]),
    "clamp_max": (lambda x: torch.clamp_max(x, 0.3), [X]),
    "pow": (lambda x: x.pow(3) + x.abs().pow(2.5) + x.pow(2), [X]),
    "add": (lambda x, y: x + y * 2 + 1.5, [X, (4,)]),
    "sub": (lambda x, y: torch.sub(x, y, alpha=2) - 1, [X, X]),
    "rsub": (lambda x: aten.rsub(x, 2.0), [X]),
    "mul": (lambda x, y: x * y, [X, (3, 1)]),
    "div": (lambda x, y: x / (y.abs() + 0.5), [X, X]),
    "floor_divide": (lambda x, y: (x * 9).long() // (y.abs() + 1).long(), [X, X]),
    "eq": (lambda x: ((x > 0).float() == 1.0).float() * x, [X]),
    "ne": (lambda x: ((x > 0).float() != 1.0).float() * x, [X]),
    "lt": (lambda x, y: (x < y).float(), [X, X]),
    "le": (lambda x, y: (x <= y).float(), [X, X]),
    "gt": (lambda x: (x > 0.2).float(), [X]),
    "ge": (lambda x: (x >= 0.2).float(), [X]),
    "__and__": (lambda x, y: ((x > 0) & (y > 0)).float(), [X, X]),
    "logical_and": (lambda x, y: torch.logical_and(x > 0, y > 0).float(), [X, X]),
    "bitwise_and": (lambda x, y: torch.bitwise_and(x > 0, y > 0).float(), [X, X]),
    "logical_not": (lambda x: torch.logical_not(x > 0).float(), [X]),
    "bitwise_not": (lambda x: torch.bitwise_not(x > 0).float(), [X]),
    "where": (lambda x, y: torch.where(x > 0, x, y), [X, X]),
    "masked_fill": (lambda x: x.masked_fill(x < 0, -2.0), [X]),
    # pooling
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, 2, 1), [IMG]),
    "max_pool2d_with_indices": (lambda x: aten.max_pool2d_with_indices(x, [2, 2])[0], [IMG]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2, 1), [IMG]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 1), [IMG]),
    "_adaptive_avg_pool2d": (lambda x: aten._adaptive_avg_pool2d(x, [1, 1]), [IMG]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), [SEQ]),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), [SEQ]),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 2), [SEQ]),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2, 1, 1), [VOL]),
    "max_pool3d_with_indices": (lambda x: aten.max_pool3d_with_indices(x, [2, 2, 2])[0], [VOL]),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, (2, 1, 2)), [VOL]),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 1, 2)), [VOL]),
    # reductions
    "mean": (lambda x: x.mean((0, 2)), [X]),
    "sum": (lambda x: x.sum(1, keepdim=True), [X]),
    "amax": (lambda x: x.amax((0, 2)), [X]),
    "amin": (lambda x: x.amin(-1), [X]),
    "max": (lambda x: x.max(1, keepdim=True)[0] + x.max() + x.max(-1).indices.unsqueeze(-1),
            [X]),
    "min": (lambda x: x.min(0)[0] * x.min() - x.min(2, keepdim=True).indices, [X]),
    "maximum": (lambda x, y: torch.maximum(x, y) + torch.max(y, x), [X, (3, 1)]),
    "minimum": (lambda x, y: torch.minimum(x, y) * x.min(y), [X, X]),
    "fmax": (lambda x, y: torch.fmax(x, y), [X, (4,)]),
    "fmin": (lambda x, y: torch.fmin(y, x), [X, X]),
    "broadcast_tensors": (lambda x, y: torch.broadcast_tensors(x, y)[1] * 2
                          + torch.broadcast_tensors(x, y)[0], [X, (3, 1)]),
    "mse_loss": (lambda x, y: F.mse_loss(x, y) + F.mse_loss(x, y, reduction="sum")
                 + F.mse_loss(x, y, reduction="none"), [X, X]),
    "linalg_vector_norm": (lambda x: F.normalize(x, dim=-1) + x.norm(3, 1, keepdim=True), [X]),
    "var": (lambda x: x.var(1, keepdim=True) + x.var((0, 2), correction=0, keepdim=True),
            [X]),
    "std": (lambda x: x.std(1, keepdim=True) + x.std() + x.std((0, 2), correction=0,
                                                           keepdim=True), [X]),
    "softmax": (lambda x: F.softmax(x, 1), [X]),
    "_softmax": (lambda x: aten._softmax(x, -1, False), [X]),
    "log_softmax": (lambda x: F.log_softmax(x, 1), [X]),
    "_log_softmax": (lambda x: aten._log_softmax(x, -1, False), [X]),
    # layout
    "view": (lambda x: x.view(6, 4) * 2, [X]),
    "reshape": (lambda x: aten.reshape(x, [4, 6]) * 2, [X]),
    "_unsafe_view": (lambda x: aten._unsafe_view(x, [4, 6]) * 2, [X]),
    "flatten": (lambda x: aten.flatten(x, 1) * 2, [X]),
    "unsqueeze": (lambda x: x.unsqueeze(1) * 2, [X]),
    "squeeze": (lambda x: x.squeeze(1) * 2, [(2, 1, 4)]),
    "expand": (lambda x: x.expand(2, 3, 4) + 1, [(3, 1)]),
    "expand_as": (lambda x, y: x.expand_as(y) + y, [(3, 1), X]),
    "repeat": (lambda x: x.repeat(2, 1, 2) + 1, [X]),
    "select": (lambda x: x[:, 1] * 2, [X]),
    "unbind": (lambda x: torch.unbind(x, 1)[2] * 2, [X]),
    "transpose": (lambda x: x.transpose(0, 2) * 2, [X]),
    "t": (lambda x: x.t() * 2, [(3, 4)]),
    "permute": (lambda x: x.permute(2, 0, 1) * 2, [X]),
    "slice": (lambda x: x[:, 1:, ::2] * 2, [X]),
    "narrow": (lambda x: x.narrow(2, 1, 2) * 2, [X]),
    "split": (lambda x: torch.split(x, 3, -1)[1] * 2, [X]),
    "split_with_sizes": (lambda x: torch.split(x, [1, 3], -1)[1] * 2, [X]),
    "chunk": (lambda x: torch.chunk(x, 2, 2)[0] * 3, [X]),
    "cat": (lambda x, y: torch.cat([x, y * 2], 1), [X, (2, 2, 4)]),
    "stack": (lambda x, y: torch.stack([x, y], 2), [X, X]),
    "embedding": (lambda i: F.embedding(i, _CONST["table"]), [("int", (2, 3))]),
    "index_select": (lambda x: torch.index_select(x, 2, torch.tensor([3, 0, 0])), [X]),
    "gather": (lambda x, i: torch.gather(x, 2, i), [X, ("int", (2, 3, 2), 4)]),
    "index": (lambda x, i: x[:, i - 3] * 2, [X, ("int", (5,))]),
    "index_put": (lambda x: torch.where(x > 0, x, -x).index_put_((x[..., 0] > 0,),
                                                                torch.tensor(-1.5)), [X]),
    "sym_size": (lambda x: x[_CONST["mask"][:3]] * 2, [(3, 5, 2)]),
    "_assert_scalar": (lambda x: x[:, _CONST["mask"][:3, :4]] + 1, [(2, 3, 4)]),
    "tril": (lambda x: torch.tril(x, -1) + 1, [(2, 5, 6)]),
    "triu": (lambda x: torch.triu(x, 2) + 1, [(5, 4)]),
    "cumsum": (lambda x, i: torch.cumsum(x, 1) + torch.cumsum(i, -1), [X, ("int", (3, 4))]),
    "diff": (lambda x: torch.diff(x, 2, -1, append=x[..., :2]), [X]),
    "constant_pad_nd": (lambda x: aten.constant_pad_nd(x, [1, 2, 0, 1], 0.5), [X]),
    "pad": (lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [X]),
    # first index of the extreme (ties: the int inputs repeat values)
    "argmax": (lambda x, i: torch.argmax(x, 1) * 100 + i.argmax(0),
               [(3, 7, 13), ("int", (7, 13), 3)]),
    "argmin": (lambda x, i: torch.argmin(x, -1, keepdim=True) * 100 + torch.argmin(i),
               [(3, 7, 13), ("int", (5,), 3)]),
    # recurrent layers (modules built once: their weights are the case's constants)
    "lstm": (lambda x: _CONST["lstm"](x)[0], [(2, 3, 4)]),
    "gru": (lambda x: _CONST["gru"](x)[1], [(3, 2, 4)]),
    # resizing
    "upsample_nearest2d": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), [IMG]),
    "upsample_bilinear2d": (lambda x: F.interpolate(x, size=(7, 9), mode="bilinear")
                            * F.interpolate(x, scale_factor=(1.4, 1.8), mode="bilinear",
                                            align_corners=True), [IMG]),
    # attention
    "scaled_dot_product_attention": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=_CONST["mask"]), [(1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 8)]),
    "_scaled_dot_product_flash_attention_for_cpu": (
        lambda q, k, v: aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0,
                                                                          True)[0],
        [(1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)]),
}

_GEN = torch.Generator().manual_seed(0)
_CONST = {
    "w2": torch.randn(6, 4, 3, 3, generator=_GEN) * 0.3,
    "w1": torch.randn(6, 2, 3, generator=_GEN) * 0.3,
    "g": torch.rand(4, generator=_GEN) + 0.5, "b": torch.randn(4, generator=_GEN) * 0.1,
    "m": torch.randn(4, generator=_GEN) * 0.1, "v": torch.rand(4, generator=_GEN) + 0.5,
    "table": torch.randn(7, 5, generator=_GEN),
    "w3": torch.randn(6, 2, 3, 2, 3, generator=_GEN) * 0.3, "b3": torch.randn(6, generator=_GEN),
    "mask": torch.rand(4, 5, generator=_GEN) > 0.3,
}
torch.manual_seed(0)
_CONST["lstm"] = torch.nn.LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True).eval()
_CONST["gru"] = torch.nn.GRU(4, 5, num_layers=1).eval()

NOT_IN_EXPORT = {"_assert_tensor_metadata", "_assert_async", "_to_copy", "to", "type_as",
                 "contiguous", "getitem", "empty", "new_empty", "empty_like", "lift_fresh",
                 "lift_fresh_copy", "alias", "_unsafe_view", "t", "rsub", "bitwise_and",
                 "logical_and", "expand_as", "_scaled_dot_product_flash_attention_for_cpu",
                 "native_batch_norm", "batch_norm", "dropout", "feature_dropout",
                 "alpha_dropout", "max_pool2d_with_indices", "_adaptive_avg_pool2d",
                 "bitwise_not", "native_layer_norm", "flatten", "reshape", "native_group_norm", "_softmax",
                 "_log_softmax", "relu6", "max_pool3d_with_indices", "chunk", "narrow", "unbind", "convolution",
                 "index_put"}
"""Ops the case calls but export rewrites (into another handled op): not asserted present."""


class _Case(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _inputs(specs):
    gen = torch.Generator().manual_seed(1)
    out = []
    for spec in specs:
        if spec[0] == "int":
            high = spec[2] if len(spec) > 2 else 7
            out.append(torch.randint(0, high, spec[1], generator=gen))
        else:
            out.append(torch.randn(*spec, generator=gen))
    return tuple(out)


def test_every_supported_op_has_a_case():
    assert set(supported_ops()) - set(CASES) == set()
    assert not set(REFUSED) & set(supported_ops())


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_torch(name):
    fn, specs = CASES[name]
    model, inputs = _Case(fn).eval(), _inputs(specs)
    if name not in NOT_IN_EXPORT:
        ep = torch.export.export(model, inputs).run_decompositions({})
        targets = {str(n.target).split(".")[1] for n in ep.graph.nodes
                   if n.op == "call_function" and str(n.target).startswith("aten.")}
        assert name in targets, f"the case does not export {name}: {sorted(targets)}"
        graph = from_torch(ep)
    else:
        graph = from_torch(model, inputs)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    arrays = [x.numpy() for x in inputs]
    got = run(graph, *arrays)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    compiled = wb.compile(graph, target="numpy")
    np.testing.assert_allclose(compiled(*arrays), expected, rtol=1e-4, atol=1e-5)


# The audit of issue 19's op list: variants the one-case-per-op table above does not reach
# (each through ``wb.compile`` of a torch module, against PyTorch on random inputs).
_GQA_Q, _GQA_KV = (1, 4, 5, 8), (1, 2, 7, 8)
_ARANGE = (3, 7)
VARIANTS = {
    "conv2d_depthwise": (lambda x: F.conv2d(x, _CONST["dw"], stride=2, padding=1, groups=4),
                         [(1, 4, 7, 6)]),
    "conv2d_grouped": (lambda x: F.conv2d(x, _CONST["w2"][:, :2], padding=(1, 0), groups=2),
                       [(1, 4, 5, 7)]),
    "conv1d_depthwise": (lambda x: F.conv1d(x, _CONST["w1"][:4, :1], groups=4), [(2, 4, 9)]),
    "sdpa_additive_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
                           [(1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), (3, 5)]),
    "sdpa_runtime_bool_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(
        q, k, v, attn_mask=(m > -0.5)), [(1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), (3, 5)]),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [(1, 2, 5, 8)] * 3),
    "sdpa_gqa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                 [_GQA_Q, _GQA_KV, _GQA_KV]),
    "sdpa_gqa_causal_mask": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.ones(5, 7, dtype=torch.bool).tril(2), enable_gqa=True),
                             [_GQA_Q, _GQA_KV, _GQA_KV]),
    # the causal-mask family, folded at import (its inputs are shapes and constants)
    "causal_mask_family": (lambda x: x.masked_fill(
        ((torch.arange(7).cumsum(0) - torch.arange(7).cumsum(0).diff(prepend=torch.zeros(1))
          ).unsqueeze(0) > torch.arange(3).unsqueeze(1)) & (torch.arange(7) != 2)
        & (torch.arange(7).eq(torch.arange(7))) & (torch.arange(7) >= 0)
        & (torch.arange(7).le(6)), -1e4) + x.new_ones(_ARANGE)
        + torch.zeros(_ARANGE).pow(2) + aten.to.dtype_layout(
            torch.ones(7, dtype=torch.int64), dtype=torch.float32)
        + aten.to.dtype_layout(x.pow(2), dtype=torch.float64).float(), [_ARANGE]),
    "mean_var_amax_amin_all_axes": (lambda x: x.mean((1, 3), keepdim=True)
                                    + x.var((0, 2, 3), keepdim=True) + x.amax((0, 1, 2, 3))
                                    - x.amin(2, keepdim=True), [(2, 3, 4, 5)]),
    "interpolate_nearest_size": (lambda x: F.interpolate(x, size=(7, 3), mode="nearest"),
                                 [(1, 2, 5, 4)]),
    "index_two_tensors": (lambda x, i, j: x[i, j] * 2, [(3, 5, 4), ("int", (2, 1), 3),
                                                        ("int", (3,), 5)]),
    "index_two_tensors_middle": (lambda x, i, j: x[:, i - 4, j] * 2,
                                 [(2, 5, 4, 3), ("int", (3, 2), 5), ("int", (2,), 4)]),
    "index_two_tensors_apart": (lambda x, i, j: x[i, :, j] + 1,
                                [(3, 5, 4), ("int", (2, 3), 3), ("int", (3,), 4)]),
    "clamp_tensor_bounds": (lambda x, lo: torch.clamp(x, lo, lo + 0.5) + x.clamp(max=lo),
                            [X, (4,)]),
    "index_put_accumulate": (lambda x: x.index_put((x[:, 0] > 0,), torch.arange(5.0),
                                                   accumulate=True), [(3, 5)]),
    "index_put_rows": (lambda x: _put_rows(x), [(2, 3, 4)]),
    # torchvision's squeezenet, googlenet, vgg and maxvit (2026-12-05)
    "max_pool2d_ceil_mode": (lambda x: torch.cat([
        F.max_pool2d(x, 3, 2, 1, ceil_mode=True).flatten(1),
        F.max_pool2d(x, 2, ceil_mode=True).flatten(1)], 1), [(2, 3, 7, 8)]),
    "max_pool1d_ceil_mode": (lambda x: F.max_pool1d(x, 3, 2, ceil_mode=True), [(1, 3, 13)]),
    "adaptive_avg_pool2d_uneven": (lambda x: F.adaptive_avg_pool2d(x, (5, 3)), [(2, 3, 13, 7)]),
    "adaptive_avg_pool2d_upsampling": (lambda x: F.adaptive_avg_pool2d(x, (7, 4)),
                                       [(1, 3, 1, 3)]),
    "einsum_sums_outer_and_chains": (lambda a, b, c: torch.einsum("bn,anm,bm->ba", a, b, c)
                                     + torch.einsum("ijk->i", b).sum()
                                     + torch.einsum("i,j->ij", a[0], c[:, 0]).sum(),
                                     [(3, 5), (2, 5, 7), (3, 7)]),
    "einsum_ellipsis_implicit": (lambda a, b: torch.einsum("...ij,...jk", a, b),
                                 [(2, 3, 5, 7), (2, 3, 7, 2)]),
}


def _put_rows(x):
    y = x * 1
    y[:, x[0, :, 0] > 0] = x[0, 0, :] * 3
    return y


_CONST["dw"] = torch.randn(4, 1, 3, 3, generator=_GEN)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_matches_torch(name):
    fn, specs = VARIANTS[name]
    model, inputs = _Case(fn).eval(), _inputs(specs)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    compiled = wb.compile(model, inputs, target="numpy")
    np.testing.assert_allclose(compiled(*inputs), expected, rtol=1e-4, atol=1e-5)
