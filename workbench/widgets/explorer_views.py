"""The explorer's views: what is redrawn after each change, and on which thread.

``refresh`` redraws from the current node at two speeds: the IR, its diff, the header and
the roofline now (``_show_fast``); the legality table of the selection, the loop-nest
drawing, the generated code, the access tab, the lowering viewer and the history table on
worker threads, each kept per history node in the ``ViewCache``. The machine code and the
access maps are made only while their tab is open (``OnDemand``). ``Explorer`` mixes this
in; it holds no state of its own.
"""

from __future__ import annotations

import html
import threading
import time

from workbench import viz
from workbench.schedule import Schedule
from workbench.widgets import panes
from workbench.widgets.actions import (
    Ref,
    all_loops,
    block_names,
    legality,
    loops_above,
    main_block,
)
from workbench.widgets.history import HistoryNode
from workbench.widgets.layout import LOWERING, MACHINE_CODE, PANES, pending
from workbench.widgets.on_demand import LazyPane
from workbench.widgets.target_views import views_for

DRAWING_FIRST_S = 0.3  # the legality probes and the compile wait this long for the drawing


class ExplorerViews:
    """Rendering of an ``Explorer`` (see the module docstring)."""

    # --- rendering -------------------------------------------------------------------

    def _keep_selection(self, made: list | None = None) -> None:
        """Keep the selected block and loop when they still exist; else select what the
        last action made (the fused loop of a ``fuse``, the outer part of a ``split``), else
        the loop at the same depth (the selection never jumps to the outermost loop)."""
        func = self.node.func
        blocks = block_names(func)
        if self.block not in blocks:
            made_blocks = [r.name for r in made or () if r.kind == "block" and r.name in blocks]
            self.block = made_blocks[0] if made_blocks else main_block(func)
        names = [i.name for i in loops_above(func, self.block)]
        if self.loop in names or not names:
            self.loop = self.loop if names else None
            return
        made_loops = [r.name for r in made or () if r.kind == "loop" and r.name in names]
        depth = self._loop_depth if self._loop_depth is not None else 0
        self.loop = made_loops[0] if made_loops else names[min(depth, len(names) - 1)]

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
                make=lambda key: views_for(key[2]).machine_code(self.history[key[0]].func),
                targets=lambda: [lowering[name] for name in MACHINE_CODE],
                placeholder="<i>compiled when this tab is opened</i>",
                pending=pending("compiling…", "i"),
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
                pending=pending("drawing the access maps…", "i"),
            ),
        ]

    def _on_tab(self, change) -> None:
        if change["new"] is not None:
            self.on_demand.show_open()
        tune_open = self.tabs.selected_index == PANES.index("tune")
        if tune_open and (self.tuner.loaded_at != self.history.current_id
                          or self.tuner.target != self.target):
            self.tuner.load()

    def _show_table(self) -> None:
        frame = self.table
        self.views["history"].value = panes.history_html(frame, self.history)

    def _header_html(self) -> str:
        return panes.header_html(self.node, self.target)


def _code_html(node: HistoryNode, target, loop: str | None) -> str:
    """The generated source for ``target`` (its ``TargetViews.source``: Numba Python, CUDA
    Python) with ``loop``'s lines marked, or the build's rendered error (a CUDA schedule
    with no loop bound to a GPU axis)."""
    try:
        source = views_for(target).source(node.func)
    except Exception as err:  # noqa: BLE001 - shown in the pane, never lost
        return panes.error_html(err)
    return panes.code_html(source, loop).html
