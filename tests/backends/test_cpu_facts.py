"""The host's vector width as LLVM's vectorizers use it (``backends/cpu_facts.py``)."""

from __future__ import annotations

import pytest

from workbench.backends import cpu_facts


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
