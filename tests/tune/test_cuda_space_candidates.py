"""Every candidate of the generated cuda space is a bound, buildable schedule (issue 20,
item 4): sampled candidates of several operators, at shapes that are and are not
multiples of the tiles, pass the CUDA verifier (every top-level statement bound, threads
and shared memory within the block's limits) without compiling; the constraints between
knobs are what the strategies filter on; the tuner's workers warm up on a bound schedule
(the unscheduled function does not build on cuda, which failed every measurement)."""

from __future__ import annotations

import random

import pytest

from workbench import ops
from workbench.backends.lower import lower
from workbench.backends.numba_cuda import prepare
from workbench.backends.target import Target
from workbench.tune.space_generated import GeneratedSpace
from workbench.tune.strategies.evolutionary import EvolutionarySearch

pytestmark = pytest.mark.cuda

CASES = [
    ("matmul 2048", lambda: ops.matmul(2048, 2048, 2048), 6),
    ("matmul 1000", lambda: ops.matmul(1000, 1000, 1000), 6),
    ("matmul 511x257x129", lambda: ops.matmul(511, 257, 129), 6),
    ("batch_matmul", lambda: ops.batch_matmul(3, 40, 24, 20), 3),
    ("conv2d", lambda: ops.conv2d_nchw(1, 8, 10, 10, 16, 3), 3),
    ("softmax 1000x768", lambda: ops.softmax(1000, 768), 4),
    ("layernorm 511x768", lambda: ops.layernorm(511, 768), 4),
    ("reduce_sum", lambda: ops.reduce_sum(64, 1000), 3),
    ("add_mul_gelu", lambda: ops.add_mul_gelu(511, 100), 3),
    ("attention", lambda: ops.attention(1, 2, 8, 4), 1),
]


def _verify(space, config) -> None:
    """Schedule, lower, run the cuda passes and the verifier (raises on an unbound
    statement, too many threads, too much shared memory); nothing is compiled."""
    func, _ = prepare(lower(space.schedule(config).mod), Target("cuda"))
    assert func is not None


@pytest.mark.parametrize("name, make, samples", CASES, ids=[c[0] for c in CASES])
def test_every_sampled_candidate_is_bound_and_verifies(name, make, samples):
    space = GeneratedSpace(make(), target="cuda")
    rng = random.Random(20)
    configs = [space.default_config()] + [space.random_config(rng) for _ in range(samples)]
    for config in configs:
        assert space.valid(config), space.violation(config)
        _verify(space, config)


def test_knob_constraints_reject_too_many_threads_and_too_much_shared_memory():
    space = GeneratedSpace(ops.matmul(2048, 2048, 2048), target="cuda")
    config = space.default_config()
    assert space.violation(config) is None
    wide = dict(config, **{"tile:C:i": [8, 128, 2], "tile:C:j": [32, 64, 1]})
    assert "8192 threads per block" in space.violation(wide)
    # a 1024 x 2 block tile with a 16-deep k step: a 64 KiB stage of A
    big = dict(config, **{"tile:C:i": [2, 128, 8], "tile:C:j": [1024, 1, 2],
                          "tile:C:k": [128, 16]})
    assert "bytes of shared stages" in space.violation(big)
    # the same tiling without staging is a candidate
    assert space.valid(dict(big, **{"shared:C": 1}))
    # 512 threads with an 8 x 8 register tile need more registers than an SM holds
    regs = dict(config, **{"tile:C:i": [8, 32, 8], "tile:C:j": [16, 16, 8]})
    assert "registers" in space.violation(regs)


def test_the_strategies_propose_valid_candidates_only():
    space = GeneratedSpace(ops.matmul(2048, 2048, 2048), target="cuda")
    search = EvolutionarySearch(seed=3, population=64)
    search.setup(space, None)
    search.observe([space.default_config()], [1.0])
    proposed = search.propose(16, set())
    assert proposed and all(space.valid(c) for c in proposed)


def test_workers_warm_up_on_a_bound_schedule():
    """The measuring worker's preparation builds the task's warm-up schedule; with none
    it builds the function as it is, which on cuda binds no thread: that must not fail."""
    from workbench.tune.runner import Task, prepare_task

    func = ops.matmul(8, 8, 8)
    assert prepare_task(Task(func, "cuda", key="unscheduled")) == 1
    space = GeneratedSpace(func, target="cuda")
    warm = space.schedule(space.default_config()).trace.to_json()
    assert prepare_task(Task(func, "cuda", key="warm", warm_trace=warm)) == 1
