"""ir_diff / code_diff: aligned by statement, counts, unified text, html marks."""

import workbench as wb
from workbench import ops
from workbench.viz.diff import code_diff, ir_diff


def test_code_diff_counts_and_unified_text():
    view = code_diff("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\nd = 4\n")
    assert [(r.tag, r.left_line, r.right_line) for r in view.rows] == [
        ("equal", 1, 1), ("replace", 2, 2), ("equal", 3, 3), ("insert", None, 4)]
    assert (view.n_changed, view.n_removed, view.n_added) == (2, 1, 2)
    assert view.changed_lines == ([2], [2, 4])
    assert str(view).splitlines() == ["--- before", "+++ after", "@@ -1,3 +1,4 @@", " a = 1",
                                      "-b = 2", "+b = 20", " c = 3", "+d = 4"]
    assert view.html.count("data-change='replace'") == 2  # both cells of the row
    assert view.html.count("data-change='insert'") == 2


def test_identical_sources():
    view = code_diff("x = 1\n", "x = 1\n")
    assert view.n_changed == 0 and str(view) == "(no difference: 1 equal lines)"


def test_ir_diff_of_a_split_aligns_the_unchanged_statements():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    before = sch.mod
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 16])
    view = ir_diff(before, sch)
    changed = [(r.tag, (r.left or "").strip(), (r.right or "").strip())
               for r in view.rows if r.tag not in ("equal", "reindent")]
    assert changed == [
        ("replace", "for i, j, k in T.grid(64, 64, 64):",
         "for i_0, i_1, j, k in T.grid(4, 16, 64, 64):"),
        ("replace", 'vi, vj, vk = T.axis.remap("SSR", [i, j, k])',
         "vi = T.axis.spatial(64, i_0 * 16 + i_1)"),
        ("insert", "", "vj = T.axis.spatial(64, j)"),
        ("insert", "", "vk = T.axis.reduce(64, k)"),
    ]
    assert view.n_changed == 4
    # the block, its regions and body are the same statements: aligned, not changed
    equal = [r.right.strip() for r in view.rows if r.tag == "equal"]
    assert "T.reads(C[vi, vj], A[vi, vk], B[vk, vj])" in equal


def test_reordered_loops_are_reindented_not_changed():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 16])
    before = sch.mod
    sch.parallel(io)  # the grid line splits in two: the block moves one level deeper
    view = ir_diff(before, sch)
    assert {r.tag for r in view.rows} == {"equal", "replace", "insert", "reindent"}
    reindented = [r.right.strip() for r in view.rows if r.tag == "reindent"]
    assert reindented[0] == 'with T.block("C"):'
    assert view.n_changed == 2  # the i_0 line replaced, the new grid line inserted
    assert "reindent" not in view.html or "data-change='reindent'" not in view.html
