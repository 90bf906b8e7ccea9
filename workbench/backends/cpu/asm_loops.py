"""Find the loops of a kernel's assembly that do floating-point FMAs, and count their
memory accesses: the check that an accumulator tile stays in registers.

A loop is a label plus a later jump back to it (x86 AT&T syntax, as ``kernel.asm`` gives
it). For each loop that contains a ``vfmadd`` instruction this reports how many FMAs it
has (and how many work on 512-bit ``zmm`` registers), how many instructions read memory
(an FMA with a memory operand counts as a load too) and how many write it. A
register-blocked matmul micro-kernel has FMAs, loads of its operands and **no stores**:
a store per FMA means the accumulator lives in memory.

Example
-------
>>> asm = '''
... .LBB0_3:
... \\tvbroadcastss\\t(%rsi,%rcx), %zmm1
... \\tvmovups\\t(%rdx,%rax), %zmm2
... \\tvfmadd231ps\\t%zmm2, %zmm1, %zmm0
... \\taddq\\t$4, %rcx
... \\tjne\\t.LBB0_3
... '''
>>> [(x.fma, x.fma_zmm, x.loads, x.stores) for x in fma_loops(asm)]
[(1, 1, 2, 0)]
"""

from __future__ import annotations

import dataclasses
import re

_LABEL = re.compile(r"^(\.LBB\d+_\d+):")
_JUMP = re.compile(r"^\s*j\w+\s+(\.LBB\d+_\d+)\s*$")
_STORE = re.compile(r"%[xyz]mm\d+,\s*[^,]*\(")  # a vector register written to memory


@dataclasses.dataclass(frozen=True)
class AsmLoop:
    """One loop of the assembly that contains FMAs (counts over its body, once)."""

    label: str
    instructions: int
    fma: int
    fma_zmm: int
    loads: int
    stores: int

    def __str__(self) -> str:
        return (
            f"{self.label}: {self.fma} FMAs ({self.fma_zmm} on zmm), {self.loads} loads, "
            f"{self.stores} stores in {self.instructions} instructions"
        )


def fma_loops(asm: str) -> list[AsmLoop]:
    """The loops of ``asm`` that contain FMAs, in the order their back jumps appear.

    Nested loops are reported separately (an outer loop's counts include its inner ones).
    """
    lines = asm.splitlines()
    labels = {}
    for number, line in enumerate(lines):
        match = _LABEL.match(line.strip())
        if match:
            labels[match.group(1)] = number
    loops = []
    for number, line in enumerate(lines):
        match = _JUMP.match(line)
        if not match or labels.get(match.group(1), number) >= number:
            continue
        body = [x for x in lines[labels[match.group(1)] + 1 : number + 1] if x.strip()]
        fmas = [x for x in body if "vfmadd" in x]
        if not fmas:
            continue
        memory = [x for x in body if "(" in x and not x.strip().startswith("lea")]
        stores = [x for x in memory if _STORE.search(x.split("#")[0]) or _is_scalar_store(x)]
        loops.append(
            AsmLoop(
                match.group(1),
                len(body),
                len(fmas),
                sum("%zmm" in x for x in fmas),
                len(memory) - len(stores),
                len(stores),
            )
        )
    return loops


def _is_scalar_store(line: str) -> bool:
    """A general-purpose register stored to memory (``movq %rax, 8(%rsp)``)."""
    parts = line.split("#")[0].strip().split(None, 1)
    if len(parts) < 2 or not parts[0].startswith("mov"):
        return False
    operands = parts[1]
    return operands.startswith(("%", "$")) and "(" in operands.split(",", 1)[-1]
