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
"""

from __future__ import annotations

import html
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from workbench import viz
from workbench.ir import PrimFunc
from workbench.schedule import Schedule, ScheduleError
from workbench.widgets import panes
from workbench.widgets.actions import (
    Ref,
    all_loops,
    block_names,
    label,
    legality,
    loops_above,
    probe_arguments,
    refs_for,
)
from workbench.widgets.actions import apply as apply_action
from workbench.widgets.controls import Controls
from workbench.widgets.history import History, HistoryNode, Measurement
from workbench.widgets.layout import LOWERING, MACHINE_CODE, PANES, build_layout
from workbench.widgets.on_demand import LazyPane, OnDemand
from workbench.widgets.runner import MeasureRunner
from workbench.widgets.tune_tab import TuneTab
from workbench.widgets.view_cache import ViewCache

DRAWING_FIRST_S = 0.3  # the legality probes and the compile wait this long for the drawing


def explore(func_or_schedule: PrimFunc | Schedule, target: str = "cpu", **options) -> Explorer:
    """Open the explorer on a PrimFunc, or continue a Schedule's trace.

    Parameters
    ----------
    func_or_schedule : PrimFunc or Schedule
    target : str
        ``"cpu"`` (``"cuda"`` once that backend is built).
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


class Explorer:
    """The explorer's state, actions and widgets (see ``explore``)."""

    def __init__(
        self,
        func_or_schedule: PrimFunc | Schedule,
        target: str = "cpu",
        *,
        measure: bool = True,
        peaks=None,
        budget_s: float = 0.3,
        debounce_s: float = 0.2,
    ):
        from workbench.backends.build import TARGETS

        if isinstance(func_or_schedule, PrimFunc):
            schedule = Schedule(func_or_schedule)
        elif isinstance(func_or_schedule, Schedule):
            schedule = func_or_schedule
        else:
            raise TypeError(
                f"explore needs a PrimFunc or a Schedule, got {type(func_or_schedule).__name__}"
            )
        if target not in TARGETS or target == "numpy":
            raise ValueError(
                f"explore: target {target!r} is not available; built targets: "
                f"{', '.join(t for t in TARGETS if t != 'numpy')}"
            )
        self.target = target
        self.measuring = measure
        self.runner = MeasureRunner(
            schedule.func_before, target, budget_s=budget_s, debounce_s=debounce_s, peaks=peaks
        )
        self.history = History(
            schedule,
            "start" if not len(schedule.trace) else f"opened at step {len(schedule.trace)}",
            baseline=self.runner.baseline_name,
        )
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
        blocks = block_names(schedule.mod)
        self.block = blocks[0]
        loops = loops_above(schedule.mod, self.block)
        self.loop = loops[0].name if loops else None
        self._build_widgets(tuple(t for t in TARGETS if t != "numpy"))
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
            schedule, handles = apply_action(node.schedule, node.handles, primitive, args, kwargs)
        except ScheduleError as err:
            self.last_error = err
            self.views["error"].value = err._repr_html_()
            return False
        self.last_error = None
        self.views["error"].value = ""
        self.history.add(schedule, label(primitive, args, kwargs), handles)
        self._keep_selection()
        self.refresh()
        return True

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
        """Select a block (its outermost loop) or a loop; panes follow the selection."""
        if block is not None:
            self.block = block
            loops = loops_above(self.node.func, block)
            self.loop = loops[0].name if loops else None
        if loop is not None:
            self.loop = loop
        self.refresh(measure=False)

    def set_target(self, target: str) -> None:
        self.target = self.runner.target = target
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

        return TuningDashboard(self.node.schedule.func_before, space=space, target=self.target,
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

    # --- rendering -------------------------------------------------------------------

    def _keep_selection(self) -> None:
        func = self.node.func
        blocks = block_names(func)
        if self.block not in blocks:
            self.block = blocks[0]
        names = [i.name for i in loops_above(func, self.block)]
        if self.loop not in names:
            self.loop = names[0] if names else None

    def refresh(self, measure: bool = True) -> None:
        """Redraw from the current node: the IR-only views now, the loop-nest drawing first
        on a worker thread, then the legality table and the other views, then the
        measurement (debounced).

        The legality probes and the compile wait for the drawing (``DRAWING_FIRST_S`` at
        most): the three share one interpreter lock, and the drawing is what the issue asks
        for "at once" next to the IR.
        """
        start = time.perf_counter()
        self._drawn = threading.Event()
        self._show_fast()
        self.timings["fast_s"] = time.perf_counter() - start
        self._views_generation += 1
        generation = self._views_generation
        future = self._views_executor.submit(
            self._show_views_if_current, generation, start, self._drawn
        )
        self._views_pending.append(future)
        if measure:
            self._queue_measurement()

    def _show_views_if_current(self, generation: int, start: float, drawn) -> None:
        try:
            if generation != self._views_generation:
                return  # a later edit superseded this one
            self._show_views(start, drawn)
        except Exception as exc:  # noqa: BLE001 - shown in the pane, never lost
            self.views[
                "status"
            ].value = f"<span style='color:#b00'>view failed: {html.escape(repr(exc))}</span>"
            raise
        finally:
            drawn.set()
        self.timings["views_s"] = time.perf_counter() - start

    def _show_fast(self) -> None:
        node = self.node
        func = node.func
        self.controls.update(block_names(func), loops_above(func, self.block), self.history)
        self.views["IR"].value = self.cache.get(  # the selected loop's line marked
            (node.id, "IR", self.loop), lambda: panes.ir_html(func, self.loop).html
        )
        parent = self.history[node.parent] if node.parent is not None else node
        self.views["IR diff"].value = self.cache.get(
            (node.id, "IR diff"), lambda: panes.ir_diff(parent.func, func).html
        )
        self.views["header"].value = self._header_html()
        self._show_roofline()
        self._show_legality()  # last: its worker would slow the lines above (one GIL)

    # --- legality: probed on a worker thread, kept per (node, selection) ----------------

    def _legality_key(self) -> tuple:
        return ("legality", self.history.current_id, self.loop, self.block)

    def _show_legality(self) -> None:
        """Show the cached legality table of the selection, or "checking…" and compute it."""
        with self._legality_lock:
            key = self._legality_key()
            tables = self.cache.peek(key)
            if tables is None:
                self.legal = self.block_legal = None
                self.controls.set_legality(None, None)
            else:
                self.legal, self.block_legal = tables
                self.controls.set_legality(*tables)
                return
        future = self._legality_executor.submit(
            self._check_legality, key, self.node.schedule, self._drawn
        )
        self._views_pending.append(future)

    def _check_legality(self, key: tuple, schedule: Schedule, drawn) -> None:
        _, _, loop, block = key
        drawn.wait(DRAWING_FIRST_S)

        def tables():
            legal = legality(schedule, Ref("loop", loop)) if loop else None
            return legal, legality(schedule, Ref("block", block))

        result = self.cache.get(key, tables)
        with self._legality_lock:
            if key != self._legality_key():
                return  # the selection moved on; the next check is queued
            self.legal, self.block_legal = result
            self.controls.set_legality(*result)

    # --- views on the worker thread -----------------------------------------------------

    def _show_views(self, start: float, drawn) -> None:
        node, target, loop = self.node, self.target, self.loop
        self.views["loop nest"].value = self.cache.get(  # first: the drawing is "at once"
            (node.id, "loop nest"), lambda: panes.loop_nest_svg(node.func)
        )
        self.timings["drawing_s"] = time.perf_counter() - start
        drawn.set()
        self.views["code"].value = self.cache.get(
            (node.id, "code", target, loop), lambda: _code_html(node, target, loop)
        )
        self._show_access()
        self._show_lowering()
        self._show_table()

    def _show_access(self) -> None:
        node, target, loop = self.node, self.target, self.loop
        if loop is None or loop not in all_loops(node.func):
            self.footprint, self.warnings = {}, []
            self.views["access"].value = ""
            self.views["warnings"].value = ""
            return
        self.footprint, self.warnings, pane = self.cache.get(
            (node.id, "access", loop, target), lambda: panes.access_pane(node.func, loop, target)
        )
        self.views["access"].value = pane
        self.on_demand.show("access map")
        self.views["warnings"].value = (
            "<span style='color:#b35900'>"
            + " · ".join(html.escape(w) for w in self.warnings)
            + "</span>"
            if self.warnings
            else ""
        )

    def roofline_points(self) -> list[tuple[str, float, float, bool]]:
        """``(label, intensity, GFLOP/s, measured)``: the function's analytic point
        (``wb.analytic_point``: the same for every schedule of it), then each measured node
        along the path to the current one."""
        peaks = self.runner._peaks
        points = []
        if peaks is not None:
            node = self.node
            intensity, gflops = self.cache.get(
                (node.id, "analytic point"), lambda: panes.analytic_point(node.func, peaks)
            )
            points.append(("roof", intensity, gflops, False))
        for node in self.history.path():
            if node.measurement is not None:
                res = node.measurement.result
                if res.arithmetic_intensity:
                    points.append((f"[{node.id}]", res.arithmetic_intensity, res.gflops, True))
        return points

    def _show_roofline(self) -> None:
        peaks = self.runner._peaks
        if peaks is None:
            self.views["roofline"].value = "<i>the roofline appears after the first measurement</i>"
            return
        self.views["roofline"].value = panes.roofline_svg(self.roofline_points(), peaks)

    # --- the lowering viewer: machine code only when its tab is open --------------------

    def _show_lowering(self) -> None:
        node = self.node
        lowering = self.views["lowering"]
        lowering["DSL source"].value = self.cache.get(
            (node.id, "DSL source"), lambda: panes.ir_html(node.schedule.func_before).html
        )
        lowering["scheduled IR"].value = self.views["IR"].value
        lowering["generated source"].value = self.views["code"].value
        self.on_demand.show("machine code")

    def _lazy_panes(self) -> list[LazyPane]:
        """The machine code tabs and the access maps, made only while their tab is open."""
        lowering = self.views["lowering"]

        def machine_code_open() -> bool:
            inner = self.lowering_tabs.selected_index
            lowering_open = self.tabs.selected_index == PANES.index("lowering")
            return lowering_open and inner is not None and LOWERING[inner] in MACHINE_CODE

        def access_open() -> bool:
            return self.tabs.selected_index == PANES.index("access") and self.loop is not None

        return [
            LazyPane(
                "machine code",
                key=lambda: (self.history.current_id, "machine code", self.target),
                is_open=machine_code_open,
                make=lambda key: panes.machine_code(self.history[key[0]].func, key[2]),
                targets=lambda: [lowering[name] for name in MACHINE_CODE],
                placeholder="<i>compiled when this tab is opened</i>",
                pending="<i class='wb-pending'>⏳ compiling…</i>",
            ),
            LazyPane(
                "access map",
                key=lambda: (self.history.current_id, "access map", self.block, self.loop),
                is_open=access_open,
                make=lambda key: (
                    viz.access_images(self.history[key[0]].func, block=key[2], tile=key[3]).html,
                ),
                targets=lambda: [self.views["access map"]],
                placeholder="<i>the access maps are drawn when this tab is opened</i>",
                pending="<i class='wb-pending'>⏳ drawing the access maps…</i>",
            ),
        ]

    def _on_tab(self, change) -> None:
        if change["new"] is not None:
            self.on_demand.show_open()
        tune_open = self.tabs.selected_index == PANES.index("tune")
        if tune_open and self.tuner.loaded_at != self.history.current_id:
            self.tuner.load()

    def _show_table(self) -> None:
        frame = self.table
        self.views["history"].value = panes.history_html(frame, self.history)

    def _header_html(self) -> str:
        return panes.header_html(self.node, self.target)

    # --- measuring -------------------------------------------------------------------

    def _queue_measurement(self) -> None:
        if not self.measuring:
            return
        if self.target == "cuda" and _cuda_simulated():
            self.progress.layout.visibility = "hidden"
            self.views["status"].value = (
                "<span class='wb-not-measured'>not measured: under the CUDA simulator the "
                "kernels run as Python (the CUDA source, drawing and warnings are shown)</span>"
            )
            return
        node = self.node
        self.views["status"].value = "<span class='wb-pending'>⏳ compiling and measuring…</span>"
        self.progress.layout.visibility = "visible"
        answered = self.runner.submit(
            node.id,
            node.func,
            self._measured,
            self._failed,
            self._first_call,
            after=self._drawn,
            after_timeout_s=DRAWING_FIRST_S,
        )
        if answered:
            self.views["status"].value = "<span class='wb-cached'>measured (cached)</span>"

    def _measured(self, node_id: int, measurement: Measurement) -> None:
        for node in self.history.nodes.values():
            if node.func == self.history[node_id].func and node.measurement is None:
                node.measurement = measurement
        if node_id != self.history.current_id:
            return
        self.progress.layout.visibility = "hidden"
        res = measurement.result
        note = (
            f" · <span class='wb-noisy'>⚠ {html.escape(measurement.note)}</span>"
            if measurement.note
            else ""
        )
        self.views["status"].value = (
            f"<span class='wb-measured'>measured: {res.median_s * 1e3:.3f} ms ± "
            f"{res.iqr_s * 1e3:.3f} · {res.gflops or 0:.1f} GFLOP/s · "
            f"{measurement.speedup:.2f}x {html.escape(measurement.baseline)} · "
            f"compile {measurement.compile_s:.2f} s</span>{note}"
        )
        self.views["header"].value = self._header_html()
        self._show_table()
        self._show_roofline()

    def _first_call(self, node_id: int, seconds: float) -> None:
        """The kernel is compiled and ran once: show that time while the timing runs."""
        if node_id != self.history.current_id:
            return
        self.views[
            "status"
        ].value = f"<span class='wb-pending'>⏳ first call {seconds * 1e3:.3f} ms; timing…</span>"

    def _failed(self, node_id: int, error: Exception) -> None:
        self.progress.layout.visibility = "hidden"
        self.views[
            "status"
        ].value = (
            f"<span style='color:#b00'>build or measure failed: {html.escape(repr(error))}</span>"
        )

    # --- widgets and text ------------------------------------------------------------

    def _build_widgets(self, targets: tuple[str, ...]) -> None:
        self.controls = Controls(self, targets)
        self.tuner = TuneTab(self)
        layout = build_layout(self.controls.box(), self.tuner.widget)
        self.views, self.tabs, self.lowering_tabs = layout.views, layout.tabs, layout.lowering_tabs
        self.progress, self.widget = layout.progress, layout.widget
        self.on_demand = OnDemand(self, self._lazy_panes())
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


def _cuda_simulated() -> bool:
    from workbench.backends.numba_cuda import simulator_enabled

    return simulator_enabled()


def _code_html(node: HistoryNode, target: str, loop: str | None) -> str:
    """The generated source for ``target`` (Numba Python or CUDA Python) with ``loop``'s lines
    marked, or the build's rendered error (a CUDA schedule with no loop bound to a GPU axis)."""
    try:
        source = panes.cuda_source(node.func) if target == "cuda" else node.code
    except Exception as err:  # noqa: BLE001 - shown in the pane, never lost
        return panes.error_html(err)
    return panes.code_html(source, loop).html
