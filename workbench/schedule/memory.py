"""Schedule primitives of the memory family (see README.md for the file's shape)."""

from __future__ import annotations


class MemoryMethods:
    """`Schedule` methods of the memory family."""
