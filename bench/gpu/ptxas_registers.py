"""Registers, spills and shared memory of generated cuda kernels, without a GPU.

Compiles each kernel of a schedule to PTX with numba-cuda (libNVVM, sm_90) and runs
``ptxas -arch=sm_90 -v`` on it, the numbers ``kernel.resource_usage()`` reports on the device
(checked: the SGEMM kernels gave 123 / 240 registers here and on the H200 alike). Needs a CUDA
toolkit's ``libnvvm``, ``libdevice`` and ``ptxas`` (here ``/usr/local/cuda-13.0``), not
``libnvrtc``.

    CUDA_HOME=/usr/local/cuda-13.0 PYTHONPATH=$PWD python bench/gpu/ptxas_registers.py
    ... python bench/gpu/ptxas_registers.py --conv   # the conv2d default at resnet18's convs
    ... python bench/gpu/ptxas_registers.py --matmul PREFETCH_STORE_ON_LAST=1,BLOCKS_PER_SM=2
                                            # the SGEMM cases under ``matmul_cuda`` flags
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from numba import cuda, types  # noqa: E402
from numba.cuda.cudadrv import libs, nvrtc, nvvm  # noqa: E402

from workbench import ops, recipes  # noqa: E402
from workbench.backends.common.lower import lower  # noqa: E402
from workbench.backends.cuda.numba_cuda import generate_cuda_source  # noqa: E402

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda-13.0")
nvrtc.get_supported_ccs = lambda: ((7, 5), (8, 0), (9, 0))  # no libnvrtc needed
libs.get_libdevice = lambda: os.path.join(CUDA_HOME, "nvvm/libdevice/libdevice.10.bc")
nvvm.get_libdevice = libs.get_libdevice


def kernel_ptx(sch) -> list[tuple[str, str]]:
    """``(kernel name, PTX for sm_90)`` per kernel of ``sch``'s generated module (float32
    C-order arguments of each buffer's rank; each kernel's own launch bounds)."""
    func = lower(sch.mod)
    src = generate_cuda_source(func)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "generated.py")
    with open(path, "w") as handle:
        handle.write(src)
    spec = importlib.util.spec_from_file_location("generated", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # a kernel's arguments: the parameters and the global intermediates (a split-K
    # kernel's partial sums ``C_rf``), by name
    ndim = {b.name: len(b.shape) for b in (*func.params, *func.root_block.alloc_buffers)}
    out = []
    for name in sorted(n for n in dir(module) if "_kernel" in n and not n.endswith("_launch")):
        kernel = getattr(module, name)
        sig = tuple(types.Array(types.float32, ndim[arg], "C")
                    for arg in inspect.signature(kernel.py_func).parameters)
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), fastmath=False,
                                  launch_bounds=kernel.targetoptions.get("launch_bounds"))
        out.append((name, ptx))
    return out


def assemble(folder: str, name: str, ptx: str) -> tuple[str, str]:
    """``ptx`` written to ``folder`` and assembled by ``ptxas -arch=sm_90 -v``: the cubin's
    path and the summary of registers and spills."""
    ptx_path = os.path.join(folder, name + ".ptx")
    with open(ptx_path, "w") as handle:
        handle.write(ptx)
    run = subprocess.run(
        [os.path.join(CUDA_HOME, "bin/ptxas"), "-arch=sm_90", "-v", ptx_path, "-o",
         ptx_path + ".cubin"], capture_output=True, text=True, check=True)
    lines = [ln.split("info    : ")[-1].strip() for ln in run.stderr.splitlines()
             if "registers" in ln or "spill" in ln]
    return ptx_path + ".cubin", "; ".join(lines)


def ptxas_report(sch) -> list[tuple[str, str]]:
    """``(kernel name, ptxas -v summary)`` per kernel of ``sch``."""
    folder = tempfile.mkdtemp()
    return [(name, assemble(folder, name, ptx)[1]) for name, ptx in kernel_ptx(sch)]


def main():
    matmul = recipes.get("matmul", "register_blocked", "cuda")
    cases = [
        ("sgemm 4096^3 default", matmul(ops.matmul(4096, 4096, 4096))),
        ("sgemm 4000^3 default", matmul(ops.matmul(4000, 4000, 4000))),
        ("sgemm 4000^3 no partition", matmul(ops.matmul(4000, 4000, 4000), partition_edges=False)),
        ("sgemm 1000x3000x2000 default", matmul(ops.matmul(1000, 3000, 2000))),
        ("sgemm 511x257x129 default", matmul(ops.matmul(511, 257, 129))),
    ]
    for op in ("softmax", "layernorm"):
        for m, n in ((8192, 8192), (4096, 3000), (30000, 768)):
            recipe = recipes.get(op, "block_per_row", "cuda")
            cases.append((f"{op} {m}x{n} default", recipe(getattr(ops, op)(m, n))))
    for label, sch in cases:
        for name, report in ptxas_report(sch):
            print(f"{label:34s} {name:22s} {report}", flush=True)


RESNET18_CONVS = (  # (C, H, K, R, stride, padding) of every distinct resnet18 conv at 224^2
    (3, 224, 64, 7, 2, 3), (64, 56, 64, 3, 1, 1), (64, 56, 128, 3, 2, 1), (64, 56, 128, 1, 2, 0),
    (128, 28, 128, 3, 1, 1), (128, 28, 256, 3, 2, 1), (128, 28, 256, 1, 2, 0),
    (256, 14, 256, 3, 1, 1), (256, 14, 512, 3, 2, 1), (256, 14, 512, 1, 2, 0),
    (512, 7, 512, 3, 1, 1))


def conv_main(batches=(1, 16)):
    """Registers and spills of the graph's conv2d default (``register_tiled``) at every
    distinct resnet18 convolution."""
    recipe = recipes.get("conv2d_nchw", "register_tiled", "cuda")
    for batch in batches:
        for C, H, K, R, stride, padding in RESNET18_CONVS:
            sch = recipe(ops.conv2d_nchw(batch, C, H, H, K, R, R, stride=stride,
                                         padding=padding))
            label = f"conv b{batch} {C}->{K} {R}x{R}/{stride} at {H}"
            for name, report in ptxas_report(sch):
                print(f"{label:34s} {name:22s} {report}", flush=True)


def set_matmul_flags(text: str) -> None:
    """``NAME=int,...``: set those ``recipes.matmul_cuda`` flags (``SWIZZLE_B``,
    ``PREFETCH_STORE_ON_LAST``, ``BLOCKS_PER_SM``) before the kernels are built."""
    from workbench.recipes import matmul_cuda

    for item in filter(None, text.split(",")):
        name, value = item.split("=")
        if not hasattr(matmul_cuda, name):
            raise SystemExit(f"--matmul: recipes.matmul_cuda has no flag {name!r}")
        setattr(matmul_cuda, name, type(getattr(matmul_cuda, name))(int(value)))


if __name__ == "__main__":
    if "--matmul" in sys.argv:
        set_matmul_flags(sys.argv[sys.argv.index("--matmul") + 1])
    conv_main() if "--conv" in sys.argv else main()
