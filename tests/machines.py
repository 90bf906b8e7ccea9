"""Machine descriptions for tests: the host facts (``workbench.backends.common.machine``) as
inputs.

CI runs on Intel and AMD machines, AVX2 and AVX-512, of 2 to many cores; a test must not pass
on one and fail on another. ``install(machine, setattr)`` injects a description's facts
(SIMD features, LLVM's CPU name, cores, cache sizes, L1 geometry) in place of the host's,
so that everything that plans for "the host" (the recipes, the tuner's rules and prior, the
graph schedules, ``Target("cpu").device``) plans for that machine. Numba still compiles for the real host: a plan for a wider machine runs
correctly, only slower.

Two ways in:

* the ``machine`` fixture (``tests/conftest.py``), parametrized by name in a test that must
  hold on every kind (``@pytest.mark.parametrize("machine", [...], indirect=True)``);
* ``WB_TEST_MACHINE=<name> pytest ...``: the whole session plans for that machine (the
  conftest installs it before any test module is imported, so module-level constants such
  as ``LANES = vector_lanes("float32")`` read it too).

Example
-------
>>> from workbench.backends.cpu import cpu_facts
>>> undo = install(MACHINES["avx2-4core"])
>>> cpu_facts.vector_bits(), cpu_facts.host_cores()
(256, 4)
>>> undo()
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Machine:
    """A CPU as the host-fact readers describe it."""

    name: str
    features: frozenset[str]
    cpu_name: str  # LLVM's host CPU name (decides prefer-256-bit tuning)
    cores: int
    caches: tuple[int, int, int]  # L1d, L2, last level, bytes
    l1: tuple[int, int] = (64, 8)  # line bytes, ways


K, M = 1 << 10, 1 << 20
AVX2 = frozenset({"sse2", "avx", "avx2", "fma"})
AVX512 = AVX2 | {"avx512f"}

MACHINES = {m.name: m for m in [
    # Intel client, AVX2 only, 4 cores, small L2
    Machine("avx2-4core", AVX2, "skylake", 4, (32 * K, 256 * K, 8 * M)),
    # Intel server: AVX-512 present but LLVM vectorizes with 256 bits; one core; 12-way L1
    Machine("intel-avx512-1core", AVX512, "sapphirerapids", 1, (48 * K, 2 * M, 105 * M),
            (64, 12)),
    # AMD Zen 5: AVX-512 with zmm code, 2 cores (the machine CI was first seen failing on)
    Machine("zen5-2core", AVX512, "znver5", 2, (48 * K, 1 * M, 32 * M), (64, 12)),
    # AMD Zen 3: AVX2, 8 cores, a large last level
    Machine("zen3-8core", AVX2, "znver3", 8, (32 * K, 512 * K, 32 * M)),
]}


def facts_of(machine: Machine):
    """The ``MachineFacts`` a description stands for (what ``machine_facts()`` returns while
    it is installed)."""
    from workbench.backends.common.machine import MachineFacts

    l1, l2, llc = machine.caches
    return MachineFacts(
        caches=(("L1d", l1), ("L2", l2), ("L3", llc)), cache_line_bytes=machine.l1[0],
        l1_ways=machine.l1[1], cores=machine.cores, cpu_count=machine.cores,
        model=machine.name, flags=frozenset(machine.features),
        llvm_features=frozenset(machine.features) & {"avx512f", "avx2", "avx"},
        llvm_cpu=machine.cpu_name,
    )


def host_vector_lanes(dtype: str = "float32") -> int:
    """The lanes of the machine Numba really compiles for, whatever description is installed:
    for tests that read the host's machine code (``kernel.asm``), the one thing a
    description cannot change."""
    from workbench.backends.common import machine as facts
    from workbench.backends.cpu import cpu_facts

    return cpu_facts.vector_lanes(dtype, bits=facts._host_facts().vector_bits)


def install(machine: Machine, setattr=None):
    """Make the host facts (``workbench.backends.common.machine.machine_facts``) describe
    ``machine``; returns a function that undoes it (with ``setattr=monkeypatch.setattr``,
    pytest undoes it and the function does nothing more)."""
    from workbench.backends.common import machine as facts

    saved = facts._INJECTED
    (setattr or _plain_setattr)(facts, "_INJECTED", [*saved, facts_of(machine)])

    def undo():
        if setattr is None:
            _plain_setattr(facts, "_INJECTED", saved)

    return undo


def _plain_setattr(obj, name, value):
    setattr(obj, name, value)


def write_sysfs_caches(directory, caches: list[tuple[int, str, str]]) -> None:
    """A fake ``/sys/devices/system/cpu/cpu0/cache`` under ``directory``: one ``index<n>``
    folder per ``(level, type, size)``, e.g. ``(1, "Data", "48K")``."""
    for index, (level, kind, size) in enumerate(caches):
        folder = directory / f"index{index}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")
