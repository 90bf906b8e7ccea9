"""Kernel hooks that inject faults into chosen candidates (imported by the worker processes).

``hook(kernel, config)`` returns what the runner calls instead of the kernel. The fault is
chosen by the config's ``"fault"`` knob, so one tuning run mixes good and bad candidates.
"""

from __future__ import annotations

import ctypes
import time


def faulty(kernel, config):
    fault = config.get("fault", "none")

    def call(*args):
        if fault == "segfault":
            ctypes.string_at(0)  # read address 0: SIGSEGV in the worker
        if fault == "hang":
            while True:
                time.sleep(1)
        kernel(*args)
        if fault == "wrong":
            args[-1].flat[0] += 1.0
    return call


def slow(kernel, config):
    """Each call sleeps 0.3 s: a run slow enough to be killed half way."""

    def call(*args):
        time.sleep(0.3)
        kernel(*args)
    return call


def fault_template(cfg, func):
    """matmul with a ``fault`` knob (see ``faulty``) and a tile knob."""
    from workbench.schedule import Schedule

    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    cfg.define_knob("fault", ["none", "segfault", "hang", "wrong"])
    cfg.define_split("tile_j", 8, 2)
    sch.split(j, factors=cfg["tile_j"])
    return sch
