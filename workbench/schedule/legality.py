"""``legal_primitives``: try every registered primitive at a loop or block.

Each primitive whose registry entry ``applies_to`` the handle's kind is run with its
probe's default arguments on a copy of the schedule; a ``ScheduleError`` means illegal,
and its message is the reason. Errors are cheap (nothing is rendered until printed), so
this is fast enough to call on every click of a widget.
"""

from __future__ import annotations

import dataclasses
import html
from typing import TYPE_CHECKING

from workbench.schedule.errors import ScheduleError
from workbench.schedule.trace import INSTRUCTIONS

if TYPE_CHECKING:
    from workbench.schedule.handles import ScheduleHandle
    from workbench.schedule.schedule import Schedule


@dataclasses.dataclass(frozen=True)
class Legality:
    """Whether ``primitive`` is legal at a handle; ``reason`` and ``error`` say why not."""

    primitive: str
    legal: bool
    reason: str = ""
    error: str = ""


class LegalityTable(list):
    """A list of ``Legality`` rows that prints as a table.

    Example
    -------
    >>> table = sch.legal_primitives(k)
    >>> [row.primitive for row in table if row.legal]
    ['split', 'unroll', 'annotate']
    """

    def to_frame(self):
        """The rows as a pandas DataFrame (columns primitive, legal, reason, error)."""
        import pandas as pd

        return pd.DataFrame(
            [dataclasses.asdict(row) for row in self],
            columns=["primitive", "legal", "reason", "error"],
        )

    def legal(self) -> list[str]:
        """Names of the legal primitives."""
        return [row.primitive for row in self if row.legal]

    def __getitem__(self, key):
        if isinstance(key, str):
            for row in self:
                if row.primitive == key:
                    return row
            raise KeyError(key)
        return super().__getitem__(key)

    def __str__(self) -> str:
        width = max((len(row.primitive) for row in self), default=9)
        lines = [f"{'primitive'.ljust(width)}  legal  reason"]
        for row in self:
            lines.append(
                f"{row.primitive.ljust(width)}  {'yes' if row.legal else 'no '}    {row.reason}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(r.primitive)}</code></td>"
            f"<td>{'&#10003;' if r.legal else '&#10007;'}</td>"
            f"<td>{html.escape(r.reason)}</td></tr>"
            for r in self
        )
        return (
            "<table class='wb-legality'><tr><th>primitive</th><th>legal</th><th>reason</th></tr>"
            f"{rows}</table>"
        )


# Rows come in the order of DESIGN.md's primitive list; others follow, by name.
# The primitives added with issue 7 sit with their family (loops, memory, layout);
# sampling comes last (it records a decision and leaves the function as it is).
TABLE_ORDER = (
    "split",
    "fuse",
    "reorder",
    "add_unit_loop",
    "parallel",
    "vectorize",
    "unroll",
    "bind",
    "annotate",
    "blockize",
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
    "cache_read",
    "cache_write",
    "set_scope",
    "storage_align",
    "reindex",
    "rfactor",
    "decompose_reduction",
    "transform_layout",
    "decompose_padding",
    "sample_perfect_tile",
)


def _row_order(name: str) -> tuple[int, str]:
    return (TABLE_ORDER.index(name) if name in TABLE_ORDER else len(TABLE_ORDER), name)


def legal_primitives(schedule: Schedule, handle: ScheduleHandle) -> LegalityTable:
    """Try each primitive applying to ``handle``'s kind on a copy of ``schedule``."""
    table = LegalityTable()
    for name in sorted(INSTRUCTIONS, key=_row_order):
        kind = INSTRUCTIONS[name]
        if handle.kind not in kind.applies_to or kind.probe is None:
            continue
        trial = schedule.copy()
        try:
            args, kwargs = kind.probe(trial, handle)
            getattr(trial, kind.name)(*args, **kwargs)
        except ScheduleError as err:
            table.append(Legality(kind.name, False, err.message, type(err).__name__))
        else:
            table.append(Legality(kind.name, True))
    return table
