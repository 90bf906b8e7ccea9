"""IR and generated code as highlighted HTML, with a plain-text form outside notebooks.

``ir_html(obj, highlight=[names])`` prints a PrimFunc (or a Schedule's current function)
with the project's printer and marks the lines that open the named loops and blocks;
``code_html(source, language)`` highlights any source (the generated Numba Python, LLVM IR,
assembly, PTX). Both return an ``HTMLView``: ``.html`` (inline styles, so it survives a
rendered notebook), ``.text`` (marked lines end with ``# <--``), ``_repr_html_`` for Jupyter
and ``__str__`` for a terminal.

Example
-------
>>> from workbench import ops
>>> view = ir_html(ops.matmul(8, 8, 8), highlight=["k"])
>>> view.highlighted
[3]
>>> "background-color: #ffe58f" in view.html
True
"""

from __future__ import annotations

import html as html_module
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

HIGHLIGHT_COLOR = "#ffe58f"
"""Background of a highlighted line."""

CODE_STYLE = "font-size: 12px; line-height: 1.3;"
MONOSPACE = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
"""The code panes' font, inline: a static page without Jupyter's stylesheet keeps it."""
_LEXER_ALIASES = {"numba": "python", "ptx": "text", "asm": "gas", "llvm": "llvm"}


class ShowsHtml:
    """Shows as its ``html`` in a notebook and as its ``text`` elsewhere (``str``, ``repr``)."""

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True, repr=False)
class HTMLView(ShowsHtml):
    """Highlighted text that shows as HTML in a notebook and as text elsewhere.

    Attributes
    ----------
    html : str
        Self-contained HTML (inline styles).
    text : str
        The plain text; highlighted lines end with ``  # <--``.
    highlighted : list of int
        The highlighted lines, 1-based.
    """

    html: str
    text: str
    highlighted: list[int] = field(default_factory=list)


def _function_of(obj):
    """The PrimFunc behind a PrimFunc, a Schedule or a Kernel."""
    from workbench.ir.function import PrimFunc

    if isinstance(obj, PrimFunc):
        return obj
    mod = getattr(obj, "mod", None)
    if isinstance(mod, PrimFunc):
        return mod
    func = getattr(obj, "func", None)
    if isinstance(func, PrimFunc):
        return func
    raise TypeError(f"expected a PrimFunc or a Schedule, got {type(obj).__name__}")


def ir_text(obj) -> str:
    """The TVMScript-like text of a PrimFunc or a Schedule's current function (a str is
    returned as it is)."""
    if isinstance(obj, str):
        return obj
    return _function_of(obj).script()


def _header_pattern(name: str) -> re.Pattern:
    word = re.escape(name)
    # "for i_0 in ...", "for i, j, k in T.grid(...)", 'with T.block("C"):'
    return re.compile(rf'^\s*(for\s+(?:\w+\s*,\s*)*{word}\s*(?:,\s*\w+\s*)*\s+in\b'
                      rf'|with\s+T\.block\("{word}"\))')


def header_lines(text: str, names: Iterable[str]) -> list[int]:
    """The 1-based lines of ``text`` that open a loop or block called one of ``names``.

    Example
    -------
    >>> header_lines('for i, j in T.grid(2, 2):\\n    with T.block("C"):', ["j", "C"])
    [1, 2]
    """
    patterns = [_header_pattern(name) for name in names]
    return [number for number, line in enumerate(text.splitlines(), start=1)
            if any(p.search(line) for p in patterns)]


def _mark_text(text: str, lines: list[int]) -> str:
    if not lines:
        return text
    marked = set(lines)
    return "\n".join(line + "  # <--" if number in marked else line
                     for number, line in enumerate(text.splitlines(), start=1))


def _lexer(language: str):
    from pygments.lexers import TextLexer, get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(_LEXER_ALIASES.get(language, language))
    except ClassNotFound:
        return TextLexer()


