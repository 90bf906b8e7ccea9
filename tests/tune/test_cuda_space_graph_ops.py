"""The generated cuda space of every kernel the graph lowers (issue 20, item 4): for each op
kind of ``graph.lower_ops`` (library heads, composed heads, elementwise chains, fused
epilogues, attention read through folded views), at shapes off every tile (7, 9, 5, ...),
the default and random candidates of ``GeneratedSpace(kernel, target="cuda")`` pass the CUDA
verifier (every statement bound; threads and shared memory within a block's limits), two
are built, and a random one runs under the simulator against the unscheduled kernel on
the ``numpy`` target, random inputs.

``test_every_lowered_op_is_covered`` keeps the table complete: an op added to the lowering
without a case here fails it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from workbench.backends import build  # noqa: E402
from workbench.backends.common.lower import lower  # noqa: E402
from workbench.backends.common.target import Target  # noqa: E402
from workbench.backends.cuda.numba_cuda import prepare  # noqa: E402
from workbench.graph import from_torch  # noqa: E402
from workbench.graph.lower import lower_graph  # noqa: E402
from workbench.graph.passes.fold_views import views_layout as graph_layout  # noqa: E402
from workbench.graph.passes.pipeline import Pipeline  # noqa: E402
from workbench.schedule import Schedule  # noqa: E402
from workbench.tune.space_generated import GeneratedSpace  # noqa: E402

pytestmark = pytest.mark.cuda

def _cpu_only() -> set[str]:
    """Heads made by the cpu target's layout pass only (packed conv weights, 1x1 convs as
    rows: ``graph.lower_packed``)."""
    from workbench.graph.lower_packed import PACKED_COMPOSED_HEADS, PACKED_HEADS

    return set(PACKED_HEADS) | set(PACKED_COMPOSED_HEADS)
BY_HAND = ("conv2d_nhwc", "embedding", "im2col")
"""Ops the torch frontend does not emit (``nn.Embedding`` becomes a ``take``): one-node
graphs built with ``GraphBuilder``."""


class Fn(torch.nn.Module):
    def __init__(self, fn, *modules):
        super().__init__()
        self.fn, self.mods = fn, torch.nn.ModuleList(modules)

    def forward(self, *x):
        return self.fn(self.mods, *x)


def _w(*shape):
    return torch.nn.Parameter(torch.randn(*shape) * 0.3)


def _sdpa(m, qkv):
    q, k, v = (t.view(1, 5, 2, 4).transpose(1, 2) for t in qkv.split(8, dim=2))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)


def _gqa(m, q, kv):
    q = q.view(1, 3, 4, 4).transpose(1, 2)
    k = kv.view(1, 3, 2, 4).transpose(1, 2)[:, :, None].expand(1, 2, 2, 3, 4).reshape(1, 4, 3, 4)
    return F.scaled_dot_product_attention(q, k, k, is_causal=True)


CASES = {  # name -> (module, inputs)
    "matmul+epilogue": (Fn(lambda m, x: F.gelu(m[0](x)), torch.nn.Linear(9, 5)),
                        (torch.randn(7, 9),)),
    "batch_matmul": (Fn(lambda m, a, b: a @ b), (torch.randn(3, 7, 5), torch.randn(3, 5, 9))),
    "conv2d+bn+relu": (Fn(lambda m, x: F.relu(m[1](m[0](x))), torch.nn.Conv2d(3, 5, 3, 2, 1),
                          torch.nn.BatchNorm2d(5)), (torch.randn(1, 3, 7, 7),)),
    "depthwise": (Fn(lambda m, x: m[0](x), torch.nn.Conv2d(4, 4, 3, 1, 1, groups=4)),
                  (torch.randn(1, 4, 7, 5),)),
    "conv2d grouped": (Fn(lambda m, x: m[0](x), torch.nn.Conv2d(4, 6, 3, groups=2)),
                       (torch.randn(1, 4, 7, 5),)),
    "conv3d": (Fn(lambda m, x: m[0](x), torch.nn.Conv3d(2, 3, 3)), (torch.randn(1, 2, 5, 5, 4),)),
    "pools": (Fn(lambda m, x: F.max_pool2d(x, 3, 2, 1) + F.avg_pool2d(x, 3, 2, 1)),
              (torch.randn(1, 3, 7, 7),)),
    "adaptive_avg_pool2d": (Fn(lambda m, x: F.adaptive_avg_pool2d(x, (2, 3))),  # even windows
                            (torch.randn(1, 3, 8, 9),)),
    "pool3d": (Fn(lambda m, x: F.max_pool3d(x, 2)), (torch.randn(1, 2, 5, 5, 5),)),
    "softmax": (Fn(lambda m, x: torch.softmax(x, -1)), (torch.randn(7, 9),)),
    "log_softmax": (Fn(lambda m, x: torch.log_softmax(x, 1)), (torch.randn(3, 7, 5),)),
    "layer_norm": (Fn(lambda m, x: m[0](x), torch.nn.LayerNorm(9)), (torch.randn(7, 9),)),
    "mean": (Fn(lambda m, x: x.mean(-1, keepdim=True) * x), (torch.randn(7, 9),)),
    "reduce": (Fn(lambda m, x: x.amax(1) + x.sum(1)), (torch.randn(7, 9, 3),)),
    "embedding": (Fn(lambda m, i: m[0](i), torch.nn.Embedding(11, 5)),
                  (torch.randint(0, 11, (2, 7)),)),
    "gather": (Fn(lambda m, x, i: torch.gather(x, 1, i)),
               (torch.randn(7, 9), torch.randint(0, 9, (7, 3)))),
    "take": (Fn(lambda m, x, i: torch.index_select(x, 0, i)),
             (torch.randn(7, 9), torch.tensor([4, 0, 6]))),
    "concat+slice+pad": (Fn(lambda m, a, b: F.pad(torch.cat([a, b], 1)[:, 1:6] * 2, (1, 2))),
                         (torch.randn(3, 4), torch.randn(3, 5))),
    "transpose+select": (Fn(lambda m, x: (x.transpose(0, 2) * 2, x[:, 1] + 1)),
                         (torch.randn(3, 7, 5),)),
    "broadcast_to": (Fn(lambda m, x: (x.expand(3, 7, 5) * 1.0).transpose(0, 1)),
                     (torch.randn(1, 7, 5),)),
    "elementwise": (Fn(lambda m, x, y: torch.tanh(x) * torch.sigmoid(y) - x.abs().sqrt()),
                    (torch.randn(7, 9), torch.randn(1, 9))),
    "rms_norm": (Fn(lambda m, x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)),
                 (torch.randn(7, 9),)),
    "rotate_half": (Fn(lambda m, x, c: x * c + torch.cat((-x[..., 3:], x[..., :3]), -1) * c),
                    (torch.randn(2, 5, 6), torch.randn(5, 6))),
    "sdpa (views)": (Fn(_sdpa), (torch.randn(1, 5, 24),)),
    "sdpa (gqa)": (Fn(_gqa), (torch.randn(1, 3, 16), torch.randn(1, 3, 8))),
}


def _kernels(name):
    model, inputs = CASES[name]
    torch.manual_seed(0)
    graph = Pipeline()(from_torch(model.eval(), inputs), layout=graph_layout)
    return graph, lower_graph(graph)


def _ops(graph) -> set[str]:
    ops = set()
    for node in graph.nodes:
        body = node.attrs.get("graph") if node.op == "fused" else None
        ops |= {n.op for n in body.nodes} if body is not None else {node.op}
    return ops


def _arrays(func, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for p in func.params:
        if "int" in str(p.dtype):
            arrays.append(rng.integers(0, 3, p.shape).astype(p.dtype))  # indices in range
        elif "bool" in str(p.dtype):
            arrays.append(rng.random(p.shape) < 0.7)
        else:
            arrays.append(rng.uniform(-1, 1, p.shape).astype(p.dtype))
    return arrays


def _check_space(kernel) -> None:
    """The default and 3 random candidates verify; the default and the first random one
    build, the random one runs and matches (the defaults run in the compile tests)."""
    space = GeneratedSpace(kernel.func, target="cuda")
    rng = random.Random(20)
    configs = [space.default_config()] + [space.random_config(rng) for _ in range(3)]
    for config in configs:
        assert space.valid(config), space.violation(config)
        func, _ = prepare(lower(space.schedule(config).mod), Target("cuda"))
        assert func is not None
    reference = build(Schedule(kernel.func), target="numpy")
    want = _arrays(kernel.func, 1)
    reference(*want)
    built = [build(space.schedule(config), target="cuda") for config in configs[:2]]
    got = _arrays(kernel.func, 1)
    built[-1](*got)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-5, atol=1e-5,
                               err_msg=f"{kernel.pattern} {configs[1]}")


@pytest.mark.parametrize("name", list(CASES))
def test_every_candidate_of_every_graph_kernel_is_bound_and_builds(name):
    _, kernels = _kernels(name)
    assert kernels
    for kernel in kernels:
        _check_space(kernel)


def _by_hand(op):
    """A one-node graph of ``op``, which no frontend emits (ONNX's or a layout pass's)."""
    from workbench.graph import GraphBuilder, TensorType

    rng = np.random.default_rng(0)
    b = GraphBuilder()
    if op == "im2col":  # passes.conv_gemm's window matrix, CNHW data
        x = b.input("x", TensorType((3, 2, 7, 5)))
        out = b.node(op, [x], dict(kernel=[3, 2], stride=[2, 1], padding=[1, 1],
                                   dilation=[1, 1], layout="CNHW"))
    elif op == "conv2d_nhwc":
        x = b.input("x", TensorType((1, 7, 5, 3)))
        w = b.constant("w", rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
        out = b.node(op, [x, w], dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1]))
    else:
        w = b.constant("w", rng.standard_normal((11, 5)).astype(np.float32))
        out = b.node(op, [w, b.input("i", TensorType((2, 7), "int64"))])
    return b.finish([out])


@pytest.mark.parametrize("op", BY_HAND)
def test_the_kernels_of_ops_built_by_hand(op):
    (kernel,) = lower_graph(_by_hand(op))
    _check_space(kernel)


def test_every_lowered_op_is_covered():
    from workbench.graph.lower_ops import COMPOSED_HEADS, LIBRARY_HEADS

    graphs = [_kernels(name)[0] for name in CASES] + [_by_hand(op) for op in BY_HAND]
    covered = set().union(*(_ops(g) for g in graphs))
    heads = (set(LIBRARY_HEADS) | set(COMPOSED_HEADS)) - _cpu_only()
    assert heads <= covered, f"no case for {sorted(heads - covered)}"
