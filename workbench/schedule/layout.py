"""Schedule primitives of the layout family (see README.md for the file's shape)."""

from __future__ import annotations


class LayoutMethods:
    """`Schedule` methods of the layout family."""
