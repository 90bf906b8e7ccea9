"""``wb.explore``: change a schedule with widgets and see what changed and what it cost.

The schedule is the state (``explorer.history``, a tree of ``Schedule`` states); each widget
is a view of it or an action on it, and each action calls the public ``Schedule`` method a
user would type, so ``explorer.current.trace`` reads like a hand-written schedule.

Two speeds: the IR, its diff and the analytic roofline point are redrawn at once; the
legality table of the selection (every primitive probed), the code, the loop-nest drawing
and the warnings follow from worker threads; compiling and measuring run on another
(``MeasureRunner``), debounced, and fill in the numbers when they arrive. The machine code
(LLVM IR, assembly, PTX) is compiled only when its tab is opened. Every view is kept per
history node (``ViewCache``), so revisiting a node redraws nothing.

The class is split along its seams: state, actions and widgets here, the views in
``explorer_views`` (``ExplorerViews``), the measured numbers in ``explorer_measure``
(``ExplorerMeasuring``).
"""

from __future__ import annotations

import html
import threading
from concurrent.futures import ThreadPoolExecutor

from workbench.ir import PrimFunc
from workbench.schedule import Schedule, ScheduleError
from workbench.widgets import panes
from workbench.widgets.actions import (
    Ref,
    all_loops,
    block_names,
    blocks_under,
    label,
    loops_above,
    main_block,
    probe_arguments,
    refs_for,
)
from workbench.widgets.actions import apply as apply_action
from workbench.widgets.controls import Controls
from workbench.widgets.explorer_measure import ExplorerMeasuring
from workbench.widgets.explorer_views import DRAWING_FIRST_S, ExplorerViews
from workbench.widgets.history import History, HistoryNode
from workbench.widgets.keyboard import Keyboard
from workbench.widgets.layout import LOWERING, PANES, build_layout
from workbench.widgets.on_demand import OnDemand
from workbench.widgets.runner import MeasureRunner
from workbench.widgets.target_views import views_for
from workbench.widgets.tune_tab import TuneTab
from workbench.widgets.view_cache import ViewCache

__all__ = ["DRAWING_FIRST_S", "PANES", "Explorer", "explore"]


def explorable_targets() -> tuple[str, ...]:
    """The targets the explorer offers: every registered kind that explores as itself
    (the ``numpy`` reference explores as ``cpu``)."""
    from workbench.backends.target import Target, target_names

    return tuple(n for n in target_names() if Target(n).explore_target.name == n)


def explore_target(target):
    """``target`` (a name or a ``Target``) as the explorer builds for it; an unknown name
    raises ``ValueError`` naming the targets it can explore."""
    from workbench.backends.target import resolve_target

    try:
        return resolve_target(target, "explore").explore_target
    except ValueError:
        raise ValueError(
            f"explore: target {target!r} is not available; built targets: "
            f"{', '.join(explorable_targets())}"
        ) from None


def explore(func_or_schedule: PrimFunc | Schedule, target="cpu", **options) -> Explorer:
    """Open the explorer on a PrimFunc, or continue a Schedule's trace.

    Parameters
    ----------
    func_or_schedule : PrimFunc or Schedule
    target : str or Target
        ``"cpu"`` or ``"cuda"`` (any registered kind; the ``numpy`` reference explores as
        ``cpu``). What the explorer shows for it comes from the kind's ``explorer_views``
        hook (``workbench.widgets.target_views``); on ``cuda`` a bare function opens on the
        target's default binding (node 1, undo to see the start) so the kernel builds.
    **options
        ``measure`` (bool, default True), ``peaks`` (a ``MachinePeaks``), ``budget_s``
        (timing budget per measurement), ``debounce_s``.

    Example
    -------
    >>> ex = wb.explore(wb.ops.matmul(512, 512, 512))       # doctest: +SKIP
    >>> ex.split("i", [None, 32]); ex.parallel("i_0")        # doctest: +SKIP
    >>> ex.table                                              # doctest: +SKIP
    """
    return Explorer(func_or_schedule, target, **options)


