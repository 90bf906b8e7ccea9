"""The explorer's "tune" tab: a few trials of ``wb.tune`` from a node, knobs pinned by hand.

The tab tunes on the explorer's target (``cpu``, ``cuda``...: the generated space of that
target, measured there through the same public ``wb.tune``), the current node's function when
that space has knobs there (an untransformed loop nest), else the start node's. Each knob of
that space is a dropdown: ``search`` (the default) or a value to pin. **Tune** runs
``wb.tune`` on a worker thread (the page stays live) for the number of trials in the box, with
a progress bar filled as records arrive; **apply best** adds the fastest record as a new node
under the tuned one, its trace replayed through the public ``Schedule`` methods
(``continue_trace``), so it is measured, drawn and exported like any other node. While it
runs, the status line says which candidate is building or measuring and the seconds so far
(the tuner's stage callbacks).

Example
-------
>>> ex = wb.explore(ops.matmul(256, 256, 256))              # doctest: +SKIP
>>> ex.tuner.load(); ex.tuner.pin("parallel:C", True)        # doctest: +SKIP
>>> ex.tuner.start(trials=4).join(); ex.tuner.apply_best()   # doctest: +SKIP
"""

from __future__ import annotations

import html
import json
import os
import tempfile
import threading
from typing import TYPE_CHECKING

import ipywidgets as widgets

from workbench.widgets.actions import continue_trace
from workbench.widgets.layout import pending

if TYPE_CHECKING:
    from workbench.widgets.explorer import Explorer

SEARCH = "search"


