"""The property tests' own helpers: layouts through index maps, factor draws, availability."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from schedule_steps import (
    LOOP_PRIMITIVES,
    NEW_PRIMITIVES,
    available_primitives,
    divisors,
    draw_factors,
    primitive_status,
    relayout,
    unlayout,
)


def test_relayout_packs_with_padding_and_unlayout_reads_back():
    logical = np.arange(10, dtype="float32").reshape(5, 2)  # [[0, 1], [2, 3], ...]
    pack = lambda i, j: (i // 2, j, i % 2)  # noqa: E731 - an index map, as users write it
    fill = np.full((3, 2, 2), -1.0, "float32")
    stored = relayout(logical, pack, (3, 2, 2), fill)
    assert stored[0, 1, 1] == logical[1, 1] == 3.0
    assert stored[2, 0, 0] == logical[4, 0] == 8.0
    assert stored[2, 0, 1] == -1.0  # padding (i = 5) keeps the fill
    np.testing.assert_array_equal(unlayout(stored, pack, (5, 2)), logical)


def test_relayout_permutation():
    logical = np.arange(6, dtype="float32").reshape(2, 3)
    stored = relayout(logical, lambda i, j: (j, i), (3, 2), np.zeros((3, 2), "float32"))
    np.testing.assert_array_equal(stored, logical.T)


def test_divisors():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(1) == [1]


@settings(max_examples=50, derandomize=True, database=None)
@given(st.data(), st.integers(1, 40))
def test_draw_factors_shapes(data, extent):
    factors = draw_factors(data.draw, extent)
    assert 2 <= len(factors) <= 3
    assert all(f is None or isinstance(f, int) for f in factors)


def test_available_primitives_always_has_the_loop_family():
    primitives = available_primitives()
    assert primitives[: len(LOOP_PRIMITIVES)] == LOOP_PRIMITIVES
    assert set(primitive_status()) == set(NEW_PRIMITIVES)
