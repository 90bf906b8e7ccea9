"""The operator library: every op against its numpy reference (numpy and cpu targets, with
varied options), structure, argument errors, and the printer round trip."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench import ops
from workbench.ir.analysis import find_blocks

SPECS = {spec.name: spec for spec in ops.LIBRARY}


def _run(func, inputs, **options):
    out = np.zeros(func.params[-1].shape, func.params[-1].dtype)
    wb.build(func, target="numpy", **options)(*inputs, out)
    return out


# --------------------------------------------------------------------------- against references


@pytest.mark.parametrize("name", list(SPECS))
def test_op_matches_reference(name, rng):
    spec = SPECS[name]
    func = spec.func()
    inputs = spec.random_inputs(rng, func)
    expected = spec.run_reference(*inputs)
    assert expected.shape == func.params[-1].shape
    assert np.abs(expected).max() > 0  # random non-zero data give a non-trivial answer
    np.testing.assert_allclose(_run(func, inputs), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "max_pool2d", "softmax", "attention",
                                  "reduce_mean"])
def test_op_matches_reference_with_plain_loops(name, rng):
    """The numpy target's loop executor (no whole-array evaluation) agrees too."""
    spec = SPECS[name]
    func = spec.func()
    inputs = spec.random_inputs(rng, func)
    np.testing.assert_allclose(_run(func, inputs, whole_array=False), spec.run_reference(*inputs),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SPECS))
def test_op_on_cpu_target_matches_reference(name, rng):
    """The Numba CPU backend runs every library operator (about 0.1-1 s of compile each)."""
    spec = SPECS[name]
    func = spec.func()
    inputs = spec.random_inputs(rng, func)
    out = np.zeros(func.params[-1].shape, func.params[-1].dtype)
    wb.build(func, target="cpu")(*inputs, out)
    np.testing.assert_allclose(out, spec.run_reference(*inputs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["matmul", "layernorm", "conv2d_nhwc", "gelu"])
def test_op_in_float64(name, rng):
    spec = SPECS[name]
    func = spec.func(dtype="float64")
    assert {buf.dtype for buf in func.params} == {"float64"}
    inputs = spec.random_inputs(rng, func)
    np.testing.assert_allclose(_run(func, inputs), spec.run_reference(*inputs), rtol=1e-12,
                               atol=1e-12)


conv_options = st.fixed_dictionaries({
    "H": st.integers(3, 7), "W": st.integers(3, 7), "R": st.integers(1, 3),
    "S": st.integers(1, 3), "stride": st.integers(1, 3), "padding": st.integers(0, 2),
    "dilation": st.integers(1, 2),
})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(options=conv_options, layout=st.sampled_from(["conv2d_nchw", "conv2d_nhwc",
                                                      "depthwise_conv2d_nchw"]))
def test_conv_options_against_reference(options, layout):
    reach = lambda size, k: size + 2 * options["padding"] - options["dilation"] * (k - 1)  # noqa: E731
    if reach(options["H"], options["R"]) < 1 or reach(options["W"], options["S"]) < 1:
        with pytest.raises(ValueError, match="does not fit"):
            SPECS[layout].factory(**options)
        return
    spec = SPECS[layout]
    func = spec.factory(**{**spec.shapes, **options})
    inputs = spec.random_inputs(np.random.default_rng(1), func)
    reference = spec.reference(*inputs, stride=options["stride"], padding=options["padding"],
                               dilation=options["dilation"])
    np.testing.assert_allclose(_run(func, inputs), reference, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 1, 1), (3, 2, 1), (2, 1, 1)])
