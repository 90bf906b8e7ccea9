"""Is a measurement trustworthy? Its spread, and how busy the machine was while it ran.

Identical runs on a shared machine can differ tenfold (another process holds the cores, a
hypervisor steals time). ``noise_reason(result, before, after)`` says why a result should
not be trusted, or ``None``:

* **spread**: the interquartile range is more than ``MAX_RELATIVE_IQR`` of the median;
* **busy**: the 1-minute load average stood above the cores this process may use (plus
  one, this process itself), or more than ``MAX_STEAL`` of the CPU time between the two
  ``CpuSample``s went to other virtual machines (``steal`` in ``/proc/stat``).

A caller measures again when a reason is given and shows the reason beside the numbers
(the explorer's table has a ``note`` column).

Example
-------
>>> from workbench.measure.result import MeasureResult
>>> r = MeasureResult("k", "cpu", median_s=1e-3, iqr_s=8e-4, repeats=5, times_s=(1e-3,) * 5)
>>> calm = CpuSample(load=0.5, cores=4, steal=0, total=100)
>>> noise_reason(r, calm, CpuSample(load=0.5, cores=4, steal=0, total=200))
'spread: IQR 80% of the median'
>>> r = MeasureResult("k", "cpu", median_s=1e-3, iqr_s=1e-5, repeats=5, times_s=(1e-3,) * 5)
>>> noise_reason(r, calm, CpuSample(load=9.0, cores=4, steal=0, total=200))
'machine busy: load 9.0 on 4 cores'
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MAX_RELATIVE_IQR = 0.25
MAX_STEAL = 0.05


@dataclass(frozen=True)
class CpuSample:
    """The load average, the usable cores and the ``/proc/stat`` steal and total jiffies."""

    load: float
    cores: int
    steal: int
    total: int


def cpu_sample() -> CpuSample:
    """Read the machine's load now (zeros where ``/proc`` is missing)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    steal = total = 0
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
        if fields and fields[0] == "cpu":
            numbers = [int(v) for v in fields[1:]]
            total = sum(numbers[:8])  # user .. steal (guest time is inside user)
            steal = numbers[7] if len(numbers) > 7 else 0
    except (OSError, ValueError):
        pass
    return CpuSample(load, cores, steal, total)


def noise_reason(result, before: CpuSample, after: CpuSample) -> str | None:
    """Why ``result`` (a ``MeasureResult``) is not to be trusted, or ``None``."""
    if result.median_s > 0 and result.iqr_s > MAX_RELATIVE_IQR * result.median_s:
        return f"spread: IQR {result.iqr_s / result.median_s:.0%} of the median"
    ticks = after.total - before.total
    if ticks > 0 and (after.steal - before.steal) / ticks > MAX_STEAL:
        return f"machine busy: {(after.steal - before.steal) / ticks:.0%} steal time"
    load = max(before.load, after.load)
    if load > after.cores + 1:
        return f"machine busy: load {load:.1f} on {after.cores} cores"
    return None
