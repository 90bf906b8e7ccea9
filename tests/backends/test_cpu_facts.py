"""The host's vector width as LLVM's vectorizers use it (``backends/cpu/cpu_facts.py``)."""

from __future__ import annotations

import pytest

from workbench.backends.cpu import cpu_facts


@pytest.mark.parametrize(("features", "cpu", "bits"), [
    ({"avx512f", "avx2", "avx"}, "znver5", 512),        # AMD Zen 5: zmm code
    ({"avx512f", "avx2", "avx"}, "rocketlake", 256),    # Intel: prefer-256-bit tuning
    ({"avx512f", "avx2", "avx"}, "sapphirerapids", 256),
    ({"avx2", "avx"}, "znver1", 256),
    ({"avx"}, "sandybridge", 256),
    (set(), "generic", 128),
])
def test_vector_bits_follow_llvm_tuning(features, cpu, bits):
    assert cpu_facts.vector_bits_for(features, cpu) == bits


def test_lanes_of_the_host_match_its_bits():
    bits = cpu_facts.vector_bits()
    assert bits in (128, 256, 512)
    assert cpu_facts.vector_lanes("float32") == bits // 32
    assert cpu_facts.vector_lanes("float64", bits=512) == 8


@pytest.mark.parametrize("machine", ["avx2-4core", "intel-avx512-1core", "zen5-2core"],
                         indirect=True)
def test_a_machine_description_reaches_every_planner(machine):
    """``tests/machines.py`` replaces the host readers: the target, the recipes' lanes, the
    tuner's prior and rules all plan for the described machine, not the host."""
    import workbench as wb
    from workbench.tune.prior import CpuModel
    from workbench.tune.rules_cpu import host_cores

    bits = cpu_facts.vector_bits_for(set(machine.features), machine.cpu_name)
    assert cpu_facts.vector_bits() == bits
    assert wb.Target("cpu").device.vector_bytes * 8 == bits
    assert cpu_facts.target_vector_lanes("cpu", "float32") == bits // 32
    model = CpuModel.host()
    assert (model.lanes, model.cores, model.caches) == (bits // 32, machine.cores, machine.caches)
    assert model.vector_registers == (32 if "avx512f" in machine.features else 16)
    assert host_cores() == machine.cores
    assert cpu_facts.l1_geometry() == machine.l1


def test_widened_codegen_takes_the_full_width():
    assert cpu_facts.vector_bits_for({"avx512f", "avx2"}, "sapphirerapids", wide=True) == 512
    assert cpu_facts.vector_bits_for({"avx2"}, "haswell", wide=True) == 256


def test_the_host_width_is_what_numba_emits():
    """``vector_bits`` says what Numba's codegen does on this host: zmm registers in a
    vectorized loop exactly where it says 512 (whatever the CPU)."""
    import numba
    import numpy as np

    @numba.njit(fastmath=True)
    def axpy(a, b, c):
        for i in range(a.size):
            a[i] += b[i] * c

    x = np.arange(256, dtype=np.float32)
    axpy(x, x, np.float32(2))
    np.testing.assert_array_equal(x, np.arange(256, dtype=np.float32) * 3)
    asm = next(iter(axpy.inspect_asm().values()))
    assert ("zmm" in asm) == (cpu_facts.vector_bits() == 512)


class _Host:
    """llvmlite's host readers for an AVX-512 core that LLVM tunes ``prefer-256-bit``."""

    def __init__(self, name: str):
        self.name = name

    def get_host_cpu_name(self):
        return self.name

    def get_host_cpu_features(self):
        host = self

        class Features(dict):
            def flatten(self):
                return "+avx512f,+avx2" if host.name != "znver4" else "+avx2"

        return Features(avx512f=self.name != "znver4")


@pytest.mark.parametrize(("name", "chosen", "wide"), [
    ("sapphirerapids", None, True),             # widened
    ("znver4", None, False),                   # no prefer-256-bit tuning to lift
    ("sapphirerapids", "+avx2", False),        # NUMBA_CPU_FEATURES chosen: left as it is
])
def test_numba_is_widened_only_where_nobody_chose(monkeypatch, name, chosen, wide):
    import llvmlite.binding
    from numba.core import config

    from workbench.backends.common import machine

    host = _Host(name)
    monkeypatch.setattr(llvmlite.binding, "get_host_cpu_name", host.get_host_cpu_name)
    monkeypatch.setattr(llvmlite.binding, "get_host_cpu_features", host.get_host_cpu_features)
    monkeypatch.setattr(machine, "_codegen_exists", lambda: False)  # before the first njit
    monkeypatch.setattr(config, "CPU_FEATURES", chosen)
    monkeypatch.setattr(config, "CPU_NAME", None)
    assert machine.widen_numba_vectors() is wide
    assert config.CPU_FEATURES == ("+avx512f,+avx2,-prefer-256-bit" if wide else chosen)


def test_an_existing_codegen_is_left_alone(monkeypatch):
    from numba.core import config

    from workbench.backends.common import machine

    monkeypatch.setattr(machine, "_codegen_exists", lambda: True)
    monkeypatch.setattr(config, "CPU_FEATURES", None)
    machine.widen_numba_vectors()
    assert config.CPU_FEATURES is None


def test_children_compile_for_this_process_codegen():
    """A worker's kernels reach the parent through Numba's disk cache, keyed by the
    features: the child gets the parent codegen's own (widened or not)."""
    import numba
    from numba.core.registry import cpu_target

    from workbench.backends.common.machine import numba_child_env

    numba.njit(lambda v: v + 1)(1)  # the codegen exists now, whatever ran before
    features = cpu_target.target_context.codegen()._tm_features
    assert numba_child_env() == ({"NUMBA_CPU_FEATURES": features} if features else {})
