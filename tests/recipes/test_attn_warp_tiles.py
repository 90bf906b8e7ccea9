"""The ``warp_tiles`` cuda attention (``workbench/recipes/attention_cuda.py``: a register tile
of query rows x keys per lane, keys and queries staged per slice of the head dimension) under
the CUDA simulator at tiny sizes, against PyTorch's ``scaled_dot_product_attention``: odd
lengths, causal, a longer key sequence, masks, a single key; its tile choice and refusals."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from workbench import ops, recipes  # noqa: E402
from workbench.backends import build  # noqa: E402
from workbench.recipes.attention_cuda import default_tiles, tiles_fit, warp_tiles  # noqa: E402

pytestmark = pytest.mark.cuda

F = torch.nn.functional


def _run(rng, func, sch, mask=None, **sdpa):
    q, k, v = (rng.standard_normal(p.shape, dtype=np.float32) for p in func.params[:3])
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    build(sch, target="cuda")(*args, out)
    t = [torch.from_numpy(a) for a in args]
    attn_mask = None if mask is None else t[3] != 0  # a boolean mask (keep where true)
    want = F.scaled_dot_product_attention(*t[:3], attn_mask=attn_mask, **sdpa).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    return sch


def test_registered():
    assert recipes.get("attention", "warp_tiles", "cuda").schedule is warp_tiles


@pytest.mark.parametrize("causal", [False, True])
def test_a_tile_of_rows_per_warp_odd_length(rng, causal):
    func = ops.attention(1, 2, 11, 8, causal=causal)
    sch = warp_tiles(func, warps=2, rows=4, d_tile=8, half_warps=causal)  # both P.V forms
    _run(rng, func, sch, is_causal=causal)
    script = sch.mod.script()
    assert 'thread="blockIdx.y"' in script and "K_shared" in script and "Q_shared" in script
    assert "scores_local" in script and "out_local" in script  # the two register tiles


def test_keys_read_four_at_a_time_where_a_lane_has_four(rng):
    func = ops.attention(1, 1, 4, 4, kv_seq=128, value_dim=8)  # 4 keys a lane
    sch = warp_tiles(func)
    assert "load4(K_shared, " in build(sch, target="cuda").source
    _run(rng, func, sch)


def test_masks_and_the_defaults(rng):
    func = ops.attention(1, 2, 6, 8, kv_seq=9, mask="bool", mask_shape=(1, 1, 6, 9))
    mask = rng.random((1, 1, 6, 9)) < 0.7
    mask[..., 0] = True  # every row keeps a key
    _run(rng, func, warp_tiles(func), mask=mask.astype(np.float32))


def test_a_single_key(rng):
    func = ops.attention(1, 1, 3, 4, kv_seq=1)
    _run(rng, func, warp_tiles(func))


def test_one_row_a_warp(rng):
    func = ops.attention(1, 1, 9, 4, kv_seq=40, causal=True)
    _run(rng, func, warp_tiles(func, rows=1), is_causal=True)


def test_tile_choice_and_refusals():
    assert default_tiles(128, 128, 64, 64) == (8, 4, 8)  # 32 rows a block, 4 x 4 a lane
    assert default_tiles(511, 511, 64, 64) == (8, 1, 4)  # 16 keys a lane: 1 row
    assert default_tiles(256, 256, 64, 64) == (8, 2, 8)
    assert tiles_fit(128, 128, 64, 64, 8, 4, 8) == 43008
    with pytest.raises(ValueError, match="keys are 17 a lane"):
        default_tiles(513, 513, 64, 64)
    with pytest.raises(ValueError, match="bytes of shared memory"):
        warp_tiles(ops.attention(1, 1, 64, 8, kv_seq=512), warps=8, rows=4)
    with pytest.raises(ValueError, match="five blocks"):
        warp_tiles(ops.softmax(4, 4))


def test_half_warps_read_four_values_at_a_time(rng):
    func = ops.attention(1, 1, 8, 4, kv_seq=8, value_dim=64, causal=True)
    sch = warp_tiles(func)  # half_warps by default
    assert "load4(V, " in build(sch, target="cuda").source
    _run(rng, func, sch, is_causal=True)
