"""``fold_views``: layout chains read by ``sdpa`` through index maps, no copy kernels.

Every case is compared with PyTorch on random inputs, at lengths and head sizes that are
not multiples of any tile (seq 1, 7, 100; head dim 32, 48; 3 heads; grouped-query attention
with 4 query heads over 2 key/value heads), causal and not.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import workbench as wb  # noqa: E402
from workbench.graph import from_torch, run  # noqa: E402
from workbench.graph.lower_layout import step_map, step_shape  # noqa: E402
from workbench.graph.passes.fold_views import fold_views  # noqa: E402
from workbench.graph.passes.pipeline import Pipeline  # noqa: E402
from workbench.ir import Var  # noqa: E402
from workbench.ir.arith import evaluate  # noqa: E402


class FusedQKV(torch.nn.Module):
    """GPT-2's attention: one projection, split in three, heads transposed, and back."""

    def __init__(self, width: int, heads: int, causal: bool):
        super().__init__()
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.heads, self.causal = heads, causal

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class GroupedQuery(torch.nn.Module):
    """Llama's attention: 4 query heads over 2 key/value heads (``repeat_kv``)."""

    def __init__(self, width: int = 64, heads: int = 4, kv_heads: int = 2):
        super().__init__()
        self.d, self.heads, self.kv = width // heads, heads, kv_heads
        self.q = torch.nn.Linear(width, width, bias=False)
        self.k = torch.nn.Linear(width, kv_heads * self.d, bias=False)
        self.v = torch.nn.Linear(width, kv_heads * self.d, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.heads, self.d).transpose(1, 2)
        k, v = (p(x).view(B, T, self.kv, self.d).transpose(1, 2) for p in (self.k, self.v))
        group = self.heads // self.kv
        k, v = (t[:, :, None].expand(B, self.kv, group, T, self.d)
                .reshape(B, self.heads, T, self.d) for t in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, -1)


def _check(model, x, target="cpu"):
    torch.manual_seed(0)
    compiled = wb.compile(model.eval(), (x,), target=target, progress=False)
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(compiled(x))
    assert np.max(np.abs(got - want)) <= 1e-5 * np.max(np.abs(want))
    return compiled


@pytest.mark.parametrize("seq, width, heads, causal", [(1, 96, 3, True), (7, 96, 2, False),
                                                       (100, 96, 3, True)])
def test_fused_projection_is_read_in_place(seq, width, heads, causal):
    torch.manual_seed(seq)
    compiled = _check(FusedQKV(width, heads, causal), torch.randn(2, seq, width))
    assert [k.pattern for k in compiled.kernels] == ["matmul_packed+add", "sdpa", "matmul_packed+add"]
    sdpa = compiled.graph.nodes[[n.op for n in compiled.graph.nodes].index("sdpa")]
    assert sdpa.attrs["out_perm"] == [0, 2, 1, 3]
    assert len(set(sdpa.inputs)) == 1  # Q, K and V: the projection's output


def test_grouped_query_heads_are_read_through_the_repeat():
    torch.manual_seed(1)
    compiled = _check(GroupedQuery(), torch.randn(2, 7, 64))
    patterns = [k.pattern for k in compiled.kernels]
    assert "broadcast_to" not in patterns and "transpose" not in patterns
    assert patterns.count("sdpa") == 1


def test_the_reference_executor_runs_folded_kernels():
    torch.manual_seed(2)
    _check(FusedQKV(48, 2, True), torch.randn(1, 5, 48), target="numpy")


def test_interpreter_gives_the_same_values_after_the_pass():
    torch.manual_seed(3)
    for model, x in ((FusedQKV(96, 3, True), torch.randn(2, 7, 96)),
                     (GroupedQuery(), torch.randn(1, 6, 64))):
        graph = Pipeline().without("fuse")(from_torch(model.eval(), (x,)))
        folded = fold_views(graph)
        assert len(folded.nodes) < len(graph.nodes)
        np.testing.assert_allclose(run(folded, x.numpy())[0], run(graph, x.numpy())[0],
                                   rtol=1e-6, atol=1e-6)


