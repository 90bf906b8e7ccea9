"""Generated spaces (MetaSchedule style): rules over any PrimFunc, decisions as knobs.

``GeneratedSpace(func, target="cpu")`` applies one family of rules to a fresh ``Schedule``
of ``func``:

* ``cpu`` (and ``numpy``, which runs the same schedules): ``workbench.tune.rules_cpu`` —
  inlining, multi-level tiling ``SSRSRS`` with a local write cache and packing of the
  reused operand, compute locations, rfactor of row reductions, parallel / vectorize /
  unroll;
* ``cuda``: ``workbench.tune.rules_cuda`` — inlining, tiling ``SSRRS`` with the outer
  tiles bound to ``blockIdx.x`` and the middle ones to ``threadIdx.x``, a local
  accumulator per thread, shared-memory staging of the reused inputs fetched
  cooperatively by the block's threads (128-bit where the tile allows), double
  buffering, register fragments and an unrolled inner ``k`` loop, each a decision;
  other blocks fused and bound one element per thread.

Every random choice is a sampling instruction (``sch.sample_perfect_tile`` /
``sch.sample_categorical``) whose *decision* is recorded in the trace; the space's knobs are
these decisions (``tile:<block>:<loop>``, ``parallel:<block>``, ``pack:<block>``, ...), in
the order the rules sample them. A configuration is a list of decisions; mutating one
decision and replaying gives a new candidate: ``space.mutate(trace, knob, value)`` changes
the decision in the trace (``sampling.with_decision``) and replays the rules with the
trace's decisions (``space.replay(trace)``), which is what MetaSchedule's replay of a
trace with changed decisions does (our ``split`` records literal factors, not references
to the sample, so a plain ``Trace.apply`` would keep the old split).

Not generated: compute_at fusion of tiled blocks' consumers (epilogues); warp-level
reductions (rfactor) on ``cuda``.
"""

from __future__ import annotations

from workbench.backends.target import resolve_target
from workbench.schedule import Schedule, Trace
from workbench.schedule.sampling import with_decision
from workbench.tune.database import _jsonable
from workbench.tune.rules_common import Decisions
from workbench.tune.space import SearchSpace

SAMPLING = ("sample_perfect_tile", "sample_categorical")


def apply_rules(func, config: dict | None, target="cpu") -> tuple[Schedule, Decisions]:
    """Run ``target``'s rules; returns the schedule and its decisions (domains met on the
    way, and the values chosen: ``config``'s, or the rules' defaults when it is None)."""
    d = Decisions(config)
    sch = Schedule(func)
    target = resolve_target(target, "GeneratedSpace")
    rules = target.hook("tuning_rules")
    if rules is None:
        raise ValueError(f"GeneratedSpace: target {target.name!r} has no tuning rules")
    rules(sch, d, target)
    return sch, d


class GeneratedSpace(SearchSpace):
    """The rule-generated space of any PrimFunc for ``target`` (see the module docstring).

    Example
    -------
    >>> space = GeneratedSpace(ops.matmul(64, 64, 64), target="cpu")   # doctest: +SKIP
    >>> space.knobs                                                      # doctest: +SKIP
    ['tile:C:i', 'tile:C:j', 'tile:C:k', 'write_cache:C', 'pack:C', 'parallel:C', 'unroll:C']
    >>> sch = space.schedule(space.default_config())                     # doctest: +SKIP
    >>> other = space.mutate(sch.trace, "pack:C", 2)                     # doctest: +SKIP
    """

    kind = "generated"

    def __init__(self, func, name: str = "generated", target="cpu"):
        super().__init__(func, name)
        self.target_info = resolve_target(target, "GeneratedSpace")
        self.target = self.target_info.name
        _, decisions = apply_rules(func, None, self.target_info)
        self._domains = decisions.domains
        self._defaults = decisions.chosen
        self._weights = decisions.weights
        self._decisions = decisions

    def violation(self, config: dict) -> str | None:
        """Why ``config`` is no candidate of this space (None: it is one): a constraint
        between knobs the rules recorded, e.g. on ``cuda`` the threads of a tiled block
        over the block limit, or its shared stages over the shared memory."""
        return self._decisions.violation(config)

    def valid(self, config: dict) -> bool:
        return self.violation(config) is None

    def random_config(self, rng, tries: int = 1000) -> dict:
        """A random candidate drawn with the rules' weights (e.g. a vectorized loop's
        innermost tile a multiple of the vector lanes more often); pins kept. Draws that
        break a constraint between knobs (``violation``) are drawn again."""
        for _ in range(tries):
            config = {}
            for knob, values in self.domains.items():
                weights = self._weights.get(knob) if knob not in self.pinned else None
                choice = rng.choices(values, weights)[0] if weights else rng.choice(values)
                config[knob] = _jsonable(choice)
            if self.valid(config):
                return config
        return self.default_config()

    def default_config(self) -> dict:
        """The rules' defaults (middling tilings, parallel, no unrolling); pins kept."""
        return {k: self.pinned.get(k, v) for k, v in self._defaults.items()}

    def _schedule(self, config: dict) -> Schedule:
        return apply_rules(self.func, config, self.target_info)[0]

    # --- traces ------------------------------------------------------------------------

    def config_of(self, trace: Trace) -> dict:
        """The configuration a candidate's trace records: its sampling decisions, in order."""
        decisions = [step.attrs["decision"] for step in trace if step.primitive in SAMPLING]
        if len(decisions) != len(self._domains):
            raise ValueError(f"the trace has {len(decisions)} sampling decisions, the space "
                             f"{len(self._domains)} knobs: not a trace of this space")
        return dict(zip(self._domains, decisions, strict=True))

    def replay(self, trace: Trace) -> Schedule:
        """Re-run the rules with the decisions recorded in ``trace``."""
        return self._schedule(self.config_of(trace))

    def mutate(self, trace: Trace, knob: str, value) -> Schedule:
        """The candidate whose decision for ``knob`` is ``value``, the others as in ``trace``.

        The sampling step of ``knob`` is changed in the trace (``with_decision``) and the
        trace replayed through the rules.
        """
        if knob not in self._domains:
            raise KeyError(f"{self.name} has no knob {knob!r}; knobs: {', '.join(self._domains)}")
        steps = [i for i, step in enumerate(trace) if step.primitive in SAMPLING]
        step = steps[list(self._domains).index(knob)]
        return self.replay(with_decision(trace, step, value))
