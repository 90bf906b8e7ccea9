"""The tensor IR: expressions, statements, buffers, functions, walkers and analyses."""

from workbench.ir.buffer import SCOPES, Buffer
from workbench.ir.expr import (
    DTYPES, FLOAT_DTYPES, INT_DTYPES, INTRINSICS,
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, BufferLoad, Call, Cast, CompareOp, Div,
    FloatImm, FloorDiv, FloorMod, IntImm, Max, Min, Mul, Not, Or, PrimExpr, Select, Sub, Var,
    as_expr, const_value, is_float, is_int,
)
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRMapper, IRVisitor, collect, substitute
from workbench.ir.node import Node, ir_node
from workbench.ir.stmt import (
    TRUE, Block, BlockRealize, BufferRegion, BufferStore, Evaluate, For, ForKind, IfThenElse,
    IterKind, IterVar, Range, SeqStmt, Stmt, seq,
)
