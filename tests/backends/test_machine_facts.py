"""One reader of the machine's facts, cached per process and injectable (issue 18): every
layer that asks about the host sees the facts a test injects."""

from __future__ import annotations

from machines import write_sysfs_caches

from workbench.backends import Target
from workbench.backends.common import machine
from workbench.backends.common.machine import MachineFacts, machine_facts, use_machine_facts
from workbench.backends.cpu import cpu_facts
from workbench.measure import peaks, rotation
from workbench.tune import features, prior, rules_cpu
from workbench.viz import footprint

FAKE = MachineFacts(
    caches=(("L1d", 16 << 10), ("L2", 512 << 10), ("L3", 8 << 20)),
    cache_line_bytes=128, l1_ways=4, cores=3, cpu_count=6, model="Fake CPU",
    flags=frozenset({"sse2", "avx", "avx2", "fma"}), llvm_features=frozenset({"avx2", "avx"}),
    llvm_cpu="fakecpu", mhz=1000.0, max_mhz=2500.0,
)


def test_every_layer_reads_the_injected_facts():
    with use_machine_facts(FAKE):
        assert machine_facts() is FAKE
        assert footprint.cache_sizes() == {"L1d": 16 << 10, "L2": 512 << 10, "L3": 8 << 20}
        assert features.cache_sizes() == (16 << 10, 512 << 10, 8 << 20)
        assert features.l1_geometry() == (128, 4)
        assert rotation.llc_bytes() == 8 << 20
        assert cpu_facts.vector_bits() == 256 and cpu_facts.cache_line_bytes() == 128
        assert cpu_facts.vector_lanes("float32") == 8
        assert cpu_facts.reduction_lanes("float32") == 32  # a 128-byte line of partials
        device = Target("cpu").device
        assert device.vector_bytes == 32 and device.cache_bytes == (16 << 10, 512 << 10, 8 << 20)
        assert rules_cpu.host_cores() == 3
        model = prior.CpuModel.host()
        assert (model.lanes, model.cores, model.caches) == (8, 3, (16 << 10, 512 << 10, 8 << 20))
        assert model.vector_registers == 16
        facts = peaks.cpu_facts()
        assert facts == {"cores": 3, "mhz": 2500.0, "lanes": 8, "fma_units": 2,
                         "flags": "avx2 fma"}
        assert peaks.cpu_model() == "Fake CPU"
    assert machine_facts() is not FAKE


def test_the_host_is_read_once_per_process():
    assert machine_facts() is machine_facts()
    host = machine_facts()
    assert host.cores >= 1 and host.caches and host.cache_line_bytes > 0


def test_reading_a_fake_sysfs_tree(tmp_path):
    write_sysfs_caches(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"),
                                  (2, "Unified", "1024K"), (3, "Unified", "32M")])
    (tmp_path / "index0" / "coherency_line_size").write_text("64\n")
    (tmp_path / "index0" / "ways_of_associativity").write_text("12\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name : Test\nflags : sse2 avx512f\ncpu MHz : 3000.0\n")
    facts = machine.read_machine_facts(tmp_path, cpuinfo)
    assert facts.caches == (("L1d", 48 << 10), ("L2", 1 << 20), ("L3", 32 << 20))
    assert (facts.cache_line_bytes, facts.l1_ways, facts.model, facts.mhz) == (64, 12, "Test",
                                                                             3000.0)
    assert facts.levels == (48 << 10, 1 << 20, 32 << 20)
    assert MachineFacts(caches=(("L1d", 1024),)).levels == (1024, 1024, 1024)
