"""The analytic prior: a CPU latency estimate from a candidate's lowered IR, before any
measurement exists (Ansor and MetaSchedule start from random candidates; this starts
from the ones a roofline says are worth measuring).

``estimate_seconds(facts, lowered)`` reads ``features.nest_facts`` (every loop nest of the
lowered function: a matmul's, its packing copy's, a softmax's three passes) and a
``CpuModel`` of the host, and adds up per nest the largest of three times, divided among
the threads of that nest's parallel loop:

* **compute**: the FLOPs at the peak of ``fma_units`` vector FMAs per cycle, slowed by
  - the vector width: a scalar innermost loop runs at ``1 / lanes`` of the peak, a
    vectorized one at ``width / (lanes * ceil(width / lanes))`` (a partial last vector);
  - the register tile of a reduction (``features.register_tile``): with fewer independent
    vector accumulators than ``fma_units * fma_latency`` the FMAs wait on each other; with
    more than the vector registers they spill, down to a tile kept in memory (L1: a load
    and a store per FMA, ``MEMORY_ACCUMULATORS`` of the peak), which is also where a tile
    spanned by more than one rolled loop besides the vectorized one stays;
    a short innermost reduction loop reloads and stores the tile every few steps; and each
    step's operand loads (a vector per ``lanes`` elements along the vectorized loop, one
    broadcast per other element: ``features.operand_loads``) compete for as many load
    ports as there are FMA units (a 1 x 16 tile loads more than it computes);
* **memory**: the bytes moved into L1, L2 and the last level (``features.traffic``: the
  footprint of the outermost loop body that fits, line-granular, with set conflicts of a
  strided operand in L1) over each level's bandwidth;
* **issue** (a nest that does not reduce): every load and store of the innermost body, one
  vector (or scalar) access per cycle per port, two ports (what a copy nest, packing a
  panel, costs).

The parallel loop's extent ``p`` gives each of ``cores`` threads ``ceil(p / cores) / p`` of
the work (no parallel loop: one thread does all of it); each launch of a parallel loop
nested under serial loops costs a fixed overhead.

It is an estimate for ranking, not a prediction of the latency: ``rank`` orders candidates
by it, the strategies measure the best first, and the learned model
(``workbench.tune.cost_model``) gets it as a feature (``log2_prior``) and learns what it
misses from the measurements.

Example
-------
>>> space = GeneratedSpace(ops.matmul(256, 256, 256))                     # doctest: +SKIP
>>> configs = [space.random_config(rng) for _ in range(64)]               # doctest: +SKIP
>>> best_first = rank(space, configs)                                     # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math

MEMORY_ACCUMULATORS = 0.5  # share of the peak with the tile in memory (L1): a store per FMA,
# one store port for two FMA units


@dataclasses.dataclass(frozen=True)
class CpuModel:
    """The few numbers of a CPU core the estimate needs (per core; bandwidths in bytes
    per cycle into L1 from L2, into L2 from the last level, from memory)."""

    lanes: int = 8
    cores: int = 2
    vector_registers: int = 16
    fma_units: int = 2
    fma_latency: int = 4
    caches: tuple[int, int, int] = (32 << 10, 1 << 20, 32 << 20)
    bandwidth: tuple[float, float, float] = (32.0, 12.0, 4.0)
    ghz: float = 3.0
    launch_cycles: float = 5000.0

    @classmethod
    def host(cls, dtype: str = "float32") -> CpuModel:
        """The model of this machine: vector lanes as the CPU backend vectorizes, the
        cores this process may run on, 32 vector registers with AVX-512 (16 otherwise)."""
        return _host_model(dtype)


def _host_model(dtype: str) -> CpuModel:
    from workbench.backends import cpu_facts

    return CpuModel(lanes=cpu_facts.vector_lanes(dtype), cores=cpu_facts.host_cores(),
                    vector_registers=32 if "avx512f" in cpu_facts.host_features() else 16,
                    caches=cpu_facts.cache_sizes())


def compute_efficiency(facts: dict, model: CpuModel) -> float:
    """The share of the FMA peak the innermost loop can reach (see the module docstring)."""
    lanes, width = model.lanes, int(facts["vector_width"])
    if width and facts.get("inner_vectorized", 1.0):
        vector = width / (lanes * math.ceil(width / lanes))
    else:
        vector = 1.0 / lanes
    tile = facts["register_tile"]
    if tile <= 0:  # not a reduction nest: streaming
        return vector
    accumulators = math.ceil(tile / lanes) if width else tile
    in_flight = min(1.0, accumulators / (model.fma_units * model.fma_latency))
    free = model.vector_registers
    spill = 1.0 if accumulators <= free else max(MEMORY_ACCUMULATORS,
                                                   (free / accumulators) ** 1.5)
    if not facts.get("tile_in_registers", 1.0):
        spill = min(spill, MEMORY_ACCUMULATORS)
    steps = facts["reduce_inner"]
    reload = steps / (steps + 2.0)
    loads = facts.get("load_vector_elements", 0.0) / (lanes if width else 1) + \
        facts.get("load_scalar_elements", 0.0)
    ports = min(1.0, accumulators / loads) if loads else 1.0  # as many load as FMA units
    return vector * in_flight * spill * reload * ports


def nest_cycles(facts: dict, model: CpuModel) -> float:
    """Cycles of one loop nest (``features.chain_facts``) on ``model``."""
    peak = 2.0 * model.fma_units * model.lanes  # FLOPs per cycle per core (FMA = 2)
    compute = facts["flops"] / (peak * compute_efficiency(facts, model))
    memory = max(facts["traffic_l1"] / model.bandwidth[0],
                 facts["traffic_l2"] / model.bandwidth[1],
                 facts["traffic_llc"] / model.bandwidth[2])
    per_op = model.lanes if facts["inner_vectorized"] and facts["vector_width"] else 1
    issue = 0.0  # a reduction's loads are in the compute term (register tile, ports)
    if facts["register_tile"] <= 0:
        issue = facts.get("iterations", 0.0) * facts.get("accesses", 0.0) / per_op / 2.0
    p = max(1.0, facts["parallel_extent"])
    share = math.ceil(p / model.cores) / p if facts["parallel_extent"] > 1 else 1.0
    overhead = facts.get("parallel_launches", 0.0) * model.launch_cycles
    return max(compute, memory, issue) * share + overhead


def estimate_cycles(facts: dict, model: CpuModel) -> float:
    """Cycles of one call on ``model``: the sum over the loop nests (``facts["nests"]``;
    ``facts`` alone when it describes one nest)."""
    return sum(nest_cycles(nest, model) for nest in facts.get("nests", [facts]))


def estimate_seconds(facts: dict, lowered=None, model: CpuModel | None = None) -> float:
    """Estimated seconds of one call (``model`` default: the host, for the dtype of
    ``lowered``'s last parameter)."""
    if model is None:
        dtype = str(lowered.params[-1].dtype) if lowered is not None and lowered.params \
            else "float32"
        model = CpuModel.host(dtype)
    return estimate_cycles(facts, model) / (model.ghz * 1e9)


def prior_of(space, config: dict) -> float:
    """Estimated seconds of ``config``'s candidate (infinite when it does not schedule)."""
    from workbench.backends import lower
    from workbench.tune.features import nest_facts

    try:
        lowered = lower(space.schedule(config).mod)
    except Exception:  # noqa: BLE001 - an illegal config ranks last
        return math.inf
    return estimate_seconds(nest_facts(lowered), lowered)


def rank(space, configs: list[dict], scores: list[float] | None = None) -> list[dict]:
    """``configs`` ordered by the prior, fastest first (``scores``: precomputed)."""
    if scores is None:
        scores = [prior_of(space, c) for c in configs]
    order = sorted(range(len(configs)), key=lambda i: scores[i])
    return [configs[i] for i in order]