def test_a_reader_whose_value_is_an_output_keeps_its_layout():
    torch.manual_seed(4)

    class Both(torch.nn.Module):
        def forward(self, q, k, v):
            y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2))
            return y, y.transpose(1, 2)

    args = tuple(torch.randn(1, 5, 3, 8) for _ in range(3))
    graph = fold_views(from_torch(Both().eval(), args))
    sdpa = next(n for n in graph.nodes if n.op == "sdpa")
    assert "out_perm" not in sdpa.attrs and len(sdpa.attrs["views"]) == 3
    got = run(graph, *(a.numpy() for a in args))
    want = Both()(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op, attrs, shape", [
    ("reshape", {"shape": [12, 4]}, (2, 6, 4)),
    ("reshape", {"shape": [2, 3, 2, 2]}, (6, 4)),
    ("reshape", {"shape": [1, 4, 5, 3]}, (1, 2, 2, 5, 3)),
    ("reshape", {"shape": [3, -1]}, (2, 3, 2)),
    ("transpose", {"perm": [2, 0, 1]}, (2, 3, 4)),
    ("slice", {"axis": 1, "start": 1, "stop": 7, "step": 2}, (2, 8)),
    ("select", {"axis": -1, "index": 2}, (2, 3, 4)),
    ("broadcast_to", {"shape": [2, 3, 4]}, (3, 1)),
])
def test_each_step_map_reads_what_numpy_gives(op, attrs, shape):
    from workbench.graph.ops import OPS

    source = np.arange(int(np.prod(shape))).reshape(shape)
    want = OPS[op][0](source, **attrs)
    assert step_shape(op, attrs, shape) == want.shape
    mapping = step_map(op, attrs, shape)
    names = [Var(f"i{a}", "int32") for a in range(want.ndim)]
    exprs = mapping(list(names))
    for index in itertools.product(*(range(n) for n in want.shape)):
        env = dict(zip(names, index, strict=True))
        at = tuple(int(evaluate(e, env)) if not isinstance(e, int) else e for e in exprs)
        assert source[at] == want[index]


def test_a_node_carrying_views_computes_on_the_viewed_inputs():
    from workbench.graph.ops import evaluate as evaluate_op

    qkv = np.random.default_rng(0).standard_normal((1, 5, 12)).astype("float32")

    def steps(i):
        return [["slice", {"axis": 2, "start": 4 * i, "stop": 4 * i + 4, "step": 1}],
                ["reshape", {"shape": [1, 5, 2, 2]}], ["transpose", {"perm": [0, 2, 1, 3]}]]

    viewed = evaluate_op("sdpa", [qkv] * 3, {"views": [[i, steps(i)] for i in range(3)],
                                             "causal": True, "out_perm": [0, 2, 1, 3]})
    heads = [np.ascontiguousarray(qkv[:, :, 4 * i:4 * i + 4].reshape(1, 5, 2, 2)
                                  .transpose(0, 2, 1, 3)) for i in range(3)]
    plain = evaluate_op("sdpa", heads, {"causal": True}).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(viewed, plain)


@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_masked_attention_folds_q_k_v_and_keeps_the_mask(kind):
    from workbench.graph.builder import GraphBuilder
    from workbench.graph.ir import TensorType

    b = GraphBuilder()
    qkv = b.input("qkv", TensorType((2, 7, 3 * 48)))
    mask = b.input("mask", TensorType((2, 1, 1, 7)))
    heads = [b.node("transpose", [b.node("reshape", [b.node("slice", [qkv], dict(
        axis=2, start=48 * i, stop=48 * i + 48))], dict(shape=[2, 7, 1, 48]))],
        dict(perm=[0, 2, 1, 3])) for i in range(3)]
    out = b.node("transpose", [b.node("sdpa", [*heads, mask], dict(causal=True,
                                                                   mask_kind=kind))],
                 dict(perm=[0, 2, 1, 3]))
    graph = b.finish([out])
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 144)).astype("float32")
    m = (rng.random((2, 1, 1, 7)) < 0.7).astype("float32")
    m[..., 0] = 1.0  # every row keeps a key
    if kind == "additive":
        m = np.where(m > 0, 0.0, -1e4).astype("float32") + rng.standard_normal(m.shape
                                                                              ).astype("float32")
    want = run(graph, x, m)[0]
    compiled = wb.compile(graph, target="cpu", progress=False)
    assert [k.pattern for k in compiled.kernels] == ["sdpa"]
    np.testing.assert_allclose(np.asarray(compiled(x, m)), want, rtol=1e-5, atol=1e-5)


def test_grouped_query_attention_gets_the_rows_recipe():
    """Two query heads read one key head: the staged keys are private to each (b, h), so
    the rows recipe's parallel loop stays legal (it fell back to generic loops before)."""
    torch.manual_seed(6)
    compiled = _check(GroupedQuery(), torch.randn(2, 9, 64))
    attention = next(k for k in compiled.kernels if k.pattern == "sdpa")
    assert "transform_layout" in str(compiled.schedule(attention.node).trace)  # keys [d, j]
    from workbench.recipes.attention import rows_cpu

    assert "T.parallel" in rows_cpu(attention.func, parallel=True).mod.script()


@pytest.mark.parametrize("batch", [1, 3])
def test_grouped_query_attention_in_row_blocks_reads_views(batch):
    """64 tokens: the sdpa kernel gets the row-block recipe (four query rows per register
    tile) and still reads Q, K, V through the folded views, 6 query heads over 2 kv heads."""
    torch.manual_seed(7)
    compiled = _check(GroupedQuery(width=48, heads=6, kv_heads=2), torch.randn(batch, 64, 48))
    attention = next(k for k in compiled.kernels if k.pattern == "sdpa")
    trace = str(compiled.schedule(attention.node).trace)
    assert "transform_layout" in trace and "unroll" in trace
