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
    monkeypatch.setattr(peaks_module, "plausible_band", lambda facts=None: None)
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


def sequence(*values):
    """A measurement returning ``values`` one call after the other."""
    it = iter(values)
    return lambda: next(it)


BAND = peaks_module.PlausibleBand(theoretical_gflops=500.0, low_gflops=50.0, detail="test")


def test_each_peak_is_the_best_of_the_trials():
    peaks = peaks_module.measure_peaks(
        trials=3, pause_s=0.0, band=None,
        measurements={"blas": sequence(40.0, 400.0, 390.0), "fma": sequence(100.0, 90.0, 95.0),
                      "stream": sequence(8.6, 39.0, 41.0)})
    assert (peaks.gflops, peaks.gflops_blas, peaks.gflops_fma, peaks.gbps) == (400.0, 400.0,
                                                                               100.0, 41.0)
    assert peaks.extra["trials"] == 3 and peaks.extra["suspect"] is False


def test_compute_peak_below_the_plausible_band_is_measured_again():
    """41 GFLOP/s measured on a busy machine whose CPU can do 500: measure again."""
    peaks = peaks_module.measure_peaks(
        trials=1, retries=3, pause_s=0.0, band=BAND,
        measurements={"blas": sequence(41.0, 45.0, 470.0), "fma": sequence(1.0, 1.0, 1.0),
                      "stream": sequence(8.6, 9.0, 40.0)})
    assert peaks.gflops == 470.0 and peaks.gbps == 40.0
    assert peaks.extra["trials"] == 3 and peaks.extra["suspect"] is False
    assert peaks.extra["theoretical_gflops"] == 500.0


def test_still_low_after_retries_is_marked_suspect_and_not_trusted(tmp_path, monkeypatch):
    with pytest.warns(UserWarning, match="below 10% of this CPU's theoretical 500 GFLOP/s"):
        suspect = peaks_module.measure_peaks(
            trials=1, retries=1, pause_s=0.0, band=BAND,
            measurements={"blas": sequence(41.0, 42.0), "fma": sequence(1.0, 1.0),
                          "stream": sequence(8.6, 8.0)})
    assert suspect.extra["suspect"] is True and suspect.gflops == 42.0
    path = tmp_path / "peaks.json"
    monkeypatch.setattr(peaks_module, "plausible_band", lambda facts=None: BAND)
    quiet = MachinePeaks(gflops=470.0, gbps=40.0, gflops_blas=470.0, key=machine_key())
    monkeypatch.setattr(peaks_module, "measure_peaks", lambda: quiet)
    # cached by a busy process a minute ago: used (not every process measures again)
    path.write_text(json.dumps({machine_key(): suspect.to_dict()}))
    monkeypatch.setattr(peaks_module, "_MEMO", {})
    assert machine_peaks(cache_path=path).gflops == 42.0
    # older than SUSPECT_RETRY_S: measured again instead of trusted
    old = {**suspect.to_dict(), "measured_at": "2026-01-01T00:00:00Z"}
    path.write_text(json.dumps({machine_key(): old}))
    monkeypatch.setattr(peaks_module, "_MEMO", {})
    assert machine_peaks(cache_path=path) == quiet
    assert json.loads(path.read_text())[machine_key()]["gflops"] == 470.0


def test_cached_entry_below_the_band_is_measured_again(tmp_path, monkeypatch):
    path = tmp_path / "peaks.json"
    busy = MachinePeaks(gflops=41.0, gbps=8.6, key=machine_key())  # an old cache: no flag, no date
    path.write_text(json.dumps({machine_key(): busy.to_dict()}))
    monkeypatch.setattr(peaks_module, "_MEMO", {})
    monkeypatch.setattr(peaks_module, "plausible_band", lambda facts=None: BAND)
    monkeypatch.setattr(peaks_module, "measure_peaks",
                        lambda: MachinePeaks(gflops=470.0, gbps=40.0, key=machine_key()))
    assert machine_peaks(cache_path=path).gflops == 470.0


