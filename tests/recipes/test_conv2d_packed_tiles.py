"""The packed conv's register tile per shape class (issue 19): two vectors of output
channels where the weight blocks pair up (``tile_shape``), sized from the target's
registers, not this machine's; the pad copy keeps only the stride phases the conv reads.
Every schedule checked against PyTorch at shapes no tile divides."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from workbench.backends import build
from workbench.ir.analysis import find_blocks
from workbench.ops.conv_packed import conv2d_nchw_packed, pack_kcrs
from workbench.recipes.conv2d_packed_cpu import packed_cpu, tile_columns, tile_shape

torch = pytest.importorskip("torch")


@pytest.fixture
def narrow_and_wide(monkeypatch):
    """cpu-like targets with 32-byte (AVX2: 16 registers) and 64-byte (AVX-512: 32) vectors."""
    from workbench.backends.common import target as target_module
    from workbench.backends.common.target import CPU_FACTS, get_target_kind

    cpu = get_target_kind("cpu")
    for name, vector_bytes in (("cpu_avx2_conv_test", 32), ("cpu_avx512_conv_test", 64)):
        facts = dataclasses.replace(CPU_FACTS, vector_bytes=vector_bytes, cache_line_bytes=64)
        kind = dataclasses.replace(cpu, name=name, device=lambda facts=facts: facts)
        monkeypatch.setitem(target_module._REGISTRY, name, kind)
    return "cpu_avx2_conv_test", "cpu_avx512_conv_test"


def test_tile_shape_per_shape_class(narrow_and_wide):
    narrow, wide = narrow_and_wide
    # wide: up to 8 columns x 2 vectors (16 of 32 registers); narrow: 4 x 2 (8 of 16)
    assert [tile_shape(q, 32, wide) for q in (7, 14, 28, 56, 112)] == \
        [(7, 2), (7, 2), (7, 2), (8, 2), (8, 2)]
    assert [tile_shape(q, 32, narrow) for q in (7, 14, 56)] == \
        [(tile_columns(7, narrow), 1), (tile_columns(14, narrow), 1), (4, 2)]
    assert tile_shape(1, 32, wide) == (1, 2)  # a 1x1 output row: the whole row
    # blocks that do not pair, or rows with only small divisors: one vector, as before
    assert tile_shape(56, 3, wide) == (tile_columns(56, wide), 1)
    assert tile_shape(13, 4, wide) == (tile_columns(13, wide), 1)


def _loop_kinds(sch):
    script = sch.mod.script()
    return script.count("T.unroll("), script.count("T.vectorized(")


CASES = [  # N, C, H, W, K, R, stride, padding, kb
    (1, 30, 7, 7, 32, 3, 1, 1, 8),      # 7-column rows, two vectors
    (3, 65, 13, 13, 32, 3, 2, 1, 8),    # batch 3, stride 2, odd channels and rows
    (1, 3, 56, 56, 16, 7, 2, 3, 4),     # stem-like 7x7 stride 2 -> 28 columns
    (3, 30, 13, 13, 32, 1, 2, 0, 8),    # 1x1 stride 2 (one phase copied)
    (1, 65, 7, 7, 24, 1, 1, 0, 8),      # 1x1, 3 blocks: one vector
]


@pytest.mark.parametrize("case", CASES)
def test_default_tiles_match_torch(case, narrow_and_wide):
    N, C, H, W, K, R, stride, padding, kb = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((K, C, R, R)).astype("float32")
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                      stride=stride, padding=padding).numpy()
    func = conv2d_nchw_packed(N, C, H, W, K, R, R, kb, stride, padding)
    # the wide target's tile (two vectors where the blocks pair) runs on any machine
    sch = packed_cpu(func, target=narrow_and_wide[1])
    tx, kv = tile_shape(want.shape[3], K // kb, narrow_and_wide[1])
    assert _loop_kinds(sch) == (1 + (kv > 1), 1)
    out = np.full(want.shape, np.nan, "float32")
    build(sch, target="cpu")(x, pack_kcrs(w, kb), out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_explicit_tile_and_bad_kv():
    func = conv2d_nchw_packed(1, 4, 7, 7, 24, 3, 3, kb=8)
    assert _loop_kinds(packed_cpu(func, tx=7)) == (1, 1)  # tx alone: one vector
    with pytest.raises(ValueError, match="kv=2 does not divide the 3 channel blocks"):
        packed_cpu(func, kv=2)


def test_pad_copy_keeps_the_phases_read():
    def phases(R, stride, dilation=1):
        func = conv2d_nchw_packed(1, 4, 14, 14, 8, R, R, kb=8, stride=stride,
                                  padding=R // 2 * dilation, dilation=dilation)
        pad = next(b for b in find_blocks(func) if b.name == "pad_temp")
        return tuple(int(iv.dom.extent.value) for iv in pad.iter_vars[1:3])

    assert phases(1, 2) == (1, 1)      # 1x1 stride 2: only even rows and columns
    assert phases(3, 2) == (2, 2)
    assert phases(3, 2, dilation=2) == (1, 1)  # every tap lands on an even offset
    assert phases(3, 1) == (1, 1)
