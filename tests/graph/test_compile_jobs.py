"""wb.compile builds each distinct kernel once, and cold kernels in worker processes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from workbench import ops
from workbench.graph.compile_jobs import build_kernels
from workbench.graph.lower import kernel_name
from workbench.schedule import Schedule

torch = pytest.importorskip("torch")


def _count_builds(monkeypatch) -> list:
    import workbench.backends as backends

    calls, real = [], backends.build

    def counting(func, *args, **kwargs):
        calls.append(getattr(func, "name", None))
        return real(func, *args, **kwargs)

    monkeypatch.setattr(backends, "build", counting)
    return calls


def _resnet(blocks: int):
    from graph_models import TinyResNet, randomize_bn

    torch.manual_seed(blocks)
    return randomize_bn(TinyResNet(channels=4, blocks=blocks)), torch.randn(1, 3, 5, 5)


def test_kernel_name_is_the_pattern():
    assert kernel_name("conv2d+add+relu") == "k_conv2d_add_relu"
    assert kernel_name("+") == "k_kernel"


def test_identical_blocks_compile_once(monkeypatch):
    import workbench as wb

    builds = {}
    for blocks in (1, 3):
        model, x = _resnet(blocks)
        calls = _count_builds(monkeypatch)
        compiled = wb.compile(model, (x,), jobs=1)
        monkeypatch.undo()
        builds[blocks] = len(calls)
        with torch.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(compiled(x), want, rtol=1e-4, atol=1e-5)
        assert compiled.build_stats.distinct == len(calls)
        assert compiled.build_stats.kernels == len(compiled.kernels)
    # three blocks: two more blocks of kernels, not one more compile
    assert builds[3] == builds[1]
    assert len(compiled.kernels) > builds[3]
    by_pattern = {}
    for kernel in compiled.kernels:
        by_pattern.setdefault(kernel.pattern, set()).add(id(kernel.kernel))
    assert len(by_pattern["conv2d_packed+add+relu"]) == 1  # one kernel object shared by 3 nodes


def test_parallel_build_gives_the_same_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    funcs = [ops.relu(n) for n in (5, 7, 11, 13)]  # four distinct cold kernels
    kernels, stats = build_kernels([Schedule(f) for f in funcs], "cpu", jobs=2)
    assert (stats.distinct, stats.cold) == (4, 4)
    assert stats.parallel == 2  # half in the worker, built into the disk cache
    # the parent loaded the workers' kernels from the disk cache
    assert sum(k._compiled.disk_cache_hit for k in kernels) == 2
    again, stats = build_kernels(funcs, "cpu", jobs=2)
    assert stats.cold == 0 and stats.parallel == 0
    rng = np.random.default_rng(0)
    for func, kernel, serial in zip(funcs, kernels, again, strict=True):
        x = rng.standard_normal(func.params[0].shape).astype("float32")
        got, want = np.empty_like(x), np.empty_like(x)
        kernel(x, got)
        serial(x, want)
        np.testing.assert_array_equal(got, np.maximum(x, 0))
        np.testing.assert_array_equal(want, got)


def test_build_kernels_shares_equal_functions(capsys):
    kernels, stats = build_kernels([Schedule(ops.relu(6))] * 3, "numpy", jobs=1,
                                   progress=True)
    assert (stats.kernels, stats.distinct, stats.parallel) == (3, 1, 0)
    assert kernels[0] is kernels[1] is kernels[2]
    assert "compiling kernels" in capsys.readouterr().err  # the tqdm bar, to 1/1


def test_warm_compile_lowers_prints_and_checks_each_kernel_once(tmp_path, monkeypatch):
    """A compile with the kernels on disk (a re-run notebook): asking whether a kernel is
    cached lowers and prints it, and the build that follows reuses both; each module file is
    checked against its source once (``import_generated``)."""
    import workbench as wb
    import workbench.backends.common.build as build_module
    import workbench.backends.common.kernel_cache as kernel_cache
    import workbench.backends.cpu.numba_cpu as numba_cpu

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    model, x = _resnet(1)
    numba_cpu.clear_memory_cache()  # kernels an earlier test built live in another folder
    cold = wb.compile(model, (x,), jobs=1)
    assert cold.build_stats.cold == cold.build_stats.distinct
    distinct = cold.build_stats.distinct
    numba_cpu.clear_memory_cache()  # as a new process: memory empty, disk cache full

    calls = {"lower": 0, "print": 0, "import": 0}

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(build_module, "lower", counted("lower", build_module.lower))
    monkeypatch.setattr(numba_cpu, "_print", counted("print", numba_cpu._print))
    monkeypatch.setattr(numba_cpu, "_import_generated",
                        counted("import", kernel_cache.import_generated))
    listed, real_listdir = [], os.listdir

    def listdir(path="."):
        listed.append(Path(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    warm = wb.compile(model, (x,), jobs=1)
    monkeypatch.setattr(os, "listdir", real_listdir)
    assert warm.build_stats.cold == 0 and warm.build_stats.distinct == distinct
    assert calls == {"lower": distinct, "print": distinct, "import": distinct}
    # Numba's index files listed once for the model, not scanned once per kernel
    assert listed.count(tmp_path / "__pycache__") == 1
    assert all(k.kernel.cache_hit == "disk" for k in warm.kernels)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(warm(x), want, rtol=1e-4, atol=1e-5)
