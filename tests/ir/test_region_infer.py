"""Region inference (workbench.ir.region_infer, region_cover) and affine index inversion
(workbench.ir.affine_inverse): values checked against a direct evaluation, and the
size-independent tiling checks on large loops (no enumeration)."""

import itertools

import pytest

from workbench.ir import FloorDiv, FloorMod, IntImm, IterKind, IterVar, Range, Var
from workbench.ir.affine_inverse import invert_indices
from workbench.ir.arith import evaluate
from workbench.ir.region_cover import recomputed_point, span_upper, uncovered_domain_point
from workbench.ir.region_infer import div_split, relax


def c(v: int) -> IntImm:
    return IntImm(v)


def iv(name: str, extent: int, kind: IterKind = IterKind.SPATIAL) -> IterVar:
    return IterVar(Var(name), Range(c(0), c(extent)), kind)


class _Block:
    """The two attributes the coverage checks read."""

    def __init__(self, *iter_vars):
        self.iter_vars = iter_vars


def test_div_split_pulls_whole_multiples_out():
    i = Var("i")
    q, r = div_split(i * c(8) + c(7), 16, {i: (0, 7)})
    for value in range(8):
        assert evaluate(q, {i: value}) == (value * 8 + 7) // 16
        assert evaluate(r, {i: value}) == (value * 8 + 7) % 16
    assert q == FloorDiv(i, c(2))


@pytest.mark.parametrize("op", [FloorDiv, FloorMod])
def test_relax_floordiv_floormod_is_tight_and_sound(op):
    """(i_0 * 4 + i_1) // 16 and % 16 with i_1 in [0, 3] relaxed: the interval must contain
    every value and, for //, be a single point."""
    i0, i1 = Var("i0"), Var("i1")
    expr = op(i0 * c(4) + i1, c(16))
    lo, hi = relax(expr, {i1: (c(0), c(3))}, {i0: (0, 31)})
    for a in range(32):
        values = [evaluate(expr, {i0: a, i1: b}) for b in range(4)]
        assert evaluate(lo, {i0: a}) <= min(values) and max(values) <= evaluate(hi, {i0: a})
        width = evaluate(hi, {i0: a}) - evaluate(lo, {i0: a}) + 1
        assert width == (1 if op is FloorDiv else 4)


def test_span_upper_of_floordiv_tiles():
    """TVM's non-perfect channel group: (c*360 + 359) // 16 - (c*360) // 16 + 1 <= 23."""
    c_o = Var("c_o")
    lo = FloorDiv(c_o * c(360), c(16))
    hi = FloorDiv(c_o * c(360) + c(359), c(16))
    assert span_upper(lo, hi, {c_o: (0, 1)}) == 23


def test_once_per_element_is_decided_without_enumeration():
    """A 2**20 x 2**20 tiling is decided instantly (no enumeration); an overlapping one too."""
    i, j = Var("i"), Var("j")
    block = _Block(iv("v", 2**40))
    ranges = {i: (0, 2**20 - 1), j: (0, 2**20 - 1)}
    tiles = (i * c(2**20) + j, i * c(2**20) + j)
    assert recomputed_point(block, [tiles], ranges) is None
    assert uncovered_domain_point(block, [tiles], ranges) is None
    overlapping = (i * c(2**20 - 1) + j, i * c(2**20 - 1) + j)
    assert recomputed_point(block, [overlapping], ranges) is not None
    gaps = (i * c(2**20 + 1) + j, i * c(2**20 + 1) + j)
    assert uncovered_domain_point(block, [gaps], ranges) == f"v = {2**20}"


def test_once_per_element_agrees_with_enumeration_on_small_tilings():
    i = Var("i")
    block = _Block(iv("v", 64))
    for step, width in itertools.product(range(1, 6), range(1, 6)):
        interval = (i * c(step), i * c(step) + c(width - 1))
        seen, twice, covered = set(), False, set()
        for value in range(8):
            points = set(range(value * step, value * step + width))
            twice |= bool(seen & points)
            seen |= points
            covered |= points
        assert (recomputed_point(block, [interval], {i: (0, 7)}) is not None) == twice
        contiguous = covered == set(range(min(covered), max(covered) + 1))
        got = uncovered_domain_point(_Block(iv("v", max(covered) + 1)), [interval], {i: (0, 7)})
        assert (got is None) == contiguous


def test_invert_fused_index_digits():
    """B[f // 128, f % 128] with f = vi * 2048 + vj * 64 + vk * 8 + vl (TVM's
    elementwise_reverse_affine_load): the inverse gives back every consumer iteration."""
    vi, vj, vk, vl = iv("vi", 8), iv("vj", 32), iv("vk", 8), iv("vl", 8)
    f = ((vi.var * c(32) + vj.var) * c(8) + vk.var) * c(8) + vl.var
    indices = (FloorDiv(f, c(128)), FloorMod(f, c(128)))
    p, q = Var("p"), Var("q")
    mapping, conditions = invert_indices(indices, [vi, vj, vk, vl], (p, q))
    assert conditions == []
    for point in [(0, 0, 0, 0), (7, 31, 7, 7), (3, 17, 2, 5), (5, 0, 7, 1)]:
        env = dict(zip((vi.var, vj.var, vk.var, vl.var), point, strict=True))
        produced = {p: evaluate(indices[0], env), q: evaluate(indices[1], env)}
        back = tuple(evaluate(mapping[v.var], produced) for v in (vi, vj, vk, vl))
        assert back == point


def test_invert_refuses_non_bijective_reads():
    vi, vj = iv("vi", 8), iv("vj", 16)
    fused = vi.var * c(16) + vj.var
    assert invert_indices((fused, fused), [vi, vj], (Var("p"), Var("q"))) is None
    assert invert_indices((vi.var * c(2),), [vi, vj], (Var("p"),)) is None
