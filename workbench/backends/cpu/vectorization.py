"""Which loops of a compiled kernel LLVM vectorized, and how wide.

The heuristic, honestly stated: the kernel is compiled a second time with
``debug=True`` (same source lines, same optimizations; debug info only adds line numbers
to the LLVM IR). Every LLVM instruction computing on or moving a vector type
(``<8 x float>``, ``<16 x i64>``...) carries ``!dbg`` metadata with a source line. A loop is
reported vectorized when such an instruction has a line inside the loop's lines of the
generated source and not inside a nested loop. Lane count and element type come from
the widest such vector type; register bits are lanes times element bits (256 = ymm,
512 = zmm on x86). Limits: an instruction that LLVM hoisted or merged may carry the line of
a neighbouring statement, and splats (a scalar broadcast to all lanes) are not counted.
"""

from __future__ import annotations

import dataclasses
import re

from workbench.backends.common.codegen_python import LoopInfo

_VECTOR = re.compile(r"<(\d+) x (float|double|half|i1|i8|i16|i32|i64)>")
_DBG = re.compile(r"!dbg (!\d+)")
_LOCATION = re.compile(r"^(!\d+) = !DILocation\(line: (\d+)", re.MULTILINE)
_BITS = {"float": 32, "double": 64, "half": 16, "i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
_IGNORED = ("insertelement", "shufflevector", "extractelement")


@dataclasses.dataclass(frozen=True)
class LoopVectorization:
    """One loop's line in the report."""

    loop: str
    kind: str
    innermost: bool
    vectorized: bool
    lanes: int
    element: str
    bits: int

    def __str__(self) -> str:
        what = f"{self.lanes} x {self.element} ({self.bits}-bit)" if self.vectorized else "scalar"
        where = ", innermost" if self.innermost else ""
        return f"loop {self.loop} ({self.kind}{where}): {what}"


class VectorizationReport(list):
    """A list of ``LoopVectorization``, printed one loop per line."""

    def __str__(self) -> str:
        return "\n".join(str(entry) for entry in self) or "(no vectorized or innermost loop)"

    def __repr__(self) -> str:
        return str(self)

    def loop(self, name: str) -> LoopVectorization:
        """The entry of the loop whose variable is ``name``."""
        for entry in self:
            if entry.loop == name:
                return entry
        raise KeyError(f"no loop {name!r} in the vectorization report")


def vector_lines(llvm_ir: str) -> dict[int, tuple[int, str]]:
    """Map source line -> (widest lanes, element type) of the vector instructions there."""
    locations = {m.group(1): int(m.group(2)) for m in _LOCATION.finditer(llvm_ir)}
    found: dict[int, tuple[int, str]] = {}
    for line in llvm_ir.splitlines():
        vector = _VECTOR.search(line)
        debug = _DBG.search(line)
        if vector is None or debug is None or any(word in line for word in _IGNORED):
            continue
        source_line = locations.get(debug.group(1))
        if source_line is None:
            continue
        lanes, element = int(vector.group(1)), vector.group(2)
        if (
            lanes * _BITS[element]
            > found.get(source_line, (0, "i1"))[0] * _BITS[found.get(source_line, (0, "i1"))[1]]
        ):
            found[source_line] = (lanes, element)
    return found


def report(loops: tuple[LoopInfo, ...], debug_llvm_ir: str) -> VectorizationReport:
    """Build the report for ``loops`` from the LLVM IR of the debug twin."""
    lines = vector_lines(debug_llvm_ir)
    entries = VectorizationReport()
    ordered = sorted(loops, key=lambda loop: loop.first_line)
    for loop in ordered:
        if not (loop.innermost or loop.kind.value == "vectorized"):
            continue
        nested = [
            other
            for other in ordered
            if other is not loop and loop.first_line < other.first_line <= loop.last_line
        ]
        best = (0, "float")
        for number in range(loop.first_line, loop.last_line + 1):
            if any(other.first_line <= number <= other.last_line for other in nested):
                continue
            lanes, element = lines.get(number, (0, "float"))
            if lanes * _BITS[element] > best[0] * _BITS[best[1]]:
                best = (lanes, element)
        lanes, element = best
        entries.append(
            LoopVectorization(
                loop.var,
                loop.kind.value,
                loop.innermost,
                lanes > 1,
                lanes,
                element if lanes else "",
                lanes * _BITS[element] if lanes else 0,
            )
        )
    return entries
