"""The printer: golden texts, marks, HTML and the terminal/notebook display."""

import pytest
import script_examples as ex

import ir_examples
from workbench.ir import For
from workbench.script import script, script_html, show
from workbench.script.printer import MARK_COLOR


@pytest.mark.parametrize("name", sorted(ex.ALL))
def test_golden_script(name, golden):
    golden(f"script_{name}", ex.ALL[name].script())


def test_script_is_the_function_method():
    assert script(ex.matmul) == ex.matmul.script()
    assert ex.matmul._repr_html_() == script_html(ex.matmul)


def test_matmul_text_exactly():
    assert ir_examples.matmul(4, 4, 4).script() == '''\
@T.prim_func
def matmul(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    for i, j, k in T.grid(4, 4, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]'''


def test_mark_inner_loop_breaks_the_grid(golden):
    f = ex.matmul
    loop_j = f.root_block.body.body
    assert isinstance(loop_j, For) and loop_j.loop_var.name == "j"
    text = script(f, mark=loop_j, mark_label="split me")
    golden("script_matmul_marked_j", text)
    assert "        for j, k in T.grid(16, 16):  # <-- split me" in text.splitlines()


def test_mark_block():
    f = ex.add_relu
    block = f.root_block.body.stmts[1].body.block
    lines = script(f, mark=block, mark_label="compute_inline?").splitlines()
    assert [n for n, line in enumerate(lines) if "# <--" in line] == [10]
    assert lines[10] == '        with T.block("C"):  # <-- compute_inline?'


def test_mark_by_structure_when_not_the_same_object():
    f = ex.matmul
    copy = ir_examples.matmul(16, 16, 16).root_block.body
    assert copy is not f.root_block.body and copy == f.root_block.body
    assert script(f, mark=copy, mark_label="i").splitlines()[2].endswith("  # <-- i")


def test_html_highlights_the_marked_line():
    f = ex.matmul
    html = script_html(f, mark=f.root_block.body, mark_label="here")
    assert html.startswith('<div class="highlight"')
    marked = [line for line in html.splitlines() if MARK_COLOR in line]
    assert len(marked) == 1 and ">for</span>" in marked[0]
    assert "&lt;-- here" in html
    assert MARK_COLOR not in script_html(f)


def test_show_prints_plain_text_outside_a_terminal(capsys):
    show(ex.stencil)
    assert capsys.readouterr().out == ex.stencil.script() + "\n"


def test_show_in_a_terminal_uses_colours(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    show(ex.stencil)
    out = capsys.readouterr().out
    assert "\x1b[" in out and ".prim_func" in out and "def" in out


def test_show_in_a_notebook_displays_html(monkeypatch):
    import IPython
    import IPython.display

    class FakeKernelShell:
        kernel = object()

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: FakeKernelShell())
    monkeypatch.setattr(IPython.display, "display", shown.append)
    f = ex.matmul
    show(f, mark=f.root_block.body, mark_label="here")
    assert len(shown) == 1
    assert shown[0].data == script_html(f, mark=f.root_block.body, mark_label="here")
