"""``einsum`` as graph ops, for both frontends (ATen's ``einsum``, ONNX's ``Einsum``).

Each operand first sums the indices no other operand and not the output names; operands
are then contracted left to right, two at a time, as one (batched) ``matmul``: the left
operand transposed to ``batch + left + contracted`` indices and reshaped to 3-D (2-D without
batch indices), the right one to ``batch + contracted + right``; the product is reshaped back
to its indices, and the last result transposed to the output's order. A transpose or
reshape that would not change anything is not emitted.

Ellipses (``...``) stand for the same leading or trailing axes in every operand (no
broadcasting of size-1 axes). Refused with the reason (``NotImplementedError``): an index
repeated within one operand (a diagonal or trace), and an index whose sizes differ between
operands.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Emit = Callable[[str, list, dict], str]


def _parse(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """The index list of each operand and of the output (``...`` expanded to one private
    index per axis it covers)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise NotImplementedError(f"einsum {equation!r}: {len(terms)} terms for "
                                  f"{len(ranks)} operands")
    ellipsis = 0
    for term, rank in zip(terms, ranks, strict=True):
        if "..." in term:
            ellipsis = max(ellipsis, rank - len(term.replace("...", "")))
    dots = [f"...{i}" for i in range(ellipsis)]

    def expand(term: str, rank: int | None) -> list[str]:
        head, has_dots, tail = term.partition("...")
        if not has_dots:
            return list(term)
        width = ellipsis if rank is None else rank - len(head) - len(tail)
        return list(head) + dots[ellipsis - width:] + list(tail)

    inputs = [expand(t, r) for t, r in zip(terms, ranks, strict=True)]
    if arrow:
        output = expand(rhs, None)
    else:  # implicit output: the ellipsis, then the indices used once, sorted
        letters = [c for term in terms for c in term.replace("...", "")]
        output = dots + sorted(c for c in set(letters) if letters.count(c) == 1)
    return inputs, output


class _Einsum:
    def __init__(self, equation: str, shape: Callable[[str], tuple[int, ...]], emit: Emit):
        self.equation, self.shape, self.emit = equation, shape, emit
        self.sizes: dict[str, int] = {}

    def _transpose(self, x: str, have: list[str], want: list[str]) -> str:
        if have == want:
            return x
        return self.emit("transpose", [x], {"perm": [have.index(i) for i in want]})

    def _reshape(self, x: str, shape: list[int]) -> str:
        if tuple(shape) == tuple(self.shape(x)):
            return x
        return self.emit("reshape", [x], {"shape": shape})

    def _sum(self, x: str, have: list[str], keep: set[str]) -> tuple[str, list[str]]:
        axes = [a for a, i in enumerate(have) if i not in keep]
        if not axes:
            return x, have
        y = self.emit("reduce", [x], {"axes": axes, "keepdims": False, "kind": "sum"})
        return y, [i for i in have if i in keep]

    def _size(self, indices: list[str]) -> int:
        return math.prod(self.sizes[i] for i in indices)

    def _contract(self, a, ia, b, ib, keep: set[str]) -> tuple[str, list[str]]:
        batch = [i for i in ia if i in ib and i in keep]
        summed = [i for i in ia if i in ib and i not in keep]
        left = [i for i in ia if i not in ib]
        right = [i for i in ib if i not in ia]
        lead = [self._size(batch)] if batch else []
        a = self._reshape(self._transpose(a, ia, batch + left + summed),
                          lead + [self._size(left), self._size(summed)])
        b = self._reshape(self._transpose(b, ib, batch + summed + right),
                          lead + [self._size(summed), self._size(right)])
        y = self.emit("matmul", [a, b], {})
        indices = batch + left + right
        return self._reshape(y, [self.sizes[i] for i in indices]), indices

    def __call__(self, operands: list[str]) -> str:
        inputs, output = _parse(self.equation, [len(self.shape(x)) for x in operands])
        for x, indices in zip(operands, inputs, strict=True):
            if len(set(indices)) != len(indices):
                raise NotImplementedError(f"einsum {self.equation!r}: an index repeated "
                                          "within one operand (a diagonal or trace)")
            for i, size in zip(indices, self.shape(x), strict=True):
                if self.sizes.setdefault(i, size) != size:
                    raise NotImplementedError(f"einsum {self.equation!r}: index {i!r} has "
                                              f"sizes {self.sizes[i]} and {size} (broadcast)")
        terms = []
        for n, (x, indices) in enumerate(zip(operands, inputs, strict=True)):
            others = {i for m, term in enumerate(inputs) if m != n for i in term}
            terms.append(self._sum(x, indices, others | set(output)))
        y, indices = terms[0]
        for n, (b, ib) in enumerate(terms[1:], start=2):
            later = {i for term in inputs[n:] for i in term}
            y, indices = self._contract(y, indices, b, ib, later | set(output))
        y, indices = self._sum(y, indices, set(output))
        return self._transpose(y, indices, output)


def einsum(equation: str, operands: list[str], shape: Callable[[str], tuple[int, ...]],
           emit: Emit) -> str:
    """The value computing ``einsum(equation, *operands)``; ``shape(value)`` is a value's
    shape, ``emit(op, inputs, attrs)`` adds a node and returns its value."""
    return _Einsum(equation, shape, emit)(list(operands))