class TuneTab:
    """Knob pins, a trial count, Tune / apply best buttons, progress and the records."""

    def __init__(self, explorer: Explorer, trials: int = 4, db: str | None = None):
        self.explorer = explorer
        self.db = db or os.path.join(tempfile.mkdtemp(prefix="wb-explore-tune-"), "records.jsonl")
        self.node_id: int | None = None  # the node whose function is tuned
        self.loaded_at: int | None = None  # the current node when the knobs were read
        self.target = None  # the explorer's target when the knobs were read (a ``Target``)
        self.space = None
        self.records: list = []
        self.result = None
        self.stage = None  # the last candidate stage heard (``workbench.tune.progress.Stage``)
        self.error: Exception | None = None
        self._thread: threading.Thread | None = None
        self.knobs = widgets.Box(layout=widgets.Layout(flex_flow="row wrap"))
        self.dropdowns: dict[str, widgets.Dropdown] = {}
        self.trials = widgets.BoundedIntText(
            value=trials, min=1, max=256, description="trials", layout=widgets.Layout(width="160px")
        )
        self.tune_button = widgets.Button(description="Tune", button_style="primary", icon="play")
        self.apply_button = widgets.Button(description="apply best", disabled=True)
        self.progress = widgets.IntProgress(value=0, min=0, max=trials, bar_style="info")
        self.status = widgets.HTML("<i>open this tab to load the knobs of the current node</i>")
        self.table = widgets.HTML("")
        self.tune_button.on_click(lambda _: self.start())
        self.apply_button.on_click(lambda _: self.apply_best())
        self.widget = widgets.VBox(
            [
                self.knobs,
                widgets.HBox([self.trials, self.tune_button, self.apply_button, self.progress]),
                self.status,
                self.table,
            ]
        )

    # --- knobs -----------------------------------------------------------------------

    def load(self) -> None:
        """Read the knobs of the current node's search space on the explorer's target (or
        the start node's)."""
        from workbench.tune.api import make_space

        if self.running:
            return
        history, target = self.explorer.history, self.explorer.target
        for node_id in (history.current_id, 0):
            space = make_space(None, history[node_id].func, target)
            if space.domains:
                break
        self.node_id, self.space, self.target = node_id, space, target
        self.loaded_at = history.current_id
        self.dropdowns = {
            name: widgets.Dropdown(
                options=[SEARCH] + [json.dumps(v) for v in values[:200]],
                value=SEARCH,
                description=name[:18],
                layout=widgets.Layout(width="260px"),
            )
            for name, values in space.domains.items()
        }
        self.knobs.children = list(self.dropdowns.values())
        where = "the current node" if node_id == history.current_id else "the start node"
        self.status.value = (
            f"tuning {where} [{node_id}] on {target.name}: {len(self.dropdowns)} knobs, "
            f"{space.size()} configurations"
            if self.dropdowns
            else "<i>no knob to tune here (the generated space has none)</i>"
        )
        self.tune_button.disabled = not self.dropdowns

    def pin(self, knob: str, value) -> None:
        """Pin ``knob`` to ``value`` (``"search"`` to free it again)."""
        if knob not in self.dropdowns:
            raise KeyError(f"no knob {knob!r}; knobs: {', '.join(self.dropdowns)}")
        box = self.dropdowns[knob]
        text = SEARCH if value == SEARCH else json.dumps(value)
        if text not in box.options:
            shown = ", ".join(box.options[1:6]) + (" ..." if len(box.options) > 6 else "")
            raise ValueError(f"knob {knob!r} has no value {text}; values: {shown}")
        box.value = text

    def pins(self) -> dict:
        """The knobs pinned in the dropdowns (``search`` ones left out)."""
        return {
            name: json.loads(box.value)
            for name, box in self.dropdowns.items()
            if box.value != SEARCH
        }

    # --- running ---------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, trials: int | None = None) -> threading.Thread:
        """Run ``wb.tune`` on a worker thread: ``trials`` new candidates, pins respected."""
        from workbench.tune.api import tune

        if self.running:
            return self._thread
        if self.space is None or self.target != self.explorer.target:
            self.load()  # knobs of another target's space would not fit this one
        trials = self.trials.value if trials is None else trials
        func = self.explorer.history[self.node_id].func
        target = self.target
        pins, before = self.pins(), len(self.records)
        self.progress.max, self.progress.value = trials, 0
        self.progress.bar_style = "info"
        self.apply_button.disabled = True
        self.status.value = pending(f"tuning: 0 of {trials} trials…")
        self.error = None
        self.stage = None

        def run() -> None:
            try:
                self.result = tune(
                    func,
                    target=target,
                    trials=before + trials,
                    db=self.db,
                    space=self.space,
                    strategy="random",
                    pin=pins,
                    batch_size=min(trials, 4),
                    callbacks=[self._record],
                    stages=[self._stage],
                    progress=False,
                )
            except Exception as exc:  # noqa: BLE001 - shown in the tab, never lost
                self.error = exc
                self.progress.bar_style = "danger"
                self.status.value = (
                    f"<span style='color:#b00'>tuning failed: {html.escape(repr(exc))}</span>"
                )
                return
            self._finished()

        self._thread = threading.Thread(target=run, name="wb-tune", daemon=True)
        self._thread.start()
        return self._thread

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _record(self, record) -> None:
        self.records.append(record)
        self.progress.value = min(self.progress.value + 1, self.progress.max)
        self._show_running()
        self._show_table()

    def _stage(self, stage) -> None:
        """A candidate is building or measuring (or the workers are starting): say so,
        with the time so far, before its record exists."""
        self.stage = stage
        self._show_running()

    def _show_running(self) -> None:
        now = f" · {html.escape(str(self.stage))}" if self.stage is not None else ""
        self.status.value = (
            pending(f"tuning: {self.progress.value} of {self.progress.max} trials done{now}")
        )

    def _finished(self) -> None:
        best = self.result.best if self.result is not None else None
        self.progress.bar_style = "success"
        if best is None:
            self.status.value = "no candidate ran (every one failed: see the table)"
            return
        self.apply_button.disabled = False
        self.status.value = (
            f"done: best {best.latency_s * 1e3:.3f} ms, {best.gflops or 0:.1f} GFLOP/s "
            f"({len(self.records)} records); <b>apply best</b> adds it as a node"
        )

    def _show_table(self) -> None:
        rows = []
        for r in self.records:
            ms = f"{r.latency_s * 1e3:.3f}" if r.ok else html.escape(str(r.error_kind))
            gflops = f"{r.gflops:.1f}" if r.ok and r.gflops else ""
            config = html.escape(json.dumps(r.config))[:120]
            rows.append(
                f"<tr><td>{r.trial}</td><td>{config}</td><td>{ms}</td><td>{gflops}</td></tr>"
            )
        self.table.value = (
            "<table class='wb-tune-records'><tr><th>trial</th><th>config</th><th>ms</th>"
            f"<th>GFLOP/s</th></tr>{''.join(rows)}</table>"
        )

    def apply_best(self) -> bool:
        """Add the fastest record as a child of the tuned node and show it."""
        from workbench.schedule import Trace

        if self.result is None or self.result.best is None:
            raise LookupError("no tuning result yet: start() and wait() first")
        ex = self.explorer
        base = ex.history[self.node_id]
        schedule = continue_trace(base.schedule, Trace.from_json(self.result.best.trace))
        ex.history.jump(base.id)
        ex.history.add(schedule, f"tuned ({len(self.records)} trials)")
        ex._keep_selection()
        ex.refresh()
        return True
