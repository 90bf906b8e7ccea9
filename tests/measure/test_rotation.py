import numpy as np
import pytest

from workbench.measure.rotation import (
    FALLBACK_LLC_BYTES,
    argument_bytes,
    llc_bytes,
    make_argument_sets,
    parse_cache_size,
    rotation_count,
)


def write_cache(root, index, level, kind, size):
    entry = root / f"index{index}"
    entry.mkdir()
    (entry / "level").write_text(f"{level}\n")
    (entry / "type").write_text(f"{kind}\n")
    (entry / "size").write_text(f"{size}\n")


@pytest.mark.parametrize(
    "text, expected",
    [("48K", 48 * 1024), ("1024K", 1 << 20), ("32768K", 32 << 20), ("2M", 2 << 20), ("512", 512)],
)
def test_parse_cache_size(text, expected):
    assert parse_cache_size(text) == expected


def test_llc_is_largest_data_cache_of_highest_level(tmp_path):
    write_cache(tmp_path, 0, 1, "Data", "48K")
    write_cache(tmp_path, 1, 1, "Instruction", "32K")
    write_cache(tmp_path, 2, 2, "Unified", "1024K")
    write_cache(tmp_path, 3, 3, "Unified", "16384K")
    assert llc_bytes(tmp_path) == 16 << 20


def test_llc_ignores_instruction_caches(tmp_path):
    write_cache(tmp_path, 0, 1, "Data", "32K")
    write_cache(tmp_path, 1, 2, "Instruction", "4096K")
    assert llc_bytes(tmp_path) == 32 * 1024


def test_llc_falls_back_when_sysfs_has_nothing(tmp_path):
    assert llc_bytes(tmp_path) == FALLBACK_LLC_BYTES
    assert llc_bytes(tmp_path / "missing") == FALLBACK_LLC_BYTES


def test_llc_on_this_machine_is_plausible():
    assert 1 << 20 <= llc_bytes() <= 4 << 30


def test_rotation_count_exceeds_twice_llc():
    llc = 32 << 20
    count = rotation_count(8 << 20, llc)
    assert count == 9
    assert count * (8 << 20) > 2 * llc
    assert (count - 1) * (8 << 20) <= 2 * llc


def test_rotation_count_caps():
    # a set bigger than twice the LLC needs no copy
    assert rotation_count(100 << 20, 32 << 20) == 1
    # tiny sets: the max count
    assert rotation_count(3072, 32 << 20, max_sets=256) == 256
    # the memory limit: 300 MiB sets, 1 GiB limit -> 3 sets at most
    assert rotation_count(300 << 20, 1 << 30, memory_limit=1 << 30) == 3
    # a set larger than the limit still runs once
    assert rotation_count(2 << 30, 32 << 20) == 1
    assert rotation_count(0, 32 << 20) == 1


def test_argument_bytes_counts_arrays_only():
    args = (np.zeros((4, 8), np.float32), 3.0, np.zeros(5, np.float64))
    assert argument_bytes(args) == 4 * 8 * 4 + 5 * 8


def test_argument_sets_are_independent_copies(rng):
    a = rng.standard_normal((6, 5)).astype(np.float32)
    f = np.asfortranarray(rng.standard_normal((4, 3)))
    sets = make_argument_sets((a, f, 2.5), 4)
    assert len(sets) == 4
    assert sets[0][0] is a and sets[0][1] is f
    for copy_a, copy_f, scalar in sets[1:]:
        assert copy_a is not a and not np.shares_memory(copy_a, a)
        np.testing.assert_array_equal(copy_a, a)
        assert copy_a.dtype == np.float32
        np.testing.assert_array_equal(copy_f, f)
        assert copy_f.flags.f_contiguous and not copy_f.flags.c_contiguous
        assert scalar == 2.5
    # writing one copy leaves the others alone
    sets[1][0][0, 0] = 1e6
    assert a[0, 0] != 1e6 and sets[2][0][0, 0] != 1e6
