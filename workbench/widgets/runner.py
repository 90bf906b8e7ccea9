"""Compile and measure off the UI thread: debounced, later requests cancel earlier ones,
results cached by the scheduled function (a revisit is answered at once).

Every measurement is compared with one **baseline**, named where the ratio is shown
(``x np.matmul``, ``x reference``): ``np.matmul`` for a matmul, else the project's
reference executor (the ``numpy`` target) on the unscheduled function, which is a check
of correctness, not a tuned library, so it is never called "numpy" in a ratio. A
measurement whose spread is large or that ran on a busy machine
(``workbench.measure.noise``) is measured again once and keeps a ``note`` saying so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from workbench.ir import PrimFunc
from workbench.widgets.history import Measurement


@dataclass(frozen=True)
class Baseline:
    """What the explorer's ratios compare with: ``name`` (shown as ``x <name>``) and a
    callable taking the function's arrays."""

    name: str
    run: Callable


def baseline_for(func: PrimFunc) -> Baseline:
    """``np.matmul`` for a two-dimensional matmul ``C = A @ B``, else the reference
    executor (the ``numpy`` target) of ``func``.

    Example
    -------
    >>> from workbench import ops
    >>> baseline_for(ops.matmul(8, 8, 8)).name, baseline_for(ops.softmax(4, 8)).name
    ('np.matmul', 'reference')
    """
    if baseline_name(func) == "np.matmul":
        return Baseline("np.matmul", lambda a, b, c: np.matmul(a, b, out=c))
    from workbench.backends import build

    return Baseline("reference", build(func, target="numpy"))


def baseline_name(func: PrimFunc) -> str:
    """The name ``baseline_for(func)`` will have, without building anything."""
    shapes = [tuple(p.shape) for p in func.params]
    if (func.name == "matmul" and len(shapes) == 3 and all(len(s) == 2 for s in shapes)
            and shapes[2] == (shapes[0][0], shapes[1][1])):
        return "np.matmul"
    return "reference"


