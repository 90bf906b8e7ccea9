"""Run-time integer index tensors (``embedding``, ``index_select``, ``gather``, ``x[idx]``)
and PyTorch's type promotion between tensors of different dtypes, checked against PyTorch on
random inputs: the interpreter, the ``numpy`` target (every lowered kernel) and, once per
family, the Numba ``cpu`` target."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.graph import from_torch, run  # noqa: E402
from workbench.graph.builder import GraphBuilder  # noqa: E402
from workbench.graph.errors import IndexOutOfRangeError  # noqa: E402
from workbench.graph.ir import TensorType  # noqa: E402

GEN = torch.Generator().manual_seed(0)


class _Fn(torch.nn.Module):
    def __init__(self, fn, **tensors):
        super().__init__()
        self.fn = fn
        for name, value in tensors.items():
            self.register_buffer(name, value)

    def forward(self, *xs):
        return self.fn(self, *xs)


def _check(model, inputs, targets=("numpy",)):
    with torch.no_grad():
        expected = model(*inputs)
    arrays = [x.numpy() for x in inputs]
    graph = from_torch(model, inputs)
    got = run(graph, *arrays)[0]
    assert got.dtype == expected.numpy().dtype
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-6)
    for target in targets:
        out = wb.compile(graph, target=target)(*arrays)
        assert out.dtype == expected.numpy().dtype, target
        np.testing.assert_allclose(out, expected.numpy(), rtol=1e-5, atol=1e-6)
    return graph


# ---------------------------------------------------------------- run-time index tensors


def _indexing(m, x, ids, idx, pos):
    """Every index op on run-time int64 tensors; ``idx`` holds negative indices."""
    rows = torch.nn.functional.embedding(ids, m.table)           # (2, 3, 5)
    picked = torch.index_select(x, 1, pos)                        # (4, 3)
    gathered = torch.gather(x, 1, (pos.reshape(3, 1) + 1).expand(3, 2))  # (3, 2)
    wrapped = x[idx] + x[:, idx].transpose(0, 1)                  # (4, 4), negatives wrap
    return (rows.sum(-1).sum() + picked.sum(0).mean() + gathered.sum()
            + wrapped.mean(0).sum()) * x[idx[1:2]]


def _index_inputs():
    x = torch.randn(4, 4, generator=GEN)
    ids = torch.randint(0, 7, (2, 3), generator=GEN)
    idx = torch.tensor([-1, 0, 3, -4])
    pos = torch.randint(0, 3, (3,), generator=GEN)
    return x, ids, idx, pos


def test_runtime_index_tensors_match_torch_on_every_target():
    model = _Fn(_indexing, table=torch.randn(7, 5, generator=GEN)).eval()
    graph = _check(model, _index_inputs(), targets=("numpy", "cpu"))
    ops = {node.op for node in graph.nodes}
    assert {"take", "gather"} <= ops


def test_out_of_range_indices_raise_naming_the_input_and_leave_the_model_usable():
    model = _Fn(lambda m, ids: torch.nn.functional.embedding(ids, m.table) * 2,
                table=torch.randn(7, 5, generator=GEN)).eval()
    ids = torch.randint(0, 7, (2, 3), generator=GEN)
    compiled = wb.compile(model, (ids,), target="numpy")
    graph = from_torch(model, (ids,))
    for bad in (7, -1):  # embedding: negative indices are out of range, as in PyTorch
        wrong = ids.numpy().copy()
        wrong[1, 2] = bad
        with pytest.raises(IndexOutOfRangeError, match=rf"input 'xs_0'.*index {bad} .*size 7"):
            compiled(wrong)
        with pytest.raises(IndexOutOfRangeError, match=f"index {bad} "):
            run(graph, wrong)
    with torch.no_grad():
        np.testing.assert_allclose(compiled(ids.numpy()), model(ids).numpy(), rtol=1e-6)


def test_advanced_indexing_wraps_negatives_and_checks_both_ends():
    model = _Fn(lambda m, x, idx: x[:, idx] + 1).eval()
    x, idx = torch.randn(3, 5, generator=GEN), torch.tensor([-5, 4, -1])
    _check(model, (x, idx))
    compiled = wb.compile(model, (x, idx), target="numpy")
    with pytest.raises(IndexOutOfRangeError, match="index -6 is out of range"):
        compiled(x.numpy(), np.array([0, -6, 1]))


def test_a_constant_index_out_of_range_is_refused_at_compile_time():
    b = GraphBuilder()
    table = b.constant("w", np.zeros((4, 2), np.float32))
    x = b.input("x", TensorType((3,), "float32"))
    index = b.constant("i", np.array([0, 4]))
    rows = b.node("take", [table, index], {"axis": 0})
    graph = b.finish([rows, b.node("relu", [x])])
    with pytest.raises(IndexOutOfRangeError, match="index 4 is out of range"):
        wb.compile(graph, target="numpy")


def test_an_index_computed_in_the_model_is_int64_arithmetic():
    """``ids + 1`` is computed in float64 (exact) and cast back to int64."""
    model = _Fn(lambda m, ids: torch.nn.functional.embedding(ids + 1, m.table),
                table=torch.randn(9, 4, generator=GEN)).eval()
    _check(model, (torch.randint(0, 8, (2, 5), generator=GEN),))


# ---------------------------------------------------------------- type promotion

F32, F64 = torch.float32, torch.float64

PROMOTION = {
    # arithmetic
    "float32 + int64": (lambda m, a, b: a + b, [(F32, (2, 3)), (torch.int64, (2, 3))]),
    "int64 * float64": (lambda m, a, b: a * b, [(torch.int64, (2, 3)), (F64, (3,))]),
    "float32 - float64": (lambda m, a, b: a - b * 0.5, [(F32, (2, 3)), (F64, (2, 3))]),
    "int32 + int64": (lambda m, a, b: a + b * 3, [(torch.int32, (2, 3)), (torch.int64, (2, 3))]),
    "int64 / int64": (lambda m, a, b: a / (b.abs() + 1), [(torch.int64, (4,)),
                                                           (torch.int64, (4,))]),
    "mask + float32": (lambda m, a, b: (a > 0) + b, [(F32, (2, 3)), (F32, (2, 3))]),
    "mask * int64": (lambda m, a, b: (a > 0) * b, [(F32, (2, 3)), (torch.int64, (2, 3))]),
    # comparisons and masks
    "int64 > float32": (lambda m, a, b: (a > b).float() * b, [(torch.int64, (2, 3)),
                                                              (F32, (2, 3))]),
    "float64 >= float32": (lambda m, a, b: (a >= b).to(F64) + a,
                           [(F64, (2, 3)), (F32, (2, 3))]),
    "mask & mask": (lambda m, a, b: ((a > 0) & (b < 0)).float(), [(F32, (5,)), (F32, (5,))]),
    # ternary
    "where int64, float32": (lambda m, a, b: torch.where(b > 0, a, b),
                             [(torch.int64, (2, 3)), (F32, (2, 3))]),
    "where float64": (lambda m, a, b: torch.where(a > b, a, 2.0),
                      [(F64, (2, 3)), (F32, (2, 3))]),
    "masked_fill float64": (lambda m, a, b: a.masked_fill(b > 0, -1.5),
                            [(F64, (2, 3)), (F32, (3,))]),
    # explicit conversions
    "float()": (lambda m, a, b: a.float() + b, [(torch.int64, (3,)), (F32, (3,))]),
    "long()": (lambda m, a, b: (b * 3).long() + a, [(torch.int64, (3,)), (F32, (3,))]),
    "to(float64)": (lambda m, a, b: b.to(F64) * a, [(F64, (3,)), (F32, (3,))]),
    "bool()": (lambda m, a, b: b.bool().float() + a, [(F32, (4,)), (F32, (4,))]),
}


def _promotion_inputs(specs):
    out = []
    for dtype, shape in specs:
        if dtype.is_floating_point:
            out.append((torch.randn(*shape, generator=GEN) * 3).to(dtype))
        else:
            out.append(torch.randint(-5, 6, shape, generator=GEN).to(dtype))
    out[-1].view(-1)[0] = 0  # a zero for bool()
    return tuple(out)


@pytest.mark.parametrize("name", sorted(PROMOTION))
def test_type_promotion_matches_torch(name):
    fn, specs = PROMOTION[name]
    _check(_Fn(fn).eval(), _promotion_inputs(specs))


def test_mixed_dtypes_compile_for_the_cpu():
    """float64, float32 and int64 operands in one fused elementwise kernel (Numba)."""
    model = _Fn(lambda m, a, b, c: torch.where(c > 0, a * b + c, b.to(F64)) - 0.25).eval()
    inputs = (torch.randn(3, 4, dtype=F64, generator=GEN), torch.randn(4, generator=GEN),
              torch.randint(-3, 4, (3, 4), generator=GEN))
    _check(model, inputs, targets=("cpu",))


def test_cuda_target_takes_runtime_indices_and_checks_host_inputs():
    """The ``take`` kernel bound to threads (the simulator in CI); a host index input out of
    range raises before the launch."""
    model = _Fn(lambda m, ids: torch.nn.functional.embedding(ids, m.table)[:, :, 1:] * 2,
                table=torch.randn(6, 3, generator=GEN)).eval()
    ids = torch.tensor([[0, 5, 2]])
    compiled = wb.compile(model, (ids,), target="cuda")
    with torch.no_grad():
        np.testing.assert_allclose(compiled(ids.numpy()), model(ids).numpy(), rtol=1e-6)
    with pytest.raises(IndexOutOfRangeError, match="index 6 is out of range"):
        compiled(np.array([[0, 6, 1]]))
