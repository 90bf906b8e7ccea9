"""The DSL: the ``T`` namespace, the parser and the printer.

Example
-------
>>> from workbench import T
>>> import workbench as wb
>>> @T.prim_func
... def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
...         C: T.Buffer((4,), "float32")):
...     for i in T.serial(4):
...         with T.block("C"):
...             vi = T.axis.spatial(4, i)
...             C[vi] = A[vi] + B[vi]
>>> wb.from_source(add.script()) == add
True
"""

from workbench.script.errors import DSLError
from workbench.script.namespace import T, prim_func
from workbench.script.parser import from_source
from workbench.script.printer import script, script_html, show

__all__ = ["T", "prim_func", "from_source", "DSLError", "script", "script_html", "show"]
