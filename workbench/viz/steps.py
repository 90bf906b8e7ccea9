"""Lowering steps side by side: a table of what each moves and costs, and a rendering of each.

A *lowering walk-through* is a list of ``LoweringStep`` (``workbench.recipes.softmax_lowering``):
the same computation at successive stages (three passes, fused, vectorized, rewritten).
``steps_table`` puts one row per step (blocks, passes over memory, DRAM bytes, executed
access bytes, FLOPs, and optionally the measured CPU time); ``show_steps`` renders each
step's title, explanation, schedule trace and IR (highlighted HTML in a notebook, text in a
terminal).

Three byte columns. ``DRAM bytes`` (``workbench.ir.traffic.pass_traffic``) charges each
top-level pass the full size of every global buffer it touches: what fusion saves.
``access bytes`` (``traffic.access_bytes``) counts every load and store the kernel executes,
local ones included, each occurrence in a block's text counted. ``global access bytes``
(``global_access_bytes``) counts the loads and stores of *global* buffers, each distinct
access once per block execution (as after common-subexpression elimination): how often the
kernel goes to the input and output arrays, hit or miss; the online rewrite lowers it
(each element of ``A`` read twice instead of three times).

Example
-------
>>> from workbench.recipes.softmax_lowering import softmax_lowering_steps
>>> table = steps_table(softmax_lowering_steps(4, 16))
>>> table[["passes", "DRAM bytes"]].values.tolist()
[[3, 1136], [1, 512], [1, 512], [1, 512], [1, 512]]
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

from workbench.ir.analysis import find_blocks, flops
from workbench.ir.buffer import Buffer
from workbench.ir.expr import BufferLoad
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRVisitor
from workbench.ir.stmt import BufferStore
from workbench.ir.traffic import access_bytes, executed_total, pass_traffic
from workbench.viz.tables import round_frame


def steps_table(steps: Sequence, measure: bool = False, shape: tuple[int, ...] | None = None,
                *, seed: int = 0, budget_s: float = 0.5):
    """One row per step: its blocks, passes, bytes and FLOPs; with ``measure``, its CPU time.

    Parameters
    ----------
    steps : sequence of LoweringStep
        Anything with ``title`` and ``func`` attributes.
    measure : bool
        Build each step for the ``cpu`` target, check its output against the first step on
        the ``numpy`` target (column ``max abs error``), and time it with ``wb.measure``
        (columns ``time ms`` (median), ``GB/s``: DRAM bytes of the step / median time, and
        ``speedup`` against the first step), rounded for display (``tables.round_frame``:
        3 significant digits, rates to 0.1, speedups to 0.01).
    shape : tuple of int, optional
        The shape of the random inputs (uniform in ``[-4, 4)``); by default each input
        parameter's own shape. Given, it must equal the first parameter's shape (a check
        that the steps were built for the size you mean to time).
    seed : int
        Seed of the random inputs.
    budget_s : float
        Timing budget per step, passed to ``wb.measure``.

    Returns
    -------
    pandas.DataFrame
        Columns ``title``, ``blocks``, ``passes``, ``DRAM bytes``, ``access bytes``,
        ``global access bytes``, ``flops`` (+ the measured ones), indexed by step number from 1.

    Example
    -------
    >>> from workbench.recipes.softmax_lowering import softmax_lowering_steps
    >>> steps_table(softmax_lowering_steps(4, 16))["global access bytes"].tolist()
    [2848, 1024, 1024, 768, 768]
    """
    import pandas as pd

    rows = [_static_row(step) for step in steps]
    table = pd.DataFrame(rows, index=pd.RangeIndex(1, len(rows) + 1, name="step"))
    if not measure or not steps:
        return table
    measured = _measure_steps(steps, shape, seed, budget_s)
    for column in ("max abs error", "time ms"):
        table[column] = [m[column] for m in measured]
    table["GB/s"] = table["DRAM bytes"] / (table["time ms"] * 1e-3) / 1e9
    table["speedup"] = table["time ms"].iloc[0] / table["time ms"]
    return round_frame(table)  # shown rounded: unrounded floats wrapped across lines


def _static_row(step) -> dict:
    func: PrimFunc = step.func
    passes = pass_traffic(func)
    return {
        "title": step.title,
        "blocks": len(find_blocks(func)),
        "passes": len(passes),
        "DRAM bytes": sum(p.bytes for p in passes),
        "access bytes": access_bytes(func),
        "global access bytes": global_access_bytes(func),
        "flops": flops(func),
    }


class _GlobalAccesses(IRVisitor):
    """The distinct loads and stores of global buffers in one statement (nested blocks
    excluded)."""

    def __init__(self):
        self.accesses: set[tuple[str, object, Buffer]] = set()

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer.scope == "global":
            self.accesses.add(("load", node, node.buffer))
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        if node.buffer.scope == "global":
            self.accesses.add(("store", (node.buffer, node.indices), node.buffer))
        self.generic_visit(node)

    def visit_BlockRealize(self, node):
        return None  # counted as its own block


def _distinct_global_bytes(stmt) -> int:
    if stmt is None:
        return 0
    counter = _GlobalAccesses()
    counter.visit(stmt)
    return sum(buffer.itemsize for _, _, buffer in counter.accesses)


def global_access_bytes(func: PrimFunc) -> int:
    """Bytes of the global loads and stores one call executes, each distinct access of a
    block counted once per execution of the block (its init once per spatial point).

    Example
    -------
    >>> from workbench import ops
    >>> global_access_bytes(ops.softmax(4, 16))   # 64 x (12 + 16 + 16) + 2 x 4 x 4 inits
    2848
    """
    return executed_total(func, _distinct_global_bytes)


def _random_inputs(func: PrimFunc, shape, seed: int) -> list[np.ndarray]:
    inputs = func.params[:-1]
    if shape is not None and tuple(shape) != tuple(inputs[0].shape):
        raise ValueError(f"steps_table: shape={tuple(shape)} but the steps take "
                         f"{inputs[0].name} of shape {tuple(inputs[0].shape)}")
    rng = np.random.default_rng(seed)
    return [rng.uniform(-4.0, 4.0, size=b.shape).astype(b.dtype) for b in inputs]


def _measure_steps(steps: Sequence, shape, seed: int, budget_s: float) -> list[dict]:
    from workbench.backends import build
    from workbench.measure import measure

    first = steps[0].func
    inputs = _random_inputs(first, shape, seed)
    out_buffer = first.params[-1]
    expected = np.empty(out_buffer.shape, out_buffer.dtype)
    build(first, target="numpy")(*inputs, expected)
    results = []
    for step in steps:
        kernel = build(step.func, target="cpu")
        out = np.empty_like(expected)
        kernel(*inputs, out)
        error = float(np.max(np.abs(out.astype(np.float64) - expected)))
        res = measure(kernel, *inputs, out, budget_s=budget_s, name=step.title)
        results.append({"max abs error": error, "time ms": res.median_s * 1e3})
    return results


# --- rendering --------------------------------------------------------------------------------


def steps_text(steps: Sequence) -> str:
    """Every step as plain text: title, explanation, trace and IR script.

    Example
    -------
    >>> from workbench.recipes.softmax_lowering import softmax_lowering_steps
    >>> print(steps_text(softmax_lowering_steps(4, 16)[:1]).splitlines()[0])
    === 1. three passes ===
    """
    parts = []
    for step in steps:
        parts.append(f"=== {step.title} ===\n\n{step.explanation}\n")
        if step.trace:
            parts.append(f"Schedule trace:\n{step.trace}\n")
        parts.append(step.func.script())
    return "\n".join(parts)


def steps_html(steps: Sequence) -> str:
    """Every step as HTML: a heading, the explanation (markdown), the trace and the IR.

    The explanation is rendered with ``mistune`` when it is installed (it comes with
    Jupyter's nbconvert), else shown as preformatted text.

    Example
    -------
    >>> from workbench.recipes.softmax_lowering import softmax_lowering_steps
    >>> "<h3>1. three passes</h3>" in steps_html(softmax_lowering_steps(4, 16)[:1])
    True
    """
    from workbench.script.printer import script_html

    parts = []
    for step in steps:
        parts.append(f"<h3>{escape(step.title)}</h3>")
        parts.append(_markdown_html(step.explanation))
        if step.trace:
            parts.append("<details><summary>schedule trace</summary>"
                         f"<pre>{escape(step.trace)}</pre></details>")
        parts.append(script_html(step.func))
    return "\n".join(parts)


def _markdown_html(text: str) -> str:
    try:
        import mistune
    except ImportError:
        return f"<pre>{escape(text)}</pre>"
    return mistune.html(text)


class _StepsView:
    """Displays as HTML in a notebook and as text elsewhere."""

    def __init__(self, steps: Sequence):
        self.steps = list(steps)

    def _repr_html_(self) -> str:
        return steps_html(self.steps)

    def __repr__(self) -> str:
        return steps_text(self.steps)


def show_steps(steps: Sequence) -> None:
    """Show every step's title, explanation, schedule trace and IR.

    In a notebook this displays highlighted HTML; elsewhere it prints text.

    Example
    -------
    >>> from workbench.recipes.softmax_lowering import softmax_lowering_steps
    >>> show_steps(softmax_lowering_steps(4, 16)[:1])  # doctest: +ELLIPSIS
    === 1. three passes ===
    ...
    """
    from IPython import get_ipython  # a dependency (through ipywidgets)
    from IPython.display import display

    if get_ipython() is not None:
        display(_StepsView(steps))
    else:
        print(steps_text(steps))