class Explorer(ExplorerViews, ExplorerMeasuring):
    """The explorer's state, actions and widgets (see ``explore``)."""

    def __init__(
        self,
        func_or_schedule: PrimFunc | Schedule,
        target="cpu",
        *,
        measure: bool = True,
        peaks=None,
        budget_s: float = 0.3,
        debounce_s: float = 0.2,
    ):
        if isinstance(func_or_schedule, PrimFunc):
            schedule = Schedule(func_or_schedule)
        elif isinstance(func_or_schedule, Schedule):
            schedule = func_or_schedule
        else:
            raise TypeError(
                f"explore needs a PrimFunc or a Schedule, got {type(func_or_schedule).__name__}"
            )
        self.target = explore_target(target)
        self.measuring = measure
        self.runner = MeasureRunner(
            schedule.func_before, self.target, budget_s=budget_s, debounce_s=debounce_s,
            peaks=peaks,
        )
        self.history = History(
            schedule,
            "start" if not len(schedule.trace) else f"opened at step {len(schedule.trace)}",
            baseline=self.runner.baseline_name,
        )
        opening = views_for(self.target).opening
        if opening is not None and not len(schedule.trace):
            first = opening(schedule.mod)  # e.g. a CUDA kernel bound to GPU axes
            if first is not None:
                self.history.add(first[1], first[0])
                schedule = first[1]
        self.last_error: ScheduleError | None = None
        self.timings: dict[str, float] = {}
        self.warnings: list[str] = []
        self.footprint: dict[str, int] = {}
        self.cache = ViewCache()
        self.legal = self.block_legal = None
        self._drawn = threading.Event()
        self._views_generation = 0
        self._views_pending: list = []
        self._views_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-views")
        self._legality_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-legal")
        self._legality_lock = threading.Lock()
        self.block = main_block(schedule.mod)
        self._loop_depth: int | None = None  # of the selection before the last action
        loops = loops_above(schedule.mod, self.block)
        self.loop = loops[0].name if loops else None
        self._build_widgets(explorable_targets())
        self.refresh()

    # --- state -----------------------------------------------------------------------

    @property
    def node(self) -> HistoryNode:
        return self.history.current

    @property
    def current(self) -> Schedule:
        """The current schedule (a copy: changing it does not change the explorer)."""
        return self.node.schedule.copy()

    @property
    def table(self):
        """The history as a DataFrame: step, primitive, ms median, IQR, GFLOP/s, GB/s,
        ``x <baseline>`` (``x np.matmul`` or ``x reference``), compile s (NaN until
        measured), note (a noisy timing, re-measured)."""
        return self.history.to_frame()

    # --- actions (each one is a public Schedule method) ------------------------------

    def apply(self, primitive: str, *args, **kwargs) -> bool:
        """Apply ``primitive`` at the current node; loops and blocks given by name.

        Returns False, shows the rendered ``ScheduleError`` and changes nothing when the
        primitive refuses.
        """
        args = refs_for(primitive, args)
        node = self.node
        try:
            schedule, handles, made = apply_action(
                node.schedule, node.handles, primitive, args, kwargs
            )
        except ScheduleError as err:
            self.last_error = err
            self.views["error"].value = err._repr_html_()
            return False
        self.last_error = None
        self.views["error"].value = ""
        before = [i.name for i in loops_above(node.func, self.block)]
        self._loop_depth = before.index(self.loop) if self.loop in before else None
        self.history.add(schedule, label(primitive, args, kwargs), handles)
        self._keep_selection(made)
        self.refresh()
        return True

    def show_message(self, text: str) -> None:
        """A note in the message line (a choice missing for an action); nothing changes."""
        self.views["error"].value = f"<span class='wb-message'>{html.escape(text)}</span>"

    def apply_default(
        self, primitive: str, loop: str | None = None, *, block: str | None = None
    ) -> bool:
        """Apply ``primitive`` at a loop (default: the selected one) or at ``block`` with the
        legality probe's default arguments (what the primitive panel's buttons do)."""
        ref = Ref("block", block) if block is not None else Ref("loop", loop or self.loop)
        try:
            args, kwargs = probe_arguments(self.node.schedule, primitive, ref)
        except ScheduleError as err:
            self.last_error = err
            self.views["error"].value = err._repr_html_()
            return False
        return self.apply(primitive, *args, **kwargs)

    def split(self, loop: str, factors: list) -> bool:
        return self.apply("split", loop, factors=list(factors))

    def reorder(self, *loops: str) -> bool:
        return self.apply("reorder", *loops)

    def fuse(self, *loops: str) -> bool:
        return self.apply("fuse", *loops)

    def parallel(self, loop: str) -> bool:
        return self.apply("parallel", loop)

    def vectorize(self, loop: str) -> bool:
        return self.apply("vectorize", loop)

    def unroll(self, loop: str) -> bool:
        return self.apply("unroll", loop)

    def bind(self, loop: str, thread_axis: str) -> bool:
        return self.apply("bind", loop, thread_axis=thread_axis)

    def undo(self) -> None:
        """Go back to the parent node (the node stays in the history)."""
        self.history.undo()
        self._keep_selection()
        self.refresh()

    def jump(self, node_id: int) -> None:
        """Show node ``node_id``; the next action branches from it."""
        self.history.jump(node_id)
        self._keep_selection()
        self.refresh()

    def select(self, block: str | None = None, loop: str | None = None) -> None:
        """Select a block (its outermost loop) or a loop (and the block it encloses, when it
        does not enclose the selected one); panes follow the selection.

        Raises ``ValueError`` naming the choices for a block or loop the current node does
        not have (nothing changes).
        """
        func = self.node.func
        if block is not None and block not in block_names(func):
            raise ValueError(f"select: no block {block!r}; blocks: "
                             f"{', '.join(block_names(func))}")
        if loop is not None and loop not in all_loops(func):
            raise ValueError(f"select: no loop {loop!r} at node {self.node.id}; loops: "
                             f"{', '.join(all_loops(func))}")
        if block is not None:
            self.block = block
            loops = loops_above(func, block)
            self.loop = loops[0].name if loops else None
        if loop is not None:
            if loop not in [i.name for i in loops_above(func, self.block)]:
                self.block = blocks_under(func, loop)[0]
            self.loop = loop
        self.refresh(measure=False)

    def set_target(self, target) -> None:
        """Show and measure for ``target`` (a name or a ``Target``)."""
        self.target = self.runner.target = explore_target(target)
        self.refresh()

    def show_lowering(self, tab: str = "LLVM IR / PTX") -> None:
        """Open the lowering viewer at ``tab`` (one of ``LOWERING``); the machine code tabs
        compile the kernel on a worker thread (``wait()`` for it)."""
        self.tabs.selected_index = PANES.index("lowering")
        self.lowering_tabs.selected_index = LOWERING.index(tab)

    def tuning_dashboard(self, space="generated", db: str = "records.jsonl", **kwargs):
        """A tuning dashboard for the explored function on the explorer's target: pin knobs
        in its dropdowns, tune the rest (the ``space`` is made for that target: the
        ``cuda`` generated space binds threads, the ``cpu`` one packs and vectorizes).

        Example
        -------
        >>> dash = wb.explore(matmul, target="cpu").tuning_dashboard(db="r.jsonl")  # doctest: +SKIP
        >>> dash.space.pin(**{"pack:C": 1}); dash.start()                           # doctest: +SKIP
        """
        from workbench.widgets.tuning_dashboard import TuningDashboard

        return TuningDashboard(self.node.schedule.func_before, space=space,
                               target=self.target.name,
                               db=db, **kwargs)

    def wait(self, timeout: float = 120.0) -> Explorer:
        """Block until pending views, legality tables, machine code and measurements are
        shown (scripts, tests, notebooks)."""
        while self._views_pending:
            self._views_pending.pop(0).result(timeout)
        self.runner.wait(timeout)
        while self._views_pending:  # machine code asked for when a measurement arrived
            self._views_pending.pop(0).result(timeout)
        return self

    def close(self) -> None:
        """Stop the worker threads (the widgets stay as they are)."""
        self.runner.close()
        self.on_demand.close()
        for executor in (self._views_executor, self._legality_executor):
            executor.shutdown(wait=False, cancel_futures=True)

    # --- diff / export ---------------------------------------------------------------

    def diff(self, a: int, b: int):
        return self.history.diff(a, b)

    def show_diff(self, a: int | None = None, b: int | None = None) -> None:
        a = self.controls.diff_a.value if a is None else a
        b = self.controls.diff_b.value if b is None else b
        if a is None or b is None:
            return
        diff = self.history.diff(a, b)
        numbers = "".join(
            f"<tr><td>{k}</td><td>{panes.html.escape(str(v[0]))}</td>"
            f"<td>{panes.html.escape(str(v[1]))}</td></tr>"
            for k, v in diff.numbers.items()
        )
        self.views["node diff"].value = (
            f"<b>node {a} → node {b}</b><table>{numbers}</table><b>IR</b>"
            + panes.code_diff(self.history[a].ir, self.history[b].ir).html
            + "<b>code</b>"
            + panes.code_diff(self.history[a].code, self.history[b].code).html
        )

    def show_export(self, node_id: int | None = None) -> None:
        node_id = self.history.current_id if node_id is None else node_id
        self.views["export"].value = (
            "# Python (the trace)\n"
            + self.history.export_python(node_id)
            + "\n# JSON\n"
            + self.history.export_json(node_id)
        )

    # --- widgets and text ------------------------------------------------------------

    def _build_widgets(self, targets: tuple[str, ...]) -> None:
        self.controls = Controls(self, targets)
        self.keyboard = Keyboard(self)
        self.tuner = TuneTab(self)
        layout = build_layout(self.controls.box(), self.tuner.widget)
        self.views, self.tabs, self.lowering_tabs = layout.views, layout.tabs, layout.lowering_tabs
        self.progress, self.widget = layout.progress, layout.widget
        self.on_demand = OnDemand(self, self._lazy_panes())
        self.keyboard.attach(self.controls.loop, self.views["IR"])
        self.tabs.observe(self._on_tab, names="selected_index")
        self.lowering_tabs.observe(self._on_tab, names="selected_index")

    def __str__(self) -> str:
        node = self.node
        lines = [
            f"Explorer: {node.schedule.func_before.name}, target {self.target}, node {node.id}",
            f"selected block {self.block!r}, loop {self.loop!r}",
        ]
        if self.last_error is not None:
            lines.append(f"last error: {self.last_error.primitive}: {self.last_error.message}")
        lines += [
            "",
            "trace:",
            str(node.trace) or "(empty)",
            "",
            node.ir,
            "",
            "history:",
            str(self.history),
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<Explorer {self.node.schedule.func_before.name}: node {self.node.id} "
            f"of {len(self.history)}>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/plain"] = str(self)
        return bundle
