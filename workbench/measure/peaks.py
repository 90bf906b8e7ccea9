"""Machine peaks, measured on this machine: the two roofs of the roofline model.

- **Memory bandwidth** (``gbps``): a STREAM triad ``a[i] = b[i] + s * c[i]`` in a Numba
  ``prange`` loop over float64 arrays each at least 4x the last-level cache, best of several
  runs. Bytes are counted as STREAM does: two reads and one write per element (24 bytes),
  write-allocate traffic not included.
- **Compute** (``gflops``): the larger of
  ``gflops_blas``, numpy float32 matmul (BLAS) at n = 1024 and 2048, best of several runs,
  2 n^3 FLOPs each; and ``gflops_fma``, a Numba loop of float32 fused multiply-adds on data
  that stays in L1, every thread busy (2 FLOPs per FMA).

Measuring takes a few seconds (mostly Numba compiling), so results are cached in a JSON file,
``peaks.json`` in ``$WORKBENCH_CACHE_DIR`` or else ``~/.cache/workbench/``, keyed by host name,
CPU model and core count. ``machine_peaks(refresh=True)`` measures again.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from workbench.measure.rotation import llc_bytes

STREAM_BYTES_PER_ELEMENT = 24  # triad: read b, read c, write a (float64)
FMA_CHAIN = 8  # dependent FMAs per element per sweep (see _fma_loop)
FMA_ELEMENTS = 2048  # float32 per thread: 8 KiB, stays in L1


@dataclass(frozen=True)
class MachinePeaks:
    """The roofs of the roofline model for one machine.

    Attributes
    ----------
    gflops : float
        Peak compute, GFLOP/s: ``max(gflops_blas, gflops_fma)``.
    gbps : float
        Peak memory bandwidth, GB/s (10^9 bytes per second), from a STREAM triad.
    gflops_blas, gflops_fma : float
        The two compute measurements the peak is taken from.
    key : str
        The machine the numbers belong to (host name, CPU model, core count).
    measured_at : str
        When they were measured (UTC, ISO 8601).

    Example
    -------
    >>> p = MachinePeaks(gflops=200.0, gbps=20.0)
    >>> p.ridge_point, p.attainable_gflops(2.5), p.bound(2.5)
    (10.0, 50.0, 'memory')
    """

    gflops: float
    gbps: float
    gflops_blas: float = 0.0
    gflops_fma: float = 0.0
    key: str = ""
    measured_at: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def ridge_point(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.gflops / self.gbps

    def attainable_gflops(self, intensity: float) -> float:
        """The roofline: ``min(gflops, intensity * gbps)`` for an intensity in FLOP/byte."""
        return min(self.gflops, intensity * self.gbps)

    def bound(self, intensity: float) -> str:
        """``"memory"`` left of the ridge point, ``"compute"`` at or right of it."""
        return "memory" if intensity < self.ridge_point else "compute"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> MachinePeaks:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


def _is_complete(entry: object) -> bool:
    """Whether a cache entry holds the two peaks as numbers."""
    if not isinstance(entry, dict):
        return False
    return all(
        isinstance(entry.get(name), (int, float)) and not isinstance(entry.get(name), bool)
        for name in ("gflops", "gbps")
    )


# ---------------------------------------------------------------- the machine's identity


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_key() -> str:
    """``"host | cpu model | N cores"``: peaks are cached per key."""
    return f"{socket.gethostname()} | {cpu_model()} | {os.cpu_count()} cores"


def default_cache_path() -> Path:
    base = os.environ.get("WORKBENCH_CACHE_DIR") or Path.home() / ".cache" / "workbench"
    return Path(base) / "peaks.json"


# ---------------------------------------------------------------- the measurements


def _best_time(run, repeats: int) -> float:
    """The smallest wall time of ``repeats`` calls of ``run()`` (after one warm-up call)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        run()
        best = min(best, (time.perf_counter_ns() - start) * 1e-9)
    return best


def measure_stream_gbps(repeats: int = 5) -> float:
    """Memory bandwidth in GB/s from a parallel STREAM triad over arrays 4x the LLC
    (at least 32 MiB each)."""
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    n = max(4 * llc_bytes(), 32 << 20) // 8
    a, b, c = np.zeros(n), np.full(n, 1.0), np.full(n, 2.0)
    seconds = _best_time(lambda: triad(a, b, c, 3.0), repeats)
    return STREAM_BYTES_PER_ELEMENT * n / seconds / 1e9


