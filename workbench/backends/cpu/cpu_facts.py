"""Facts about the host CPU the ``cpu`` target compiles for: its SIMD vector width, feature
flags, cores, cache sizes and L1 geometry.

One place to read it from, so that schedules (``workbench.recipes``) size their vector
loops and register tiles for the machine they run on instead of a hard-coded 16 lanes. The
``cpu`` and ``numpy`` targets report these facts as their ``Target.device``
(``host_device_facts``); a schedule asks its target (``target_vector_lanes``,
``target_reduction_lanes``), so a target for another machine plans for that machine.

The facts themselves are read once per process by ``workbench.backends.common.machine``
(``machine_facts()``); this module is the ``cpu`` target's view of them (``host_features``,
``host_cores``, ``cache_sizes``, ``l1_geometry``, ``vector_bits``). A test describes another
machine by injecting its facts (``use_machine_facts``; ``tests/machines.py``), and CI checks
AVX2 and AVX-512, 1 and 4 cores, on one host.

The width comes from the features LLVM detects on the host (what Numba compiles for):
AVX-512 gives 512 bits, AVX/AVX2 256, anything else (SSE, NEON) 128. The Intel cores LLVM
tunes with ``prefer-256-bit`` (Skylake-SP to Emerald Rapids) get 512-bit code too: the
host's facts are read after Numba's codegen was given ``-prefer-256-bit``
(``machine.widen_numba_vectors``); where it could not be (Numba compiled before, or the user
chose its features with ``NUMBA_CPU_FEATURES``) its vectorizers emit ymm code and the width
is 256 (a register tile sized for 16 lanes there spills). Pass ``bits=`` to the functions
that take it to plan for another machine.

Example
-------
>>> vector_bits() in (128, 256, 512)
True
>>> vector_lanes("float32") == vector_bits() // 32
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from workbench.backends.common.machine import (  # noqa: F401 - re-exported: the cpu's facts
    PREFER_256_BIT_CPUS,
    host_device_facts,
    machine_facts,
    vector_bits_for,
    vector_bits_of,
)
from workbench.backends.common.target import DeviceFacts

if TYPE_CHECKING:
    from workbench.backends.common.target import Target


def host_features() -> set[str]:
    """The host's SIMD feature names (``avx512f``, ``avx2``, ``avx``...): LLVM's, else
    ``/proc/cpuinfo``'s flags (``machine_facts()``)."""
    return set(machine_facts().simd_features)


def host_cores() -> int:
    """The cores this process may run on (the parallel loops' threads)."""
    return machine_facts().cores


def cache_sizes() -> tuple[int, int, int]:
    """(L1d, L2, last level) in bytes."""
    return machine_facts().levels


def l1_geometry() -> tuple[int, int]:
    """(line bytes, ways) of the L1 data cache."""
    facts = machine_facts()
    return facts.cache_line_bytes, facts.l1_ways


def vector_bits() -> int:
    """The SIMD width the host CPU's LLVM target vectorizes with: 512, 256 or 128 bits
    (from ``machine_facts()``: LLVM's features, ``/proc/cpuinfo``'s flags where LLVM
    cannot say)."""
    return machine_facts().vector_bits


def vector_lanes(dtype: str = "float32", bits: int | None = None) -> int:
    """How many ``dtype`` elements one vector register holds (16 float32 on AVX-512).

    Example
    -------
    >>> vector_lanes("float64", bits=512)
    8
    """
    width = vector_bits() if bits is None else bits
    return max(1, width // (8 * np.dtype(dtype).itemsize))


def cache_line_bytes() -> int:
    """The L1 data cache line size (64 on x86-64 and most ARM cores; ``machine_facts()``)."""
    return machine_facts().cache_line_bytes


def reduction_lanes(dtype: str = "float32", bits: int | None = None) -> int:
    """Partial results for an ``rfactor``-ed row reduction: one vector register, and at
    least one cache line of them.

    Measured: LLVM turns a fully unrolled 8-lane ``max`` reduction (one AVX2 register)
    back into scalar code, while 16 lanes (two AVX2 registers, one AVX-512 register)
    vectorize on both machines; a cache line of partials is the smallest group that does
    on either. 16 float32 on AVX-512 and AVX2, 32 int8 on AVX2.

    Example
    -------
    >>> reduction_lanes("float32", bits=512), reduction_lanes("float32", bits=256)
    (16, 16)
    """
    return max(vector_lanes(dtype, bits), cache_line_bytes() // np.dtype(dtype).itemsize)


# ---------------------------------------------------------------------------------------
# The same facts, as a target's DeviceFacts
# ---------------------------------------------------------------------------------------


def _device(target: Target | str) -> DeviceFacts:
    from workbench.backends.common.target import Target

    return Target(target).device


def target_vector_lanes(target: Target | str = "cpu", dtype: str = "float32") -> int:
    """How many ``dtype`` elements one vector register of ``target`` holds.

    Example
    -------
    >>> target_vector_lanes("cpu", "float32") == vector_lanes("float32")
    True
    """
    return max(1, _device(target).vector_bytes // np.dtype(dtype).itemsize)


def target_reduction_lanes(target: Target | str = "cpu", dtype: str = "float32") -> int:
    """``reduction_lanes`` for ``target``: one of its vector registers, and at least one of
    its cache lines, of partial results.

    Example
    -------
    >>> target_reduction_lanes("cpu", "float32") == reduction_lanes("float32")
    True
    """
    itemsize = np.dtype(dtype).itemsize
    return max(target_vector_lanes(target, dtype), _device(target).cache_line_bytes // itemsize)
