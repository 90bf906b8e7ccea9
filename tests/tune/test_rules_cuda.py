"""The cuda generation rules' staging decisions (workbench/tune/rules_cuda.py) under the
CUDA simulator: sampled candidates compute the numpy reference; the decisions show in the
trace and in the generated source (cooperative v4 fetch, double-buffered shared stages,
register fragments, explicit unroll); a decision that does not apply is skipped and the
candidate stays correct; mutating a decision and replaying the trace gives the other
candidate."""

from __future__ import annotations

import random

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.tune.runner import random_arguments
from workbench.tune.space_generated import SAMPLING, GeneratedSpace

pytestmark = pytest.mark.cuda

ON, OFF = 0, 1  # a categorical knob's value is the index of its choice: [1 (on), 0 (off)]
STAGING = ["shared:C", "vector:C", "double_buffer:C", "fragment:C", "unroll:C", "unroll_k:C"]


@pytest.fixture(autouse=True)
def _simulator():
    pytest.importorskip("numba.cuda")
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    if not simulator_enabled():
        pytest.skip("CUDA tests run in the simulator (NUMBA_ENABLE_CUDASIM=1)")


def _reference(func, seed=7):
    args = random_arguments(func, seed)
    expected = [a.copy() for a in args]
    wb.build(func, target="numpy")(*expected)
    return args, expected


def _run(func, sch, args, expected):
    """Build for cuda, run on poisoned outputs, compare with numpy; the kernel."""
    got = [a.copy() for a in args]
    got[-1][...] = np.nan
    kernel = wb.build(sch, target="cuda")
    kernel(*got)
    np.testing.assert_allclose(got[-1], expected[-1], rtol=1e-4, atol=1e-4)
    return kernel


def _config(space, **knobs):
    """The default configuration with ``knobs`` (``tile_k=[2, 8]`` for ``tile:C:k``,
    ``double_buffer=OFF`` for ``double_buffer:C``)."""
    config = space.default_config()
    for name, value in knobs.items():
        key = f"tile:C:{name[5:]}" if name.startswith("tile_") else f"{name}:C"
        assert key in config, key
        config[key] = value
    return config


# 32 x 32 x 16 with 8 x 8 threads of 4 x 4 registers and a k-step of 8: each stage holds
# 32 x 8 floats = 64 groups of 4 = one group per thread (a cooperative fetch with no guard)
TILES = {"tile_i": [1, 8, 4], "tile_j": [1, 8, 4], "tile_k": [2, 8]}


def test_the_cuda_space_has_one_sampling_decision_per_staging_knob():
    space = GeneratedSpace(ops.matmul(32, 32, 16), target="cuda")
    assert space.knobs == ["tile:C:i", "tile:C:j", "tile:C:k", *STAGING]
    for knob in STAGING:
        assert space.domains[knob] == [ON, OFF]
    # the default is the hand recipe's structure, all staging decisions on
    assert all(space.default_config()[k] == ON for k in STAGING)
    trace = space.schedule(space.default_config()).trace
    decisions = [s for s in trace if s.primitive in SAMPLING]
    assert [s.primitive for s in decisions] == ["sample_perfect_tile"] * 3 + [
        "sample_categorical"
    ] * len(STAGING)
    assert all(s.attrs["candidates"] == [1, 0] for s in decisions[3:])


def test_the_default_at_4096_is_the_register_blocked_recipe_structure():
    """No build (no simulator run): the rules' default at 4096 is a 128 x 128 block tile,
    256 threads with 8 x 8 registers, k-step 8, what ``matmul/register_blocked/cuda`` does."""
    space = GeneratedSpace(ops.matmul(4096, 4096, 4096), target="cuda")
    config = space.default_config()
    assert config["tile:C:i"] == [32, 16, 8] and config["tile:C:j"] == [32, 16, 8]
    assert config["tile:C:k"] == [512, 8]
    from workbench.backends.common.lower import lower
    from workbench.backends.cuda.numba_cuda import generate_cuda_source

    src = generate_cuda_source(lower(space.schedule(config).mod))
    assert "A_shared = cuda.shared.array((2, 8, 128)" in src
    assert "B_shared = cuda.shared.array((2, 8, 128)" in src
    assert "matmul_kernel0[(1024, 1, 1), (256, 1, 1)]" in src
    assert "min(k_0, 510)" in src  # the register prefetch of the next tile


