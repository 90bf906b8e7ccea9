"""A branching schedule history: pure Python, no widgets.

Every node is one state of a schedule: its trace, its IR, its generated code (made on
demand) and, once measured, its numbers. Applying a step at a node that already has children
starts a new branch; nothing is ever dropped, so any two nodes can be compared.

Example
-------
>>> from workbench import ops, Schedule
>>> history = History(Schedule(ops.matmul(64, 64, 64)))
>>> sch = history.current.schedule.copy()
>>> i, j, k = sch.get_loops(sch.get_block("C"))
>>> _ = sch.split(i, factors=[None, 8])
>>> node = history.add(sch, "split")
>>> history.undo().id, node.parent
(0, 0)
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from workbench.ir import PrimFunc
    from workbench.measure import MeasureResult
    from workbench.schedule import Schedule, Trace

TABLE_COLUMNS = (
    "step",
    "primitive",
    "ms median",
    "IQR ms",
    "GFLOP/s",
    "GB/s",
    "x baseline",
    "compile s",
    "note",
)
"""The table's columns; ``x baseline`` is shown as ``x <the baseline's name>``
(``x np.matmul``, ``x reference``: see ``workbench.widgets.runner.baseline_for``)."""


@dataclasses.dataclass
class Measurement:
    """What one node cost: the measure result, the compile time, the speed-up over the
    baseline named ``baseline`` (``np.matmul`` or ``reference``), and a ``note`` when the
    timing was noisy (re-measured, or noisy still: ``workbench.measure.noise``)."""

    result: MeasureResult
    compile_s: float
    speedup: float | None = None
    baseline: str = "reference"
    note: str | None = None

    @property
    def ms(self) -> float:
        return self.result.median_s * 1e3


@dataclasses.dataclass
class HistoryNode:
    """One schedule state.

    Attributes
    ----------
    id, parent : int, int or None
        Node ids; the root has no parent.
    schedule : Schedule
        The state (never mutated: work on ``schedule.copy()``).
    label : str
        What made it: the primitive with its loop names (``"split i [None, 32]"``).
    handles : dict
        ``name -> handle`` of loops and blocks already fetched in this schedule's trace.
    measurement : Measurement or None
        Filled when the node has been compiled and measured.
    """

    id: int
    parent: int | None
    schedule: Schedule
    label: str
    handles: dict = dataclasses.field(default_factory=dict)
    measurement: Measurement | None = None
    _code: str | None = dataclasses.field(default=None, repr=False)

    @property
    def trace(self) -> Trace:
        return self.schedule.trace

    @property
    def func(self) -> PrimFunc:
        return self.schedule.mod

    @property
    def ir(self) -> str:
        """The scheduled function as TVMScript-like text."""
        return self.func.script()

    @property
    def code(self) -> str:
        """The Numba source the ``cpu`` target generates (made once, on demand)."""
        if self._code is None:
            from workbench.backends import lower_to_numba_source

            self._code = lower_to_numba_source(self.func)
        return self._code

    def python(self) -> str:
        """The node as a Python script: the trace, replayable on the original function."""
        name = self.schedule.func_before.name
        lines = [f"sch = wb.Schedule({name})"] + [f"{line}" for line in self.trace.lines()]
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        """The node as JSON: its trace (``wb.Trace.from_json``) and its numbers."""
        data: dict[str, Any] = {
            "id": self.id,
            "parent": self.parent,
            "label": self.label,
            "function": self.schedule.func_before.name,
            "trace": json.loads(self.trace.to_json()),
        }
        if self.measurement is not None:
            data["measurement"] = {
                **self.measurement.result.to_dict(),
                "compile_s": self.measurement.compile_s,
                "speedup": self.measurement.speedup,
                "baseline": self.measurement.baseline,
                "note": self.measurement.note,
            }
        return json.dumps(data, indent=1)


@dataclasses.dataclass(frozen=True)
class NodeDiff:
    """Two nodes side by side: unified diffs of IR and code, and their numbers."""

    a: int
    b: int
    ir: str
    code: str
    numbers: dict

    def __str__(self) -> str:
        lines = [f"node {self.a} -> node {self.b}"]
        for key, (left, right) in self.numbers.items():
            lines.append(f"  {key}: {_fmt(left)} -> {_fmt(right)}")
        return "\n".join(
            lines + ["--- IR", self.ir or "(same IR)", "--- code", self.code or "(same code)"]
        )


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _unified(a: str, b: str, name_a: str, name_b: str) -> str:
    return "\n".join(
        difflib.unified_diff(a.splitlines(), b.splitlines(), name_a, name_b, lineterm="")
    )


class History:
    """The tree of schedule states an explorer went through.

    ``current`` is the node shown; ``add`` makes a child of it (a new branch when it already
    has children), ``undo`` moves to its parent, ``jump`` to any node.
    """

    def __init__(self, schedule: Schedule, label: str = "start", baseline: str = "reference"):
        self.baseline = baseline  # the name of what "x <baseline>" compares with
        root = HistoryNode(0, None, schedule.copy(), label)
        self.nodes: dict[int, HistoryNode] = {0: root}
        self.current_id = 0

    # --- navigation ----------------------------------------------------------------

    @property
    def current(self) -> HistoryNode:
        return self.nodes[self.current_id]

    def __getitem__(self, node_id: int) -> HistoryNode:
        if node_id not in self.nodes:
            raise KeyError(f"history has no node {node_id} (nodes: {sorted(self.nodes)})")
        return self.nodes[node_id]

    def __len__(self) -> int:
        return len(self.nodes)

    def add(self, schedule: Schedule, label: str, handles: dict | None = None) -> HistoryNode:
        """Record ``schedule`` as a child of the current node and make it current."""
        node = HistoryNode(len(self.nodes), self.current_id, schedule, label, dict(handles or {}))
        self.nodes[node.id] = node
        self.current_id = node.id
        return node

    def undo(self) -> HistoryNode:
        """Move to the parent of the current node (the node itself is kept)."""
        parent = self.current.parent
        if parent is None:
            raise IndexError("nothing to undo: the current node is the start")
        self.current_id = parent
        return self.current

    def jump(self, node_id: int) -> HistoryNode:
        """Make node ``node_id`` current."""
        self.current_id = self[node_id].id
        return self.current

    def children(self, node_id: int) -> list[int]:
        return [n.id for n in self.nodes.values() if n.parent == node_id]

    def path(self, node_id: int | None = None) -> list[HistoryNode]:
        """The nodes from the start to ``node_id`` (default: the current node)."""
        node = self[self.current_id if node_id is None else node_id]
        chain = [node]
        while node.parent is not None:
            node = self.nodes[node.parent]
            chain.append(node)
        return chain[::-1]

    def branches(self) -> list[list[int]]:
        """Every path from the start to a leaf, as node ids (first branch first)."""
        leaves = [n for n in self.nodes if not self.children(n)]
        return [[n.id for n in self.path(leaf)] for leaf in leaves]

    # --- comparison and export -----------------------------------------------------

    def diff(self, a: int, b: int) -> NodeDiff:
        """IR, code and number differences between nodes ``a`` and ``b``."""
        left, right = self[a], self[b]
        numbers = {}
        for key, get in (
            ("steps", lambda n: len(n.trace)),
            ("ms", lambda n: n.measurement.ms if n.measurement else None),
            ("GFLOP/s", lambda n: n.measurement.result.gflops if n.measurement else None),
        ):
            numbers[key] = (get(left), get(right))
        return NodeDiff(
            a,
            b,
            _unified(left.ir, right.ir, f"node {a}", f"node {b}"),
            _unified(left.code, right.code, f"node {a}", f"node {b}"),
            numbers,
        )

    def export_python(self, node_id: int | None = None) -> str:
        return self[self.current_id if node_id is None else node_id].python()

    def export_json(self, node_id: int | None = None) -> str:
        return self[self.current_id if node_id is None else node_id].to_json()

    def to_frame(self) -> pd.DataFrame:
        """One row per node: step, primitive, ms median, IQR, GFLOP/s, GB/s, ``x <baseline>``,
        compile s, note.

        ``step`` is the node id, ``parent`` its parent; unmeasured nodes have NaN numbers;
        ``note`` says when a timing was noisy (empty otherwise).
        """
        import pandas as pd

        rows = []
        for node in self.nodes.values():
            m = node.measurement
            res = m.result if m else None
            rows.append(
                {
                    "step": node.id,
                    "parent": node.parent,
                    "primitive": node.label,
                    "ms median": res.median_s * 1e3 if res else None,
                    "IQR ms": res.iqr_s * 1e3 if res else None,
                    "GFLOP/s": res.gflops if res else None,
                    "GB/s": res.gbps if res else None,
                    "x baseline": m.speedup if m else None,
                    "compile s": m.compile_s if m else None,
                    "note": (m.note or "") if m else "",
                    "current": node.id == self.current_id,
                }
            )
        frame = pd.DataFrame(
            rows, columns=["step", "parent", "primitive", *TABLE_COLUMNS[2:], "current"]
        )
        frame = frame.astype({c: "float64" for c in TABLE_COLUMNS[2:-1]})
        return frame.rename(columns={"x baseline": f"x {self.baseline}"})

    # --- text ------------------------------------------------------------------------

    def tree_lines(self) -> list[str]:
        """The tree as indented text, the current node marked with ``*``."""
        lines: list[str] = []

        def visit(node_id: int, depth: int) -> None:
            node = self.nodes[node_id]
            mark = "*" if node_id == self.current_id else " "
            cost = f"  {node.measurement.ms:.3f} ms" if node.measurement else ""
            lines.append(f"{mark} {'  ' * depth}[{node_id}] {node.label}{cost}")
            for child in self.children(node_id):
                visit(child, depth + 1)

        visit(0, 0)
        return lines

    def __str__(self) -> str:
        return "\n".join(self.tree_lines())

    def __repr__(self) -> str:
        return f"<History: {len(self.nodes)} nodes, current {self.current_id}>"
