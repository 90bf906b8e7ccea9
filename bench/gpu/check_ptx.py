"""Offline PTX check of the ``cuda`` target (no GPU): build schedules, compile each kernel
to PTX for sm_90 with NVVM, count the wide accesses.

Needs libnvvm / libnvrtc (e.g. ``pip install --target DIR nvidia-cuda-nvcc-cu12
nvidia-cuda-nvrtc-cu12``, then ``CUDA_HOME=DIR/nvidia/cuda_nvcc`` and ``LD_LIBRARY_PATH``
with ``DIR/nvidia/cuda_nvrtc/lib:DIR/nvidia/cuda_nvcc/nvvm/lib64``)::

    python bench/gpu/check_ptx.py            # prints, per kernel, counts of v4 loads/stores
"""

from __future__ import annotations

import os
import re
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402

np.row_stack = np.vstack

from numba import cuda, types  # noqa: E402
from numba.np.numpy_support import from_dtype  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import ops  # noqa: E402
from workbench.recipes import get  # noqa: E402

PATTERNS = {
    "ld.global.v4": r"ld\.global(\.nc)?\.v4\.f32",
    "st.global.v4": r"st\.global\.v4\.f32",
    "ld.shared.v4": r"ld\.shared\.v4\.f32",
    "st.shared.v4": r"st\.shared\.v4\.f32",
    "ld.global scalar": r"ld\.global(\.nc)?\.f32",
    "ld.shared scalar": r"ld\.shared\.f32",
    "bar.sync": r"bar\.sync",
}


def ptx_of(sch) -> list[tuple[str, dict, str]]:
    kernel = wb.build(sch, target="cuda")
    rows = []
    for dispatcher in kernel._compiled.kernels:
        sig = tuple(
            types.Array(from_dtype(np.dtype(p.dtype)), len(p.shape), "C")
            for p in kernel.func.params
        )
        ptx, _ = cuda.compile_ptx(dispatcher.py_func, sig, cc=(9, 0))
        counts = {k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
        rows.append((dispatcher.py_func.__name__, counts, ptx))
    return rows


CASES = {
    "elementwise v4": lambda: get("add_mul_gelu", "v4", "cuda")(ops.add_mul_gelu(4096, 4096)),
    "multiply v4": lambda: get("multiply", "v4", "cuda")(ops.multiply(4096, 4096)),
    "matmul shared 16x16 v4": lambda: get("matmul", "shared", "cuda")(ops.matmul(4096, 4096, 4096)),
    "matmul 128x128 v4 + double buffer": lambda: get("matmul", "register_blocked", "cuda")(
        ops.matmul(4096, 4096, 4096)
    ),
    "matmul 128x128 unroll k": lambda: get("matmul", "register_blocked", "cuda")(
        ops.matmul(4096, 4096, 4096), unroll_k=True
    ),
    "matmul 128x128 k16": lambda: get("matmul", "register_blocked", "cuda")(
        ops.matmul(4096, 4096, 4096), k_tile=16
    ),
    "matmul 128x128 single buffer": lambda: get("matmul", "register_blocked", "cuda")(
        ops.matmul(4096, 4096, 4096), double_buffer=False
    ),
    "elementwise grid_stride": lambda: get("add_mul_gelu", "grid_stride", "cuda")(
        ops.add_mul_gelu(4096, 4096)
    ),
}


def ptxas_usage(ptx: str) -> str:
    """Registers / spills from ``ptxas -v`` (when ptxas is on PATH), else ''."""
    import shutil
    import subprocess
    import tempfile

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return ""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    out = subprocess.run(
        [ptxas, "-v", "-arch=sm_90", f.name, "-o", "/dev/null"], capture_output=True, text=True
    )
    return " ".join(line.split("info    : ")[-1] for line in out.stderr.splitlines()[-2:])

if __name__ == "__main__":
    for name, make in CASES.items():
        for kernel, counts, ptx in ptx_of(make()):
            print(name, kernel, counts, ptxas_usage(ptx))
            if "--dump" in sys.argv:
                print(ptx)
