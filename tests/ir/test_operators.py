"""The IR's one operator table (``workbench.ir.operators``): complete, and the precedences
it gives the printers put exactly the parentheses Python needs."""

from __future__ import annotations

import itertools

import pytest

from workbench.backends.common.expr_printer import ExprPrinter
from workbench.ir import expr
from workbench.ir.arith import evaluate
from workbench.ir.expr_text import expr_text
from workbench.ir.operators import COMPARISONS, NODE_OF, OPERATORS

ARITHMETIC = (expr.Add, expr.Sub, expr.Mul, expr.FloorDiv, expr.FloorMod)


def test_every_binary_node_has_one_entry_and_its_own_symbol():
    nodes = {value for value in vars(expr).values()
             if isinstance(value, type) and issubclass(value, expr.BinaryOp)
             and value not in (expr.BinaryOp, expr.CompareOp)}
    assert set(OPERATORS) == nodes
    assert all(NODE_OF[op.symbol] is node for node, op in OPERATORS.items())
    assert {node for node in OPERATORS if OPERATORS[node].precedence
            == OPERATORS[expr.EQ].precedence} == set(COMPARISONS)


@pytest.mark.parametrize("outer, inner", list(itertools.product(ARITHMETIC, ARITHMETIC)))
def test_printed_nesting_computes_what_the_ir_computes(outer, inner):
    a, b, c = expr.Var("a"), expr.Var("b"), expr.Var("c")
    env = {"a": 17, "b": -5, "c": 3}
    for tree in (outer(inner(a, b), c), outer(a, inner(b, c))):
        expected = evaluate(tree, env)
        python = ExprPrinter({})(tree)
        assert eval(python, {}, dict(env)) == expected, python  # noqa: S307
        assert eval(expr_text(tree), {}, dict(env)) == expected, expr_text(tree)  # noqa: S307


def test_a_product_keeps_the_parentheses_of_a_quotient_on_its_right():
    """The generated Python printed ``Mul(a, FloorDiv(b, c))`` as ``a * b // c``, which
    Python reads as ``(a * b) // c`` (found by the test above)."""
    a, b, c = expr.Var("a"), expr.Var("b"), expr.Var("c")
    assert ExprPrinter({})(expr.Mul(a, expr.FloorDiv(b, c))) == "a * (b // c)"
    assert ExprPrinter({})(expr.Mul(a, expr.Mul(b, c))) == "a * b * c"  # exact for integers
    assert ExprPrinter({})(expr.Add(a, expr.Sub(b, c))) == "a + b - c"
