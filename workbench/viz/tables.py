"""Readable tables: floats rounded for display, so numbers do not wrap across lines.

A new user saw unrounded floats (``0.0012345678``) wrap in every measured table. The data
keeps its precision; only what is shown is rounded: ``styled_frame(df)`` returns a pandas
``Styler`` with a format per column (times with 3 significant digits, rates with 1-2
decimals, ratios with 2), ``round_frame(df)`` a rounded copy (for ``print``).

Example
-------
>>> import pandas as pd
>>> frame = pd.DataFrame({"time ms": [1.234567], "GFLOP/s": [12.3456], "speedup": [1.23456]})
>>> round_frame(frame).iloc[0].tolist()
[1.23, 12.3, 1.23]
"""

from __future__ import annotations

import math


def _significant(value: float, digits: int = 3) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def column_format(name: str) -> str:
    """The display format of a column, by its name (a ``str.format`` spec; ``"{:.1f}"``
    columns show values under 10 with 3 significant digits)."""
    lower = name.lower()
    if any(word in lower for word in ("speedup", "ratio", "fraction", "x numpy", "× ")):
        return "{:.2f}"
    if any(word in lower for word in ("gflop", "gb/s", "gbps", "gflops")):
        return "{:.1f}"
    return "{:.3g}"


def _formatter(spec: str):
    if spec != "{:.1f}":
        return spec
    return lambda v: "–" if v != v else (f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}")


def round_frame(frame, digits: int = 3):
    """A copy of ``frame`` with every float column rounded to ``digits`` significant digits
    (rates in GFLOP/s or GB/s to one decimal when that is coarser)."""
    out = frame.copy()
    for name in out.columns:
        if out[name].dtype.kind != "f":
            continue
        fmt = column_format(str(name))
        if fmt == "{:.1f}":
            out[name] = out[name].map(lambda v: v if v != v else _significant(v, digits)
                                      if abs(v) < 10 else round(v, 1))
        elif fmt == "{:.2f}":
            out[name] = out[name].round(2)
        else:
            out[name] = out[name].map(lambda v: _significant(v, digits))
    return out


def styled_frame(frame, precision: int = 3):
    """A pandas ``Styler`` showing ``frame`` with rounded floats and no wrapping.

    Example
    -------
    >>> styled_frame(frame).to_html()                       # doctest: +SKIP
    """
    formats = {name: _formatter(column_format(str(name))) for name in frame.columns
               if frame[name].dtype.kind == "f"}
    return (frame.style.format(formats, na_rep="–")
            .set_table_styles([{"selector": "td, th",
                                "props": [("white-space", "nowrap"),
                                          ("font-size", "12px")]}]))
