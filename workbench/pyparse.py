"""Python text to an ``ast`` tree, one thread at a time.

CPython 3.11 keeps the ast constructor's recursion depth in one per-interpreter counter. A
garbage collection during ``ast.parse`` can run a finalizer, switch threads, and let a second
``ast.parse`` reset that counter; the first then fails with ``SystemError: AST constructor
recursion depth mismatch`` (python/cpython#106905, fixed in 3.12). Workbench parses in two
threads at once (the explorer compiles kernels in the background, whose cache digest reads
their imports, while the notebook parses DSL), so every parse goes through ``parse``.

>>> parse("x + 1", mode="eval").body.op.__class__.__name__
'Add'
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(text: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(text, mode=mode)`` under the process-wide parse lock."""
    with _LOCK:
        return ast.parse(text, mode=mode)
