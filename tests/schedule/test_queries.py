"""get_block, get_loops, get_child_blocks, get_producers, get_consumers."""

from schedule_examples import add_relu, matmul, two_stages

from workbench.schedule import Schedule, queries


def names(sch, handles):
    return [sch.name(h) for h in handles]


def test_get_loops_outermost_first():
    sch = Schedule(matmul)
    assert names(sch, sch.get_loops(sch.get_block("C"))) == ["i", "j", "k"]


def test_get_loops_stops_at_the_enclosing_block():
    sch = Schedule(add_relu)
    assert names(sch, sch.get_loops(sch.get_block("root"))) == []
    assert names(sch, sch.get_loops(sch.get_block("T_add"))) == ["i0"]


def test_get_child_blocks_of_root_block_and_loop():
    sch = Schedule(two_stages)
    root = sch.get_block("root")
    assert names(sch, sch.get_child_blocks(root)) == ["B", "C"]
    i, _ = sch.get_loops(sch.get_block("C"))
    assert names(sch, sch.get_child_blocks(i)) == ["B", "C"]
    (j,) = sch.get_loops(sch.get_block("B"))[1:]
    assert names(sch, sch.get_child_blocks(j)) == ["B"]
    assert names(sch, sch.get_child_blocks(sch.get_block("B"))) == []


def test_producers_and_consumers():
    sch = Schedule(add_relu)
    add, relu = sch.get_block("T_add"), sch.get_block("C")
    assert names(sch, sch.get_producers(relu)) == ["T_add"]
    assert names(sch, sch.get_consumers(add)) == ["C"]
    assert names(sch, sch.get_producers(add)) == []
    assert names(sch, sch.get_consumers(relu)) == []


def test_queries_do_not_change_the_function():
    sch = Schedule(add_relu)
    sch.get_loops(sch.get_block("C"))
    sch.get_child_blocks(sch.get_block("root"))
    assert sch.mod is add_relu
    assert len(sch.trace) == 4


def test_pure_queries():
    assert queries.get_loops(matmul, "C") == ["i", "j", "k"]
    assert queries.get_child_blocks(add_relu, "root") == ["T_add", "C"]
    assert queries.get_child_blocks(two_stages, "i", target="loop") == ["B", "C"]
    assert queries.get_producers(two_stages, "C") == ["B"]
    assert queries.get_producers(add_relu, "root") == []
