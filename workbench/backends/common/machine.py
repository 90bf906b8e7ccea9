"""The machine's facts, read in one place, once per process: caches, cores, clock, CPU flags.

Every layer that plans for or reports on the host asks ``machine_facts()``: the tuner's
features and prior (``tune/features.py``, ``tune/prior.py``), the tile footprint
(``viz/footprint.py``), the vector width (``backends/cpu/cpu_facts.py``), the measurement's
cache rotation (``measure/rotation.py``), the roofline's plausibility band
(``measure/peaks.py``) and the ``cpu`` target's ``DeviceFacts``. GPU properties are the
``cuda`` target's ``Target.device`` (queried once per process in ``backends/cuda``).

Tests inject facts instead of reading the host (``use_machine_facts``), so what they
assert does not depend on the machine that runs them:

>>> fake = MachineFacts(caches=(("L1d", 32768), ("L2", 1 << 20)), cores=4)
>>> with use_machine_facts(fake):
...     machine_facts().cache("L2"), machine_facts().last_level_cache
(1048576, 1048576)

Sources (Linux; every fact has a default where its source is missing): sysfs
``/sys/devices/system/cpu/cpu0/cache/index*/`` (level, type, size, line, ways; ``lscpu``
where sysfs has none), ``/proc/cpuinfo`` (model, flags, MHz), cpufreq's
``cpuinfo_max_freq``, the process's CPU affinity, and LLVM's host CPU name and features
(what Numba compiles for).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from workbench.backends.common.target import CPU_FACTS, DeviceFacts

CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"
DEFAULT_CACHES = (("L1d", 32 << 10), ("L2", 1 << 20), ("L3", 32 << 20))
"""Where the machine says nothing: a common desktop core's data caches."""
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclasses.dataclass(frozen=True)
class MachineFacts:
    """What the host is (see the module docstring for where each fact comes from).

    Attributes
    ----------
    caches : tuple of (name, bytes)
        Data (and unified) caches by level: ``("L1d", ...), ("L2", ...), ("L3", ...)``.
    cache_line_bytes, l1_ways : int
        The L1 data cache's line size and associativity.
    cores : int
        CPUs this process may run on (its affinity).
    cpu_count : int
        Logical CPUs of the machine.
    model : str
        The CPU's model name.
    flags : frozenset of str
        ``/proc/cpuinfo``'s flags (``Features`` on ARM).
    llvm_features : frozenset of str
        The SIMD features LLVM detects on the host (``avx512f``, ``avx2``, ``avx``).
    llvm_cpu : str
        LLVM's name of the host CPU (``znver4``, ``skylake-avx512``...).
    mhz, max_mhz : float
        The highest clock ``/proc/cpuinfo`` reports now, and cpufreq's maximum (0: unknown).
    wide_vectors : bool
        Numba's CPU codegen compiles with ``-prefer-256-bit`` (``widen_numba_vectors``):
        512-bit vectors on an AVX-512 core whose LLVM tuning prefers 256.
    """

    caches: tuple[tuple[str, int], ...] = DEFAULT_CACHES
    cache_line_bytes: int = 64
    l1_ways: int = 8
    cores: int = 1
    cpu_count: int = 1
    model: str = ""
    flags: frozenset[str] = frozenset()
    llvm_features: frozenset[str] = frozenset()
    llvm_cpu: str = ""
    mhz: float = 0.0
    max_mhz: float = 0.0
    wide_vectors: bool = False

    def cache(self, name: str, default: int | None = None) -> int | None:
        """The size of cache ``name`` (``"L1d"``, ``"L2"``, ``"L3"``) in bytes."""
        return dict(self.caches).get(name, default)

    @property
    def cache_dict(self) -> dict[str, int]:
        return dict(self.caches)

    @property
    def last_level_cache(self) -> int:
        """The largest cache of the highest level."""
        return self.caches[-1][1] if self.caches else DEFAULT_CACHES[-1][1]

    @property
    def levels(self) -> tuple[int, int, int]:
        """(L1d, L2, last level) in bytes; a missing level is the one below it."""
        sizes = [size for _, size in self.caches] or [size for _, size in DEFAULT_CACHES]
        l1 = sizes[0]
        l2 = sizes[1] if len(sizes) > 1 else l1
        return l1, l2, sizes[-1] if len(sizes) > 2 else l2

    @property
    def vector_bits(self) -> int:
        """The SIMD width LLVM vectorizes with on this machine (``vector_bits_for``)."""
        return vector_bits_for(set(self.simd_features), self.llvm_cpu, self.wide_vectors)

    @property
    def simd_features(self) -> frozenset[str]:
        """LLVM's SIMD features, or ``/proc/cpuinfo``'s flags where LLVM could not say."""
        return self.llvm_features or self.flags


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
WIDE = "-prefer-256-bit"
"""The LLVM feature that lifts ``TuningPrefer256Bit`` (``widen_numba_vectors``)."""


