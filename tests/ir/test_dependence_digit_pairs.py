"""The race analysis (``workbench.ir.dependence``) on writes indexed by digits of one value:
``A[x // 3, x % 3]`` determines ``x`` (``x == 3 * (x // 3) + x % 3``), so a parallel loop
whose iterations take distinct ``x`` never writes one element twice. A lone ``x // 3``, or
digits of mismatched radices (``x // 3``, ``x % 2``), do not determine ``x``: refused.

Each case is a DSL function whose outer loop ``l`` runs ``x = l * step + r``: a fused loop
split by ``step``, as ``fuse`` then ``split`` print it. Every claim is checked against
enumeration (``written_by_two``) too.
"""

from __future__ import annotations

import itertools

import pytest

import workbench as wb
from workbench.ir.dependence import loop_conflicts
from workbench.schedule import LoopCarriedDependenceError, LoopWriteConflictError, Schedule


def digits_source(kind: str, shape: tuple[int, ...], indices: list[str], extent: int,
                  step: int, read: str = "") -> str:
    """A block writing ``A[indices]`` (in ``x = l * step + r``) under ``for l in kind(extent)``;
    ``read``: an element of ``A`` it also reads, in ``v0, v1, ...`` (else it reads nothing)."""
    x = f"(l * {step} + r)"
    axes = "\n".join(f"                v{d} = T.axis.spatial({size}, {index.replace('x', x)})"
                     for d, (size, index) in enumerate(zip(shape, indices, strict=True)))
    element = ", ".join(f"v{d}" for d in range(len(shape)))
    value = f"A[{read}] + T.float32(1)" if read else "T.float32(1)"
    return f'''
@T.prim_func
def f(A: T.Buffer({shape}, "float32")):
    for l in {kind}({extent}):
        for r in range({step}):
            with T.block("B"):
{axes}
                A[{element}] = {value}
'''


def written_by_two(indices: list[str], extent: int, step: int) -> bool:
    """Enumeration: whether two iterations of ``l`` write one element."""
    writer: dict[tuple[int, ...], int] = {}
    for l, r in itertools.product(range(extent), range(step)):
        x = l * step + r
        element = tuple(eval(index, {"x": x, "l": l, "r": r}) for index in indices)
        if writer.setdefault(element, l) != l:
            return True
    return False


DETERMINING = [  # none of them flattens to x through the buffer's shape (row-major or other)
    pytest.param((10, 4), ["x // 3", "x % 3"], 15, 2, id="pair-in-a-wider-dimension"),
    pytest.param((1, 10, 4, 3), ["0", "x // 3", "0", "x % 3"], 15, 2, id="pair-apart"),
    pytest.param((2, 4, 2), ["x // 6", "x // 2 % 3", "x % 2"], 3, 4, id="chain"),
    pytest.param((2, 4, 2), ["(l * 4 + r) // 6", "(l * 2 + r // 2) % 3", "r % 2"], 3, 4,
                 id="chain-as-split-prints-it"),
    pytest.param((3, 2, 3), ["x % 2", "x // 4", "x // 2 % 2"], 4, 3, id="chain-any-order"),
]

NOT_DETERMINING = [
    pytest.param((10, 2), ["x // 3", "x % 2"], 15, 2, id="mismatched-radix"),
    pytest.param((10,), ["x // 3"], 15, 2, id="lone-quotient"),
    pytest.param((8, 3), ["x // 4", "x % 3"], 15, 2, id="quotient-coarser-than-radix"),
]


@pytest.mark.parametrize(("shape", "indices", "extent", "step"), DETERMINING)
def test_digits_that_determine_the_index_never_overlap(shape, indices, extent, step):
    assert not written_by_two(indices, extent, step)
    func = wb.from_source(digits_source("T.parallel", shape, indices, extent, step))
    assert loop_conflicts(func, "l") == []
    serial = wb.from_source(digits_source("range", shape, indices, extent, step))
    sch = Schedule(serial)
    sch.parallel(sch.get_loops(sch.get_block("B"))[0])  # the schedule agrees with the DSL
    assert wb.from_source(sch.mod.script()) == func


@pytest.mark.parametrize(("shape", "indices", "extent", "step"), NOT_DETERMINING)
def test_digits_that_do_not_determine_the_index_are_refused(shape, indices, extent, step):
    assert written_by_two(indices, extent, step)
    with pytest.raises(wb.DSLError) as info:
        wb.from_source(digits_source("T.parallel", shape, indices, extent, step))
    assert info.value.kind == "loop-kind"
    assert "two of its iterations touch one element of 'A'" in info.value.message
    sch = Schedule(wb.from_source(digits_source("range", shape, indices, extent, step)))
    with pytest.raises(LoopWriteConflictError):
        sch.parallel(sch.get_loops(sch.get_block("B"))[0])


def test_a_read_of_other_digits_still_conflicts_with_the_write():
    """The write ``A[x // 3, x % 3]`` is merged to ``x``; the read ``A[x // 3, (x % 3 + 1)
    % 3]`` goes through the same ``3 * d0 + d1`` (no longer one value): the iteration of
    ``x = 2`` reads ``A[0, 0]``, which ``x = 0`` writes."""
    source = digits_source("range", (10, 3), ["x // 3", "x % 3"], 15, 2,
                           read="v0, (v1 + 1) % 3")
    sch = Schedule(wb.from_source(source))
    with pytest.raises(LoopCarriedDependenceError):
        sch.parallel(sch.get_loops(sch.get_block("B"))[0])
