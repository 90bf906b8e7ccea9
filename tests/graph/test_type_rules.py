"""``graph.ops.TYPE_RULES`` (output types from shapes alone) agree with running the operator."""

import numpy as np
import pytest

from workbench.graph import ops
from workbench.graph.ir import TensorType

CONVS = [  # x shape, w shape, bias, attrs
    ((1, 3, 9, 7), (4, 3, 3, 3), False, {}),
    ((2, 4, 8, 8), (6, 2, 3, 1), True, dict(stride=(2, 1), padding=(1, 0), groups=2)),
    ((1, 6, 11, 10), (6, 1, 3, 3), False, dict(stride=(2, 3), dilation=(2, 1), groups=6)),
    ((1, 2, 5, 5), (3, 2, 5, 5), True, dict(padding=(2, 2))),
    ((1, 2, 4, 4), (3, 2, 1, 1), False, dict(stride=(3, 3))),
]


def evaluated(op, types, attrs):
    arrays = [np.zeros(t.shape, t.dtype) for t in types]
    out = ops.evaluate(op, arrays, attrs)
    return TensorType(tuple(out.shape), str(out.dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x, w, bias, attrs", CONVS)
def test_conv2d_type_rule_matches_running_it(x, w, bias, attrs, dtype):
    types = [TensorType(x, dtype), TensorType(w, dtype)]
    if bias:
        types.append(TensorType((w[0],), dtype))
    ruled = ops.TYPE_RULES["conv2d"](*types, **attrs)
    assert ruled is not None
    assert ruled == evaluated("conv2d", types, attrs) == ops.infer_type("conv2d", types, attrs)


def test_shapes_that_do_not_fit_are_left_to_running_the_operator():
    bad = [TensorType((1, 2, 8, 8)), TensorType((4, 3, 3, 3))]  # 2 channels, weights want 3
    assert ops.TYPE_RULES["conv2d"](*bad) is None
    with pytest.raises(ValueError):
        ops.infer_type("conv2d", bad, {})
