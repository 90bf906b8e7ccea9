"""Schedule primitives of the compute location family (see README.md for the file's shape)."""

from __future__ import annotations


class ComputeLocationMethods:
    """`Schedule` methods of the compute location family."""
