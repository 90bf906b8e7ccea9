"""The explorer's measurement runner: a lone edit starts at once, quick edits are debounced
and only the last one is measured, revisits come from the cache."""

from __future__ import annotations

import threading
import time

from workbench import ops
from workbench.widgets.runner import MeasureRunner


def fake_runner(debounce_s: float) -> tuple[MeasureRunner, list]:
    runner = MeasureRunner(ops.matmul(8, 8, 8), debounce_s=debounce_s)
    measured = []

    def measure(func, first_call=None):
        measured.append(func)
        runner.cache[(func, runner.target)] = f"m{len(measured)}"
        return runner.cache[(func, runner.target)]

    runner.measure = measure
    return runner, measured


def test_a_lone_edit_starts_at_once_and_quick_edits_are_debounced():
    runner, measured = fake_runner(debounce_s=2.0)
    funcs = [ops.matmul(8, 8, n) for n in (8, 16, 24)]
    done = threading.Event()
    results = []
    start = time.perf_counter()
    runner.submit("a", funcs[0], lambda key, m: (results.append((key, m)), done.set()))
    assert done.wait(1.0), "the first edit waited for the debounce"
    assert time.perf_counter() - start < 1.0
    runner.submit("b", funcs[1], lambda key, m: results.append((key, m)))  # within 2 s
    runner.submit("c", funcs[2], lambda key, m: results.append((key, m)))
    assert any(t.is_alive() for t in runner._timers)  # debounced, not started
    runner.wait()
    assert results == [("a", "m1"), ("c", "m2")]  # "b" was superseded by "c"
    assert measured == [funcs[0], funcs[2]]
    hit = []
    assert runner.submit("again", funcs[0], lambda key, m: hit.append(m)) is True
    assert hit == ["m1"]
    runner.close()


def test_the_worker_waits_for_the_callers_event_before_building():
    runner, measured = fake_runner(debounce_s=0.0)
    drawn = threading.Event()
    results = []
    runner.submit("a", ops.matmul(8, 8, 8), lambda key, m: results.append(key), after=drawn,
                  after_timeout_s=30.0)
    time.sleep(0.3)
    assert measured == [] and results == []  # held until the event
    drawn.set()
    runner.wait()
    assert results == ["a"] and len(measured) == 1
    start = time.perf_counter()  # an event never set only delays by the timeout
    runner.submit("b", ops.matmul(8, 8, 16), lambda key, m: results.append(key),
                  after=threading.Event(), after_timeout_s=0.2)
    runner.wait()
    assert results == ["a", "b"] and time.perf_counter() - start >= 0.2
    runner.close()
