"""legal_primitives: which primitives apply at a loop or block, and why not."""

from schedule_examples import matmul, row_sum, scale2d

from workbench.schedule import Legality, LegalityTable, Schedule


def table_of(func, block, index):
    sch = Schedule(func)
    loop = sch.get_loops(sch.get_block(block))[index]
    return sch, loop, sch.legal_primitives(loop)


def test_reduction_loop_table():
    sch, k, table = table_of(row_sum, "B", 1)
    assert isinstance(table, LegalityTable)
    assert [(r.primitive, r.legal) for r in table] == [
        ("split", True),
        ("fuse", False),
        ("reorder", False),
        ("add_unit_loop", True),
        ("parallel", False),
        ("vectorize", False),
        ("unroll", True),
        ("bind", False),
        ("annotate", True),
        ("blockize", True),
        ("rfactor", True),
        ("decompose_reduction", True),
        ("sample_perfect_tile", True),
    ]
    assert table["parallel"] == Legality(
        "parallel", False, "loop 'k' is a reduction loop", "ReductionLoopError"
    )
    assert table["fuse"].reason == "loop 'k' is not perfectly nested: its body is block 'B'"
    assert table.legal() == [
        "split", "add_unit_loop", "unroll", "annotate", "blockize", "rfactor",
        "decompose_reduction", "sample_perfect_tile",
    ]


def test_outer_spatial_loop_table():
    sch, i, table = table_of(scale2d, "B", 0)
    assert table.legal() == [
        "split", "fuse", "reorder", "add_unit_loop", "parallel", "vectorize", "unroll", "bind",
        "annotate", "blockize", "sample_perfect_tile",
    ]  # TVM vectorizes a loop with loops inside it
    assert table["rfactor"].error == "NotReductionLoopError"


def test_block_table():
    sch = Schedule(matmul)
    table = sch.legal_primitives(sch.get_block("C"))
    assert [(r.primitive, r.legal, r.error) for r in table] == [
        ("add_unit_loop", True, ""),
        ("annotate", True, ""),
        ("compute_at", False, "OutputBlockError"),
        ("reverse_compute_at", False, "NoProducersError"),
        ("compute_inline", False, "InlineReductionError"),
        ("reverse_compute_inline", False, "InlineReductionError"),
        ("cache_read", True, ""),
        ("cache_write", True, ""),
        ("set_scope", False, "ParameterScopeError"),
        ("storage_align", False, "NonAllocatedBufferError"),
        ("reindex", True, ""),
        ("decompose_reduction", True, ""),
        ("transform_layout", True, ""),
        ("decompose_padding", False, "NotPaddingBlockError"),
    ]


def test_probing_leaves_the_schedule_alone():
    sch, k, table = table_of(matmul, "C", 2)
    assert sch.mod is matmul and len(sch.trace) == 2
    assert sch.name(k) == "k"


def test_table_forms():
    sch, k, table = table_of(row_sum, "B", 1)
    frame = table.to_frame()
    assert list(frame.columns) == ["primitive", "legal", "reason", "error"]
    assert frame["legal"].tolist() == [
        True, False, False, True, False, False, True, False, True, True, True, True, True
    ]
    text = str(table).splitlines()
    assert text[0].split() == ["primitive", "legal", "reason"]
    assert text[5].split()[:2] == ["parallel", "no"]
    html = table._repr_html_()
    assert html.count("<tr>") == 14 and "reduction loop" in html


def test_new_primitives_have_rows_where_their_probe_applies():
    """Every registered primitive with a probe is a row at a loop or a block (or both)."""
    from workbench.schedule.trace import INSTRUCTIONS

    probed = {n for n, kind in INSTRUCTIONS.items() if kind.probe is not None}
    unlisted = {n for n in probed if not INSTRUCTIONS[n].applies_to}
    assert unlisted == set()
    sch = Schedule(matmul)
    block_rows = {r.primitive for r in sch.legal_primitives(sch.get_block("C"))}
    loop_rows = {r.primitive for r in sch.legal_primitives(sch.get_loops(sch.get_block("C"))[0])}
    for name in ("add_unit_loop", "storage_align", "reindex", "decompose_padding"):
        assert name in block_rows
    for name in ("add_unit_loop", "blockize", "sample_perfect_tile"):
        assert name in loop_rows
    assert "sample_categorical" not in block_rows | loop_rows  # takes no loop or block
