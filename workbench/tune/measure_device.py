"""Checking and timing a tuning candidate whose kernel runs on a device (the ``cuda``
target), in the runner's measuring process, the one process that uses the GPU.

The inputs go to the device once (``cuda_device.to_device``); the outputs are poisoned
(NaN) on the host before that copy, so an unwritten element fails the check; one call
runs, the outputs come back and are compared with the numpy reference; then every timing
is device time between two CUDA events around ``number`` back-to-back calls on the same
device arrays (no copy in the timed region; the first call also compiled the kernels).
Under the simulator the events give wall time (see ``EventTimer``).
"""

from __future__ import annotations

import numpy as np

from workbench.tune.isolation import CandidateError


def measure_on_device(call, task, args: list[np.ndarray], expected: dict) -> list[float]:
    """Check ``call`` (a built kernel, perhaps wrapped by the task's hook) against
    ``expected`` and time it with events; seconds per call, ``task.repeats`` of them."""
    from workbench.backends.cuda_device import EventTimer, to_device, to_host
    from workbench.backends.numba_cuda import clear_memory_cache

    host = [a.copy() for a in args]
    for index in expected:
        host[index][...] = np.nan if host[index].dtype.kind == "f" else 0
    device = [to_device(a) for a in host]
    try:
        call(*device)
        for index, want in expected.items():
            got = to_host(device[index])
            if not np.allclose(got, want, rtol=task.rtol, atol=task.atol, equal_nan=False):
                worst = float(np.nanmax(np.abs(got.astype("float64") - want))) if got.size else 0
                name = task.func.params[index].name
                raise CandidateError(
                    "wrong_result",
                    f"output {name} differs from the reference (max |diff| {worst:.3g})",
                )
        timer = EventTimer()
        timer.start()
        call(*device)
        first = timer.stop()
        number = 1
        if task.min_repeat_s > 0 and first < task.min_repeat_s:
            number = int(task.min_repeat_s / max(first, 1e-7)) + 1
        times = []
        for _ in range(max(1, task.repeats)):
            timer.start()
            for _ in range(number):
                call(*device)
            times.append(timer.stop() / number)
        return times
    finally:
        clear_memory_cache()  # the modules loaded on the device (the worker lives on)
