"""Constant folding, DCE, CSE and algebraic simplification, on hand-built graphs."""

from __future__ import annotations

import numpy as np
from graph_helpers import assert_same_outputs

from workbench.graph import GraphBuilder, TensorType
from workbench.graph.passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    simplify,
)

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.standard_normal(shape).astype("float32")


def test_fold_constants_evaluates_constant_subgraphs():
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3)))
    w = b.constant("w", _x(4, 3))
    wt = b.node("transpose", [w], {"perm": [1, 0]})
    s = b.node("mul", [wt, b.constant("two", np.float32(2.0))])
    y = b.node("matmul", [x, s])
    g = b.finish([y])
    folded = fold_constants(g)
    assert [n.op for n in folded.nodes] == ["matmul"]
    np.testing.assert_allclose(folded.constants[folded.nodes[0].inputs[1]],
                               2 * g.constants["w"].T)
    assert set(folded.constants) == {folded.nodes[0].inputs[1]}
    assert_same_outputs(g, folded, _x(2, 3))


def test_dce_removes_unused_nodes_and_constants():
    b = GraphBuilder()
    x = b.input("x", TensorType((4,)))
    dead = b.node("add", [x, b.constant("c", _x(4))])
    b.node("exp", [dead])
    y = b.node("relu", [x])
    g = eliminate_dead_code(b.finish([y]))
    assert [n.name for n in g.nodes] == ["relu"] and g.constants == {}


def test_cse_merges_duplicate_chains():
    b = GraphBuilder()
    x = b.input("x", TensorType((3, 4)))
    a1 = b.node("softmax", [x], {"axis": 1})
    a2 = b.node("softmax", [x], {"axis": 1})
    e1, e2 = b.node("exp", [a1]), b.node("exp", [a2])
    other = b.node("softmax", [x], {"axis": 0})  # different attrs: kept
    y = b.node("add", [b.node("add", [e1, e2]), other])
    g = b.finish([y])
    out = eliminate_common_subexpressions(g)
    assert [n.op for n in out.nodes] == ["softmax", "exp", "softmax", "add", "add"]
    assert out.nodes[3].inputs == (e1, e1)
    assert_same_outputs(g, out, _x(3, 4))


def test_simplify_removes_identities_and_composes_layout_ops():
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3, 4)))
    t1 = b.node("transpose", [x], {"perm": [2, 0, 1]})
    t2 = b.node("transpose", [t1], {"perm": [1, 2, 0]})  # composes to the identity
    z = b.node("add", [t2, b.constant("zero", np.zeros((4,), "float32"))])
    o = b.node("mul", [z, b.constant("one", np.float32(1.0))])
    r1 = b.node("reshape", [o], {"shape": [6, 4]})
    r2 = b.node("reshape", [r1], {"shape": [24]})
    keep = b.node("add", [r2, b.constant("c", _x(24))])
    g = b.finish([keep])
    out = simplify(g)
    assert [(n.op, n.inputs[0]) for n in out.nodes] == [("reshape", "x"), ("add", "reshape_1")]
    assert out.nodes[0].attrs == {"shape": [24]}
    assert_same_outputs(g, out, _x(2, 3, 4))


def test_simplify_keeps_broadcasting_neutral_ops():
    b = GraphBuilder()
    x = b.input("x", TensorType((3,)))
    y = b.node("add", [x, b.constant("zero", np.zeros((2, 3), "float32"))])
    g = b.finish([b.node("relu", [y])])
    assert [n.op for n in simplify(g).nodes] == ["add", "relu"]
