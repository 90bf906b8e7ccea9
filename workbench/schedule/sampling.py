"""Random decisions a search records in the trace: ``sample_perfect_tile``, ``sample_categorical``.

A sampling primitive does not change the function. It draws from the schedule's random
state (``Schedule(func, seed=...)``, TVM's ``Schedule(mod, seed=...)``) and records the
value it drew, its *decision*, in the trace step::

    b0 = sch.get_block("B")
    l1, l2 = sch.get_loops(b0)
    sch.sample_perfect_tile(l1, n=3, decision=[2, 4, 8])
    sch.sample_categorical(candidates=[1, 2, 4], probs=[0.2, 0.3, 0.5], decision=2)

Replaying the trace (also from JSON) passes the decision back, so the same values come
out; a trace whose decision was changed (``with_decision``: the tuner's mutation) replays
to the new choice. As in TVM, a replayed perfect-tile decision that no longer divides the
loop is repaired from the innermost factor outwards (a factor that does not divide what
is left becomes all of it), so every returned tile multiplies to the extent.

The values are plain Python ints: unlike TVM's ``ExprRV``, a later ``split`` records the
literal factors, not a reference to the sample (see docs/decisions.d/newprims.md).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from workbench.ir import PrimFunc, const_value
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_sampling import (
    CategoricalDecisionError,
    CategoricalProbabilityError,
    SampleNonConstantExtentError,
    TileCountError,
)
from workbench.schedule.handles import LoopRV
from workbench.schedule.trace import (
    AttrSpec,
    Instruction,
    InstructionKind,
    Trace,
    register_instruction,
)
from workbench.schedule.tree import find_loop

# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------


def prime_factors(n: int) -> list[int]:
    """The prime factors of ``n`` with multiplicity, ascending (``12 -> [2, 2, 3]``)."""
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    return factors


def draw_perfect_tile(
    rng: random.Random, extent: int, n: int, max_innermost_factor: int = 16
) -> list[int]:
    """``n`` factors of ``extent`` (their product is ``extent``), the last at most
    ``max_innermost_factor`` (-1: no limit): each prime factor goes to a random slot."""
    primes = prime_factors(extent)
    while True:
        tile = [1] * n
        for p in primes:
            tile[rng.randrange(n)] *= p
        if max_innermost_factor == -1 or tile[-1] <= max_innermost_factor:
            return tile


def repair_perfect_tile(extent: int, decision: Sequence[int]) -> list[int]:
    """TVM's rule for a replayed decision: from the innermost factor outwards, a factor
    that does not divide what is left becomes all of it; the outermost takes the rest.

    Example: ``repair_perfect_tile(12, [1, 5, 2])`` is ``[1, 6, 2]``.
    """
    tile = list(decision)
    left = extent
    for i in range(len(tile) - 1, 0, -1):
        if tile[i] <= 0 or left % tile[i] != 0:
            tile[i] = left
        left //= tile[i]
    tile[0] = left
    return tile


def sample_perfect_tile(
    func: PrimFunc,
    loop: str,
    n: int,
    rng: random.Random,
    *,
    max_innermost_factor: int = 16,
    decision: Sequence[int] | None = None,
) -> list[int]:
    """Sample ``n`` factors of the extent of ``loop`` (or repair and reuse ``decision``).

    Raises ``TileCountError`` (``n < 2``), ``SampleNonConstantExtentError``,
    ``InvalidArgumentError`` (a decision of the wrong length).
    """
    node, _ = find_loop(func, loop, "sample_perfect_tile")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise TileCountError("sample_perfect_tile", node, n, func)
    extent = const_value(node.extent)
    if not isinstance(extent, int):
        raise SampleNonConstantExtentError("sample_perfect_tile", node, func)
    if decision is not None:
        if len(decision) != n or not all(isinstance(f, int) for f in decision):
            raise InvalidArgumentError(
                "sample_perfect_tile", "decision", f"a list of {n} ints", decision
            )
        return repair_perfect_tile(extent, decision)
    return draw_perfect_tile(rng, extent, n, max_innermost_factor)


def sample_categorical(
    candidates: Sequence[int],
    probs: Sequence[float],
    rng: random.Random,
    *,
    decision: int | None = None,
) -> int:
    """The index of a candidate drawn with ``probs`` (or ``decision`` itself, checked).

    Raises ``CategoricalProbabilityError``, ``CategoricalDecisionError``.
    """
    if len(candidates) != len(probs) or not candidates:
        raise CategoricalProbabilityError(
            "sample_categorical",
            f"{len(candidates)} candidates and {len(probs)} probabilities",
        )
    if any(p < 0 for p in probs) or sum(probs) <= 0:
        raise CategoricalProbabilityError("sample_categorical", f"probabilities {list(probs)}")
    if decision is not None:
        if isinstance(decision, bool) or not isinstance(decision, int):
            raise CategoricalDecisionError("sample_categorical", decision, len(candidates))
        if not 0 <= decision < len(candidates):
            raise CategoricalDecisionError("sample_categorical", decision, len(candidates))
        return decision
    return rng.choices(range(len(candidates)), weights=probs)[0]


def with_decision(trace: Trace, step: int, decision: object) -> Trace:
    """``trace`` with the decision of sampling step ``step`` replaced (a tuner's mutation).

    Example
    -------
    >>> mutated = with_decision(sch.trace, 3, [4, 2, 8])
    >>> mutated.apply(func)           # replays to the new tile
    """
    old = trace[step]
    if old.primitive not in ("sample_perfect_tile", "sample_categorical"):
        raise ValueError(f"step {step} is {old.primitive}, not a sampling step")
    attrs = dict(old.attrs)
    attrs["decision"] = list(decision) if isinstance(decision, (list, tuple)) else decision
    steps = list(trace.steps)
    steps[step] = Instruction(old.primitive, old.inputs, attrs, old.outputs)
    return Trace(steps)


# ---------------------------------------------------------------------------------------
# Schedule methods
# ---------------------------------------------------------------------------------------


class SamplingMethods:
    """The sampling methods of ``Schedule``; the random state is seeded by ``seed=``."""

    def _random(self) -> random.Random:
        rng = self.__dict__.get("_rng")
        if rng is None:
            rng = random.Random(self.__dict__.get("_seed"))
            self._rng = rng
        return rng

    def _fork_seed(self) -> int:
        """A seed for a copy of this schedule, drawn from its random state (TVM's ForkSeed)."""
        return self._random().getrandbits(63)

    def sample_perfect_tile(
        self,
        loop: LoopRV,
        n: int,
        max_innermost_factor: int = 16,
        decision: list[int] | None = None,
    ) -> list[int]:
        """Sample ``n`` factors whose product is the loop's extent, as in TVM.

        The innermost factor is at most ``max_innermost_factor`` (-1: no limit). The
        decision is recorded in the trace; ``decision=`` replays it.

        Example
        -------
        >>> sch = Schedule(matmul, seed=7)
        >>> i, j, k = sch.get_loops(sch.get_block("C"))
        >>> sch.split(i, factors=sch.sample_perfect_tile(i, n=3))
        """
        name = self._name_of(loop, "sample_perfect_tile")
        tile = sample_perfect_tile(
            self.mod,
            name,
            n,
            self._random(),
            max_innermost_factor=max_innermost_factor,
            decision=decision,
        )
        attrs = {"n": n, "max_innermost_factor": max_innermost_factor, "decision": tile}
        self._commit("sample_perfect_tile", (loop,), attrs, self.mod, [])
        return tile

    def sample_categorical(
        self, candidates: list[int], probs: list[float], decision: int | None = None
    ) -> int:
        """Draw one of ``candidates`` with probabilities ``probs``; the index is recorded.

        Example
        -------
        >>> sch.sample_categorical([4, 8, 16], [0.25, 0.5, 0.25])
        8
        """
        index = sample_categorical(candidates, probs, self._random(), decision=decision)
        attrs = {"candidates": list(candidates), "probs": list(probs), "decision": index}
        self._commit("sample_categorical", (), attrs, self.mod, [])
        return candidates[index]


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int_list(value: object) -> bool:
    return isinstance(value, list) and all(_is_int(v) for v in value)


def _is_prob_list(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    )


def _probe_sample_perfect_tile(sch, loop: LoopRV):
    return (loop,), {"n": 2}


register_instruction(
    InstructionKind(
        "sample_perfect_tile",
        ("loop",),
        (
            AttrSpec("n", _is_int, "an int"),
            AttrSpec("max_innermost_factor", _is_int, "an int", default=16),
            AttrSpec(
                "decision", lambda v: v is None or _is_int_list(v), "a list of ints", default=None
            ),
        ),
        applies_to=("loop",),
        probe=_probe_sample_perfect_tile,
    )
)
register_instruction(
    InstructionKind(
        "sample_categorical",
        (),
        (
            AttrSpec("candidates", _is_int_list, "a list of ints"),
            AttrSpec("probs", _is_prob_list, "a list of numbers"),
            AttrSpec("decision", lambda v: v is None or _is_int(v), "an int", default=None),
        ),
    )
)
