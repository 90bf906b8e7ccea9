"""The cuda defaults stay within a block's resources at real model shapes (issue 20: resnet18's
448-thread conv blocks failed to launch on the H200; GPT-2's attention at 1024 tokens asked
for 64 KiB of shared memory).

Built (not run) under the simulator with the graph's default schedules: every kernel keeps
its static shared memory within the target's device facts, and a block of more than
``FULL_REGISTER_THREADS`` (256) threads is compiled with launch bounds (so the compiler
keeps its registers within what the block may have); the register-tiled recipes (matmul,
conv2d) never ask for more than 256 threads.
"""

import math

import numpy as np
import pytest

from workbench import ops
from workbench.backends import build
from workbench.backends.common.allocation import Allocate
from workbench.backends.common.target import Target
from workbench.backends.cuda.numba_cuda import split_kernels
from workbench.backends.cuda.numba_cuda_printer import FULL_REGISTER_THREADS
from workbench.ir.functor import collect
from workbench.recipes.attention_cuda import fit_rows
from workbench.recipes.graph_cuda import graph_schedule
from workbench.recipes.graph_cuda_ops import TILINGS

pytestmark = pytest.mark.cuda


def _shared_bytes(kernel) -> list[int]:
    _, stmts = split_kernels(kernel.device_func)
    return [sum(math.prod(int(n) for n in a.buffer.shape) * np.dtype(a.buffer.dtype).itemsize
                for a in collect(stmt, lambda n: isinstance(n, Allocate))
                if a.buffer.scope == "shared")
            for stmt in stmts]


CASES = {
    "resnet18 stem, b16": lambda: ops.conv2d_nchw(16, 3, 224, 224, 64, 7, 7, stride=2,
                                                  padding=3),
    "resnet18 3x3 s2, b16": lambda: ops.conv2d_nchw(16, 64, 56, 56, 128, 3, 3, stride=2,
                                                    padding=1),
    "mobilenet depthwise s2": lambda: ops.depthwise_conv2d_nchw(16, 144, 56, 56, 3, 3,
                                                                stride=2, padding=1),
    "softmax of 30000 columns": lambda: ops.softmax(64, 30000),
    "layernorm of 30000 columns": lambda: ops.layernorm(64, 30000),
    "GPT-2 attention, 128 tokens": lambda: ops.attention(16, 12, 128, 64, causal=True),
    "GPT-2 attention, 1024 tokens": lambda: ops.attention(1, 12, 1024, 64, causal=True),
    "small heads, 512 tokens": lambda: ops.attention(1, 2, 512, 16),
    "8192 tokens (unfused)": lambda: ops.attention(1, 1, 8192, 8),
}


@pytest.mark.parametrize("name", list(CASES))
def test_default_kernels_fit_a_block(name):
    kernel = build(graph_schedule(CASES[name]()), target="cuda")
    budget = Target("cuda").device.shared_memory_per_block
    assert all(used <= budget for used in _shared_bytes(kernel))
    sections = kernel.source.split("@cuda.jit(")[1:]
    for launch, section in zip(kernel.launches, sections, strict=True):
        threads = launch.threads_per_block
        bounded = section.startswith(f"fastmath=False, **launch_bounds({threads}))")
        assert bounded == (threads > FULL_REGISTER_THREADS), (threads, section[:60])
        if "conv" in name:
            assert threads <= FULL_REGISTER_THREADS


def test_register_tiles_stay_within_256_threads():
    assert all(t * t <= FULL_REGISTER_THREADS for t, _ in TILINGS)


def test_attention_rows_fit_the_shared_memory():
    assert fit_rows(128, 128, 64, budget=48 * 1024) == (8, True)  # 32 KiB of keys + 8 KiB
    assert fit_rows(1024, 1024, 64, budget=48 * 1024) == (4, False)  # 8 rows: 64 KiB
    assert fit_rows(4096, 4096, 64, budget=48 * 1024) == (1, False)
    assert fit_rows(512, 512, 16, budget=96 * 1024) == (8, True)  # an opted-in 96 KiB
    with pytest.raises(ValueError, match="a row of 8192 keys keeps 65536 bytes"):
        fit_rows(8192, 8192, 8, budget=48 * 1024)
