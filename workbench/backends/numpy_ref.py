"""The ``numpy`` target: the reference executor, the oracle every backend is checked against.

It runs any PrimFunc, scheduled or not. Each top-level statement of the function is run

* as whole numpy arrays when it is a perfect nest around a simple block (see
  ``numpy_whole_array``): the unscheduled operator library takes this path, so an
  unscheduled 256x256x256 matmul runs in a fraction of a second;
* otherwise as loops: the statement is lowered and turned into plain Python source (the
  ``"python"`` flavour of ``codegen_python``, no Numba), which is ``exec``-uted.

Intermediate buffers are allocated with ``np.zeros`` for each call.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.backends import numpy_whole_array
from workbench.backends.bounds_checks import has_bounds_checks
from workbench.backends.codegen_python import generate_source
from workbench.backends.lower import lower
from workbench.ir import TRUE, BlockRealize, PrimFunc, SeqStmt, Stmt


class ReferenceProgram:
    """A PrimFunc prepared for reference execution: a list of steps run in order.

    ``sources`` holds the Python source of each statement run as loops (for display).
    """

    def __init__(self, func: PrimFunc, *, whole_array: bool = True):
        self.func = func
        self.intermediates = func.root_block.alloc_buffers
        self.steps: list[Callable[[dict], None]] = []
        self.sources: list[str] = []
        self.modes: list[str] = []
        root = func.root_block
        if root.init is not None:
            self._add_loops(root.init)
        statements = root.body.stmts if isinstance(root.body, SeqStmt) else (root.body,)
        for stmt in statements:
            if whole_array and not has_bounds_checks(stmt):
                try:
                    plan = numpy_whole_array.analyze(stmt)
                except numpy_whole_array.NotWholeArray:
                    plan = None
                if plan is not None:
                    self._add_whole_array(plan, stmt)
                    continue
            self._add_loops(stmt)

    def _add_whole_array(self, plan, stmt: Stmt):
        def step(arrays, plan=plan, stmt=stmt):
            try:
                numpy_whole_array.run(plan, arrays)
            except numpy_whole_array.NotWholeArray:
                self._loop_function(stmt)(arrays)  # found out before anything was written

        self.steps.append(step)
        self.modes.append("whole-array")

    def _add_loops(self, stmt: Stmt):
        self.steps.append(self._loop_function(stmt))
        self.modes.append("loops")

    def _loop_function(self, stmt: Stmt) -> Callable[[dict], None]:
        """Compile ``stmt`` to a Python function of every buffer (parameters, intermediates)."""
        params = tuple(self.func.params) + tuple(self.intermediates)
        root = self.func.root_block.replace(body=stmt, init=None, alloc_buffers=())
        piece = PrimFunc(self.func.name, params, BlockRealize((), TRUE, root))
        generated = generate_source(lower(piece), target="python")
        namespace: dict = {}
        code = compile(generated.source, f"<workbench reference {self.func.name}>", "exec")
        exec(code, namespace)
        function = namespace[generated.func_name]
        self.sources.append(generated.source)
        names = [buf.name for buf in params]

        def step(arrays):
            with np.errstate(all="ignore"):
                function(*(arrays[name] for name in names))

        return step

    def __call__(self, *args: np.ndarray) -> None:
        arrays = {buf.name: value for buf, value in zip(self.func.params, args, strict=True)}
        for buf in self.intermediates:
            arrays[buf.name] = np.zeros(buf.shape, dtype=buf.dtype)
        for step in self.steps:
            step(arrays)
