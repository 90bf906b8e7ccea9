"""argmax / argmin of rows holding NaN give the first NaN's index, as PyTorch's, on the cpu
(whose kernels compile with fast-math: the NaN test's kernel is built without its no-NaN
flag) and through a saved and loaded artifact."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.schedule import Schedule  # noqa: E402


class ArgExtremes(torch.nn.Module):
    def forward(self, x):
        return (x.argmax(-1), x.argmin(-1), x.argmax(0), x.argmin(),
                x.argmax(-1, keepdim=True))


def _input():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6)).astype("float32")
    x[0, 2] = x[1, 1] = x[1, 4] = x[3, 5] = np.nan  # one row without NaN: row 2
    x[2, 3] = np.inf
    return torch.from_numpy(x)


@pytest.fixture(scope="module")
def compiled():
    return wb.compile(ArgExtremes(), (_input(),), target="cpu", jobs=1)


def _check(outputs):
    expected = ArgExtremes()(_input())
    for got, want in zip(outputs, expected, strict=True):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want.numpy())


def test_nan_rows_give_the_first_nan_index_on_cpu(compiled):
    _check(compiled(_input().numpy()))
    assert any(k.kernel.options.get("fastmath") is False for k in compiled.kernels)


def test_rows_without_nan_keep_the_first_extreme(compiled):
    x = np.round(np.random.default_rng(6).standard_normal((4, 6)), 0).astype("float32")  # ties
    expected = ArgExtremes()(torch.from_numpy(x))
    for got, want in zip(compiled(x), expected, strict=True):
        np.testing.assert_array_equal(got, want.numpy())


def test_nan_rows_survive_save_and_load(compiled, tmp_path):
    compiled.save(tmp_path / "m")
    _check(wb.load(tmp_path / "m")(_input().numpy()))


def test_a_rescheduled_nan_test_keeps_its_ieee_build():
    model = ArgExtremes()
    compiled = wb.compile(model, (_input(),), target="cpu", jobs=1)
    strict = [k for k in compiled.kernels if k.kernel.options.get("fastmath") is False]
    compiled.reschedule(strict[0].node, Schedule)  # fn(func) -> Schedule: unscheduled
    assert compiled._kernel(strict[0].node).kernel.options["fastmath"] is False
    _check(compiled(_input().numpy()))
