"""Facts about the host CPU the ``cpu`` target compiles for: its SIMD vector width, feature
flags, cores, cache sizes and L1 geometry.

One place to read it from, so that schedules (``workbench.recipes``) size their vector
loops and register tiles for the machine they run on instead of a hard-coded 16 lanes. The
``cpu`` and ``numpy`` targets report these facts as their ``Target.device``
(``host_device_facts``); a schedule asks its target (``target_vector_lanes``,
``target_reduction_lanes``), so a target for another machine plans for that machine.

This module is the one home of every host fact: the tuner's prior and rules, the recipes and
the graph schedules read them through it (``host_features``, ``host_cores``, ``cache_sizes``,
``l1_geometry``, ``vector_bits``), so a test can describe another machine by replacing these
readers (``tests/machines.py``) and CI checks AVX2 and AVX-512, 1 and 4 cores, on one host.

The width comes from the features LLVM detects on the host (what Numba compiles for):
AVX-512 gives 512 bits, AVX/AVX2 256, anything else (SSE, NEON) 128, except that on the
Intel cores LLVM tunes with ``prefer-256-bit`` (Skylake-SP to Sapphire Rapids: its
vectorizers then emit ymm, not zmm, code) the width is 256: a register tile sized for 16
lanes there spills. The environment
variable is not consulted (no ambient state); pass ``bits=`` to the functions that take it
to plan for another machine.

Example
-------
>>> vector_bits() in (128, 256, 512)
True
>>> vector_lanes("float32") == vector_bits() // 32
True
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from workbench.backends.target import CPU_FACTS, DeviceFacts

if TYPE_CHECKING:
    from workbench.backends.target import Target


def _cpuinfo_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _llvm_features() -> set[str]:
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        return {name for name in ("avx512f", "avx2", "avx") if features.get(name, False)}
    except Exception:  # noqa: BLE001 (a platform llvmlite cannot inspect: fall back to cpuinfo)
        return set()


def host_features() -> set[str]:
    """The host's SIMD feature names (``avx512f``, ``avx2``, ``avx``...): LLVM's, else
    ``/proc/cpuinfo``'s flags."""
    return _llvm_features() or _cpuinfo_flags()


def host_cores() -> int:
    """The cores this process may run on (the parallel loops' threads)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=1)
def cache_sizes() -> tuple[int, int, int]:
    """(L1d, L2, last level) in bytes, from /sys; common sizes where it is missing."""
    sizes = {1: 32 << 10, 2: 1 << 20, 3: 32 << 20}
    try:
        for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
            sizes[level] = int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return sizes[1], sizes.get(2, sizes[1]), sizes.get(3, sizes.get(2, sizes[1]))


@functools.lru_cache(maxsize=1)
def l1_geometry() -> tuple[int, int]:
    """(line bytes, ways) of the L1 data cache, from /sys; (64, 8) where it is missing."""
    base = Path("/sys/devices/system/cpu/cpu0/cache/index0")
    try:
        return (int((base / "coherency_line_size").read_text()),
                int((base / "ways_of_associativity").read_text()))
    except (OSError, ValueError):
        return 64, 8


def vector_bits_of(features: set[str]) -> int:
    """The SIMD register width a set of CPU feature names (LLVM's or ``/proc/cpuinfo``'s
    ``flags``) gives: 512 (``avx512f``), 256 (``avx2`` / ``avx``), else 128 (SSE, NEON).

    Example
    -------
    >>> vector_bits_of({"sse2", "avx", "avx2", "fma"})
    256
    """
    if "avx512f" in features:
        return 512
    if "avx2" in features or "avx" in features:
        return 256
    return 128


# Host CPU names (LLVM's) whose tuning has ``TuningPrefer256Bit``: AVX-512 is there, but
# LLVM's loop and SLP vectorizers use 256-bit vectors unless told otherwise.
PREFER_256_BIT_CPUS = frozenset({
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
    "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
})


def _host_cpu_name() -> str:
    try:
        import llvmlite.binding as llvm

        return llvm.get_host_cpu_name()
    except Exception:  # noqa: BLE001 (a platform llvmlite cannot inspect)
        return ""


def vector_bits_for(features: set[str], cpu_name: str) -> int:
    """The vector width LLVM's vectorizers use on ``cpu_name`` with ``features``.

    Example
    -------
    >>> vector_bits_for({"avx512f", "avx2"}, "rocketlake"), vector_bits_for({"avx512f"}, "znver5")
    (256, 512)
    """
    bits = vector_bits_of(features)
    return 256 if bits == 512 and cpu_name in PREFER_256_BIT_CPUS else bits


@functools.lru_cache(maxsize=1)
def vector_bits() -> int:
    """The SIMD width the host CPU's LLVM target vectorizes with: 512, 256 or 128 bits."""
    return vector_bits_for(host_features(), _host_cpu_name())


def vector_lanes(dtype: str = "float32", bits: int | None = None) -> int:
    """How many ``dtype`` elements one vector register holds (16 float32 on AVX-512).

    Example
    -------
    >>> vector_lanes("float64", bits=512)
    8
    """
    width = vector_bits() if bits is None else bits
    return max(1, width // (8 * np.dtype(dtype).itemsize))


@functools.lru_cache(maxsize=1)
def cache_line_bytes() -> int:
    """The L1 data cache line size (64 on x86-64 and most ARM cores), from sysfs."""
    path = Path("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 64


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


@functools.lru_cache(maxsize=1)
def host_device_facts() -> DeviceFacts:
    """The ``DeviceFacts`` of the ``cpu`` and ``numpy`` targets: the host's vector width
    and cache line (the cache sizes stay ``CPU_FACTS``'s)."""
    return dataclasses.replace(
        CPU_FACTS, vector_bytes=vector_bits() // 8, cache_line_bytes=cache_line_bytes()
    )


def _device(target: Target | str) -> DeviceFacts:
    from workbench.backends.target import Target

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
