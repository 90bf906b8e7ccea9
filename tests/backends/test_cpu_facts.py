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
