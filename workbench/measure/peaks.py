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

Robustness (peaks measured while the machine is busy are far too low, and a cached low
value would make every later roofline wrong):

- each measurement is the **best of ``trials`` trials** (each itself the best of several
  runs), a short pause between trials;
- the compute peak is **sanity-checked** against the CPU's theoretical peak, cores x clock
  x float32 vector lanes x 2 (FMA) x FMA units, read from ``/proc/cpuinfo`` (``flags``,
  ``cpu MHz``) or cpufreq (``plausible_band``). A result below ``PLAUSIBLE_FRACTION`` of it
  is measured again (up to ``retries`` more trials); still low, it is kept but marked
  ``extra["suspect"] = True``, with a warning; a suspect cache entry (or an old one below
  the band) is measured again by the next process once it is ``SUSPECT_RETRY_S`` (10 min)
  old, so a busy machine is not measured by every process either;
- a refresh keeps the **best** of the cached and the new numbers (a busy re-measure cannot
  lower good roofs), unless ``keep_best=False``;
- a measured kernel above a roof (``peaks_consistent``) is evidence that the roofs are too
  low: ``plot_roofline`` then measures again (``refresh_if_inconsistent``).

Memory bandwidth has no theoretical value that ``/proc`` tells; it is protected by the best
of trials, the keep-best refresh and the above-the-roof check.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from workbench.backends.cpu.cpu_facts import vector_bits_of, vector_lanes
from workbench.measure.rotation import llc_bytes

STREAM_BYTES_PER_ELEMENT = 24  # triad: read b, read c, write a (float64)
FMA_CHAIN = 8  # dependent FMAs per element per sweep (see _fma_loop)
FMA_ELEMENTS = 2048  # float32 per thread: 8 KiB, stays in L1
PLAUSIBLE_FRACTION = 0.1
"""A compute peak below this fraction of the CPU's theoretical peak is not believed."""
SUSPECT_RETRY_S = 600.0
"""A suspect cache entry is used for this long after it was measured, then measured again."""
CONSISTENCY_TOLERANCE = 1.2
"""A measured point may exceed a roof by this factor before the roofs are doubted (timing
noise, STREAM not counting write-allocate traffic)."""


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