def measure_blas_gflops(sizes: tuple[int, ...] = (1024, 2048), repeats: int = 3) -> float:
    """Best float32 matmul throughput (numpy's BLAS) over ``sizes``, in GFLOP/s."""
    rng = np.random.default_rng(0)
    best = 0.0
    for n in sizes:
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        c = np.empty((n, n), dtype=np.float32)
        seconds = _best_time(lambda: np.matmul(a, b, out=c), repeats)  # noqa: B023
        best = max(best, 2 * n**3 / seconds / 1e9)
    return best


def measure_fma_gflops(sweeps: int = 100_000, repeats: int = 3) -> float:
    """float32 FMA throughput of a Numba loop, all threads, in GFLOP/s.

    Each thread sweeps an L1-resident array; per element, a chain of ``FMA_CHAIN`` dependent
    ``x = x * m + c`` steps. LLVM vectorises the sweep, and out-of-order execution overlaps
    the chains of neighbouring elements, so the FMA units, not latency, set the pace.
    ``fastmath={"contract"}`` allows fusing multiply and add without allowing reassociation
    (which could fold the chain into fewer operations).
    """
    from numba import get_num_threads, njit, prange

    @njit(parallel=True, fastmath={"contract"}, cache=False)
    def fma_loop(x, m, c, sweeps):
        for t in prange(x.shape[0]):
            row = x[t]
            for _ in range(sweeps):
                for i in range(row.shape[0]):
                    v = row[i]
                    v = v * m + c
                    v = v * m + c
                    v = v * m + c
                    v = v * m + c
                    v = v * m + c
                    v = v * m + c
                    v = v * m + c
                    v = v * m + c
                    row[i] = v

    threads = get_num_threads()
    x = np.ones((threads, FMA_ELEMENTS), dtype=np.float32)
    m, c = np.float32(0.5), np.float32(0.5)  # fixed point 1.0: no overflow, no denormals
    seconds = _best_time(lambda: fma_loop(x, m, c, sweeps), repeats)
    flops = 2 * FMA_CHAIN * FMA_ELEMENTS * threads * sweeps
    return flops / seconds / 1e9


def measure_peaks() -> MachinePeaks:
    """Measure the peaks now (a few seconds), without reading or writing the cache."""
    blas = measure_blas_gflops()
    fma = measure_fma_gflops()
    return MachinePeaks(
        gflops=max(blas, fma),
        gbps=measure_stream_gbps(),
        gflops_blas=blas,
        gflops_fma=fma,
        key=machine_key(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        extra={"llc_bytes": llc_bytes(), "numpy": np.__version__},
    )


# ---------------------------------------------------------------- the cache

_MEMO: dict[tuple[str, str], MachinePeaks] = {}


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: Path, entries: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, indent=2, sort_keys=True))
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old or the new file


def machine_peaks(refresh: bool = False, *, cache_path: str | Path | None = None) -> MachinePeaks:
    """The peak compute (GFLOP/s) and memory bandwidth (GB/s) of this machine.

    Measured once per machine and cached in ``peaks.json`` (see the module docstring);
    later calls, in this process or another, read the cache.

    Parameters
    ----------
    refresh : bool
        Measure again even when the cache has this machine, and update the cache.
    cache_path : path, optional
        The JSON cache file; default ``$WORKBENCH_CACHE_DIR/peaks.json`` or
        ``~/.cache/workbench/peaks.json``.

    Returns
    -------
    MachinePeaks

    Example
    -------
    >>> import workbench as wb
    >>> peaks = wb.machine_peaks()                  # doctest: +SKIP
    >>> print(f"{peaks.gflops:.0f} GFLOP/s, {peaks.gbps:.1f} GB/s, "
    ...       f"ridge at {peaks.ridge_point:.1f} FLOP/byte")  # doctest: +SKIP
    """
    path = Path(cache_path) if cache_path is not None else default_cache_path()
    key = machine_key()
    memo_key = (str(path), key)
    if not refresh:
        if memo_key in _MEMO:
            return _MEMO[memo_key]
        cached = _read_cache(path).get(key)
        if _is_complete(cached):  # an entry from an older version is measured again
            peaks = MachinePeaks.from_dict(cached)
            if peaks.gflops > 0 and peaks.gbps > 0:
                _MEMO[memo_key] = peaks
                return peaks
    peaks = measure_peaks()
    entries = _read_cache(path)
    entries[key] = peaks.to_dict()
    _write_cache(path, entries)
    _MEMO[memo_key] = peaks
    return peaks
