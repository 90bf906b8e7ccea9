"""Access maps as images: the pixels say which elements one tile touches, and in what order."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest
from PIL import Image

import workbench as wb
from workbench import ops
from workbench.viz.access_image import (
    STOPS,
    UNTOUCHED,
    access_images,
    colour,
    png_bytes,
    reduce_map,
)


def decode(view, buffer: str) -> np.ndarray:
    match = re.search(rf"data-buffer='{buffer}'[^>]*base64,([^']+)'", view.html)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(match.group(1)))).convert("RGB"))


def test_png_round_trips_through_a_decoder():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    back = np.asarray(Image.open(io.BytesIO(png_bytes(rgb))).convert("RGB"))
    np.testing.assert_array_equal(back, rgb)


def test_colours_run_from_first_to_last_touch():
    values = np.array([[-1, 0, 5, 10]])
    rgb = colour(values)
    assert tuple(rgb[0, 0]) == UNTOUCHED
    assert tuple(rgb[0, 1]) == tuple(STOPS[0].astype(int))
    assert tuple(rgb[0, 2]) == tuple(STOPS[1].astype(int))
    assert tuple(rgb[0, 3]) == tuple(STOPS[2].astype(int))


def test_reduce_keeps_a_one_row_stripe_and_the_earliest_touch():
    values = np.full((8, 8), -1)
    values[5, :] = np.arange(8) + 3
    small = reduce_map(values, 4)
    assert small.shape == (4, 4)
    assert small[2].tolist() == [3, 5, 7, 9] and (small[[0, 1, 3]] == -1).all()


def test_split_tile_of_matmul_touches_rows_of_a_and_c_and_all_of_b():
    sch = wb.Schedule(ops.matmul(16, 16, 16))
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])
    view = access_images(sch, block="C", tile="i_0")
    assert view.touched == {"A": 64, "B": 256, "C": 64}
    a = decode(view, "A")
    assert a.shape == (16, 16, 3)
    touched_rows = [r for r in range(16) if (a[r] != UNTOUCHED).any()]
    assert touched_rows == [0, 1, 2, 3]  # one iteration of i_0: the first 4 rows
    # along a row of A, k runs fastest after j: the colour darkens from first to last
    c = decode(view, "C")
    assert tuple(c[0, 0]) == tuple(STOPS[0].astype(int)) and tuple(c[3, 15]) != UNTOUCHED
    assert "one iteration of i_0" in str(view)


def test_a_small_tile_is_also_shown_close_up():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 8])
    sch.reorder(i0, j, k, i1)
    view = access_images(sch, block="C", tile="k")  # one k: a column strip of 8 of A
    assert view.touched["A"] == 8 and "A[0:10, 0:3] (zoom)" in view.html
    match = re.search(r"class='wb-access-zoom' data-buffer='A'[^>]*base64,([^']+)'", view.html)
    zoom = np.asarray(Image.open(io.BytesIO(base64.b64decode(match.group(1)))).convert("RGB"))
    assert zoom.shape[:2] == (10, 3)
    touched = [(r, c) for r in range(10) for c in range(3) if tuple(zoom[r, c]) != UNTOUCHED]
    assert touched == [(r, 0) for r in range(8)]  # rows 0-7 of column 0
    whole = access_images(sch, block="C", tile="i_0")  # 8 rows of A: 1/8 of it, zoomed
    assert "A[0:10, 0:64] (zoom)" in whole.html and "B[" not in whole.html  # all of B


def test_unknown_block_is_named():
    with pytest.raises(KeyError, match="matmul has no block 'D'"):
        access_images(ops.matmul(4, 4, 4), block="D", tile="i")
