"""Every recipe computes the reference result on random inputs (numpy and cpu targets);
the registry lists and finds them; the vector width comes from the machine."""

import numpy as np
import pytest

import workbench as wb
from workbench import ops, recipes
from workbench.backends.cpu.cpu_facts import (
    cache_line_bytes,
    reduction_lanes,
    vector_bits,
    vector_lanes,
)
from workbench.ir import ForKind
from workbench.ir.functor import collect
from workbench.ir.stmt import For
from workbench.ops.conv_packed import conv2d_nchw_packed
from workbench.ops.conv_rows import conv2d_1x1_nchw
from workbench.ops.matmul_packed import matmul_packed
from workbench.ops.softmax_online import online_softmax, online_softmax_lanes

LANES = vector_lanes("float32")
REDUCE = reduction_lanes("float32")

# (op, name) -> the function each recipe schedules, at a small size
FUNCS = {
    ("matmul", "tiled"): lambda: ops.matmul(8, 2 * 4 * LANES, 256),
    ("matmul", "tiled_full_k"): lambda: ops.matmul(16, 4 * LANES, 24),
    ("matmul", "parallel_vectorize"): lambda: ops.matmul(8, 16, 12),
    ("matmul", "packed"): lambda: ops.matmul(8, 2 * 4 * LANES, 256),
    ("matmul", "register_tile"): lambda: ops.matmul(16, 2 * LANES, 24),
    ("matmul_packed", "panels"): lambda: matmul_packed(13, 6 * LANES, 40, tj=3 * LANES),
    ("softmax", "fused"): lambda: ops.softmax(6, 2 * REDUCE),
    ("softmax", "online"): lambda: online_softmax(6, 40),
    ("softmax", "online_lanes"): lambda: online_softmax_lanes(6, 4 * LANES),
    ("layernorm", "fused"): lambda: ops.layernorm(4, 8 * LANES),
    ("conv2d", "blocked"): lambda: ops.conv2d_nchw(1, 3, 7, 7, 8, 3, 3),
    ("conv2d", "packed"): lambda: conv2d_nchw_packed(1, 3, 7, 5, 16, 3, 3, kb=8, stride=2),
    ("conv2d_1x1", "rows"): lambda: conv2d_1x1_nchw(2, 5, 56, 12, scaled=True),
    ("depthwise_conv2d", "plane"): lambda: ops.depthwise_conv2d_nchw(1, 5, 9, 7, 3, 3,
                                                                     stride=2),
    ("avg_pool2d", "direct"): lambda: ops.avg_pool2d(2, 3, 9, 7, kernel=3, stride=2),
    ("attention", "rows"): lambda: ops.attention(2, 2, 6, 4, kv_seq=5, value_dim=3,
                                                 causal=True),
    ("attention", "row_blocks"): lambda: ops.attention(1, 2, 8, 4, kv_seq=64, value_dim=3,
                                                       causal=True),
}


def random_inputs(func, rng):
    arrays = [(rng.standard_normal(b.shape) * 2).astype(b.dtype) for b in func.params]
    return arrays


def test_registry_lists_every_recipe():
    listed = [(r.op, r.name, r.target) for r in recipes.list(target="cpu")]
    assert sorted(listed) == sorted((op, name, "cpu") for op, name in FUNCS)
    names = [r.name for r in recipes.list(op="softmax", target="cpu")]
    assert names == ["fused", "online", "online_lanes"]
    assert {r.target for r in recipes.list()} == {"cpu", "cuda"}
    cuda = [(r.op, r.name) for r in recipes.list(target="cuda")]
    assert {("softmax", "block_per_row"), ("layernorm", "block_per_row")} <= set(cuda)
    assert recipes.get("matmul", "packed").schedule is recipes.matmul.packed_cpu
    assert recipes.get("matmul", "packed").doc.startswith("B packed into")


def test_unknown_recipe_names_the_known_ones():
    with pytest.raises(KeyError, match="matmul/packed/cpu"):
        recipes.get("matmul", "nope")


@pytest.mark.parametrize("op, name", sorted(FUNCS))
@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_recipe_computes_the_reference(op, name, target, rng):
    func = FUNCS[(op, name)]()
    sch = recipes.get(op, name, "cpu")(func)
    assert isinstance(sch, wb.Schedule) and sch.func_before is func
    arrays = random_inputs(func, rng)
    want = [a.copy() for a in arrays]
    wb.build(func, target="numpy")(*want)
    got = [a.copy() for a in arrays]
    wb.build(sch, target=target)(*got)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-4, atol=1e-4)
    again = wb.Trace.from_json(sch.trace.to_json()).apply(func)
    assert again.mod == sch.mod


def vector_extents(sch):
    loops = collect(sch.mod, lambda n: isinstance(n, For))
    return sorted(lp.extent.value for lp in loops if lp.kind is ForKind.VECTORIZED)


