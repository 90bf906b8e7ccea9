"""The ``T`` namespace of the DSL.

Inside a ``@T.prim_func`` body the names of ``T`` are never called: the parser reads the
function's source and recognises them. Called directly (outside a ``@T.prim_func``) they
raise a ``DSLError`` saying so, except ``T.Buffer`` (which annotations evaluate when
Python defines the function) and ``T.prim_func`` itself.

Example
-------
>>> from workbench import T
>>> @T.prim_func
... def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
...     for i in T.serial(8):
...         with T.block("B"):
...             vi = T.axis.spatial(8, i)
...             B[vi] = A[vi] + 1.0
>>> add_one.name
'add_one'
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.ir.expr import DTYPES, INTRINSICS
from workbench.script.errors import DSLError

if TYPE_CHECKING:
    from workbench.ir.function import PrimFunc


class DSLFunction:
    """A name of ``T`` that only means something inside a ``@T.prim_func`` body."""

    def __init__(self, name: str, doc: str = ""):
        self.dsl_name = name
        self.__doc__ = doc or f"``T.{name}``: see the workbench DSL reference."
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        raise DSLError(f"T.{self.dsl_name}(...) can only be used inside a @T.prim_func body",
                       kind="unsupported")

    def __repr__(self) -> str:
        return f"<T.{self.dsl_name}>"


@dataclass(frozen=True)
class BufferType:
    """What ``T.Buffer(shape, dtype)`` evaluates to in a parameter annotation."""

    shape: tuple
    dtype: str = "float32"


def Buffer(shape, dtype: str = "float32", **_ignored) -> BufferType:
    """A buffer parameter type: ``A: T.Buffer((M, K), "float32")``.

    Example
    -------
    >>> T.Buffer((4, 8), "float16")
    BufferType(shape=(4, 8), dtype='float16')
    """
    if isinstance(shape, int):
        shape = (shape,)
    return BufferType(tuple(shape), dtype)


class _Axis:
    """``T.axis.spatial``, ``T.axis.reduce`` and ``T.axis.remap``."""

    def __init__(self):
        self.spatial = DSLFunction("axis.spatial", "A spatial block iter var: "
                                   "``vi = T.axis.spatial(extent, value)``.")
        self.reduce = DSLFunction("axis.reduce", "A reduce block iter var: "
                                  "``vk = T.axis.reduce(extent, value)``.")
        self.remap = DSLFunction("axis.remap", "Several iter vars bound to loop vars: "
                                 "``vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])``.")

    def __repr__(self) -> str:
        return "<T.axis>"


def prim_func(func: Callable) -> PrimFunc:
    """Decorator: parse a Python function written in the DSL into a ``PrimFunc``.

    The body is never executed: its source is read with ``inspect.getsource`` and parsed.
    Shapes may use Python ints from the enclosing scope (module globals, closure variables,
    arguments of an enclosing factory function).

    Raises
    ------
    DSLError
        When the source uses something the DSL does not support, pointing at the line.

    Example
    -------
    >>> from workbench import T
    >>> N = 16
    >>> @T.prim_func
    ... def scale(A: T.Buffer((N,), "float32"), B: T.Buffer((N,), "float32")):
    ...     for i in T.serial(N):
    ...         with T.block("B"):
    ...             vi = T.axis.spatial(N, i)
    ...             B[vi] = A[vi] * 2.0
    >>> [buf.shape for buf in scale.params]
    [(16,), (16,)]
    """
    from workbench.script.parser import parse_python_function

    caller = sys._getframe(1)
    try:
        return parse_python_function(func, dict(caller.f_locals))
    except DSLError as error:
        raise error.with_traceback(None) from None
    finally:
        del caller


_STATEMENT_NAMES = (
    "grid", "serial", "parallel", "vectorized", "unroll", "thread_binding", "block", "init",
    "reads", "writes", "alloc_buffer", "where", "block_attr", "func_attr", "evaluate",
)
_EXPR_NAMES = ("if_then_else", "max", "min", "floordiv", "floormod", "Cast")


class _TNamespace:
    """The ``T`` object: ``from workbench import T``."""

    def __init__(self):
        self.prim_func = prim_func
        self.Buffer = Buffer
        self.axis = _Axis()
        for name in _STATEMENT_NAMES + _EXPR_NAMES + tuple(INTRINSICS):
            setattr(self, name, DSLFunction(name))
        for dtype in DTYPES:
            setattr(self, dtype, DSLFunction(dtype, f"A ``{dtype}`` constant: ``T.{dtype}(x)``."))

    def __repr__(self) -> str:
        return "<workbench DSL namespace T>"

    def names(self) -> list[str]:
        """Every public name of ``T`` (for suggestions in error messages)."""
        return [n for n in vars(self) if not n.startswith("_")] + [
            "axis.spatial", "axis.reduce", "axis.remap"]


T = _TNamespace()
