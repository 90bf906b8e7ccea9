"""Schedule primitives of the reduction family (see README.md for the file's shape)."""

from __future__ import annotations


class ReductionMethods:
    """`Schedule` methods of the reduction family."""
