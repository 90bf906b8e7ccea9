"""``schedule.tree.used_names``: every variable of the body and every buffer of the function,
the statements a primitive did not rebuild answered from what was found before."""

from schedule_examples import add_relu, matmul

from workbench.ir import Buffer, Var, collect
from workbench.schedule import Schedule, tree


def walked(func):
    """The names as one full walk finds them (what ``used_names`` answered before)."""
    names = {v.name for v in collect(func.body, lambda n: isinstance(n, Var))}
    return names | {b.name for b in collect(func, lambda n: isinstance(n, Buffer))}


def test_used_names_equals_a_full_walk_after_every_edit():
    sch = Schedule(add_relu)
    funcs = [sch.mod]
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 8])
    funcs.append(sch.mod)
    sch.cache_read(sch.get_block("C"), 0, "local")
    funcs.append(sch.mod)
    sch.compute_inline(sch.get_block("T_add"))
    funcs.append(sch.mod)
    for func in [*funcs, matmul]:
        assert tree.used_names(func) == walked(func)
    assert {"i1_0", "i1_1", "T_add_local"} <= tree.used_names(funcs[2])


def test_an_edit_walks_only_what_it_rebuilt(monkeypatch):
    calls = []
    names_under = tree._names_under

    def counted(node):
        calls.append(node)
        return names_under(node)

    monkeypatch.setattr(tree, "_names_under", counted)
    sch = Schedule(add_relu)
    tree._STMT_NAMES.clear()
    tree.used_names(sch.mod)
    cold = len(calls)
    sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 8])  # T_add's nest shared
    calls.clear()
    assert tree.used_names(sch.mod) == walked(sch.mod)
    assert len(calls) < cold