@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
def test_pool_options_against_reference(name, kernel, stride, padding, rng):
    spec = SPECS[name]
    func = spec.factory(1, 2, 6, 5, kernel=kernel, stride=stride, padding=padding)
    inputs = spec.random_inputs(rng, func)
    expected = spec.reference(*inputs, kernel=kernel, stride=stride, padding=padding)
    np.testing.assert_allclose(_run(func, inputs), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reductions_along_both_axes(name, axis, rng):
    spec = SPECS[name]
    func = spec.factory(5, 7, axis=axis)
    assert func.params[-1].shape == ((5,) if axis == 1 else (7,))
    inputs = spec.random_inputs(rng, func)
    np.testing.assert_allclose(_run(func, inputs), spec.reference(*inputs, axis=axis), rtol=1e-5)


def test_attention_with_explicit_scale(rng):
    func = ops.attention(2, 1, 5, 3, scale=0.25)
    q, k, v = (rng.uniform(-1, 1, (2, 1, 5, 3)).astype("float32") for _ in range(3))
    np.testing.assert_allclose(_run(func, [q, k, v]), ops.reference.attention(q, k, v, scale=0.25),
                               rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- structure and errors


@pytest.mark.parametrize("name, blocks", [
    ("softmax", ["T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm"]),
    ("layernorm", ["mean_sum", "var_sum", "T_layer_norm"]),
    ("rmsnorm", ["sq_sum", "T_rms_norm"]),
    ("matmul_bias_relu", ["matmul", "T_add", "T_relu"]),
    ("conv2d_nchw", ["pad_temp", "conv2d_nchw"]),
    ("avg_pool2d", ["pad_temp", "pool_sum", "pool_avg"]),
    ("attention", ["scores", "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm",
                   "attention"]),
])
def test_block_structure(name, blocks):
    assert [b.name for b in find_blocks(SPECS[name].func())] == blocks


def test_intermediates_live_in_the_root_block():
    func = ops.softmax(4, 8)
    assert [buf.name for buf in func.root_block.alloc_buffers] == ["T_softmax_maxelem",
                                                                   "T_softmax_expsum"]
    assert [buf.name for buf in func.params] == ["A", "T_softmax_norm"]


def test_padding_zero_leaves_a_plain_copy():
    func = ops.conv2d_nchw(1, 1, 4, 4, 1, 3, 3, padding=0)
    assert "if_then_else" not in func.script()
    assert "vy + vry" in func.script()  # stride and dilation 1 vanish from the indices


@pytest.mark.parametrize("call, message", [
    (lambda: ops.conv2d_nchw(stride=0), "conv2d needs stride >= 1"),
    (lambda: ops.conv2d_nhwc(H=2, W=2, R=5, S=5, padding=0), "does not fit"),
    (lambda: ops.max_pool2d(kernel=2, padding=2), "more than half the kernel"),
    (lambda: ops.reduce_sum(axis=2), "axis must be 0 or 1"),
])
def test_bad_options_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_get_unknown_op_lists_the_library():
    with pytest.raises(KeyError, match="no operator named 'matmull'"):
        ops.get("matmull")
    assert ops.get("matmul").factory is ops.matmul


def test_every_spec_has_a_reference_and_builds_its_func():
    for spec in ops.LIBRARY:
        assert callable(spec.reference), spec.name
        assert spec.func().name == spec.name


# --------------------------------------------------------------------------- printer round trip


def _shape_overrides(spec, data):
    """Small random values for the integer shape arguments of a spec (options kept)."""
    keep = {"stride", "padding", "dilation", "kernel", "axis", "eps", "R", "S"}
    overrides = {}
    for key, value in spec.shapes.items():
        if key in keep or not isinstance(value, int):
            continue
        low = 1 if key in ("N", "batch", "heads") else 4
        overrides[key] = data.draw(st.integers(low, value + 2), label=key)
    return overrides


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(list(SPECS)), dtype=st.sampled_from(["float32", "float64"]),
       data=st.data())
def test_library_round_trips_through_the_printer(name, dtype, data):
    spec = SPECS[name]
    func = spec.func(dtype=dtype, **_shape_overrides(spec, data))
    text = func.script()
    assert wb.from_source(text) == func, text


@pytest.mark.parametrize("module", ["workbench.ops", "workbench.ops.linalg", "workbench.ops.conv",
                                    "workbench.ops.pool", "workbench.ops.nn",
                                    "workbench.ops.elementwise", "workbench.ops.reduce",
                                    "workbench.ops.attention", "workbench.ops.reference"])
def test_docstring_examples(module):
    import doctest
    import importlib

    # import_module gives the module even where the package exports a function of the same
    # name (workbench.ops.attention)
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
    assert result.attempted > 0