# ---------------------------------------------------------------- the machine's identity


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (``machine_facts()``), else what ``platform``
    knows."""
    from workbench.backends.common.machine import machine_facts

    return machine_facts().model or platform.processor() or platform.machine()


def machine_key() -> str:
    """``"host | cpu model | N cores"``: peaks are cached per key."""
    from workbench.backends.common.machine import machine_facts

    return f"{socket.gethostname()} | {cpu_model()} | {machine_facts().cpu_count} cores"


# ---------------------------------------------------------------- plausibility

# Flags naming a SIMD unit; without one (no flags read) the band assumes scalar code.
_SIMD_FLAGS = frozenset({"avx512f", "avx2", "avx", "asimd", "neon", "sse2"})


@dataclass(frozen=True)
class PlausibleBand:
    """What the CPU can do in theory, and the lowest compute peak believed.

    Attributes
    ----------
    theoretical_gflops : float
        cores x GHz x float32 lanes x 2 (FMA) x FMA units per core.
    low_gflops : float
        ``PLAUSIBLE_FRACTION`` of it: a measured peak below is measured again.
    detail : str
        The facts it was computed from.
    """

    theoretical_gflops: float
    low_gflops: float
    detail: str


def cpu_facts(cpuinfo: str | None = None, cores: int | None = None,
              max_mhz: float | None = None) -> dict:
    """Cores, clock (MHz, the highest reported), SIMD lanes for float32 and FMA units,
    from ``/proc/cpuinfo`` text (default: the host's, ``machine_facts()``, with cpufreq's
    ``cpuinfo_max_freq`` when readable).

    Example
    -------
    >>> cpu_facts("flags : fpu sse2 avx avx2 fma\\ncpu MHz : 2000.0\\n", cores=4, max_mhz=0)
    {'cores': 4, 'mhz': 2000.0, 'lanes': 8, 'fma_units': 2, 'flags': 'avx2 fma'}
    """
    from workbench.backends.common.machine import machine_facts, parse_cpuinfo

    host = machine_facts()
    if cpuinfo is None:
        flags, mhz = set(host.flags), host.mhz
    else:
        _, parsed, mhz = parse_cpuinfo(cpuinfo)
        flags = set(parsed)
    if max_mhz is None:
        max_mhz = host.max_mhz
    if max_mhz:
        mhz = max(mhz, max_mhz)
    # the vector width is the backends' (backends/cpu_facts), read from these flags
    lanes = vector_lanes("float32", bits=vector_bits_of(flags)) if flags & _SIMD_FLAGS else 1
    has_fma = "fma" in flags or "asimd" in flags or "avx512f" in flags
    fma_units = 2 if has_fma and lanes >= 8 else 1
    if cores is None:
        cores = host.cores
    shown = " ".join(f for f in ("avx512f", "avx2", "asimd", "fma") if f in flags)
    return {"cores": cores, "mhz": mhz, "lanes": lanes, "fma_units": fma_units,
            "flags": shown}


def plausible_band(facts: dict | None = None) -> PlausibleBand | None:
    """The theoretical float32 peak of this CPU and the lowest believable measured peak;
    None when the clock is unknown.

    Example
    -------
    >>> band = plausible_band({"cores": 2, "mhz": 2000.0, "lanes": 8, "fma_units": 2,
    ...                        "flags": "avx2 fma"})
    >>> band.theoretical_gflops, band.low_gflops
    (128.0, 12.8)
    """
    facts = facts if facts is not None else cpu_facts()
    if not facts.get("mhz"):
        return None
    theoretical = (facts["cores"] * facts["mhz"] / 1000.0 * facts["lanes"] * 2
                   * facts["fma_units"])
    detail = (f"{facts['cores']} cores x {facts['mhz'] / 1000:.2f} GHz x {facts['lanes']} "
              f"float32 lanes x 2 (FMA) x {facts['fma_units']} FMA units [{facts['flags']}]")
    return PlausibleBand(theoretical, round(theoretical * PLAUSIBLE_FRACTION, 6), detail)


def peaks_consistent(result, peaks: MachinePeaks | None = None,
                     tolerance: float = CONSISTENCY_TOLERANCE) -> bool:
    """Whether a measured result lies under the roofs (within ``tolerance``).

    A point above a roof means the roofs are too low (measured on a busy machine):
    the caller should measure the peaks again (``refresh_if_inconsistent``).

    Parameters
    ----------
    result : MeasureResult
        Needs ``gflops``/``gbps``/``arithmetic_intensity`` (missing ones are not checked).
    peaks : MachinePeaks, optional
        Default: the result's own.

    Example
    -------
    >>> from workbench.measure.result import MeasureResult
    >>> p = MachinePeaks(gflops=100.0, gbps=10.0)
    >>> r = MeasureResult("k", "cpu", 1e-3, 0.0, 1, (1e-3,), flops=50_000_000,
    ...                   bytes=1_000_000)                 # 50 GFLOP/s at 50 FLOP/B
    >>> peaks_consistent(r, p), peaks_consistent(r, MachinePeaks(gflops=40.0, gbps=10.0))
    (True, False)
    """
    peaks = peaks if peaks is not None else result.peaks
    if peaks is None:
        return True
    gflops, gbps = result.gflops, result.gbps
    intensity = result.arithmetic_intensity
    if gflops is not None and intensity is not None:
        if gflops > tolerance * peaks.attainable_gflops(intensity):
            return False
    elif gflops is not None and gflops > tolerance * peaks.gflops:
        return False
    return gbps is None or gbps <= tolerance * peaks.gbps


def best_of(a: MachinePeaks, b: MachinePeaks) -> MachinePeaks:
    """Each roof the higher of the two (the later measurement's date and extras)."""
    blas, fma = max(a.gflops_blas, b.gflops_blas), max(a.gflops_fma, b.gflops_fma)
    return replace(b, gflops=max(a.gflops, b.gflops, blas, fma), gbps=max(a.gbps, b.gbps),
                   gflops_blas=blas, gflops_fma=fma)


def refresh_if_inconsistent(results: Iterable, peaks: MachinePeaks,
                            remeasure: Callable[[], MachinePeaks] | None = None,
                            ) -> tuple[MachinePeaks, bool]:
    """Measure the peaks again when a result lies above a roof.

    Parameters
    ----------
    results : iterable of MeasureResult
    peaks : MachinePeaks
        The roofs in use.
    remeasure : callable, optional
        Returns fresh peaks; default ``machine_peaks(refresh=True)`` (which keeps the best
        of the cached and the new numbers and updates the cache).

    Returns
    -------
    (MachinePeaks, bool)
        The roofs to use (the best of the old and the new) and whether they were
        measured again. A result still above the new roofs gives a warning.
    """
    results = list(results)
    if all(peaks_consistent(r, peaks) for r in results):
        return peaks, False
    fresh = remeasure() if remeasure is not None else machine_peaks(refresh=True)
    merged = best_of(peaks, fresh)
    above = [r.name for r in results if not peaks_consistent(r, merged)]
    if above:
        warnings.warn(f"measured above the roofs even after measuring the peaks again: "
                      f"{', '.join(above)} (peaks {merged.gflops:.0f} GFLOP/s, "
                      f"{merged.gbps:.1f} GB/s)", stacklevel=2)
    return merged, True


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


_KERNELS: dict[str, object] = {}


def _kernel(name: str):
    """The Numba kernel ``name`` (``"triad"`` or ``"fma"``), compiled once per process, so
    repeated trials do not compile again."""
    if name in _KERNELS:
        return _KERNELS[name]
    from numba import njit, prange

    if name == "triad":

        @njit(parallel=True, cache=False)
        def kernel(a, b, c, s):
            for i in prange(a.shape[0]):
                a[i] = b[i] + s * c[i]

    else:

        @njit(parallel=True, fastmath={"contract"}, cache=False)
        def kernel(x, m, c, sweeps):
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

    _KERNELS[name] = kernel
    return kernel


def measure_stream_gbps(repeats: int = 5) -> float:
    """Memory bandwidth in GB/s from a parallel STREAM triad over arrays 4x the LLC
    (at least 32 MiB each)."""
    triad = _kernel("triad")
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
    from numba import get_num_threads

    fma_loop = _kernel("fma")
    threads = get_num_threads()
    x = np.ones((threads, FMA_ELEMENTS), dtype=np.float32)
    m, c = np.float32(0.5), np.float32(0.5)  # fixed point 1.0: no overflow, no denormals
    seconds = _best_time(lambda: fma_loop(x, m, c, sweeps), repeats)
    flops = 2 * FMA_CHAIN * FMA_ELEMENTS * threads * sweeps
    return flops / seconds / 1e9


MEASUREMENTS: dict[str, Callable[[], float]] = {
    "blas": lambda: measure_blas_gflops(),
    "fma": lambda: measure_fma_gflops(),
    "stream": lambda: measure_stream_gbps(),
}
"""The three measurements, by name; ``measure_peaks`` takes others (tests inject numbers)."""


def measure_peaks(trials: int = 3, *, retries: int = 2, pause_s: float = 0.2,
                  measurements: dict[str, Callable[[], float]] | None = None,
                  band: PlausibleBand | None | str = "auto") -> MachinePeaks:
    """Measure the peaks now, without reading or writing the cache.

    Parameters
    ----------
    trials : int
        Each measurement is the best of this many trials.
    retries : int
        Extra trials when the compute peak is below ``band.low_gflops``.
    pause_s : float
        Sleep between trials (a busy spell may pass).
    measurements : dict, optional
        ``{"blas": f, "fma": f, "stream": f}``, each returning GFLOP/s or GB/s;
        default ``MEASUREMENTS``.
    band : PlausibleBand or None
        Default ``plausible_band()`` of this CPU; None turns the check off.

    Returns
    -------
    MachinePeaks
        ``extra`` records ``trials`` (how many ran), ``suspect`` (still below the band),
        and the band.
    """
    measurements = {**MEASUREMENTS, **(measurements or {})}
    band = plausible_band() if band == "auto" else band
    best = {name: 0.0 for name in ("blas", "fma", "stream")}

    def trial() -> None:
        for name in best:
            best[name] = max(best[name], measurements[name]())

    done = 0
    for _ in range(max(trials, 1)):
        if done:
            time.sleep(pause_s)
        trial()
        done += 1
    suspect = False
    if band is not None:
        for _ in range(retries):
            if max(best["blas"], best["fma"]) >= band.low_gflops:
                break
            time.sleep(pause_s)
            trial()
            done += 1
        suspect = max(best["blas"], best["fma"]) < band.low_gflops
        if suspect:
            warnings.warn(
                f"machine_peaks: compute peak {max(best['blas'], best['fma']):.1f} GFLOP/s "
                f"is below {PLAUSIBLE_FRACTION:.0%} of this CPU's theoretical "
                f"{band.theoretical_gflops:.0f} GFLOP/s ({band.detail}) after {done} "
                "trials: the machine is probably busy; it will be measured again next time",
                stacklevel=2)
    extra = {"llc_bytes": llc_bytes(), "numpy": np.__version__, "trials": done,
             "suspect": suspect}
    if band is not None:
        extra["theoretical_gflops"] = band.theoretical_gflops
        extra["band"] = band.detail
    return MachinePeaks(
        gflops=max(best["blas"], best["fma"]),
        gbps=best["stream"],
        gflops_blas=best["blas"],
        gflops_fma=best["fma"],
        key=machine_key(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        extra=extra,
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


def _age_s(peaks: MachinePeaks) -> float:
    """Seconds since the peaks were measured (infinite when unknown)."""
    import calendar

    try:
        measured = calendar.timegm(time.strptime(peaks.measured_at, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return float("inf")
    return time.time() - measured


def _is_complete(entry: object) -> bool:
    """Whether a cache entry holds the two peaks as numbers."""
    if not isinstance(entry, dict):
        return False
    return all(
        isinstance(entry.get(name), (int, float)) and not isinstance(entry.get(name), bool)
        for name in ("gflops", "gbps")
    )


def _trusted(peaks: MachinePeaks | None) -> bool:
    """A cached entry is used unless it is empty, or suspect (marked so, or below the
    band) and older than ``SUSPECT_RETRY_S`` (a busy machine is not measured again by
    every process: at most once per that interval)."""
    if peaks is None or peaks.gflops <= 0 or peaks.gbps <= 0:
        return False
    band = plausible_band()
    suspect = peaks.extra.get("suspect") or (band is not None
                                             and peaks.gflops < band.low_gflops)
    return not suspect or _age_s(peaks) < SUSPECT_RETRY_S


def machine_peaks(refresh: bool = False, *, cache_path: str | Path | None = None,
                  keep_best: bool = True) -> MachinePeaks:
    """The peak compute (GFLOP/s) and memory bandwidth (GB/s) of this machine.

    Measured once per machine and cached in ``peaks.json`` (see the module docstring);
    later calls, in this process or another, read the cache. A cached entry that is marked
    suspect or lies below the CPU's plausible band is measured again.

    Parameters
    ----------
    refresh : bool
        Measure again even when the cache has this machine, and update the cache.
    cache_path : path, optional
        The JSON cache file; default ``$WORKBENCH_CACHE_DIR/peaks.json`` or
        ``~/.cache/workbench/peaks.json``.
    keep_best : bool
        On a refresh, keep each roof at the higher of the cached (trusted) and the new
        value, so a re-measure on a busy machine cannot lower good roofs.

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
    entry = _read_cache(path).get(key)
    # an entry from an older version (or a damaged file) is measured again
    cached = MachinePeaks.from_dict(entry) if _is_complete(entry) else None
    if not refresh:
        if memo_key in _MEMO:
            return _MEMO[memo_key]
        if _trusted(cached):
            _MEMO[memo_key] = cached
            return cached
    peaks = measure_peaks()
    if keep_best and refresh and _trusted(cached):
        peaks = best_of(cached, peaks)
    entries = _read_cache(path)
    entries[key] = peaks.to_dict()
    _write_cache(path, entries)
    _MEMO[memo_key] = peaks
    return peaks
