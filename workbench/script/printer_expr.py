"""Expressions to DSL text: moved to ``workbench.ir.expr_text`` (the IR layer's analyses print
expressions in their messages); re-exported here for code that imports it from the DSL."""

from workbench.ir.expr_text import (  # noqa: F401
    dict_literal,
    expr_text,
    float_literal,
    index_text,
    literal,
)