def test_refresh_keeps_the_best_roofs(tmp_path, monkeypatch):
    path = tmp_path / "peaks.json"
    good = MachinePeaks(gflops=470.0, gbps=40.0, gflops_blas=470.0, gflops_fma=300.0,
                        key=machine_key())
    path.write_text(json.dumps({machine_key(): good.to_dict()}))
    monkeypatch.setattr(peaks_module, "_MEMO", {})
    monkeypatch.setattr(peaks_module, "plausible_band", lambda facts=None: None)
    busy = MachinePeaks(gflops=41.0, gbps=45.0, gflops_blas=41.0, gflops_fma=30.0,
                        key=machine_key())
    monkeypatch.setattr(peaks_module, "measure_peaks", lambda: busy)
    refreshed = machine_peaks(refresh=True, cache_path=path)
    assert (refreshed.gflops, refreshed.gbps, refreshed.gflops_fma) == (470.0, 45.0, 300.0)
    assert machine_peaks(refresh=True, cache_path=path, keep_best=False).gflops == 41.0


def test_cpu_facts_and_plausible_band_from_proc_cpuinfo():
    cpuinfo = ("processor\t: 0\ncpu MHz\t\t: 2400.000\nflags\t\t: fpu sse2 avx avx2 fma\n"
               "processor\t: 1\ncpu MHz\t\t: 3000.000\nflags\t\t: fpu sse2 avx avx2 fma\n")
    facts = peaks_module.cpu_facts(cpuinfo, cores=16, max_mhz=None)
    assert facts["lanes"] == 8 and facts["fma_units"] == 2 and facts["cores"] == 16
    assert facts["mhz"] >= 3000.0  # the highest clock reported (or cpufreq's maximum)
    band = peaks_module.plausible_band({**facts, "mhz": 3000.0})
    assert band.theoretical_gflops == pytest.approx(16 * 3.0 * 8 * 2 * 2)  # 1536
    assert band.low_gflops == pytest.approx(153.6)
    assert peaks_module.cpu_facts("flags : fpu sse2 avx512f fma\n", cores=1,
                                  max_mhz=1000.0)["lanes"] == 16
    assert peaks_module.plausible_band({"cores": 1, "mhz": 0.0, "lanes": 8,
                                        "fma_units": 2, "flags": ""}) is None


def test_peaks_consistent_and_refresh_if_inconsistent():
    from workbench.measure.result import MeasureResult

    low = MachinePeaks(gflops=41.0, gbps=8.6)
    r = MeasureResult("mm", "cpu", 1e-3, 0.0, 1, (1e-3,), flops=200_000_000, bytes=2_000_000)
    # 200 GFLOP/s at 100 FLOP/B, 2 GB/s: above a 41 GFLOP/s roof, under 470
    assert not peaks_module.peaks_consistent(r, low)
    assert peaks_module.peaks_consistent(r, MachinePeaks(gflops=470.0, gbps=40.0))
    assert peaks_module.peaks_consistent(r, MachinePeaks(gflops=180.0, gbps=40.0))  # +20% ok
    copy = MeasureResult("copy", "cpu", 1e-3, 0.0, 1, (1e-3,), flops=0, bytes=20_000_000)
    assert not peaks_module.peaks_consistent(copy, low)  # 20 GB/s > 8.6 GB/s roof
    fresh = MachinePeaks(gflops=470.0, gbps=40.0)
    peaks, refreshed = peaks_module.refresh_if_inconsistent([r, copy], low, lambda: fresh)
    assert refreshed and (peaks.gflops, peaks.gbps) == (470.0, 40.0)
    same, refreshed = peaks_module.refresh_if_inconsistent([r], fresh, lambda: 1 / 0)
    assert same is fresh and not refreshed


@pytest.mark.slow
def test_real_measurement_is_plausible(tmp_path):
    """Measure this machine for real (a few seconds): positive, finite, max of the two."""
    peaks = machine_peaks(refresh=True, cache_path=tmp_path / "peaks.json")
    assert 0.1 < peaks.gbps < 10_000
    assert 0.1 < peaks.gflops < 1_000_000
    assert peaks.gflops == max(peaks.gflops_blas, peaks.gflops_fma)
    assert peaks.key == machine_key()
    assert peaks.extra["llc_bytes"] >= 1 << 20


def test_cpu_facts_lanes_are_the_backends_vector_width():
    from workbench.backends.cpu.cpu_facts import vector_bits_of, vector_lanes

    for flags, lanes in (("fpu sse2 avx512f fma", 16), ("fpu sse2 avx", 8),
                         ("fp asimd", 4), ("fpu sse2", 4), ("fpu", 1)):
        facts = peaks_module.cpu_facts(f"flags : {flags}\n", cores=1, max_mhz=1000.0)
        assert facts["lanes"] == lanes
        if lanes > 1:
            assert lanes == vector_lanes("float32", bits=vector_bits_of(set(flags.split())))
    assert vector_bits_of({"avx2"}) == 256 and vector_bits_of(set()) == 128
