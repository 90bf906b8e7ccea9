"""The kernel caches: a cached module whose content is not its source is never run, the
cache folders are private, the disk cache is pruned least recently used first, and a kernel
evicted from the in-memory LRU is freed."""

from __future__ import annotations

import gc
import os
import stat
import sys
import tempfile
import weakref
from pathlib import Path

import numpy as np
import pytest

import ir_examples
from workbench.backends import build
from workbench.backends.common import kernel_cache
from workbench.backends.common.kernel_cache import (
    CacheFolderError,
    kernel_cache_dir,
    private_dir,
    prune_disk_cache,
)
from workbench.backends.cpu import numba_cpu

FLAG = "WB_KERNEL_CACHE_PAYLOAD_RAN"


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(directory))
    numba_cpu.clear_memory_cache()
    yield directory
    numba_cpu.clear_memory_cache()


def _check_add_relu(kernel, n):
    a, b = np.random.default_rng(n).standard_normal((2, n)).astype("float32")
    c = np.empty(n, "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, np.maximum(a + b, 0), rtol=1e-6)


def test_a_tampered_cached_module_is_not_run_and_is_written_again(fresh_cache, tmp_path):
    func = ir_examples.add_relu(16)
    first = build(func, target="cpu")
    path = first._compiled.path
    source = path.read_text()
    marker = tmp_path / "marker"
    path.write_text(f"import os\nos.environ[{FLAG!r}] = '1'\n"
                    f"open({str(marker)!r}, 'w').write('ran')\n")
    numba_cpu.clear_memory_cache()
    with pytest.warns(UserWarning, match="did not hold the source"):
        again = build(func, target="cpu")
    assert FLAG not in os.environ and not marker.exists()
    assert path.read_text() == source == again.source
    _check_add_relu(again, 16)


def test_the_module_runs_the_generated_source_not_the_file(fresh_cache):
    kernel = build(ir_examples.add_relu(12), target="cpu")
    module = sys.modules[kernel._compiled.path.stem]
    assert module.__file__ == str(kernel._compiled.path)
    assert not list((fresh_cache / "__pycache__").glob("*.pyc"))  # never imported from disk


def test_the_cache_folder_is_created_private(tmp_path, monkeypatch):
    directory = tmp_path / "a" / "kernels"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(directory))
    assert kernel_cache_dir() == directory
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_an_open_cache_folder_of_the_user_is_tightened(tmp_path):
    directory = tmp_path / "open"
    directory.mkdir(mode=0o777)
    os.chmod(directory, 0o777)
    private_dir(directory)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners")
def test_a_cache_folder_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(directory).st_uid + 1)
    with pytest.raises(CacheFolderError, match="owned by user id"):
        private_dir(directory)


