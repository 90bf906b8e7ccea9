"""Widgets: ``explore`` (the interactive explorer) and its pure-Python history."""

from workbench.widgets.explorer import Explorer, explore
from workbench.widgets.history import History, HistoryNode, Measurement

__all__ = ["Explorer", "History", "HistoryNode", "Measurement", "explore"]
