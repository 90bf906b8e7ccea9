"""Warp shuffles for Numba's CUDA simulator (which has none).

The cross-thread reductions (``cuda_reduction``) print ``cuda.shfl_xor_sync(mask, value,
lane_mask)``: on a GPU that is Numba's intrinsic (``shfl.sync.bfly``). Numba-cuda 0.30's
simulator (``NUMBA_ENABLE_CUDASIM=1``, what CI runs) has no ``shfl_*_sync`` on its fake
``cuda`` module, so a generated kernel would fail there with ``AttributeError``.
``install_simulator_shuffles`` adds them to the simulator's module class, so the *same*
source runs under the simulator and CI checks the numbers of the real code path.

How the simulated shuffle works: every thread of the block publishes its value in a
per-block table, waits at the block's barrier, reads its partner's value, and waits again
(so the table can be reused). It therefore needs what the real instruction needs from a
well-formed kernel and a bit more: every thread of the *block* calls it at the same point
(the generated reductions never place a shuffle under a per-thread condition). Lanes
outside ``mask`` or outside the block (a partial last warp) read their own value.
"""

from __future__ import annotations

import threading

_INSTALL_LOCK = threading.Lock()


def _exchange(value, partner_of):
    """Publish ``value``, barrier, read the partner's, barrier (see the module docstring)."""
    thread = threading.current_thread()
    manager = thread._manager
    with _INSTALL_LOCK:
        table = manager.__dict__.setdefault("_workbench_shuffle", {})
    me = thread.thread_id
    table[me] = value
    thread.syncthreads()
    partner = partner_of(me)
    got = table.get(partner, value)
    thread.syncthreads()
    return got


def _lane_partner(me: int, lane: int, mask: int) -> int:
    base = me - me % 32
    if lane < 0 or lane > 31 or not (int(mask) >> lane) & 1:
        return me
    return base + lane


def shfl_xor_sync(self, mask, value, lane_mask):
    """``value`` of lane ``laneid ^ lane_mask`` (simulated; see the module docstring)."""
    return _exchange(value, lambda me: _lane_partner(me, (me % 32) ^ int(lane_mask), mask))


def shfl_down_sync(self, mask, value, delta):
    """``value`` of lane ``laneid + delta``, own value past the warp's end (simulated)."""
    return _exchange(value, lambda me: _lane_partner(me, me % 32 + int(delta), mask))


def shfl_up_sync(self, mask, value, delta):
    """``value`` of lane ``laneid - delta``, own value before lane 0 (simulated)."""
    return _exchange(value, lambda me: _lane_partner(me, me % 32 - int(delta), mask))


def shfl_sync(self, mask, value, src_lane):
    """``value`` of lane ``src_lane`` (simulated)."""
    return _exchange(value, lambda me: _lane_partner(me, int(src_lane) % 32, mask))


_SHUFFLES = {
    "shfl_xor_sync": shfl_xor_sync,
    "shfl_down_sync": shfl_down_sync,
    "shfl_up_sync": shfl_up_sync,
    "shfl_sync": shfl_sync,
}


def install_simulator_shuffles() -> list[str]:
    """Add the shuffles the simulator lacks to its fake ``cuda`` module; return the names
    added (none when it has them already or when the simulator is off)."""
    from numba import config

    if not config.ENABLE_CUDASIM:
        return []
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    added = []
    with _INSTALL_LOCK:
        for name, fn in _SHUFFLES.items():
            if not hasattr(FakeCUDAModule, name):
                setattr(FakeCUDAModule, name, fn)
                added.append(name)
    return added
