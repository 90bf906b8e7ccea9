"""Progress of a tuning run: tqdm (terminal and notebook) and callbacks.

``Progress`` wraps ``tqdm.auto`` (a widget bar in Jupyter, text in a terminal) and shows the
best latency and GFLOP/s so far; ``callbacks`` get every ``Record`` as it is written (the
tuning dashboard is one).
"""

from __future__ import annotations

from collections.abc import Callable


class Progress:
    def __init__(self, total: int, name: str, enabled: bool = True,
                 callbacks: list[Callable] | None = None):
        self.callbacks = list(callbacks or [])
        self.best: float | None = None
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=f"tune {name}", unit="trial", leave=True)

    def update(self, record) -> None:
        if record.ok and (self.best is None or record.latency_s < self.best):
            self.best = record.latency_s
        if self._bar is not None:
            self._bar.update(1)
            if self.best is not None:
                gflops = f" {record.gflops:.1f} GFLOP/s" if record.ok and record.gflops else ""
                self._bar.set_postfix_str(f"best {self.best * 1e3:.3f} ms{gflops}")
        for callback in self.callbacks:
            callback(record)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
