"""Targets as objects, the bounded kernel cache, the explicit allocations and the CPU
workspace (issue 9, part 0)."""

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.backends import build
from workbench.backends.common.allocation import Allocate, place_allocations, workspace_buffers
from workbench.backends.common.codegen_python import PythonPrinter, generate_source
from workbench.backends.common.kernel_cache import LRUCache
from workbench.backends.common.lower import lower
from workbench.backends.common.target import (
    Target,
    TargetKind,
    register_target,
    unregister_target,
)
from workbench.backends.cpu.numba_cpu_kernel import CpuKernel
from workbench.backends.cpu.numba_cpu_printer import CpuPrinter
from workbench.ir.functor import collect


def test_target_objects_and_strings_build_the_same_kernel():
    func = ops.add(8, 8)
    by_name = build(func, target="cpu", fastmath=False)
    by_object = build(func, target=wb.Target("cpu", fastmath=False))
    assert by_object.cache_hit == "memory" and by_object.source == by_name.source
    assert by_name.target == "cpu" and by_name.target_info == Target("cpu", fastmath=False)
    assert isinstance(by_name, CpuKernel)


def test_target_options_defaults_and_errors():
    t = Target("cpu", promote=False)
    assert dict(t.options) == {
        "fastmath": True, "fast_exp": True, "boundscheck": False, "promote": False,
        "workspace": True, "debug": False,
    }
    assert t == "cpu" and str(t) == "cpu" and t.with_options(promote=True) == Target("cpu")
    with pytest.raises(TypeError, match="unknown option\\(s\\) fast for target 'cpu'"):
        Target("cpu", fast=True)
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        Target("tpu")
    cuda = Target("cuda")
    assert cuda.device.max_threads_per_block == 1024
    assert cuda.device.shared_memory_per_block == 48 * 1024


def test_a_registered_target_builds_without_touching_build():
    calls = []

    def compile_echo(func, lowered, target, written):
        calls.append(target.options["flag"])
        return "kernel"

    register_target(
        TargetKind("echo", {"flag": 1}, (), compile_echo, object, lambda: None, "test target")
    )
    try:
        assert build(ops.add(4, 4), target="echo", flag=7) == "kernel" and calls == [7]
    finally:
        unregister_target("echo")  # the registry is per process: other tests list it


def test_lru_cache_evicts_the_least_recently_used():
    cache = LRUCache(maxsize=2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1
    cache["c"] = 3
    assert cache.keys() == ["a", "c"] and cache.evictions == 1
    assert cache.get("b") is None and cache.misses == 1
    cache.resize(1)
    assert cache.keys() == ["c"]
    with pytest.raises(ValueError):
        LRUCache(0)


def test_allocations_are_statements_placed_by_a_pass():
    lowered = lower(ops.add_mul_gelu(4, 8))
    placed = place_allocations(lowered)
    allocs = collect(placed.body, lambda n: isinstance(n, Allocate))
    assert [a.buffer.name for a in allocs] == ["T_add", "T_multiply"]
    assert placed.root_block.alloc_buffers == ()
    assert [b.name for b in workspace_buffers(placed)] == ["T_add", "T_multiply"]


def test_printers_share_one_base():
    assert issubclass(CpuPrinter, PythonPrinter)
    python = generate_source(lower(ops.add_mul_gelu(4, 8)), target="python").source
    assert "T_add = np.zeros((4, 8), dtype=np.float32)" in python


def test_cpu_global_scratch_is_a_reused_workspace(rng):
    func = ops.add_mul_gelu(4, 8)
    assert "T_add = np.empty((4, 8), dtype=np.float32)" in build(
        func, target="cpu", workspace=False
    ).source
    kernel = build(func, target="cpu")
    generated = generate_source(lower(func), target="cpu")
    assert generated.param_names == ("A", "B", "C", "T_gelu", "T_add", "T_multiply")
    assert "np.empty" not in kernel.source
    assert [w.shape for w in kernel.workspace] == [(4, 8), (4, 8)]
    workspace = kernel.workspace
    args = [rng.standard_normal((4, 8), dtype=np.float32) for _ in range(3)]
    out, expected = np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32)
    for _ in range(2):
        kernel(*args, out)
    build(func, target="numpy")(*args, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert kernel.workspace is workspace
    twin = kernel.copy()
    assert twin.workspace[0] is not workspace[0]
    twin(*args, out)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_local_buffer_allocated_in_its_loop():
    sch = wb.Schedule(ops.matmul(8, 8, 8))
    c = sch.get_block("C")
    i, *_ = sch.get_loops(c)
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, i)
    placed = place_allocations(lower(sch.mod))
    (alloc,) = collect(placed.body, lambda n: isinstance(n, Allocate))
    assert alloc.buffer.name == "C_local" and alloc.buffer.shape == (1, 8)
    loop = placed.root_block.body
    assert loop.loop_var.name == "i" and isinstance(loop.body, Allocate)