# A small regex highlighter for Python-like text (the IR script, generated Numba source):
# pygments' colours, about 100x faster than pygments (which takes ~5-30 ms for a 20-line
# function), so the explorer can redraw on every schedule change.
_STYLES = {
    "comment": "color: #3D7B7B; font-style: italic",
    "string": "color: #BA2121",
    "keyword": "color: #008000; font-weight: bold",
    "decorator": "color: #A2F",
    "number": "color: #666",
    "builtin": "color: #008000",
    "defname": "color: #00F",
}
_TOKENS = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<decorator>@[\w.]+)
  | (?P<defkw>\bdef\b)(?P<defspace>\s+)(?P<defname>\w+)
  | (?P<keyword>\b(?:for|in|with|def|return|if|elif|else|and|or|not|is|None|True|False|
                    import|from|as|pass|while|break|continue|lambda|class|yield)\b)
  | (?P<builtin>\b(?:range|len|min|max|abs|int|float|bool|print|prange)\b)
  | (?P<number>(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
""", re.VERBOSE)


def _span(kind: str, text: str) -> str:
    return f'<span style="{_STYLES[kind]}">{html_module.escape(text, quote=False)}</span>'


def _fast_line(line: str) -> str:
    out, last = [], 0
    for match in _TOKENS.finditer(line):
        out.append(html_module.escape(line[last:match.start()], quote=False))
        kind = match.lastgroup
        if match.group("defkw"):
            out.append(_span("keyword", "def") + match.group("defspace")
                       + _span("defname", match.group("defname")))
        else:
            out.append(_span(kind, match.group(kind)))
        last = match.end()
    out.append(html_module.escape(line[last:], quote=False))
    return "".join(out)


def fast_highlight_lines(text: str) -> list[str]:
    """Each line of Python-like ``text`` as inline-styled HTML (pygments' default colours).

    Example
    -------
    >>> fast_highlight_lines("for i in range(4):  # go")[0]  # doctest: +ELLIPSIS
    '<span style="color: #008000; font-weight: bold">for</span> i ...'
    """
    return [_fast_line(line) for line in text.splitlines()]


def _wrap_lines(rendered: list[str], lines: Iterable[int]) -> str:
    marked = set(lines)
    body = "".join(
        f'<span style="background-color: {HIGHLIGHT_COLOR}">{line}\n</span>'
        if number in marked else f"{line}\n"
        for number, line in enumerate(rendered, start=1))
    return (f'<div class="highlight" style="{CODE_STYLE}">'
            f'<pre style="line-height: 125%; font-family: {MONOSPACE};"><span></span>{body}'
            '</pre></div>\n')


def highlight_html(text: str, language: str = "python", lines: Iterable[int] = ()) -> str:
    """``text`` as a ``<div>`` of inline-styled HTML; ``lines`` (1-based) get a yellow
    background (a ``<span style="background-color: #ffe58f">`` each). Python (the IR
    script, generated Numba code) uses the fast highlighter, other languages pygments."""
    if language in ("python", "numba", "py"):
        return _wrap_lines(fast_highlight_lines(text), lines)
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.styles.default import DefaultStyle
    except ImportError:  # pragma: no cover - pygments is a dependency
        return f'<pre style="font-family: {MONOSPACE};">{html_module.escape(text)}</pre>'

    class _MarkedStyle(DefaultStyle):
        highlight_color = HIGHLIGHT_COLOR

    formatter = HtmlFormatter(noclasses=True, style=_MarkedStyle, nobackground=True,
                              hl_lines=list(lines), cssstyles=CODE_STYLE,
                              prestyles=f"font-family: {MONOSPACE};")
    return highlight(text, _lexer(language), formatter)


def ir_html(obj, highlight: str | Iterable[str] | None = None) -> HTMLView:
    """A PrimFunc or a Schedule's current function as highlighted TVMScript-like HTML.

    Parameters
    ----------
    obj : PrimFunc or Schedule (or the script text)
        What to print.
    highlight : str or iterable of str, optional
        Names of loops (their loop variables) and blocks whose opening lines are marked.

    Returns
    -------
    HTMLView

    Example
    -------
    >>> import workbench as wb
    >>> sch = wb.Schedule(wb.ops.matmul(64, 64, 64))
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 16])
    >>> ir_html(sch, highlight="i_1").highlighted                  # doctest: +SKIP
    [5]
    """
    text = ir_text(obj)
    names = [highlight] if isinstance(highlight, str) else list(highlight or ())
    lines = header_lines(text, names)
    return HTMLView(html=highlight_html(text, "python", lines), text=_mark_text(text, lines),
                    highlighted=lines)


def code_html(source: str, language: str = "python",
              highlight_lines: Iterable[int] | None = None) -> HTMLView:
    """Source code (generated Numba Python, LLVM IR, assembly, PTX) as highlighted HTML.

    Parameters
    ----------
    source : str
        The code.
    language : str
        A pygments lexer name: ``"python"`` (default; also ``"numba"``), ``"llvm"``,
        ``"asm"``/``"gas"``, ``"ptx"`` (plain), ``"cuda"``...; unknown names print plain.
    highlight_lines : iterable of int, optional
        1-based lines to mark.

    Example
    -------
    >>> view = code_html("def f(x):\\n    return x + 1\\n", highlight_lines=[2])
    >>> view.highlighted, str(view).splitlines()[1]
    ([2], '    return x + 1  # <--')
    """
    lines = sorted(set(highlight_lines or ()))
    return HTMLView(html=highlight_html(source, language, lines),
                    text=_mark_text(source, lines), highlighted=lines)


def line_html(text: str, language: str = "python") -> list[str]:
    """Each line of ``text`` as highlighted inline HTML (no wrapper), for tables."""
    if language in ("python", "numba", "py"):
        return fast_highlight_lines(text)
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
    except ImportError:  # pragma: no cover
        return [html_module.escape(line) for line in text.splitlines()]
    formatter = HtmlFormatter(noclasses=True, nowrap=True, nobackground=True)
    rendered = highlight(text, _lexer(language), formatter).split("\n")
    count = len(text.splitlines())
    rendered = rendered[:count] + [""] * max(0, count - len(rendered))
    return rendered
