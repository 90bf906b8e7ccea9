"""Progress of a tuning run: tqdm (terminal and notebook), callbacks and candidate stages.

``Progress`` wraps ``tqdm.auto`` (a widget bar in Jupyter, text in a terminal) and shows the
best record so far: its latency and its own GFLOP/s (both from one record, the fastest).
``callbacks`` get every ``Record`` as it is written (the tuning dashboard is one);
``stages`` get every ``Stage`` of a candidate before its record exists: ``building``,
``measuring``, ``measured`` or ``failed``, with the seconds since the run started (the
explorer's tune tab and the dashboard show them, so a batch is never a silent wait).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

STAGES = ("starting", "building", "measuring", "measured", "failed")


@dataclass(frozen=True)
class Stage:
    """One candidate moved to ``state`` (one of ``STAGES``) ``elapsed_s`` into the run.

    ``trial`` is the trial number the candidate's record will get (``None`` for
    ``starting``: the workers start before any candidate exists).
    """

    trial: int | None
    state: str
    elapsed_s: float

    def __str__(self) -> str:
        who = "workers" if self.trial is None else f"trial {self.trial}"
        return f"{who}: {self.state} ({self.elapsed_s:.1f} s)"


class Progress:
    def __init__(self, total: int, name: str, enabled: bool = True,
                 callbacks: list[Callable] | None = None,
                 stages: list[Callable] | None = None):
        self.callbacks = list(callbacks or [])
        self.stages = list(stages or [])
        self.best = None  # the fastest successful Record so far
        self.started = time.perf_counter()
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=f"tune {name}", unit="trial", leave=True)

    def postfix(self) -> str:
        """``best 0.024 ms 73.3 GFLOP/s``: the fastest record's latency and GFLOP/s."""
        if self.best is None:
            return ""
        gflops = f" {self.best.gflops:.1f} GFLOP/s" if self.best.gflops else ""
        return f"best {self.best.latency_s * 1e3:.3f} ms{gflops}"

    def update(self, record) -> None:
        if record.ok and (self.best is None or record.latency_s < self.best.latency_s):
            self.best = record
        if self._bar is not None:
            self._bar.update(1)
            if self.best is not None:
                self._bar.set_postfix_str(self.postfix())
        for callback in self.callbacks:
            callback(record)

    def stage(self, trial: int | None, state: str) -> None:
        """Tell the stage callbacks that candidate ``trial`` is now ``state``."""
        event = Stage(trial, state, time.perf_counter() - self.started)
        for callback in self.stages:
            callback(event)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
