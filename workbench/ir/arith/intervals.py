"""Interval arithmetic on inclusive integer bounds ``(lo, hi)``; ``None`` is unbounded."""

from __future__ import annotations

from workbench.ir.arith.fold import trunc_div

Bounds = tuple[int | None, int | None]


def add_bounds(a: Bounds, b: Bounds, sign: int = 1) -> Bounds:
    if sign > 0:
        lo = None if a[0] is None or b[0] is None else a[0] + b[0]
        hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    else:
        lo = None if a[0] is None or b[1] is None else a[0] - b[1]
        hi = None if a[1] is None or b[0] is None else a[1] - b[0]
    return lo, hi


def scale_bounds(a: Bounds, c: int) -> Bounds:
    if c == 0:
        return 0, 0
    lo = None if a[0] is None else a[0] * c
    hi = None if a[1] is None else a[1] * c
    return (lo, hi) if c > 0 else (hi, lo)


def mul_bounds(a: Bounds, b: Bounds) -> Bounds:
    if a[0] is not None and a[0] == a[1]:
        return scale_bounds(b, a[0])
    if b[0] is not None and b[0] == b[1]:
        return scale_bounds(a, b[0])
    if None not in a and None not in b:
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:
        return a[0] * b[0], None
    return None, None


def floordiv_bounds(a: Bounds, b: Bounds) -> Bounds:
    if b[0] is not None and b[0] == b[1] and b[0] != 0:
        d = b[0]
        lo = None if a[0] is None else a[0] // d
        hi = None if a[1] is None else a[1] // d
        return (lo, hi) if d > 0 else (hi, lo)
    if b[0] is not None and b[0] > 0 and a[0] is not None and a[0] >= 0:
        lo = 0 if b[1] is None else a[0] // b[1]
        hi = None if a[1] is None else a[1] // b[0]
        return lo, hi
    return None, None


def floormod_bounds(a: Bounds, b: Bounds) -> Bounds:
    if b[0] is not None and b[0] == b[1] and b[0] > 0:
        d = b[0]
        if None not in a and a[0] // d == a[1] // d:
            k = a[0] // d
            return a[0] - k * d, a[1] - k * d
        return 0, d - 1
    if b[0] is not None and b[0] > 0:
        hi = None if b[1] is None else b[1] - 1
        if a[0] is not None and a[0] >= 0 and a[1] is not None:
            hi = a[1] if hi is None else min(hi, a[1])
        return 0, hi
    return None, None


def trunc_div_bounds(a: Bounds, b: Bounds) -> Bounds:
    if a[0] is not None and a[0] >= 0:
        return floordiv_bounds(a, b)
    if None not in a and b[0] is not None and b[0] == b[1] and b[0] != 0:
        ends = [trunc_div(a[0], b[0]), trunc_div(a[1], b[0])]
        return min(ends), max(ends)
    return None, None


def min_bounds(a: Bounds, b: Bounds) -> Bounds:
    lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
    his = [h for h in (a[1], b[1]) if h is not None]
    return lo, (min(his) if his else None)


def max_bounds(a: Bounds, b: Bounds) -> Bounds:
    los = [x for x in (a[0], b[0]) if x is not None]
    hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return (max(los) if los else None), hi


def union_bounds(a: Bounds, b: Bounds) -> Bounds:
    lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
    hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return lo, hi


def dtype_bounds(dtype: str) -> Bounds:
    if dtype == "bool":
        return 0, 1
    if dtype.startswith("uint"):
        return 0, None
    return None, None