def vector_bits_for(features: set[str], cpu_name: str, wide: bool = False) -> int:
    """The vector width LLVM's vectorizers use on ``cpu_name`` with ``features``; ``wide``:
    compiled with ``-prefer-256-bit`` (``widen_numba_vectors``).

    Example
    -------
    >>> vector_bits_for({"avx512f", "avx2"}, "rocketlake"), vector_bits_for({"avx512f"}, "znver5")
    (256, 512)
    >>> vector_bits_for({"avx512f", "avx2"}, "rocketlake", wide=True)
    512
    """
    bits = vector_bits_of(features)
    return 256 if bits == 512 and cpu_name in PREFER_256_BIT_CPUS and not wide else bits


def _numba_codegen_features() -> str | None:
    """The features string of Numba's CPU JIT codegen where it exists already, else the one
    it will take (``numba.config.CPU_FEATURES``; None: LLVM's host features)."""
    from numba.core import config

    if _codegen_exists():
        return _cpu_target().target_context.codegen()._tm_features
    return config.CPU_FEATURES


def numba_wide_vectors() -> bool:
    """Whether Numba's CPU JIT compiles (or will) with ``-prefer-256-bit``."""
    return WIDE in (_numba_codegen_features() or "").split(",")


def widen_numba_vectors() -> bool:
    """Let Numba's CPU JIT use 512-bit vectors on an AVX-512 core LLVM tunes
    ``prefer-256-bit`` (Skylake-SP to Emerald Rapids: it emits ymm code there): Numba's
    features become the host's plus ``-prefer-256-bit``. Only before Numba's CPU codegen
    exists (its features are fixed then) and where nobody chose them
    (``NUMBA_CPU_FEATURES``, ``numba.config.CPU_FEATURES``); the cpu target calls it when
    it registers, and reading the host's facts does (``vector_bits`` then says what the
    codegen does). Returns ``numba_wide_vectors()``.

    The kernels' register tiles are then sized for 16 float32 lanes (``vector_bits``: 512);
    measured on an Emerald Rapids VM, 2 threads: ``nn.Linear`` at 512 x 768 -> 3072,
    512 x 3072 -> 768 and 128 x 1024 -> 1024 through ``wb.compile`` went from 0.52-0.60x to
    0.65-0.79x eager (bench/RESULTS.md). It holds for every ``njit`` function of the
    process, the user's too.
    """
    from numba.core import config

    if config.CPU_FEATURES is not None or config.CPU_NAME is not None or _codegen_exists():
        return numba_wide_vectors()
    name, features = _llvm_host()
    if name in PREFER_256_BIT_CPUS and features.get("avx512f", False):
        config.CPU_FEATURES = f"{features.flatten()},{WIDE}"
    return numba_wide_vectors()


def numba_child_env() -> dict[str, str]:
    """What a child process's environment needs to compile the machine code this process
    does: Numba's CPU features as this process's codegen has them, widened or not (a
    worker's kernels come back through Numba's disk cache, whose key holds the features: a
    child widened where the parent was not wrote kernels the parent never found)."""
    widen_numba_vectors()
    features = _numba_codegen_features()
    return {"NUMBA_CPU_FEATURES": features} if features else {}


def _cpu_target():
    from numba.core.registry import cpu_target

    return cpu_target


def _codegen_exists() -> bool:
    """Whether Numba's CPU target context (and with it the codegen) was created."""
    return "_toplevel_target_context" in _cpu_target().__dict__


def parse_cache_size(text: str) -> int | None:
    """Bytes in a sysfs / lscpu size such as ``"32768K"``, ``"1M"`` or ``"1.5 MiB"``.

    Example
    -------
    >>> parse_cache_size("32768K"), parse_cache_size("1.5M"), parse_cache_size("?")
    (33554432, 1572864, None)
    """
    text = text.strip().upper().replace("IB", "").replace(" ", "")
    try:
        if text and text[-1] in _UNITS:
            return int(float(text[:-1]) * _UNITS[text[-1]])
        return int(text)
    except ValueError:
        return None


