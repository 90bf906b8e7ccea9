"""The dependence analysis's memo (``workbench.ir.dependence.overlap``): a schedule edit gets a
fresh, correct analysis, and the blocks it did not change are answered from the memo."""

from workbench import T
from workbench.ir.dependence import block_scope, overlap, scope
from workbench.schedule import Schedule


@T.prim_func
def prefix_then_double(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(15):
        with T.block("A"):
            vi = T.axis.spatial(15, i)
            A[vi + 1] = A[vi + 1] + A[vi]
    for j in range(16):
        with T.block("B"):
            vj = T.axis.spatial(16, j)
            B[vj] = A[vj] * T.float32(2)


def facts(found):
    """Everything a ``BlockScope`` says, its carried loops worked out."""
    return (found.blocks, found.reads, found.writes,
            [(d.src, d.dst, d.kind, d.buffers, d.loops) for d in found.deps], found.carried)


def fresh_scope(func):
    """The facts with both memos emptied (what the analysis said before the memo)."""
    scope._build.cache_clear()
    overlap.memo_clear()
    return facts(block_scope(func))


def test_carried_loops_are_worked_out_only_when_read():
    scope._build.cache_clear()
    overlap.memo_clear()
    found = block_scope(prefix_then_double)
    assert [d.kind.value for d in found.deps] == ["RAW"]  # the edges: no overlap question
    assert overlap.memo_info()["misses"] == 0
    assert found.carried_loops("A") == ("i",)
    asked = overlap.memo_info()["misses"]
    assert asked > 0
    assert found.carried_loops("A") == ("i",) and found.deps[0].loops == ()  # no shared loop
    info = overlap.memo_info()
    assert info["misses"] + info["hits"] == asked  # worked out once, kept


def test_an_unchanged_block_is_answered_from_the_memo():
    fresh_scope(prefix_then_double)
    first = overlap.memo_info()
    assert first["misses"] > 0 and first["hits"] == 0
    sch = Schedule(prefix_then_double)
    sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[None, 4])  # B's loops change
    after = block_scope(sch.mod)
    assert after.carried_loops("A") == ("i",)
    assert overlap.memo_info()["hits"] >= 1  # A's self-dependence across i: from the memo
    assert after.carried_loops("B") == ()
    assert facts(after) == fresh_scope(sch.mod)


def test_an_edited_block_gets_a_fresh_analysis():
    before = fresh_scope(prefix_then_double)
    assert before[-1]["A"] == ("i",)
    sch = Schedule(prefix_then_double)
    sch.split(sch.get_loops(sch.get_block("A"))[0], factors=[None, 5])
    after = block_scope(sch.mod)
    assert after.carried_loops("A") == ("i_0", "i_1")  # not the memo's answer for ``i``
    assert facts(after) == fresh_scope(sch.mod)
    [raw] = [d for d in after.deps if d.kind.value == "RAW"]
    assert (raw.src, raw.dst, raw.buffers) == ("A", "B", ("A",))


def test_the_memo_never_changes_an_answer():
    """Same questions, memo full vs empty: equal facts for every scope of a scheduled conv-like
    nest (a cached-read stage computed at a loop)."""
    sch = Schedule(prefix_then_double)
    (j,) = sch.get_loops(sch.get_block("B"))
    j0, _ = sch.split(j, factors=[None, 4])
    stage = sch.cache_read(sch.get_block("B"), 0, "local")
    edited = [sch.mod]
    sch.compute_at(stage, j0)
    funcs = [prefix_then_double, *edited, sch.mod]
    scope._build.cache_clear()  # the per-function cache off: the overlap memo answers
    memoized = [facts(block_scope(f)) for f in funcs]
    assert memoized == [fresh_scope(f) for f in funcs]
