"""The tuning dashboard: a live view of a tuning run, and knobs to pin before the next one.

``TuningDashboard(func, space=..., target=..., db=...)`` shows

* a row of dropdowns, one per knob of the search space: ``search`` (the default) or a value
  to pin; the **Tune** button runs ``wb.tune`` with those pins in a background thread (the
  page stays live) for the number of trials in the box;
* three plots, redrawn as records arrive: best-so-far GFLOP/s against trials, every
  candidate's latency against its trial (failures marked at the bottom), and the cost model's
  predicted against measured latency. They are drawn as PNG bytes into an ``Image``
  widget's value on a drawing thread (``refresh``): a trait every front end syncs, from
  any thread, and a saved notebook keeps the last picture; the line under them says how
  many records the picture shows;
* a line saying which candidate is building or measuring, and the time so far.

Use ``dashboard.callback`` as a ``wb.tune(..., callbacks=[...])`` callback to watch a run
started elsewhere, or ``TuningDashboard.from_result(result)`` to look at a finished one.
The figures are plain Matplotlib figures (``figure()``), the widget only arranges them.

Example
-------
>>> dash = TuningDashboard(ops.matmul(256, 256, 256), db="records.jsonl")   # doctest: +SKIP
>>> dash                                                                     # doctest: +SKIP
"""

from __future__ import annotations

import html
import threading
from concurrent.futures import ThreadPoolExecutor

from workbench.tune.database import Record

SEARCH = "search"
PNG_DPI = 72
_MATPLOTLIB = threading.RLock()
"""Held while a figure is made or rendered: Matplotlib's text layout (mathtext's parser) is
not thread-safe, and the drawing thread may run beside a caller's ``figure()``."""


