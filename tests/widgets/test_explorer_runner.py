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


def test_a_lone_edit_starts_at_once_and_quick_edits_are_debounced(monkeypatch):
    """Decided by the runner's clock, not by how fast this machine is: the clock is a fake
    here (edits 0.1 s apart), and the assertions are on what was queued, never on seconds."""
    import types

    from workbench.widgets import runner as runner_module

    now = [100.0]
    monkeypatch.setattr(runner_module, "time",
                        types.SimpleNamespace(perf_counter=lambda: now[0]))
    runner, measured = fake_runner(debounce_s=0.5)
    funcs = [ops.matmul(8, 8, n) for n in (8, 16, 24)]
    done = threading.Event()
    results = []
    runner.submit("a", funcs[0], lambda key, m: (results.append((key, m)), done.set()))
    assert runner._timers == [], "the first edit waited for the debounce"
    assert done.wait(60.0)
    now[0] += 0.1  # within the debounce
    runner.submit("b", funcs[1], lambda key, m: results.append((key, m)))
    now[0] += 0.1
    runner.submit("c", funcs[2], lambda key, m: results.append((key, m)))
    assert len(runner._timers) == 2  # debounced, not started
    runner.wait()
    assert results == [("a", "m1"), ("c", "m2")]  # "b" was superseded by "c"
    assert measured == [funcs[0], funcs[2]]
    hit = []
    assert runner.submit("again", funcs[0], lambda key, m: hit.append(m)) is True
    assert hit == ["m1"]
    runner.close()


def test_a_debounced_edit_never_fires_after_interpreter_shutdown(tmp_path):
    """Issue 17: a script that opened an explorer and exited with an edit still waiting for
    its debounce printed ``RuntimeError: cannot schedule new futures after ... shutdown``
    from the timer thread."""
    import os
    import subprocess
    import sys

    script = tmp_path / "explore_and_exit.py"
    script.write_text(
        "import workbench as wb\n"
        "from workbench import ops\n"
        "from workbench.measure import MachinePeaks\n"
        "ex = wb.explore(wb.Schedule(ops.matmul(16, 16, 16)),\n"
        "                peaks=MachinePeaks(gflops=100.0, gbps=10.0))\n"
        "ex.runner.submit('a', ops.matmul(32, 32, 32), lambda k, m: None)\n"
        "ex.runner.submit('b', ops.matmul(32, 32, 48), lambda k, m: None)  # debounced\n"
        "print('exiting')\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    assert "Traceback" not in done.stderr and "RuntimeError" not in done.stderr, done.stderr


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


def test_one_baseline_with_one_name():
    """Issue 21 item 3: a matmul is compared with np.matmul, anything else with the
    reference executor, called "reference" (never "numpy") wherever the ratio shows."""
    import numpy as np

    from workbench.widgets.runner import baseline_for, baseline_name

    matmul = baseline_for(ops.matmul(8, 4, 6))
    assert matmul.name == "np.matmul" == baseline_name(ops.matmul(8, 4, 6))
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (8, 6)).astype("float32"), rng.uniform(-1, 1, (6, 4)).astype(
        "float32")
    c = np.empty((8, 4), "float32")
    matmul.run(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-6)
    assert baseline_name(ops.softmax(4, 8)) == "reference"
    assert baseline_name(ops.batch_matmul(2, 4, 4, 4)) == "reference"
    runner = MeasureRunner(ops.softmax(4, 8))
    assert runner.baseline_name == "reference" and runner.baseline.name == "reference"
    runner.close()


def test_a_noisy_timing_is_measured_again_and_says_so(monkeypatch):
    """Issue 21 item 7: a large spread or a busy machine triggers one re-measure; the note
    says what happened; the faster median is kept."""
    from workbench.measure import noise
    from workbench.measure.result import MeasureResult

    runner = MeasureRunner(ops.matmul(8, 8, 8))
    medians = iter([(8e-3, 6e-3), (1e-3, 1e-5), (2e-3, 2e-3), (3e-3, 3e-3)])

    def fake_measure(kernel, *args, **kwargs):
        median, iqr = next(medians)
        return MeasureResult("k", "cpu", median_s=median, iqr_s=iqr, repeats=3,
                             times_s=(median,) * 3)

    calm = noise.CpuSample(load=0.0, cores=2, steal=0, total=100)
    monkeypatch.setattr("workbench.measure.measure", fake_measure)
    monkeypatch.setattr(noise, "cpu_sample", lambda: calm)
    result, note = runner._timed(None, [])
    assert result.median_s == 1e-3 and note == "re-measured (spread: IQR 75% of the median)"
    result, note = runner._timed(None, [])
    assert result.median_s == 2e-3 and note.startswith("noisy after a re-measure (spread")
    runner.close()
