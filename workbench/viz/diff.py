"""Two schedules' IR, or two generated sources, side by side, aligned by statement.

Lines are statements (the printer puts one statement per line), aligned with
``difflib.SequenceMatcher``; leading indentation is ignored when matching, so a statement
that moved one level deeper still lines up with itself (tag ``reindent``, shaded but not
counted as changed). ``DiffView.rows`` holds the aligned rows
``(tag, left_line, left_text, right_line, right_text)`` with tag ``equal``, ``reindent``,
``replace``, ``delete`` or ``insert``; ``.html`` shows them in a two-column table,
changed lines coloured; ``str(view)`` is a unified diff.

Example
-------
>>> view = code_diff("a = 1\\nb = 2\\n", "a = 1\\nb = 3\\nc = 4\\n")
>>> view.n_changed, view.n_removed, view.n_added
(2, 1, 2)
>>> print(view)
--- before
+++ after
@@ -1,2 +1,3 @@
 a = 1
-b = 2
+b = 3
+c = 4
"""

from __future__ import annotations

import difflib
import html as html_module
from dataclasses import dataclass

from workbench.viz.html import line_html

ROW_COLORS = {"replace": ("#fff1c2", "#fff1c2"), "delete": ("#ffd7d5", "#f4f4f4"),
              "insert": ("#f4f4f4", "#d7f5dd"), "reindent": ("#eef4ff", "#eef4ff"),
              "equal": ("", "")}
"""Background of the left and right cell of a row, by tag."""


_CHANGED = ("replace", "delete", "insert")


@dataclass(frozen=True)
class DiffRow:
    """One aligned row: a line of each side (None where the side has no line)."""

    tag: str
    left_line: int | None
    left: str | None
    right_line: int | None
    right: str | None


@dataclass(frozen=True)
class DiffView:
    """A side-by-side diff: ``.rows``, ``.html``, ``str()`` (unified diff) and counts.

    Attributes
    ----------
    before, after : str
        The two texts.
    rows : list of DiffRow
        Aligned rows, in order.
    n_changed : int
        Rows that differ (a replaced line pair counts once, an added or removed line once).
    n_removed, n_added : int
        Lines only on the left / only on the right (a replaced pair counts on both sides).
    """

    before: str
    after: str
    rows: list[DiffRow]
    language: str = "python"
    titles: tuple[str, str] = ("before", "after")

    @property
    def n_changed(self) -> int:
        return sum(row.tag in _CHANGED for row in self.rows)

    @property
    def n_removed(self) -> int:
        return sum(row.left is not None and row.tag in _CHANGED for row in self.rows)

    @property
    def n_added(self) -> int:
        return sum(row.right is not None and row.tag in _CHANGED for row in self.rows)

    @property
    def changed_lines(self) -> tuple[list[int], list[int]]:
        """The changed line numbers (1-based) on the left and on the right."""
        left = [r.left_line for r in self.rows if r.tag in _CHANGED and r.left_line]
        right = [r.right_line for r in self.rows if r.tag in _CHANGED and r.right_line]
        return left, right

    def unified(self, context: int = 3) -> str:
        lines = difflib.unified_diff(self.before.splitlines(), self.after.splitlines(),
                                     fromfile=self.titles[0], tofile=self.titles[1],
                                     lineterm="", n=context)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.unified() or f"(no difference: {len(self.before.splitlines())} equal lines)"

    def __repr__(self) -> str:
        return str(self)

    @property
    def html(self) -> str:
        return _table_html(self)

    def _repr_html_(self) -> str:
        return self.html


def _align(before: str, after: str) -> list[DiffRow]:
    left, right = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, [line.strip() for line in left],
                                      [line.strip() for line in right], autojunk=False)
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" and any(left[i] != right[j]
                                  for i, j in zip(range(i1, i2), range(j1, j2), strict=True)):
            tag = "reindent"
        for offset in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + offset, j1 + offset
            has_left, has_right = i < i2, j < j2
            row_tag = tag
            if tag == "replace":
                row_tag = "replace" if has_left and has_right else ("delete" if has_left
                                                                     else "insert")
            elif tag == "reindent" and left[i] == right[j]:
                row_tag = "equal"
            rows.append(DiffRow(row_tag,
                                i + 1 if has_left else None, left[i] if has_left else None,
                                j + 1 if has_right else None, right[j] if has_right else None))
    return rows


def _table_html(view: DiffView) -> str:
    left_html = line_html(view.before, view.language)
    right_html = line_html(view.after, view.language)
    cell = ("<td style='background:{bg};padding:0 6px;white-space:pre;font-family:monospace;"
            "font-size:12px;vertical-align:top'{cls}>{text}</td>")
    number = "<td style='color:#999;text-align:right;padding:0 4px;font-size:11px'>{}</td>"
    out = ["<table class='wb-diff' style='border-collapse:collapse'>",
           "<tr><th colspan=2 style='text-align:left'>{}</th>"
           "<th colspan=2 style='text-align:left'>{}</th></tr>".format(
               *(html_module.escape(t) for t in view.titles))]
    for row in view.rows:
        left_bg, right_bg = ROW_COLORS[row.tag]
        changed = f" data-change='{row.tag}'" if row.tag in _CHANGED else ""
        out.append(
            f"<tr>{number.format(row.left_line or '')}"
            + cell.format(bg=left_bg, cls=changed,
                          text=left_html[row.left_line - 1] if row.left_line else "")
            + number.format(row.right_line or "")
            + cell.format(bg=right_bg, cls=changed,
                          text=right_html[row.right_line - 1] if row.right_line else "")
            + "</tr>")
    out.append("</table>")
    summary = (f"<div style='font-size:11px;color:#555'>{view.n_changed} changed rows "
               f"({view.n_removed} lines before, {view.n_added} lines after)</div>")
    return summary + "".join(out)


def code_diff(src_a: str, src_b: str, *, language: str = "python",
              titles: tuple[str, str] = ("before", "after")) -> DiffView:
    """Two sources side by side, aligned by statement (line), changed lines marked.

    Example
    -------
    >>> code_diff("x = 1\\n", "x = 1\\n").n_changed
    0
    """
    return DiffView(src_a, src_b, _align(src_a, src_b), language, tuple(titles))


def ir_diff(a, b, *, titles: tuple[str, str] = ("before", "after")) -> DiffView:
    """The IR of two PrimFuncs or Schedules (or script texts) side by side.

    Example
    -------
    >>> import workbench as wb
    >>> sch = wb.Schedule(wb.ops.matmul(64, 64, 64))
    >>> before = sch.mod
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> _ = sch.split(i, factors=[None, 16])
    >>> ir_diff(before, sch).n_changed
    4
    """
    from workbench.viz.html import ir_text

    return code_diff(ir_text(a), ir_text(b), language="python", titles=titles)
