"""ir_html / code_html: highlighted lines, plain text, Kernel display."""

import re

import workbench as wb
from workbench import ops
from workbench.viz.html import HIGHLIGHT_COLOR, HTMLView, code_html, header_lines, ir_html

MARK = f'<span style="background-color: {HIGHLIGHT_COLOR}">'


def tiled_matmul():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 16])
    sch.reorder(io, j, k, ii)
    sch.parallel(io)
    return sch


def test_ir_html_marks_the_named_loops_and_blocks():
    sch = tiled_matmul()
    text = sch.mod.script().splitlines()
    view = ir_html(sch, highlight=["i_0", "C"])
    assert isinstance(view, HTMLView)
    # line 3 opens i_0, line 5 opens block C (line 4 is the grid j, k, i_1)
    assert text[2].strip() == "for i_0 in T.parallel(4):"
    assert text[4].strip() == 'with T.block("C"):'
    assert view.highlighted == [3, 5]
    assert view.html.count(MARK) == 2
    # the highlighted span wraps the loop's line
    marked = view.html.split(MARK)[1].split("\n")[0]
    assert "i_0" in re.sub(r"<[^>]+>", "", marked)
    assert str(view).splitlines()[2] == "    for i_0 in T.parallel(4):  # <--"
    assert view._repr_html_() == view.html


def test_loop_inside_a_grid_line_is_found():
    sch = tiled_matmul()
    assert ir_html(sch, highlight="k").highlighted == [4]  # "for j, k, i_1 in T.grid(...)"
    assert ir_html(sch.mod).highlighted == []
    assert MARK not in ir_html(sch.mod).html
    assert header_lines("for kk in range(3):\n    k = 1", ["k"]) == []  # whole names only


def test_ir_html_is_syntax_highlighted():
    html = ir_html(ops.matmul(8, 8, 8)).html
    assert html.startswith("<div")
    # keywords are coloured spans (pygments, inline styles: they survive a rendered page)
    assert '<span style="color: #008000; font-weight: bold">for</span>' in html


def test_code_html_highlights_lines_of_generated_source():
    source = "def kernel(A, B):\n    for i in range(4):\n        B[i] = A[i] + 1\n"
    view = code_html(source, highlight_lines=[2])
    assert view.highlighted == [2]
    assert view.html.count(MARK) == 1
    assert str(view).splitlines() == ["def kernel(A, B):", "    for i in range(4):  # <--",
                                      "        B[i] = A[i] + 1"]
    plain = code_html("some ptx\n", language="ptx")  # unknown to pygments: plain text
    assert "some ptx" in plain.html and plain.highlighted == []


def test_kernel_shows_its_source_highlighted(capsys):
    kernel = wb.build(ops.add(4, 4), target="numpy")
    html = kernel._repr_html_()
    assert html.startswith("<div class='wb-kernel'>")
    assert "&lt;Kernel add(" in html
    first = kernel.source.splitlines()[0]
    assert first.startswith("#")  # the numpy target's source opens with a comment
    assert f'<span style="color: #3D7B7B; font-style: italic">{first}</span>' in html
    kernel.show()  # outside a notebook: the plain source
    assert capsys.readouterr().out.strip() == kernel.source.strip()


def test_top_level_exports():
    assert wb.ir_html is ir_html
    assert wb.code_html is code_html
    assert wb.viz.ir_html is ir_html