def random_inputs(func: PrimFunc, seed: int = 0) -> list[np.ndarray]:
    """One random array per parameter (values in [-1, 1); outputs too, they are overwritten)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size=p.shape).astype(p.dtype) for p in func.params]


class MeasureRunner:
    """Builds and measures functions on one worker thread.

    ``submit(key, func, done)`` waits ``debounce_s`` (not when the worker is idle and the
    previous submit is older than ``debounce_s``: a lone edit starts at once), then builds
    ``func`` for ``target`` and measures it; ``done(key, Measurement)`` is called on the
    worker thread. A later submit makes every earlier one that has not started compiling a
    no-op. ``errors`` receive ``error(key, exception)``; ``first_call(key, seconds)``, when
    given, receives the time of the first call (the warm-up), shown as an estimate while the
    timing runs.

    The argument sets the measurement cycles through (copies that defeat the caches, see
    ``workbench.measure.rotation``) are made once and reused by every measurement; they stay
    in memory while the explorer lives, so they are capped at ``argument_memory`` bytes
    (64 MiB: ``wb.measure`` allows 1 GiB for the few seconds one measurement takes).
    """

    argument_memory = 64 << 20

    def __init__(
        self,
        baseline: PrimFunc,
        target: str = "cpu",
        *,
        budget_s: float = 0.3,
        debounce_s: float = 0.2,
        peaks=None,
    ):
        self.target = target
        self.budget_s = budget_s
        self.debounce_s = debounce_s
        self.cache: dict[tuple[PrimFunc, str], Measurement] = {}
        self._baseline_func = baseline
        self._baseline: Baseline | None = None
        self._baseline_s: float | None = None
        self.baseline_note: str | None = None
        self._inputs = random_inputs(baseline)
        self._argument_sets: list[tuple] | None = None
        self._peaks = peaks
        self._generation = 0
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-explore")
        self._pending: list[Future] = []
        self._timers: list[threading.Timer] = []
        self._last_submit = float("-inf")
        self.last_timings: dict[str, float] = {}  # build_s, first_call_s, timing_s

    @property
    def peaks(self):
        if self._peaks is None:
            from workbench.measure import machine_peaks

            self._peaks = machine_peaks()
        return self._peaks

    def cached(self, func: PrimFunc) -> Measurement | None:
        return self.cache.get((func, self.target))

    def submit(
        self,
        key,
        func: PrimFunc,
        done: Callable,
        error: Callable | None = None,
        first_call: Callable | None = None,
        *,
        after: threading.Event | None = None,
        after_timeout_s: float = 0.0,
    ) -> bool:
        """Queue a measurement; returns True when answered at once from the cache.

        ``after``: an event the worker waits for (``after_timeout_s`` at most) before it
        builds: the explorer's loop-nest drawing, which would otherwise share the interpreter
        lock with the compile.
        """
        with self._lock:
            self._generation += 1
            generation = self._generation
        hit = self.cached(func)
        if hit is not None:
            done(key, hit)
            return True

        def start() -> None:
            if generation != self._generation:
                return
            try:
                future = self._executor.submit(
                    self._run, generation, key, func, done, error, first_call, after,
                    after_timeout_s,
                )
            except RuntimeError:  # closed, or the interpreter exits: a debounced edit dropped
                return
            self._pending.append(future)

        now = time.perf_counter()
        quiet = now - self._last_submit > self.debounce_s and self._idle()
        self._last_submit = now
        if self.debounce_s > 0 and not quiet:
            timer = threading.Timer(self.debounce_s, start)
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
        else:
            start()
        return False

    def _idle(self) -> bool:
        """No measurement queued, waiting for its debounce or running."""
        return all(f.done() for f in self._pending) and not any(t.is_alive() for t in self._timers)

    def _run(
        self, generation: int, key, func: PrimFunc, done, error, first_call, after, after_s
    ) -> None:
        if after is not None:  # let the caller draw first (one interpreter lock)
            after.wait(after_s)
        if generation != self._generation:
            return
        try:
            measurement = self.measure(
                func,
                first_call=None
                if first_call is None
                else (lambda seconds: first_call(key, seconds)),
            )
        except Exception as exc:  # noqa: BLE001 - shown in the explorer, never lost
            if error is not None:
                error(key, exc)
            return
        done(key, measurement)

    def argument_sets(self) -> list[tuple]:
        """The rotated copies of the inputs, made on the first measurement and kept."""
        if self._argument_sets is None:
            from workbench.measure.rotation import (
                argument_bytes,
                llc_bytes,
                make_argument_sets,
                rotation_count,
            )

            count = rotation_count(
                argument_bytes(self._inputs), llc_bytes(), memory_limit=self.argument_memory
            )
            self._argument_sets = make_argument_sets(self._inputs, count)
        return self._argument_sets

    def measure(self, func: PrimFunc, first_call: Callable | None = None) -> Measurement:
        """Build and measure ``func`` now (on the calling thread), through the cache.

        The first call (the warm-up) is timed and passed to ``first_call(seconds)``.
        """
        from workbench.backends import build

        hit = self.cached(func)
        if hit is not None:
            return hit
        start = time.perf_counter()
        kernel = build(func, target=self.target)
        sets = self.argument_sets()
        built = time.perf_counter()
        kernel(*sets[-1])  # the warm-up, on a set the timing reaches last
        called = time.perf_counter()
        if first_call is not None:
            first_call(called - built)
        result, note = self._timed(kernel, sets)
        self.last_timings = {
            "build_s": built - start,
            "first_call_s": called - built,
            "timing_s": time.perf_counter() - called,
        }
        measurement = Measurement(
            result, kernel.compile_seconds, self.baseline_s() / result.median_s,
            self.baseline_name, note,
        )
        self.cache[(func, self.target)] = measurement
        return measurement

    def _timed(self, kernel, sets, warmup: int = 0) -> tuple:
        """``(result, note)``: ``kernel`` timed, and timed again once when the spread is large
        or the machine was busy (the faster median kept; the note says what happened)."""
        from workbench.measure import measure
        from workbench.measure.noise import cpu_sample, noise_reason

        results, reasons = [], []
        for _ in range(2):
            before = cpu_sample()
            result = measure(
                kernel,
                *self._inputs,
                budget_s=self.budget_s,
                peaks=self.peaks,
                min_repeats=3,
                warmup=warmup,
                argument_sets=sets,
            )
            results.append(result)
            reasons.append(noise_reason(result, before, cpu_sample()))
            if reasons[-1] is None:
                break
        best = min(results, key=lambda r: r.median_s)
        if reasons[0] is None:
            return best, None
        if reasons[-1] is None:
            return best, f"re-measured ({reasons[0]})"
        return best, f"noisy after a re-measure ({reasons[-1]})"

    @property
    def baseline(self) -> Baseline:
        if self._baseline is None:
            self._baseline = baseline_for(self._baseline_func)
        return self._baseline

    @property
    def baseline_name(self) -> str:
        """``np.matmul`` or ``reference`` (what ``x <name>`` compares with)."""
        return baseline_name(self._baseline_func)

    def baseline_s(self) -> float:
        """Median seconds of the baseline (``baseline_for``) on the inputs (once; measured
        again when noisy, as a node is: ``baseline_note`` says so)."""
        if self._baseline_s is None:
            result, self.baseline_note = self._timed(
                self.baseline.run, self.argument_sets(), warmup=1
            )
            self._baseline_s = result.median_s
        return self._baseline_s

    def wait(self, timeout: float = 120.0) -> None:
        """Block until every queued measurement has finished."""
        for timer in list(self._timers):
            timer.join(timeout)
        for future in list(self._pending):
            future.result(timeout)
        self._timers.clear()
        self._pending.clear()

    def close(self) -> None:
        self._argument_sets = None
        for timer in self._timers:
            timer.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)
