"""The race analysis (``workbench.ir.dependence.overlap.iterations_overlap``) against enumeration.

Random loop schedules (the primitives of ``test_random_schedules``, no compiling) on small
operators; for every leaf block, every loop around it and every write/access pair of one
buffer that the analysis calls *independent across iterations of the loop*, all iterations
are enumerated: no two iterations of the loop (the loops around it equal) may touch one
element. A failure is an unsound rule: a race the schedule layer would accept.

The printed script of every schedule must also parse back (the DSL's loop-kind check runs
the same analysis from scratch; a refusal is a false race). CI runs ``CI_EXAMPLES``
derandomized; ``WORKBENCH_PROPERTY_EXAMPLES`` raises it (and draws fresh examples), as for
the other property tests.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schedule_steps import LOOP_PRIMITIVES
from test_random_schedules import LONG_EXAMPLES, MAX_STEPS, apply_step

import workbench as wb
from workbench.ir import BlockRealize, For, const_value
from workbench.ir.arith import evaluate
from workbench.ir.dependence import block_accesses, iterations_overlap
from workbench.schedule import Schedule
from workbench.schedule.tree import walk

CI_EXAMPLES = 60
MAX_POINTS = 20000  # iterations enumerated per block

SETTINGS = settings(
    max_examples=(LONG_EXAMPLES * 10) or CI_EXAMPLES,
    deadline=None,
    derandomize=not LONG_EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.generate, Phase.shrink],
    print_blob=True,
)


def touched(access, loops, position):
    """``{(outer values, element): {values of the loop at position}}`` over all iterations."""
    domains = [range(const_value(lp.min), const_value(lp.min) + const_value(lp.extent))
               for lp in loops]
    seen: dict = {}
    for values in itertools.product(*domains):
        env = {lp.loop_var: v for lp, v in zip(loops, values, strict=True)}
        if all(evaluate(cond, env) for cond in access.predicate):
            element = tuple(evaluate(start, env) for start, _ in access.region)
            seen.setdefault((values[:position], element), set()).add(values[position])
    return seen


def enumerated_overlap(first, second, position) -> bool:
    one, two = touched(first, first.loops, position), touched(second, first.loops, position)
    return any(a != b for key, values in one.items() for a in values
               for b in two.get(key, ()))


def independence_claims(func):
    """``(write, access, loop position)`` the analysis calls independent, enumerable ones."""
    for node, ancestors in walk(func.root_block.body, ()):
        if not isinstance(node, BlockRealize):
            continue
        if any(isinstance(n, BlockRealize) for n, _ in walk(node.block.body, ())):
            continue
        accesses = block_accesses(node, ancestors)
        loops = tuple(a for a in ancestors if isinstance(a, For))
        extents = [const_value(lp.extent) for lp in loops]
        if not all(isinstance(e, int) for e in extents) or not all(
                isinstance(const_value(lp.min), int) for lp in loops):
            continue
        size = 1
        for extent in extents:
            size *= extent
        if size > MAX_POINTS:
            continue
        points = [a for a in accesses if all(const_value(e) == 1 for _, e in a.region)]
        for write in (a for a in points if a.kind == "write"):
            for other in (a for a in points if a.buffer == write.buffer):
                for position, loop in enumerate(loops):
                    if not iterations_overlap(write, other, loop):
                        yield write, other, position


@SETTINGS
@given(st.data())
def test_independent_iterations_never_touch_one_element(data):
    from schedule_steps import HandlePools, draw_step, op_specs

    spec = data.draw(op_specs(favour_several_blocks=False), label="operator")
    sch = Schedule(spec.func())
    pools = HandlePools()
    for _ in range(data.draw(st.integers(1, MAX_STEPS), label="number of steps")):
        step = draw_step(data.draw, sch, pools, LOOP_PRIMITIVES)
        if step is not None:
            apply_step(sch, step, pools)
    for write, other, position in independence_claims(sch.mod):
        loop = write.loops[position].loop_var.name
        assert not enumerated_overlap(write, other, position), (
            f"loop {loop!r} called independent, but two of its iterations touch one element "
            f"({write.text} and {other.text}):\n{sch.mod.script()}")
    assert wb.from_source(sch.mod.script()) == sch.mod


def test_enumeration_finds_a_real_race():
    """The oracle itself: the issue-7 race (``B[vk] += A[vi, vk]`` with both iterators spatial) over ``i`` is found."""
    func = wb.from_source('''
@T.prim_func
def f(A: T.Buffer((4, 3), "float32"), B: T.Buffer((3,), "float32")):
    for i, k in T.grid(4, 3):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])
            B[vk] = B[vk] + A[vi, vk]
''')
    (realize, ancestors), = [(n, a) for n, a in walk(func.root_block.body, ())
                             if isinstance(n, BlockRealize)]
    write = next(a for a in block_accesses(realize, ancestors) if a.kind == "write")
    assert enumerated_overlap(write, write, 0) is True  # over i: a race
    assert enumerated_overlap(write, write, 1) is False  # over k: distinct elements
    assert iterations_overlap(write, write, write.loops[0]) is True