def test_default_folders_are_the_users_cache_not_a_shared_tmp_name(monkeypatch):
    import platformdirs

    from workbench.tune.runner import default_cache_dir

    monkeypatch.delenv("WORKBENCH_CACHE_DIR")
    home = Path(tempfile.mkdtemp())
    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *a, **k: str(home / "wb"))
    assert kernel_cache_dir() == home / "wb" / "kernels"
    assert default_cache_dir() == home / "wb" / "tune-kernels"
    for folder in (home / "wb" / "kernels", home / "wb" / "tune-kernels"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def _fake_modules(directory, count, size=100):
    (directory / "__pycache__").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        path = directory / f"workbench_kernel_f_{i}.py"
        path.write_text("x" * size)
        (directory / "__pycache__" / f"workbench_kernel_f_{i}.f-1.py311.nbi").write_text("i")
        os.utime(path, (1000 + i, 5))  # access time i: f_0 least recently used


def _left(directory):
    return sorted(p.stem for p in directory.glob("workbench_kernel_*.py"))


def test_the_disk_cache_is_pruned_least_recently_used_first(tmp_path):
    _fake_modules(tmp_path, 5)
    os.utime(tmp_path / "workbench_kernel_f_0.py", (9999, 5))  # f_0 used last
    assert prune_disk_cache(tmp_path, max_entries=3, max_bytes=10**9) == 2
    assert _left(tmp_path) == ["workbench_kernel_f_0", "workbench_kernel_f_3",
                               "workbench_kernel_f_4"]
    assert len(list((tmp_path / "__pycache__").iterdir())) == 3
    assert prune_disk_cache(tmp_path, max_entries=10, max_bytes=250) == 1  # 101 bytes each
    assert _left(tmp_path) == ["workbench_kernel_f_0", "workbench_kernel_f_4"]


def test_building_marks_a_cached_module_used(fresh_cache):
    old, new = ir_examples.add_relu(8), ir_examples.add_relu(9)
    paths = [build(f, target="cpu")._compiled.path for f in (old, new)]
    for path in paths:
        os.utime(path, (1000, os.stat(path).st_mtime))
    numba_cpu.clear_memory_cache()
    kernel = build(old, target="cpu")  # from the disk cache: touched
    assert kernel.cache_hit == "disk"
    prune_disk_cache(fresh_cache, max_entries=1)
    assert _left(fresh_cache) == [paths[0].stem]


def test_a_kernel_evicted_from_memory_is_freed(fresh_cache):
    cache = numba_cpu._MEMORY_CACHE
    size = cache.maxsize
    cache.resize(2)
    try:
        refs = []
        for n in range(20, 25):
            kernel = build(ir_examples.add_relu(n), target="cpu")
            _check_add_relu(kernel, n)
            refs.append(weakref.ref(kernel._compiled.dispatcher))
            del kernel
        gc.collect()
        assert [r() is None for r in refs] == [True, True, True, False, False]
        held = build(ir_examples.add_relu(30), target="cpu")
        for n in range(31, 34):
            build(ir_examples.add_relu(n), target="cpu")
        gc.collect()
        _check_add_relu(held, 30)  # evicted, but a Kernel the user holds still runs
    finally:
        cache.resize(size)


def test_an_evicted_cuda_module_leaves_sys_modules():
    import types

    from workbench.backends.cuda import numba_cuda

    module = types.ModuleType("workbench_kernel_fake_cuda_0")
    module.__file__ = "/nonexistent/workbench_kernel_fake_cuda_0.py"
    exec("def host():\n    pass\n", module.__dict__)
    sys.modules[module.__name__] = module
    compiled = types.SimpleNamespace(host=module.host)
    cache = kernel_cache.LRUCache(maxsize=1, on_evict=numba_cuda._forget)
    cache["a"] = compiled
    cache["b"] = types.SimpleNamespace(host=len)  # evicts "a"
    assert module.__name__ not in sys.modules


def test_a_changed_runtime_helper_names_a_new_module(monkeypatch):
    """Numba's cache checks only the cached module's own file: a kernel inlining a runtime
    helper (``rt.fast_erf_f32`` lives in ``fast_math``, imported by ``runtime``) must get a
    new name when the helper's text changes, else it keeps the old machine code."""
    source = ("from workbench.backends.cpu import runtime as rt\n\n"
              "def k(x):\n    return rt.fast_erf_f32(x)\n")
    before = kernel_cache.source_digest(source)
    assert kernel_cache.source_digest(source) == before
    real = kernel_cache._module_text

    def edited(name):
        digest, text = real(name)
        return (digest + "-edited", text) if name == "workbench.backends.cpu.fast_math" \
            else (digest, text)

    monkeypatch.setattr(kernel_cache, "_module_text", edited)
    assert kernel_cache.source_digest(source) != before
    plain = "def k(x):\n    return x\n"
    monkeypatch.setattr(kernel_cache, "_module_text", real)
    unchanged = kernel_cache.source_digest(plain)
    monkeypatch.setattr(kernel_cache, "_module_text", edited)
    assert kernel_cache.source_digest(plain) == unchanged
