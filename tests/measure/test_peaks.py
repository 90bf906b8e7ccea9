import json

import pytest

from workbench.measure import peaks as peaks_module
from workbench.measure.peaks import MachinePeaks, machine_key, machine_peaks


def test_ridge_point_and_roofline():
    peaks = MachinePeaks(gflops=400.0, gbps=40.0)
    assert peaks.ridge_point == 10.0
    assert peaks.attainable_gflops(0.25) == 10.0  # memory roof: 0.25 * 40
    assert peaks.attainable_gflops(10.0) == 400.0  # the ridge
    assert peaks.attainable_gflops(100.0) == 400.0  # compute roof
    assert peaks.bound(9.99) == "memory"
    assert peaks.bound(10.0) == "compute"


def test_dict_round_trip():
    peaks = MachinePeaks(
        gflops=1.5,
        gbps=2.5,
        gflops_blas=1.5,
        gflops_fma=1.0,
        key="k",
        measured_at="2026-01-01T00:00:00Z",
        extra={"llc_bytes": 1},
    )
    assert MachinePeaks.from_dict(json.loads(json.dumps(peaks.to_dict()))) == peaks
    # unknown keys (from a newer version) are ignored
    assert MachinePeaks.from_dict({**peaks.to_dict(), "future": 1}) == peaks


def test_machine_key_names_host_cpu_and_cores():
    host, cpu, cores = machine_key().split(" | ")
    assert host and cpu
    assert cores.endswith(" cores") and int(cores.split()[0]) >= 1


@pytest.fixture
def fake_measurements(monkeypatch):
    """Replace the (seconds-long) measurement by a counter returning fixed peaks."""
    calls = []

    def fake_measure_peaks():
        calls.append(1)
        return MachinePeaks(
            gflops=100.0 + len(calls),
            gbps=10.0,
            gflops_blas=100.0,
            gflops_fma=100.0 + len(calls),
            key=machine_key(),
        )

    monkeypatch.setattr(peaks_module, "measure_peaks", fake_measure_peaks)
    monkeypatch.setattr(peaks_module, "_MEMO", {})
    return calls


def test_peaks_are_cached_per_machine(tmp_path, fake_measurements):
    path = tmp_path / "peaks.json"
    first = machine_peaks(cache_path=path)
    assert first.gflops == 101.0 and len(fake_measurements) == 1
    stored = json.loads(path.read_text())
    assert list(stored) == [machine_key()]
    assert stored[machine_key()]["gbps"] == 10.0

    assert machine_peaks(cache_path=path) == first  # in-process memo
    peaks_module._MEMO.clear()
    assert machine_peaks(cache_path=path) == first  # from the JSON file
    assert len(fake_measurements) == 1

    refreshed = machine_peaks(refresh=True, cache_path=path)
    assert refreshed.gflops == 102.0 and len(fake_measurements) == 2
    assert json.loads(path.read_text())[machine_key()]["gflops"] == 102.0


def test_cache_keeps_other_machines(tmp_path, fake_measurements):
    path = tmp_path / "peaks.json"
    other = MachinePeaks(gflops=1.0, gbps=1.0, key="elsewhere").to_dict()
    path.write_text(json.dumps({"elsewhere": other}))
    machine_peaks(cache_path=path)
    stored = json.loads(path.read_text())
    assert set(stored) == {"elsewhere", machine_key()}
    assert stored["elsewhere"] == other


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"KEY": {"gflops": 0, "gbps": 0}}'])
def test_unusable_cache_is_measured_again(tmp_path, fake_measurements, content):
    path = tmp_path / "peaks.json"
    path.write_text(content.replace("KEY", machine_key()))
    assert machine_peaks(cache_path=path).gflops == 101.0
    assert len(fake_measurements) == 1


def test_default_cache_path_follows_workbench_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    assert peaks_module.default_cache_path() == tmp_path / "peaks.json"
    monkeypatch.delenv("WORKBENCH_CACHE_DIR")
    assert str(peaks_module.default_cache_path()).endswith(".cache/workbench/peaks.json")


@pytest.mark.slow
def test_real_measurement_is_plausible(tmp_path):
    """Measure this machine for real (a few seconds): positive, finite, max of the two."""
    peaks = machine_peaks(refresh=True, cache_path=tmp_path / "peaks.json")
    assert 0.1 < peaks.gbps < 10_000
    assert 0.1 < peaks.gflops < 1_000_000
    assert peaks.gflops == max(peaks.gflops_blas, peaks.gflops_fma)
    assert peaks.key == machine_key()
    assert peaks.extra["llc_bytes"] >= 1 << 20
