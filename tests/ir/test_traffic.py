"""Bytes-moved views: pass traffic and executed access bytes, by hand-computed values."""

from workbench import ops
from workbench.ir.traffic import access_bytes, pass_traffic, total_pass_bytes


def test_softmax_three_passes_each_stream_the_input():
    passes = pass_traffic(ops.softmax(4, 8))
    assert [p.blocks for p in passes] == [
        ("T_softmax_maxelem",), ("T_softmax_expsum",), ("T_softmax_norm",)
    ]
    # A is 4*8 float32 = 128 bytes; the row vectors are 16 bytes each
    assert [p.bytes for p in passes] == [128 + 16 + 16, 128 + 16 + 16 + 16, 128 + 16 + 16 + 128]
    assert total_pass_bytes(ops.softmax(4, 8)) == 624
    assert passes[2].writes == ("T_softmax_norm",)


def test_matmul_access_bytes_counts_every_executed_load_and_store():
    # per (i, j, k): load C, load A, load B, store C = 16 bytes; init stores C once per (i, j)
    assert access_bytes(ops.matmul(8, 4, 2)) == 8 * 4 * 2 * 16 + 8 * 4 * 4


