"""The explorer's measured numbers: queued on the ``MeasureRunner`` after each change,
shown when they arrive (status line, header, history table, roofline). ``Explorer`` mixes
this in; it holds no state of its own.
"""

from __future__ import annotations

import html

from workbench.widgets import explorer_views
from workbench.widgets.history import Measurement
from workbench.widgets.layout import pending
from workbench.widgets.target_views import views_for


class ExplorerMeasuring:
    """Measuring for an ``Explorer`` (see the module docstring)."""

    # --- measuring -------------------------------------------------------------------

    def _queue_measurement(self) -> None:
        if not self.measuring:
            return
        reason = views_for(self.target).not_measured()
        if reason is not None:  # e.g. the CUDA simulator runs kernels as Python
            self.progress.layout.visibility = "hidden"
            self.views["status"].value = (
                f"<span class='wb-not-measured'>{html.escape(reason)}</span>"
            )
            return
        node = self.node
        self.views["status"].value = pending("compiling and measuring…")
        self.progress.layout.visibility = "visible"
        answered = self.runner.submit(
            node.id,
            node.func,
            self._measured,
            self._failed,
            self._first_call,
            after=self._drawn,
            after_timeout_s=explorer_views.DRAWING_FIRST_S,
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
        ].value = pending(f"first call {seconds * 1e3:.3f} ms; timing…")

    def _failed(self, node_id: int, error: Exception) -> None:
        self.progress.layout.visibility = "hidden"
        self.views[
            "status"
        ].value = (
            f"<span style='color:#b00'>build or measure failed: {html.escape(repr(error))}</span>"
        )
