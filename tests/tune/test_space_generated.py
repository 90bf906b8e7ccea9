"""The rule-generated space: knobs are sampling decisions; every candidate computes the
reference; mutating one decision and replaying changes only what it decides."""

from __future__ import annotations

import random

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.tune.runner import random_arguments
from workbench.tune.space_generated import GeneratedSpace
from workbench.tune.space_template import TemplateSpace, perfect_tiles
from workbench.tune.templates import matmul_template


def _reference(func, seed=7):
    args = random_arguments(func, seed)
    expected = [a.copy() for a in args]
    wb.build(func, target="numpy")(*expected)
    return args, expected


def test_matmul_knobs_are_the_tiling_and_unroll_decisions():
    space = GeneratedSpace(ops.matmul(16, 32, 8))
    assert space.knobs == ["tile:C:i", "tile:C:j", "tile:C:k", "write_cache:C", "pack:C",
                           "parallel:C", "unroll:C"]
    assert space.domains["tile:C:i"] == perfect_tiles(16, 4, 64)
    assert space.domains["tile:C:k"] == perfect_tiles(8, 2)
    assert space.domains["unroll:C"] == [0, 1] and space.domains["parallel:C"] == [0, 1]
    config = {"tile:C:i": [2, 2, 1, 4], "tile:C:j": [1, 2, 1, 16], "tile:C:k": [2, 4],
              "write_cache:C": 0, "pack:C": 0, "parallel:C": 0, "unroll:C": 1}
    text = str(space.schedule(config).trace)
    assert "sch.split(l2, factors=[2, 2, 1, 4])" in text.replace("l3", "l2") or \
        "factors=[2, 2, 1, 4]" in text
    assert "sch.parallel(" in text and "sch.vectorize(" in text and "sch.unroll(" in text
    serial = str(space.schedule(dict(config, **{"parallel:C": 1})).trace)
    assert "sch.parallel(" not in serial and "sch.vectorize(" in serial


def test_elementwise_producers_are_inlined():
    space = GeneratedSpace(ops.add_mul_gelu(8, 16))
    sch = space.schedule(space.default_config())
    names = [b.name for b in wb.analysis.find_blocks(sch.mod) if b.name != "root"]
    assert names == ["T_gelu"]
    assert space.knobs == ["parallel:T_gelu", "tile:T_gelu:j2"]


@pytest.mark.parametrize("make", [
    lambda: ops.matmul(16, 8, 8),
    lambda: ops.softmax(4, 16),
    lambda: ops.add_mul_gelu(4, 8),
    lambda: ops.conv2d_nchw(1, 2, 6, 6, 4, 3, 3),
])
def test_random_candidates_compute_the_reference(make):
    func = make()
    space = GeneratedSpace(func)
    args, expected = _reference(func)
    rng = random.Random(5)
    for _ in range(3):
        sch = space.schedule(space.random_config(rng))
        got = [a.copy() for a in args]
        wb.build(sch, target="numpy")(*got)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_mutating_one_decision_and_replaying():
    func = ops.matmul(16, 16, 16)
    space = GeneratedSpace(func)
    base = space.random_config(random.Random(1))
    mutated = dict(base, **{"tile:C:k": [1, 16] if base["tile:C:k"] != [1, 16] else [16, 1]})
    a, b = space.schedule(base).trace, space.schedule(mutated).trace
    changed = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    assert len(a) == len(b) and changed  # same steps, different decisions
    assert all(a[i].primitive in ("split", "sample_perfect_tile") for i in changed)
    # the decisions are in the trace when the sampling instructions exist
    if hasattr(wb.Schedule(func), "sample_perfect_tile"):
        decisions = [s.attrs["decision"] for s in b if s.primitive == "sample_perfect_tile"]
        assert mutated["tile:C:k"] in decisions
        replayed = wb.Trace.from_json(b.to_json()).apply(func)
        assert replayed.mod == space.schedule(mutated).mod


def test_generated_space_tunes_matmul(tmp_path):
    # the numpy target keeps this fast; tests/tune/test_runner.py tunes on "cpu"
    func = ops.matmul(16, 16, 16)
    result = wb.tune(func, target="numpy", trials=3, db=tmp_path / "r.jsonl", space="generated",
                     strategy="random", seed=2, progress=False, repeats=1)
    assert result.best is not None and result.best.space == "generated"
    a, b, c = random_arguments(func, seed=9)
    wb.build(result.apply(), target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4)


def test_matmul_template_space():
    space = TemplateSpace(matmul_template, ops.matmul(16, 16, 16))
    assert space.knobs == ["tile_i", "tile_j", "tile_k", "order", "unroll"]
    assert space.size() == len(perfect_tiles(16, 2, 16)) * 5 * 5 * 3 * 2
    func = space.func
    args, expected = _reference(func)
    for config in [space.default_config(), space.random_config(random.Random(3))]:
        got = [a.copy() for a in args]
        wb.build(space.schedule(config), target="numpy")(*got)
        np.testing.assert_allclose(got[2], expected[2], rtol=1e-5, atol=1e-5)
