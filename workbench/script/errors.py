"""DSL errors: a message plus the user's source line with a caret under the problem.

Every error the parser raises is a ``DSLError`` (internal failures included: the parser
converts them into one pointing at the node it was reading). The text looks like::

    unknown name 'Q' (did you mean 'A'?)
      --> /path/to/file.py:12:37
       |
    12 |             C[vi, vj] = C[vi, vj] + Q[vi, vk] * B[vk, vj]
       |                                     ^
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceInfo:
    """Where the parsed text came from, to map AST positions back to the user's file.

    ``line_offset`` is added to AST line numbers (1-based) to get file line numbers;
    ``col_offset`` is the indentation removed before parsing (added back to columns);
    ``lines`` are the original file lines of the parsed text.
    """

    filename: str
    lines: tuple[str, ...]
    line_offset: int = 0
    col_offset: int = 0


class DSLError(Exception):
    """An error in DSL source: what is wrong and where.

    Attributes
    ----------
    message : str
        The problem, in one line (without the location).
    kind : str
        A short tag for the reason: ``"unsupported"``, ``"unknown-name"``, ``"index-count"``,
        ``"shape"``, ``"dtype"``, ``"intrinsic"``, ``"missing-init"``, ``"axis-kind"`` (a reduction
        axis declared spatial, or a reduce axis indexing a store), ``"region"`` (a store into
        a buffer the block's ``T.writes`` does not name), ``"syntax"``, ``"internal"``,
        and from the well-formedness check (``workbench.ir.verify``) ``"duplicate-name"``,
        ``"out-of-bounds"``, ``"scope"``, ``"verify"``.
    filename, lineno, col : str, int, int
        The location in the user's file (1-based line and column); ``lineno`` is 0 when unknown.
    source_line : str
        The user's line at ``lineno`` ("" when unknown).

    Example
    -------
    >>> from workbench.script import from_source, DSLError
    >>> try:
    ...     from_source("@T.prim_func\\ndef f(A: T.Buffer((4,), 'float32')):\\n    A[0] = AA[1]\\n")
    ... except DSLError as err:
    ...     print(err.message)
    unknown name 'AA' (did you mean 'A'?)
    """

    def __init__(self, message: str, *, kind: str = "error", filename: str = "<unknown>",
                 lineno: int = 0, col: int = 0, end_col: int | None = None,
                 source_line: str = ""):
        self.message = message
        self.kind = kind
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.end_col = end_col
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        if self.lineno <= 0:
            return self.message
        number = str(self.lineno)
        pad = " " * len(number)
        line = self.source_line.rstrip("\n")
        width = 1
        if self.end_col is not None and self.end_col > self.col:
            width = min(self.end_col - self.col, max(1, len(line) - self.col + 1))
        caret = " " * (self.col - 1) + "^" * width
        return (
            f"{self.message}\n"
            f"{pad}--> {self.filename}:{self.lineno}:{self.col}\n"
            f"{pad} |\n"
            f"{number} | {line}\n"
            f"{pad} | {caret}"
        )


def suggest(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or ``""``."""
    matches = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def error_at(source: SourceInfo, node: ast.AST | None, message: str, kind: str) -> DSLError:
    """A ``DSLError`` pointing at ``node`` (an AST node of the parsed text)."""
    lineno = getattr(node, "lineno", None)
    if lineno is None:
        return DSLError(message, kind=kind, filename=source.filename)
    file_line = lineno + source.line_offset
    col = node.col_offset + source.col_offset + 1
    end_col = None
    if getattr(node, "end_lineno", None) == lineno and node.end_col_offset is not None:
        end_col = node.end_col_offset + source.col_offset + 1
    index = lineno - 1
    text = source.lines[index] if 0 <= index < len(source.lines) else ""
    return DSLError(message, kind=kind, filename=source.filename, lineno=file_line, col=col,
                    end_col=end_col, source_line=text)