class TuningDashboard:
    """Pins, a Tune button and live plots for one function (see the module docstring)."""

    def __init__(self, func=None, space=None, target: str = "cpu", db: str = "records.jsonl",
                 strategy: str = "evolutionary", trials: int = 32, batch_size: int = 8):
        self.func = func
        self.batch_size = batch_size  # candidates per batch: records (and plots) per batch
        self.target = target
        self.db = db
        self.strategy = strategy
        self.trials = trials
        self.records: list[Record] = []
        self.space = None
        if func is not None:
            from workbench.tune.api import make_space

            self.space = make_space(space, func, target)
        self._lock = threading.Lock()
        self._drawer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-dashboard")
        self._drawing = None
        self._dirty = False
        self.draws = 0
        self._thread = None
        self._widget = None
        self.result = None

    @classmethod
    def from_result(cls, result, db=None) -> TuningDashboard:
        """A dashboard on a finished ``wb.tune`` result: its records drawn, its space's knobs
        in the dropdowns; **Tune** goes on searching into ``db`` (a records file)."""
        dash = cls(None, target=result.target, db=str(db) if db is not None else "records.jsonl")
        dash.space = result.space
        dash.func = result.func
        dash.records = list(result.records)
        return dash

    # --- data --------------------------------------------------------------------------

    def callback(self, record: Record) -> None:
        """A ``wb.tune`` callback: add the record, redraw if shown."""
        with self._lock:
            self.records.append(record)
        self.refresh()

    def pins(self) -> dict:
        """The knobs pinned in the dropdowns (``search`` ones left out)."""
        if self._widget is None:
            return {}
        import json

        return {name: json.loads(box.value) for name, box in self._dropdowns.items()
                if box.value != SEARCH}

    def best_so_far(self) -> list[float]:
        best, out = 0.0, []
        for r in self.records:
            if r.ok and r.gflops and r.gflops > best:
                best = r.gflops
            out.append(best)
        return out

    # --- figure --------------------------------------------------------------------------

    def figure(self):
        """The three plots as one Matplotlib figure."""
        with _MATPLOTLIB:
            return self._figure()

    def _figure(self):
        from workbench.viz.figures import new_figure

        fig, (curve, scatter, model) = new_figure((12, 3.2), ncols=3)
        records = list(self.records)
        curve.plot(range(len(records)), self.best_so_far(), drawstyle="steps-post")
        curve.set(title="best so far", xlabel="trial", ylabel="GFLOP/s")
        ok = [(i, r.latency_s * 1e3) for i, r in enumerate(records) if r.ok]
        failed = [i for i, r in enumerate(records) if not r.ok]
        if ok:
            scatter.scatter(*zip(*ok, strict=True), s=12, label="measured")
        if failed:
            low = min((v for _, v in ok), default=1.0)
            scatter.scatter(failed, [low] * len(failed), marker="x", color="red", s=20,
                            label="failed")
        scatter.set(title="candidates", xlabel="trial", ylabel="latency (ms)", yscale="log")
        pairs = [(r.predicted_s * 1e3, r.latency_s * 1e3) for r in records
                 if r.ok and r.predicted_s]
        if pairs:
            xs, ys = zip(*pairs, strict=True)
            model.scatter(xs, ys, s=12)
            lo, hi = min(xs + ys), max(xs + ys)
            model.plot([lo, hi], [lo, hi], color="gray", lw=0.8)
            model.set(xscale="log", yscale="log")
        model.set(title="cost model", xlabel="predicted (ms)", ylabel="measured (ms)")
        fig.tight_layout()
        return fig

    # --- widget --------------------------------------------------------------------------

    def png(self) -> bytes:
        """The three plots as PNG bytes (what the widget's image shows)."""
        import io

        buffer = io.BytesIO()
        with _MATPLOTLIB:
            self.figure().savefig(buffer, format="png", dpi=PNG_DPI)
        return buffer.getvalue()

    def _build(self):
        import json

        import ipywidgets as w

        self._dropdowns = {}
        if self.space is not None:
            for name, values in self.space.domains.items():
                options = [SEARCH] + [json.dumps(v) for v in values[:200]]
                self._dropdowns[name] = w.Dropdown(options=options, value=SEARCH,
                                                   description=name[:18])
        self._trials = w.BoundedIntText(value=self.trials, min=1, max=100000,
                                        description="trials")
        self._button = w.Button(description="Tune", button_style="primary")
        self._button.on_click(lambda _: self.start())
        self._status = w.Label("")
        self._stage = w.HTML("", layout=w.Layout(min_height="1.6em"))
        self._image = w.Image(format="png", layout=w.Layout(width="100%"))
        self._image.add_class("wb-dashboard-plots")
        self._drawn = w.HTML("", layout=w.Layout(min_height="1.6em"))
        self._drawn.add_class("wb-dashboard-drawn")
        self._status.add_class("wb-dashboard-status")
        self._stage.add_class("wb-dashboard-stage")
        controls = w.HBox([self._trials, self._button, self._status])
        self._widget = w.VBox([w.HBox(list(self._dropdowns.values()),
                                      layout=w.Layout(flex_flow="row wrap")),
                               controls, self._stage, self._image, self._drawn])
        self._widget.add_class("wb-dashboard")
        self.refresh()
        self.wait_drawn()
        return self._widget

    def refresh(self) -> None:
        """Update the status line now and redraw the plots on the drawing thread.

        Safe from any thread: the plots go into the image widget's ``value`` (PNG bytes,
        a trait every front end syncs), never through an output area, which a background
        thread cannot write to. Requests made while a drawing runs are merged into one.
        """
        if self._widget is None:
            return
        best = max(self.best_so_far(), default=0.0)
        self._status.value = f"{len(self.records)} records, best {best:.1f} GFLOP/s"
        with self._lock:
            self._dirty = True
            if self._drawing is not None and not self._drawing.done():
                return
            self._drawing = self._drawer.submit(self._draw)

    def _draw(self) -> None:
        while True:
            with self._lock:
                if not self._dirty:
                    return
                self._dirty = False
                shown = len(self.records)
            self._image.value = self.png()  # synced before the line below: same order
            plural = "" if shown == 1 else "s"
            self._drawn.value = f"<small>plots drawn with {shown} record{plural}</small>"
            self.draws += 1

    def wait_drawn(self, timeout: float = 60.0) -> None:
        """Block until the plots show every record received so far (tests, scripts)."""
        while True:
            with self._lock:
                drawing = self._drawing
            if drawing is None:
                return
            drawing.result(timeout)
            with self._lock:
                if self._drawing is drawing and not self._dirty:
                    return

    def stage(self, event) -> None:
        """A ``wb.tune`` stage callback: show which candidate is building or measuring."""
        if self._widget is not None:
            from workbench.widgets.layout import pending

            self._stage.value = pending(html.escape(str(event)))

    def start(self) -> threading.Thread:
        """Run ``wb.tune`` with the pinned knobs in a background thread."""
        from workbench.tune.api import tune

        if self._thread is not None and self._thread.is_alive():
            return self._thread
        trials = len(self.records) + (self._trials.value if self._widget else self.trials)

        def run():
            self.result = tune(self.func, target=self.target, trials=trials, db=self.db,
                               space=self.space, strategy=self.strategy, pin=self.pins(),
                               batch_size=self.batch_size, callbacks=[self.callback],
                               stages=[self.stage], progress=False)
            if self._widget is not None:
                self._stage.value = f"done: {len(self.records)} records"

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self._thread

    def _ipython_display_(self):
        from IPython.display import display

        display(self._widget or self._build())

    def __repr__(self) -> str:
        return f"<TuningDashboard {getattr(self.func, 'name', '?')}: {len(self.records)} records>"
