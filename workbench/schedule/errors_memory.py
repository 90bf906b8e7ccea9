"""ScheduleError subclasses raised by the memory primitives."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError  # noqa: F401

__all__: list[str] = []