def test_v4_fetch_double_buffer_fragments_and_unroll_show_in_the_source():
    func = ops.matmul(32, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    sch = space.schedule(_config(space, **TILES))
    text = str(sch.trace)
    assert text.count('"double_buffer_scope"') == 2
    assert "lambda d0, d1: (d1, d0)" in text  # A_shared[k, i]
    assert text.count('cache_read(b1, 1, "local")') == 1  # the A fragment
    assert '"pragma_unroll_explicit"' in text
    src = _run(func, sch, args, expected).source
    # shared stages: two halves each, A transposed; both read 128 bits at a time
    for name in ("A_shared", "B_shared"):
        assert f"{name} = cuda.shared.array((2, 8, 32), numba.float32, alignment=" in src
    # cooperative fetch: one 128-bit load of A and of B per thread per tile (prologue + loop)
    assert src.count("= load4(A, (") == 2 and src.count("= load4(B, (") == 2
    assert src.count("store4(B_shared, (") == 2
    assert "(k_0 + 1) % 2" in src and "if k_0 + 1 < 2:" in src
    assert "min(k_0, 0) * 8" in src  # register prefetch: the next tile's loads come first
    assert src.count("cuda.syncthreads()") == 2  # one in the prologue, one per tile
    # fragments read 4 at a time from shared; the register tile written back 4 at a time
    assert "load4(A_shared, (k_0 % 2, 7, " in src and "load4(B_shared, (k_0 % 2, 7, " in src
    assert src.count("store4(C, (") == 1
    assert "for k_1 in" not in src  # k_1 unrolled in the source


def test_all_staging_decisions_off_gives_the_plain_tiled_kernel():
    func = ops.matmul(32, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    config = _config(space, **TILES, **{name[:-2]: OFF for name in STAGING})
    sch = space.schedule(config)
    text = str(sch.trace)
    for absent in ("cache_read", "annotate", "vectorize", "transform_layout", "unroll"):
        assert absent not in text
    src = _run(func, sch, args, expected).source
    assert "shared.array" not in src and "load4" not in src and "store4" not in src
    assert "for k_1 in range(8):" in src


def test_single_buffered_scalar_fetch_is_still_cooperative():
    func = ops.matmul(32, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    config = _config(space, **TILES, vector=OFF, double_buffer=OFF, fragment=OFF)
    src = _run(func, space.schedule(config), args, expected).source
    assert "A_shared = cuda.shared.array((32, 8), numba.float32)" in src
    assert "load4" not in src
    # 256 elements per stage over 64 threads: a serial loop of 4 outside threadIdx.x
    assert src.count("in range(4):") >= 2 and src.count("= cuda.threadIdx.x") >= 3
    assert src.count("cuda.syncthreads()") == 2  # after the copy, before the next copy


@pytest.mark.parametrize(
    "knobs, absent",
    [
        # double buffering, fragments and v4 fetch with no shared stage: skipped
        ({"shared": OFF}, ['"double_buffer_scope"', '"shared")', "transform_layout"]),
        # a single staging step (R0 extent 1): nothing to double-buffer
        ({"tile_k": [1, 16]}, ['"double_buffer_scope"']),
        # a k-step of 1: no inner k loop to unroll
        ({"tile_k": [16, 1]}, ['"pragma_unroll_explicit"']),
    ],
)
def test_a_decision_that_does_not_apply_is_skipped(knobs, absent):
    func = ops.matmul(32, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    sch = space.schedule(_config(space, **dict(TILES, **knobs)))
    text = str(sch.trace)
    for needle in absent:
        assert needle not in text
    _run(func, sch, args, expected)


def test_v4_fetch_only_where_the_innermost_copy_extent_is_a_multiple_of_4():
    """k-step 2: A's stage (transposed, ``A_shared[k, i]``) is copied along k, 2 wide:
    scalar; B's stage rows are 32 wide: 128-bit loads."""
    func = ops.matmul(32, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    sch = space.schedule(_config(space, **dict(TILES, tile_k=[8, 2])))
    src = _run(func, sch, args, expected).source
    assert "load4(A, " not in src and "= load4(B, (" in src


def test_random_samples_of_the_space_compute_the_reference():
    func = ops.matmul(16, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    rng = random.Random(11)
    built = 0
    for _ in range(8):
        config = space.random_config(rng)
        try:
            sch = space.schedule(config)
        except wb.ScheduleError:  # more threads than a block holds: a failed trial
            continue
        _run(func, sch, args, expected)
        built += 1
    assert built >= 6


def test_conv2d_weights_are_staged_and_every_sample_computes_the_reference():
    """A convolution: only the weights are plain-indexed, so only they are staged (with
    the reduction dimensions first: ``W_shared[rc, ry, rx, co]``)."""
    func = ops.conv2d_nchw(1, 4, 4, 4, 4, 3, 3)
    space = GeneratedSpace(func, target="cuda")
    block = [k for k in space.knobs if k.startswith("shared:")][0].split(":")[1]
    args, expected = _reference(func)
    sch = space.schedule(space.default_config())
    text = str(sch.trace)
    assert text.count('"shared")') == 1 and "lambda d0, d1, d2, d3: (d1, d2, d3, d0)" in text
    _run(func, sch, args, expected)
    rng = random.Random(5)
    for _ in range(2):
        config = space.random_config(rng)
        config[f"shared:{block}"] = ON
        _run(func, space.schedule(config), args, expected)


def test_mutating_a_staging_decision_and_replaying_the_trace():
    func = ops.matmul(32, 32, 16)
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    base = space.schedule(_config(space, **TILES))
    trace = wb.Trace.from_json(base.trace.to_json())  # as a records database stores it
    assert space.config_of(trace) == space.config_of(base.trace)

    single = space.mutate(trace, "double_buffer:C", OFF)
    assert space.config_of(single.trace)["double_buffer:C"] == OFF
    assert '"double_buffer_scope"' not in str(single.trace)
    src = _run(func, single, args, expected).source
    assert "A_shared = cuda.shared.array((8, 32)" in src and "= load4(A, (" in src

    scalar = space.mutate(single.trace, "vector:C", OFF)
    src = _run(func, scalar, args, expected).source
    assert "load4(A, " not in src and "load4(B, " not in src
    assert space.config_of(scalar.trace) == dict(
        space.config_of(base.trace), **{"double_buffer:C": OFF, "vector:C": OFF}
    )

    back = space.mutate(scalar.trace, "double_buffer:C", ON)
    assert back.mod != scalar.mod and '"double_buffer_scope"' in str(back.trace)
    _run(func, back, args, expected)
