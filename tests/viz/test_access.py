"""access_map / access_figure / tile_footprint / footprint_warnings / cache_sizes:
values against hand-computed expectations."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from machines import write_sysfs_caches  # noqa: E402

import workbench as wb  # noqa: E402
from ir_examples import add_relu  # noqa: E402
from workbench import ops  # noqa: E402
from workbench.viz.access import access_figure, access_map  # noqa: E402
from workbench.viz.footprint import cache_sizes, footprint_warnings, tile_footprint  # noqa: E402
from workbench.viz.iteration import TooManyIterationsError, block_paths, enumerate_block  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def tiled(n=8, ti=4, tj=4):
    sch = wb.Schedule(ops.matmul(n, n, n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, ti])
    jo, ji = sch.split(j, factors=[None, tj])
    sch.reorder(io, jo, k, ii, ji)
    return sch


def test_untiled_matmul_first_touch_order():
    # loops i, j, k over 2x3x2: iteration (i, j, k) is number 6i + 2j + k
    c = access_map(ops.matmul(2, 3, 2), "C")
    np.testing.assert_array_equal(c, [[0, 2, 4], [6, 8, 10]])
    a = access_map(ops.matmul(2, 3, 2), "A")  # A[i, k]: first at j = 0
    np.testing.assert_array_equal(a, [[0, 1], [6, 7]])
    b = access_map(ops.matmul(2, 3, 2), "B")  # B[k, j]: first at i = 0
    np.testing.assert_array_equal(b, [[0, 2, 4], [1, 3, 5]])


def test_one_tile_touches_a_block_of_rows_and_columns():
    sch = tiled()  # i_0, j_0, k, i_1, j_1 = 2, 2, 8, 4, 4
    c = access_map(sch, "C", tile="j_0", fixed={"i_0": 1, "j_0": 0})
    expected = np.full((8, 8), -1)
    # C[4 + i_1, j_1] is first touched at k = 0: iteration 4 * i_1 + j_1
    expected[4:8, 0:4] = np.arange(16).reshape(4, 4)
    np.testing.assert_array_equal(c, expected)
    a = access_map(sch, "A", tile="j_0", fixed={"i_0": 1})
    expected = np.full((8, 8), -1)
    # A[4 + i_1, k]: first at j_1 = 0, iteration 16 k + 4 i_1
    expected[4:8, :] = 16 * np.arange(8)[None, :] + 4 * np.arange(4)[:, None]
    np.testing.assert_array_equal(a, expected)
    assert c.tile == "j_0" and c.blocks == ("C",)


def test_compute_at_interleaves_producer_and_consumer():
    sch = wb.Schedule(add_relu(8))
    io, ii = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 4])
    sch.compute_at(sch.get_block("T_add"), io)
    # i1_0 = 0: T_add writes 0..3 (steps 0-3), C reads them (4-7); i1_0 = 1: steps 8-11
    np.testing.assert_array_equal(access_map(sch, "T_add"), [0, 1, 2, 3, 8, 9, 10, 11])
    np.testing.assert_array_equal(access_map(sch, "T_add", block="C"),
                                  [0, 1, 2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(access_map(sch, "T_add", tile="i1_0", fixed={"i1_0": 1}),
                                  [-1, -1, -1, -1, 0, 1, 2, 3])


def test_too_many_iterations_pins_outer_loops():
    path = block_paths(ops.matmul(64, 64, 64))[0]
    with pytest.raises(TooManyIterationsError, match="fix some with fixed="):
        enumerate_block(path, {}, limit=1000)
    # B[k, j] depends on j and k only: 2^18 of the 2^27 iterations are enumerated, exactly
    big = access_map(ops.matmul(512, 512, 512), "B")
    assert big.tile is None
    np.testing.assert_array_equal(big, np.arange(512)[None, :] * 512 + np.arange(512)[:, None])
    # past the limit, outer loops are pinned until the rest fits: one j (column) at a time
    small = access_map(ops.matmul(64, 64, 64), "B", limit=1000)
    assert small.tile == "j"
    expected = np.full((64, 64), -1)
    expected[:, 0] = np.arange(64)
    np.testing.assert_array_equal(small, expected)


def test_footprint_of_matmul_tiles():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    # one (i, j): a row of A, a column of B, one element of C (float32)
    assert tile_footprint(sch, "j") == {"C": 4, "A": 64 * 4, "B": 64 * 4}
    assert tile_footprint(sch, "i") == {"C": 64 * 4, "A": 64 * 4, "B": 64 * 64 * 4}
    sch = tiled(64, 16, 8)
    # one (i_0, j_0) tile: 16x8 of C, 16 rows of A, 8 columns of B
    assert tile_footprint(sch, "j_0") == {"C": 16 * 8 * 4, "A": 16 * 64 * 4, "B": 64 * 8 * 4}
    # a loop handle works as well as a name
    assert tile_footprint(sch, sch.get_loops(sch.get_block("C"))[1]) == tile_footprint(sch, "j_0")


def test_footprint_bounding_box_past_the_limit_agrees_on_boxes():
    sch = tiled(64, 16, 8)
    exact = tile_footprint(sch, "i_0")
    assert tile_footprint(sch, "i_0", limit=100) == exact == {
        "C": 16 * 64 * 4, "A": 16 * 64 * 4, "B": 64 * 64 * 4}


def test_footprint_warnings_against_caches():
    sch = tiled(64, 16, 8)  # j_0 tile: 512 + 4096 + 2048 = 6656 bytes
    assert footprint_warnings(sch, "j_0", caches={"L1d": 8192, "L2": 65536}) == []
    warnings = footprint_warnings(sch, "j_0", caches={"L1d": 4096, "L2": 65536})
    assert warnings == ["tile of j_0: 6.5 KiB (C 512 B, A 4 KiB, B 2 KiB) exceeds L1d (4 KiB)"]
    both = footprint_warnings(sch, "i_0", caches={"L1d": 4096, "L2": 16384})
    assert [w.split(" exceeds ")[1] for w in both] == ["L1d (4 KiB)", "L2 (16 KiB)"]


def test_shared_memory_warning_for_gpu_tiles():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    block = sch.get_block("C")
    sch.cache_read(block, 1, "shared")  # A_shared, 64x64 float32 = 16 KiB
    i = sch.get_loops(sch.get_block("C"))[0]
    assert footprint_warnings(sch, i, caches={"shared": 48 << 10}) == []
    warnings = footprint_warnings(sch, i, caches={"shared": 128})
    assert len(warnings) == 1 and warnings[0].startswith("tile of i: shared memory 256 B")


def test_cache_sizes_read_from_sysfs(tmp_path):
    write_sysfs_caches(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"),
                                  (2, "Unified", "2048K"), (3, "Unified", "32M")])
    assert cache_sizes(tmp_path) == {"L1d": 48 << 10, "L2": 2 << 20, "L3": 32 << 20}
    real = cache_sizes()
    assert real["L1d"] >= 8 << 10 and real["L2"] >= real["L1d"]


def test_access_figure_draws_the_maps():
    sch = tiled()
    fig = access_figure(sch, ["A", "C"], tile="j_0", fixed={"i_0": 1})
    axes = [ax for ax in fig.axes if (ax.get_gid() or "").startswith("access:")]
    assert [ax.get_gid() for ax in axes] == ["access:A", "access:C"]
    shown = axes[1].images[0].get_array()
    expected = access_map(sch, "C", tile="j_0", fixed={"i_0": 1})
    np.testing.assert_array_equal(shown.mask, expected < 0)  # untouched elements masked
    np.testing.assert_array_equal(shown.filled(-1), expected)
    assert axes[1].get_title() == "C (8, 8): 16 of 64 elements\n(64 B)"
    one_d = access_figure(add_relu(8), "A")
    assert one_d.axes[0].images[0].get_array().shape == (1, 8)


def test_schedule_warnings_cpu():
    from workbench.viz.advice import schedule_warnings

    facts = {"cores": 4, "lanes": 8}
    sch = wb.Schedule(ops.matmul(64, 60, 64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 32])  # i_0 has 2 iterations for 4 cores
    sch.parallel(io)
    assert schedule_warnings(sch, facts=facts) == [
        "parallel loop i_0 has 2 iterations for 4 cores: 2 cores idle"]
    sch = wb.Schedule(ops.matmul(64, 60, 64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)
    sch.vectorize(j)
    sch.parallel(i)  # 64 iterations over 4 cores: fine
    assert schedule_warnings(sch, facts=facts) == [
        "vectorized loop j: extent 60 is not a multiple of 8 float32 lanes (4 in a scalar "
        "remainder)"]
    assert schedule_warnings(sch, facts={"cores": 4, "lanes": 16}) == [
        "vectorized loop j: extent 60 is not a multiple of 16 float32 lanes (12 in a scalar "
        "remainder)"]
    # with a loop: the footprint warnings too
    tile = schedule_warnings(sch, facts=facts, loop="k", caches={"L1d": 64, "L2": 1 << 20})
    assert tile[-1].startswith("tile of k: ") and tile[-1].endswith("exceeds L1d (64 B)")


def test_schedule_warnings_cuda_threads_and_shared_memory():
    from workbench.viz.advice import schedule_warnings

    lines = ops.add(64, 48).script().splitlines()
    text = "\n".join(lines[:2] + ['    for i in T.thread_binding(64, thread="blockIdx.x"):',
                                  '        for j in T.thread_binding(48, thread="threadIdx.x"):']
                     + ["    " + line for line in lines[3:]])
    func = wb.from_source(text)
    assert schedule_warnings(func, "cuda") == [
        "48 threads per block is not a multiple of the warp size 32: the last warp runs "
        "partly idle"]
    sch = wb.Schedule(ops.matmul(128, 128, 128))
    sch.cache_read(sch.get_block("C"), 1, "shared")  # A_shared: 64 KiB > 48 KiB
    assert schedule_warnings(sch, "cuda") == [
        "shared memory 65536 bytes per block exceeds 49152"]


def test_access_figure_says_which_iterations_it_shows():
    fig = access_figure(tiled(), "C", tile="j_0", fixed={"i_0": 1})
    assert fig._suptitle.get_text() == "one iteration of j_0, i_0 = 1"
