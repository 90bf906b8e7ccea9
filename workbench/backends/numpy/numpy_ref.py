"""The ``numpy`` target: the reference executor, the oracle every backend is checked against.

It runs any PrimFunc, scheduled or not. Each top-level statement of the function is run

* as whole numpy arrays when it is a perfect nest around a simple block (see
  ``numpy_whole_array``): the unscheduled operator library takes this path, so an
  unscheduled 256x256x256 matmul runs in a fraction of a second;
* otherwise as loops: the statement is lowered and turned into plain Python source (the
  ``"python"`` flavour of ``codegen_python``, no Numba), which is ``exec``-uted.

Intermediate buffers are allocated with ``np.zeros`` for each call.

Race detection: ``iteration_order="reversed"`` or ``"shuffled"`` (seeded by ``order_seed``)
runs every ``parallel`` / ``vectorized`` loop in another order than its program order (a
statement holding one runs as loops, not whole arrays). A schedule whose parallel iterations
are really independent computes the same result in any order; one that races usually does
not. ``"shuffled"`` visits ``i = (p * a + b) % n`` for ``p = 0 .. n-1`` with a random ``a``
coprime with ``n`` (a permutation), reversed half of the time.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from workbench.backends.common.bounds_checks import has_bounds_checks
from workbench.backends.common.codegen_python import generate_source
from workbench.backends.common.lower import lower
from workbench.backends.numpy import numpy_whole_array
from workbench.ir import (
    TRUE,
    BlockRealize,
    For,
    ForKind,
    IntImm,
    IRMapper,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    collect,
    const_value,
    substitute,
)

ITERATION_ORDERS = ("program", "reversed", "shuffled")
"""Orders the reference can run parallel and vectorized loops in (``iteration_order``)."""

_PARALLEL = (ForKind.PARALLEL, ForKind.VECTORIZED)


class _PermuteLoops(IRMapper):
    """Run each parallel / vectorized loop of constant extent in a permuted order."""

    def __init__(self, order: str, rng: np.random.Generator):
        self.order, self.rng = order, rng

    def _position(self, p: Var, n: int) -> PrimExpr:
        if self.order == "reversed" or n == 2:
            return IntImm(n - 1) - p
        a = int(self.rng.choice([c for c in range(1, n) if math.gcd(c, n) == 1]))
        b = int(self.rng.integers(n))
        value: PrimExpr = (p * IntImm(a) + IntImm(b)) % IntImm(n)
        return IntImm(n - 1) - value if self.rng.random() < 0.5 else value

    def visit_For(self, node: For):
        body = self.visit(node.body)
        n, low = const_value(node.extent), const_value(node.min)
        if node.kind not in _PARALLEL or not isinstance(n, int) or n < 2:
            return node if body is node.body else node.replace(body=body)
        p = Var(f"{node.loop_var.name}_order", node.loop_var.dtype)
        value = self._position(p, n) + node.min if low != 0 else self._position(p, n)
        body = substitute(body, {node.loop_var: value})
        return For(p, IntImm(0), node.extent, ForKind.SERIAL, body)


def permute_parallel_loops(stmt: Stmt, order: str, seed: int = 0) -> Stmt:
    """``stmt`` with its parallel / vectorized loops run in ``order`` (see the module doc).

    Example
    -------
    >>> permuted = permute_parallel_loops(func.body, "reversed")
    """
    if order not in ITERATION_ORDERS:
        raise ValueError(f"iteration_order must be one of {ITERATION_ORDERS}, not {order!r}")
    if order == "program":
        return stmt
    return _PermuteLoops(order, np.random.default_rng(seed)).visit(stmt)


def _has_parallel_loop(stmt: Stmt) -> bool:
    return bool(collect(stmt, lambda n: isinstance(n, For) and n.kind in _PARALLEL))


class ReferenceProgram:
    """A PrimFunc prepared for reference execution: a list of steps run in order.

    ``sources`` holds the Python source of each statement run as loops (for display).
    ``iteration_order`` / ``order_seed``: see the module docstring (race detection).
    """

    def __init__(self, func: PrimFunc, *, whole_array: bool = True,
                 iteration_order: str = "program", order_seed: int = 0):
        if iteration_order not in ITERATION_ORDERS:
            raise ValueError(
                f"iteration_order must be one of {ITERATION_ORDERS}, not {iteration_order!r}"
            )
        self.iteration_order, self.order_seed = iteration_order, order_seed
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
            permuted = iteration_order != "program" and _has_parallel_loop(stmt)
            if whole_array and not permuted and not has_bounds_checks(stmt):
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
        stmt = permute_parallel_loops(stmt, self.iteration_order, self.order_seed + len(self.steps))
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