def test_widths_follow_the_machine():
    """No hard-coded 16: the tile is four vector registers, the rfactor split one."""
    packed = recipes.matmul.packed_cpu(ops.matmul(8, 8 * LANES, 256))
    assert vector_extents(packed) == [4 * LANES, 4 * LANES]
    softmax = recipes.softmax.fused_cpu(ops.softmax(2, 4 * REDUCE))
    assert vector_extents(softmax) == [REDUCE, REDUCE, 4 * REDUCE]
    narrow = recipes.softmax.fused_cpu(ops.softmax(2, 64), lanes=4)
    assert vector_extents(narrow) == [4, 4, 64]
    layernorm = recipes.layernorm.fused_cpu(ops.layernorm(2, 8 * LANES))
    partials = (8 if LANES * 4 == 32 else 4) * LANES  # eight 256-bit registers, else four
    assert vector_extents(layernorm) == [partials, partials, 8 * LANES]
    with pytest.raises(ValueError, match="multiple of lanes"):
        recipes.layernorm.fused_cpu(ops.layernorm(2, 4 * LANES + 1))


def test_cpu_facts():
    assert vector_bits() in (128, 256, 512)
    assert vector_lanes("float32") == vector_bits() // 32
    assert vector_lanes("float64", bits=512) == 8
    assert vector_lanes("int8", bits=256) == 32
    assert cache_line_bytes() in (32, 64, 128, 256)
    assert reduction_lanes("float32", bits=512) == max(16, cache_line_bytes() // 4)
    assert reduction_lanes("float32") >= vector_lanes("float32")
    flags = open("/proc/cpuinfo").read() if __import__("os").path.exists("/proc/cpuinfo") else ""
    if " avx512f" in flags:  # 256 where LLVM tunes the core prefer-256-bit (Intel)
        assert vector_bits() in (256, 512)
    elif " avx2" in flags:
        assert vector_bits() >= 256


@pytest.fixture
def narrow_and_wide_targets(monkeypatch):
    """Two cpu-like targets planning for other machines: 128-bit (SSE/NEON) and 512-bit
    (AVX-512) vectors, both with 64-byte cache lines."""
    import dataclasses

    from workbench.backends.common import target as target_module
    from workbench.backends.common.target import CPU_FACTS, get_target_kind

    cpu = get_target_kind("cpu")
    for name, vector_bytes in (("cpu_sse_test", 16), ("cpu_avx512_test", 64)):
        facts = dataclasses.replace(CPU_FACTS, vector_bytes=vector_bytes, cache_line_bytes=64)
        kind = dataclasses.replace(cpu, name=name, device=lambda facts=facts: facts)
        monkeypatch.setitem(target_module._REGISTRY, name, kind)
    return "cpu_sse_test", "cpu_avx512_test"


def test_widths_follow_the_target(narrow_and_wide_targets, rng):
    """Every recipe reads the vector width of the target it is given (no constant lanes):
    4 float32 per register at 128 bits, 16 at 512; the reduction split is at least a cache
    line (16 float32) on both. The schedules still compute the reference."""
    sse, avx512 = narrow_and_wide_targets
    func = ops.matmul(8, 128, 64)
    assert vector_extents(recipes.matmul.packed_cpu(func, target=sse)) == [16, 16]
    assert vector_extents(recipes.matmul.packed_cpu(func, target=avx512)) == [64, 64]
    assert vector_extents(recipes.matmul.tiled_full_k_cpu(func, target=sse)) == [8]
    assert vector_extents(recipes.matmul.tiled_cpu(func, target=wb.Target(avx512))) == [64]
    norm = ops.layernorm(2, 128)
    assert vector_extents(recipes.layernorm.fused_cpu(norm, target=sse)) == [16, 16, 128]
    assert vector_extents(recipes.layernorm.fused_cpu(norm, target=avx512)) == [64, 64, 128]
    soft = ops.softmax(2, 64)
    assert vector_extents(recipes.softmax.fused_cpu(soft, target=sse)) == [16, 16, 64]
    steps = recipes.softmax_lowering.softmax_lowering_steps(2, 64, target=avx512)
    assert "factors=[None, 16]" in steps[2].trace
    for sch in (recipes.matmul.packed_cpu(func, target=sse),
                recipes.layernorm.fused_cpu(norm, target=sse)):
        f = sch.func_before
        arrays = random_inputs(f, rng)
        want = [a.copy() for a in arrays]
        wb.build(f, target="numpy")(*want)
        wb.build(sch, target="cpu")(*arrays)
        np.testing.assert_allclose(arrays[-1], want[-1], rtol=1e-4, atol=1e-4)


def test_cpu_targets_report_the_host_vector_width():
    for name in ("cpu", "numpy"):
        device = wb.Target(name).device
        assert device.vector_bytes * 8 == vector_bits()
        assert device.cache_line_bytes == cache_line_bytes()
