"""``wb.explore``: change a schedule with widgets and see what changed and what it cost.

The schedule is the state (``explorer.history``, a tree of ``Schedule`` states); each widget
is a view of it or an action on it, and each action calls the public ``Schedule`` method a
user would type, so ``explorer.current.trace`` reads like a hand-written schedule.

Two speeds: the IR, its diff, the loop-nest drawing, the footprint warnings and the
analytic roofline point are redrawn at once; compiling and measuring run on a worker thread
(``MeasureRunner``), debounced, and fill in the numbers when they arrive.
"""

from __future__ import annotations

import html
import time
from concurrent.futures import ThreadPoolExecutor

import ipywidgets as widgets

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
from workbench.widgets.runner import MeasureRunner

PANES = ("IR", "IR diff", "code", "loop nest", "access", "roofline", "lowering", "history")
LOWERING = ("DSL source", "scheduled IR", "Numba source", "LLVM IR", "asm")


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
        self.history = History(
            schedule,
            "start" if not len(schedule.trace) else f"opened at step {len(schedule.trace)}",
        )
        self.runner = MeasureRunner(
            schedule.func_before, target, budget_s=budget_s, debounce_s=debounce_s, peaks=peaks
        )
        self.last_error: ScheduleError | None = None
        self.timings: dict[str, float] = {}
        self.warnings: list[str] = []
        self.footprint: dict[str, int] = {}
        self._views_generation = 0
        self._views_pending: list = []
        self._views_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-views")
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
        """The history as a DataFrame: step, primitive, ms median, IQR, GFLOP/s, GB/s, x numpy,
        compile s (NaN until measured)."""
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
        """Block until pending views and measurements are shown (scripts, tests, notebooks)."""
        for future in list(self._views_pending):
            future.result(timeout)
        self._views_pending.clear()
        self.runner.wait(timeout)
        return self

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
        """Redraw from the current node: the IR-only views now, the rest on a worker thread
        (code, drawing, footprint, lowering), then the measurement (debounced)."""
        start = time.perf_counter()
        self._show_fast()
        self.timings["fast_s"] = time.perf_counter() - start
        self._views_generation += 1
        generation = self._views_generation
        future = self._views_executor.submit(self._show_views_if_current, generation, start)
        self._views_pending.append(future)
        if measure:
            self._queue_measurement()

    def _show_views_if_current(self, generation: int, start: float) -> None:
        if generation != self._views_generation:
            return  # a later edit superseded this one
        try:
            self._show_views()
        except Exception as exc:  # noqa: BLE001 - shown in the pane, never lost
            self.views[
                "status"
            ].value = f"<span style='color:#b00'>view failed: {html.escape(repr(exc))}</span>"
            raise
        self.timings["views_s"] = time.perf_counter() - start

    def _show_fast(self) -> None:
        node = self.node
        func = node.func
        loops = loops_above(func, self.block)
        legal = legality(node.schedule, Ref("loop", self.loop)) if self.loop else None
        self.legal = legal
        self.block_legal = legality(node.schedule, Ref("block", self.block))
        self.controls.update(block_names(func), loops, legal, self.block_legal, self.history)
        self.views["IR"].value = panes.ir_html(func).html
        parent = self.history[node.parent] if node.parent is not None else node
        self.views["IR diff"].value = panes.ir_diff(parent.func, func).html
        self.views["header"].value = self._header_html()
        self._show_roofline()

    def _show_views(self) -> None:
        node = self.node
        func = node.func
        self.views["code"].value = panes.code_html(node.code).html
        self.views["loop nest"].value = panes.loop_nest_svg(func)
        self._show_access()
        self._show_lowering()
        self._show_table()

    def _show_access(self) -> None:
        func = self.node.func
        if self.loop is None or self.loop not in all_loops(func):
            self.warnings = []
            self.views["access"].value = ""
            return
        caches = panes.cache_sizes()
        footprint = panes.tile_footprint(func, self.loop)
        self.footprint = footprint
        self.warnings = panes.footprint_warnings(func, self.loop, caches)
        items = (
            "".join(f"<li>⚠ {html.escape(w)}</li>" for w in self.warnings) or "<li>no warning</li>"
        )
        rows = "".join(
            f"<tr><td>{k}</td><td>{v / 1024:.1f} KiB</td></tr>" for k, v in footprint.items()
        )
        self.views["access"].value = (
            f"<b>one iteration of loop <code>{html.escape(self.loop)}</code> touches</b>"
            f"<table>{rows}</table><ul class='wb-warnings'>{items}</ul>"
            + panes.footprint_svg(footprint, caches)
        )
        self.views["warnings"].value = (
            "<span style='color:#b35900'>"
            + " · ".join(html.escape(w) for w in self.warnings)
            + "</span>"
            if self.warnings
            else ""
        )

    def roofline_points(self) -> list[tuple[str, float, float, bool]]:
        """``(label, intensity, GFLOP/s, measured)`` along the path to the current node."""
        peaks = self.runner._peaks
        points = []
        for node in self.history.path():
            if peaks is not None:
                intensity, gflops = panes.analytic_point(node.func, peaks)
                points.append((f"[{node.id}]", intensity, gflops, False))
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

    def _show_lowering(self) -> None:
        node = self.node
        lowering = self.views["lowering"]
        lowering["DSL source"].value = panes.ir_html(node.schedule.func_before).html
        lowering["scheduled IR"].value = panes.ir_html(node.func).html
        lowering["Numba source"].value = panes.code_html(node.code).html
        for name in ("LLVM IR", "asm"):
            lowering[name].value = "<i>shown once the kernel is compiled (measured)</i>"
        if node.measurement is not None:
            self._show_machine_code()

    def _show_machine_code(self) -> None:
        from workbench.backends import build

        kernel = build(self.node.func, target="cpu")  # served from the kernel cache
        lowering = self.views["lowering"]
        lowering["LLVM IR"].value = panes.plain_html(_head(kernel.llvm), "llvm")
        lowering["asm"].value = panes.plain_html(_head(kernel.asm), "asm")

    def _show_table(self) -> None:
        frame = self.table
        self.views["history"].value = (
            frame.drop(columns=["current"]).to_html(
                index=False, float_format=lambda v: f"{v:.3g}", na_rep="…", classes="wb-history"
            )
            + "<pre>"
            + html.escape(str(self.history))
            + "</pre>"
        )

    def _header_html(self) -> str:
        node = self.node
        func = node.schedule.func_before
        shape = "x".join(str(d) for d in func.params[0].shape)
        m = node.measurement
        cost = f" · {m.ms:.3f} ms · {m.result.gflops or 0:.1f} GFLOP/s" if m else ""
        return (
            f"<b>{html.escape(func.name)}</b> {shape} · target {self.target} · node "
            f"{node.id} ({len(node.trace)} trace steps){cost}"
        )

    # --- measuring -------------------------------------------------------------------

    def _queue_measurement(self) -> None:
        if not self.measuring:
            return
        node = self.node
        self.views["status"].value = "<span class='wb-pending'>⏳ compiling and measuring…</span>"
        self.progress.layout.visibility = "visible"
        answered = self.runner.submit(node.id, node.func, self._measured, self._failed)
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
        self.views["status"].value = (
            f"<span class='wb-measured'>measured: {res.median_s * 1e3:.3f} ms ± "
            f"{res.iqr_s * 1e3:.3f} · {res.gflops or 0:.1f} GFLOP/s · "
            f"{measurement.vs_numpy:.2f}x numpy · compile {measurement.compile_s:.2f} s</span>"
        )
        self.views["header"].value = self._header_html()
        self._show_table()
        self._show_roofline()
        self._show_machine_code()

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
        self.views = {name: widgets.HTML() for name in PANES if name != "lowering"}
        for name in ("header", "status", "error", "warnings", "node diff"):
            self.views[name] = widgets.HTML()
        for name, view in self.views.items():
            view.add_class("wb-" + name.replace(" ", "-"))
        self.views["export"] = widgets.Textarea(layout=widgets.Layout(width="100%", height="160px"))
        lowering = {name: widgets.HTML() for name in LOWERING}
        self.views["lowering"] = lowering
        lowering_tabs = widgets.Tab(children=list(lowering.values()), titles=list(LOWERING))
        tabs = [self.views[n] if n != "lowering" else lowering_tabs for n in PANES]
        self.tabs = widgets.Tab(children=tabs, titles=list(PANES), layout=widgets.Layout(flex="1"))
        self.progress = widgets.IntProgress(
            value=1,
            max=1,
            bar_style="info",
            layout=widgets.Layout(width="120px", visibility="hidden"),
        )
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.views["header"], self.progress, self.views["status"]]),
                self.views["error"],
                self.views["warnings"],
                widgets.HBox([self.controls.box(), self.tabs]),
                widgets.Accordion(
                    children=[widgets.VBox([self.views["node diff"], self.views["export"]])],
                    titles=["diff and export"],
                ),
            ]
        )
        self.widget.add_class("wb-explorer")

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


def _head(text: str, lines: int = 400) -> str:
    parts = text.splitlines()
    more = f"\n... ({len(parts) - lines} more lines)" if len(parts) > lines else ""
    return "\n".join(parts[:lines]) + more