def read_caches(root: str | Path = CACHE_DIR) -> tuple[tuple[str, int], ...]:
    """The data caches under sysfs ``root`` (``lscpu`` where it has none), by level;
    ``()`` when nothing says."""
    sizes: dict[int, int] = {}
    for index in sorted(Path(root).glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = parse_cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        sizes[level] = max(size, sizes.get(level, 0))
    if sizes:
        return tuple((f"L{lv}d" if lv == 1 else f"L{lv}", sizes[lv]) for lv in sorted(sizes))
    if str(root) != CACHE_DIR:
        return ()
    try:
        out = subprocess.run(["lscpu", "-C=NAME,ONE-SIZE"], capture_output=True, text=True,
                             timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    found = []
    for line in out.splitlines()[1:]:
        parts = line.split()
        if len(parts) == 2 and parts[0] != "L1i" and parse_cache_size(parts[1]):
            found.append((parts[0], parse_cache_size(parts[1])))
    return tuple(found)


def _read_int(path: Path, default: int) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return default


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str], float]:
    """(model name, flags, highest ``cpu MHz``) of ``/proc/cpuinfo`` text.

    Example
    -------
    >>> parse_cpuinfo("model name : X\\nflags : sse2 avx2\\ncpu MHz : 2000.0\\n")
    ('X', frozenset({'avx2', 'sse2'}), 2000.0)
    """
    model, flags, mhz = "", set(), 0.0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("flags", "Features"):
            flags |= set(value.split())
        elif key == "model name" and not model:
            model = value.strip()
        elif key == "cpu MHz":
            with contextlib.suppress(ValueError):
                mhz = max(mhz, float(value))
    return model, frozenset(flags), mhz


def _llvm_host():
    """(CPU name, feature map) as LLVM sees the host; ``("", {})`` where llvmlite cannot
    inspect it. The map is llvmlite's ``FeatureMap`` (``flatten()`` gives the features
    string Numba's codegen takes)."""
    try:
        import llvmlite.binding as llvm

        return llvm.get_host_cpu_name(), llvm.get_host_cpu_features()
    except Exception:  # noqa: BLE001 (a platform llvmlite cannot inspect)
        return "", {}


def read_machine_facts(cache_dir: str | Path = CACHE_DIR,
                       cpuinfo: str | Path = "/proc/cpuinfo") -> MachineFacts:
    """Read the host's facts (uncached: ``machine_facts()`` is the cached one)."""
    caches = read_caches(cache_dir) or DEFAULT_CACHES
    base = Path(cache_dir) / "index0"
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        text = ""
    model, flags, mhz = parse_cpuinfo(text)
    khz = _read_int(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"), 0)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    llvm_cpu, host_features = _llvm_host()
    llvm_features = frozenset(n for n in ("avx512f", "avx2", "avx")
                              if host_features.get(n, False))
    return MachineFacts(
        caches=caches,
        cache_line_bytes=_read_int(base / "coherency_line_size", 64),
        l1_ways=_read_int(base / "ways_of_associativity", 8),
        cores=max(1, cores),
        cpu_count=os.cpu_count() or 1,
        model=model,
        flags=flags,
        llvm_features=llvm_features,
        llvm_cpu=llvm_cpu,
        wide_vectors=widen_numba_vectors(),
        mhz=mhz,
        max_mhz=khz / 1000.0,
    )


@functools.cache
def _host_facts() -> MachineFacts:
    return read_machine_facts()


_INJECTED: list[MachineFacts] = []


def machine_facts() -> MachineFacts:
    """The host's facts, read once per process (or the facts a test injected)."""
    return _INJECTED[-1] if _INJECTED else _host_facts()


@contextlib.contextmanager
def use_machine_facts(facts: MachineFacts) -> Iterator[MachineFacts]:
    """Within the block, ``machine_facts()`` is ``facts`` (tests: no host dependence)."""
    _INJECTED.append(facts)
    try:
        yield facts
    finally:
        _INJECTED.pop()


def host_device_facts() -> DeviceFacts:
    """The ``DeviceFacts`` of the ``cpu`` and ``numpy`` targets: the host's vector width,
    cache line and data caches (``machine_facts()``)."""
    return _device_facts_of(machine_facts())


@functools.lru_cache(maxsize=4)
def _device_facts_of(facts: MachineFacts) -> DeviceFacts:
    return dataclasses.replace(
        CPU_FACTS, vector_bytes=facts.vector_bits // 8, cache_line_bytes=facts.cache_line_bytes,
        cache_bytes=tuple(size for _, size in facts.caches),
    )
