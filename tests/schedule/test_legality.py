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
        ("parallel", False),
        ("vectorize", False),
        ("unroll", True),
        ("bind", False),
        ("annotate", True),
        ("rfactor", True),
        ("decompose_reduction", True),
    ]
    assert table["parallel"] == Legality(
        "parallel", False, "loop 'k' is a reduction loop", "ReductionLoopError"
    )
    assert table["fuse"].reason == "loop 'k' is not perfectly nested: its body is block 'B'"
    assert table.legal() == ["split", "unroll", "annotate", "rfactor", "decompose_reduction"]


def test_outer_spatial_loop_table():
    sch, i, table = table_of(scale2d, "B", 0)
    assert table.legal() == [
        "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind", "annotate"
    ]  # TVM vectorizes a loop with loops inside it


def test_block_table():
    sch = Schedule(matmul)
    table = sch.legal_primitives(sch.get_block("C"))
    assert [(r.primitive, r.legal, r.error) for r in table] == [
        ("annotate", True, ""),
        ("compute_at", False, "OutputBlockError"),
        ("reverse_compute_at", False, "NoProducersError"),
        ("compute_inline", False, "InlineReductionError"),
        ("reverse_compute_inline", False, "InlineReductionError"),
        ("cache_read", True, ""),
        ("cache_write", True, ""),
        ("set_scope", False, "ParameterScopeError"),
        ("decompose_reduction", True, ""),
        ("transform_layout", True, ""),
    ]


def test_probing_leaves_the_schedule_alone():
    sch, k, table = table_of(matmul, "C", 2)
    assert sch.mod is matmul and len(sch.trace) == 2
    assert sch.name(k) == "k"


def test_table_forms():
    sch, k, table = table_of(row_sum, "B", 1)
    frame = table.to_frame()
    assert list(frame.columns) == ["primitive", "legal", "reason", "error"]
    assert frame["legal"].tolist() == [True, False, False, False, False, True, False, True, True, True]
    text = str(table).splitlines()
    assert text[0].split() == ["primitive", "legal", "reason"]
    assert text[4].split()[:2] == ["parallel", "no"]
    html = table._repr_html_()
    assert html.count("<tr>") == 11 and "reduction loop" in html
