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


def measure_on_device(call, task, args: list[np.ndarray], expected: dict) -> list[float]:
    """Check ``call`` (a built kernel, perhaps wrapped by the task's hook) against
    ``expected`` and time it with events; seconds per call, ``task.repeats`` of them."""
    from workbench.backends.cuda.cuda_device import EventTimer, to_device, to_host
    from workbench.backends.cuda.numba_cuda import clear_memory_cache
    from workbench.tune.runner import calls_per_timing, check_outputs, poisoned_outputs

    device = [to_device(a) for a in poisoned_outputs(args, expected)]
    try:
        call(*device)
        check_outputs(task, {index: to_host(device[index]) for index in expected}, expected)
        timer = EventTimer()
        timer.start()
        call(*device)
        number = calls_per_timing(task, timer.stop())
        times = []
        for _ in range(max(1, task.repeats)):
            timer.start()
            for _ in range(number):
                call(*device)
            times.append(timer.stop() / number)
        return times
    finally:
        clear_memory_cache()  # the modules loaded on the device (the worker lives on)
