"""loop_nest_graph: DOT text of loops (kinds, extents), blocks, buffers, nesting, stages."""

import re

import workbench as wb
from ir_examples import add_relu
from workbench import ops
from workbench.viz.loopnest import (
    KIND_STYLES,
    LoopNestView,
    loop_nest,
    loop_nest_graph,
    loop_nest_text,
)


def node_line(source, node_id):
    lines = [line.strip() for line in source.splitlines()
             if re.match(rf"\s*{node_id} \[", line)]
    assert len(lines) == 1, (node_id, lines)
    return lines[0]


def edges(source):
    return re.findall(r"^\s*(\w+) -> (\w+)(?: \[(.*)\])?$", source, flags=re.M)


def styled(kind):
    return " ".join(f'{key}="{value}"' if any(c in value for c in "#,") else f"{key}={value}"
                    for key, value in sorted(KIND_STYLES[kind].items()))


def scheduled_matmul():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 16])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.unroll(ii)
    sch.vectorize(ji)
    return sch


def test_loops_show_extent_and_kind_in_distinct_styles():
    source = loop_nest_graph(scheduled_matmul()).source
    expected = {"loop_i_0": ("i_0", 4, "parallel"), "loop_j_0": ("j_0", 8, "serial"),
                "loop_k": ("k", 64, "serial"), "loop_i_1": ("i_1", 16, "unrolled"),
                "loop_j_1": ("j_1", 8, "vectorized")}
    for node_id, (name, extent, kind) in expected.items():
        line = node_line(source, node_id)
        assert line == f'{node_id} [label="{name}\\n{extent} · {kind}" {styled(kind)}]'
    styles = {kind: styled(kind) for kind in ("serial", "parallel", "vectorized", "unrolled",
                                               "bound")}
    assert len(set(styles.values())) == 5  # every kind looks different


def test_nesting_edges_follow_the_loop_order():
    source = loop_nest_graph(scheduled_matmul()).source
    nest = [(a, b) for a, b, attrs in edges(source) if not attrs]
    assert nest == [("func_matmul", "loop_i_0"), ("loop_i_0", "loop_j_0"),
                    ("loop_j_0", "loop_k"), ("loop_k", "loop_i_1"), ("loop_i_1", "loop_j_1"),
                    ("loop_j_1", "block_C")]


def test_block_shows_reads_and_writes_and_buffers_their_size():
    source = loop_nest_graph(ops.matmul(8, 8, 8)).source
    assert node_line(source, "block_C") == (
        'block_C [label="block C\\nreads C[vi, vj], A[vi, vk], B[vk, vj]\\nwrites C[vi, vj]" '
        'fillcolor="#fff8dc" shape=box style=filled]')
    assert node_line(source, "buf_A").startswith(
        'buf_A [label="A\\n8×8 float32\\nglobal · 256 B"')
    data = [(a, b) for a, b, attrs in edges(source) if attrs and "constraint=false" in attrs]
    assert data == [("buf_C", "block_C"), ("buf_A", "block_C"), ("buf_B", "block_C"),
                    ("block_C", "buf_C")]


def test_bound_loops_show_their_thread():
    lines = ops.add(64, 32).script().splitlines()  # no Schedule.bind yet: bind in the DSL
    assert lines[2] == "    for i, j in T.grid(64, 32):"
    text = "\n".join(lines[:2] + ['    for i in T.thread_binding(64, thread="blockIdx.x"):',
                                   '        for j in T.thread_binding(32, thread="threadIdx.x"):']
                     + ["    " + line for line in lines[3:]])
    source = loop_nest_graph(wb.from_source(text)).source
    assert node_line(source, "loop_i") == (
        f'loop_i [label="i\\n64 · bound blockIdx.x" {styled("bound")}]')
    assert "threadIdx.x" in node_line(source, "loop_j")


def test_compute_at_stage_is_drawn_where_it_runs():
    sch = wb.Schedule(add_relu(8))
    io, ii = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 4])
    sch.compute_at(sch.get_block("T_add"), io)
    source = loop_nest_graph(sch).source
    nest = [(a, b) for a, b, attrs in edges(source) if not attrs]
    assert nest == [("func_add_relu", "loop_i1_0"), ("loop_i1_0", "loop_ax0"),
                    ("loop_ax0", "block_T_add"), ("loop_i1_0", "loop_i1_1"),
                    ("loop_i1_1", "block_C")]
    assert 'label="block T_add  (stage → T_add global)' in node_line(source, "block_T_add")
    assert "style=\"filled,dashed\"" in node_line(source, "block_T_add")


def test_cache_write_stage_and_local_buffer():
    sch = wb.Schedule(ops.matmul(16, 16, 16))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.cache_write(block, 0, "local")
    source = loop_nest_graph(sch).source
    assert node_line(source, "buf_C_local").startswith(
        'buf_C_local [label="C_local\\n16×16 float32\\nlocal · 1 KiB" fillcolor="#e0f7fa"')
    assert "stage → C_local local" in node_line(source, "block_C")


def test_text_form_and_view():
    text = loop_nest_text(scheduled_matmul())
    assert text.splitlines()[:6] == [
        "matmul", "  i_0  4  parallel", "    j_0  8  serial", "      k  64  serial",
        "        i_1  16  unrolled", "          j_1  8  vectorized"]
    view = loop_nest(ops.matmul(8, 8, 8))
    assert isinstance(view, LoopNestView)
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == loop_nest_text(ops.matmul(8, 8, 8)) == str(view)
    assert ("image/svg+xml" in bundle) or bundle["text/html"].startswith("<pre>matmul")
    assert view.source == loop_nest_graph(ops.matmul(8, 8, 8)).source
