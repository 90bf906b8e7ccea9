"""Where a generated cuda kernel's global loads sit in its main loop, from its SASS, without a
GPU: the kernels of a schedule compiled as ``ptxas_registers`` does (libNVVM,
``ptxas -arch=sm_90``), disassembled with ``nvdisasm``
(``pip install --target /tmp/nvdis nvidia-cuda-nvdisasm``; ``NVDISASM`` names the binary),
and per kernel: registers, spills, instructions, FFMAs,
and, in the longest loop, where each ``LDG`` and ``STS`` sits as the share of the loop's
FFMAs issued before it (0: at the top, the load's latency hidden behind the whole tile;
1: after the compute). bench/RESULTS.md, "No GPU lent", has the table this printed.

    PYTHONPATH=$PWD python bench/gpu/sass_report.py                    # the SGEMM cases
    PYTHONPATH=$PWD python bench/gpu/sass_report.py --matmul PREFETCH_STORE_ON_LAST=1
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ptxas_registers import assemble, kernel_ptx, set_matmul_flags  # noqa: E402

NVDISASM = os.environ.get("NVDISASM", "/tmp/nvdis/nvidia/cu13/bin/nvdisasm")
_OP = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)(.*)")


def loop_positions(sass: str) -> dict:
    """FFMAs of the longest backward-branch loop and where its ``LDG`` / ``STS`` sit."""
    ops, labels, pending = [], {}, None
    for line in sass.splitlines():
        if line.startswith(".L_x_"):
            pending = line.strip().rstrip(":")
            continue
        match = _OP.search(line)
        if match:
            address = int(match.group(1), 16)
            if pending:
                labels[pending], pending = address, None
            ops.append((address, match.group(2), match.group(3)))
    loops = []
    for address, op, rest in ops:
        target = re.search(r"(\.L_x_\d+)", rest)
        if op.startswith("BRA") and target and labels.get(target.group(1), address) < address:
            loops.append((labels[target.group(1)], address))
    if not loops:
        return {}
    low, high = max(loops, key=lambda span: span[1] - span[0])
    body = [(a, op) for a, op, _ in ops if low <= a <= high]
    ffma = [a for a, op in body if op.startswith("FFMA")]

    def share(address):
        return round(sum(f < address for f in ffma) / max(1, len(ffma)), 2)

    return {"loop FFMA": len(ffma),
            "LDG at": [share(a) for a, op in body if op.startswith("LDG")],
            "STS at": [share(a) for a, op in body if op.startswith("STS")]}


def sass_report(sch) -> list[tuple[str, str, dict]]:
    """``(kernel, ptxas -v summary, loop positions)`` per kernel of ``sch``."""
    out = []
    folder = tempfile.mkdtemp()
    for name, ptx in kernel_ptx(sch):
        cubin, summary = assemble(folder, name, ptx)
        sass = subprocess.run([NVDISASM, "-c", cubin], capture_output=True, text=True,
                              check=True).stdout
        out.append((name, summary, loop_positions(sass)))
    return out


def main():
    from workbench import ops, recipes

    matmul = recipes.get("matmul", "register_blocked", "cuda")
    cases = [
        ("4096^3 default", matmul(ops.matmul(4096, 4096, 4096))),
        ("1000x3000x2000 default", matmul(ops.matmul(1000, 3000, 2000))),
        ("64x50176x576, 64 tile", matmul(ops.matmul(64, 50176, 576), threads=16, per_thread=4,
                                         split_k=1)),
        ("1024x768x768, 64 tile", matmul(ops.matmul(1024, 768, 768), threads=16, per_thread=4,
                                         split_k=1)),
    ]
    for label, sch in cases:
        for name, summary, where in sass_report(sch):
            print(f"{label:26s} {name:18s} {summary} {where}", flush=True)


if __name__ == "__main__":
    if "--matmul" in sys.argv:
        set_matmul_flags(sys.argv[sys.argv.index("--matmul") + 1])
    main()
