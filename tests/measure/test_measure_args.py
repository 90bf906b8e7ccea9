"""``wb.measure`` names an option of the wrong type (a budget as a string) before timing."""

import numpy as np
import pytest

import workbench as wb


def _kernel(out):
    out[0] += 1


@pytest.mark.parametrize("option, value, error, match", [
    ("budget_s", "1s", TypeError, r"measure: budget_s must be seconds as a number .* got str"),
    ("budget_s", float("inf"), ValueError, r"budget_s must be finite"),
    ("min_repeats", 2.5, TypeError, r"min_repeats must be an integer, got float"),
    ("warmup", None, TypeError, r"warmup must be an integer, got NoneType"),
    ("max_repeats", True, TypeError, r"max_repeats must be an integer, got bool"),
])
def test_measure_refuses_an_option_of_the_wrong_type_before_running(option, value, error,
                                                                    match):
    out = np.zeros(1)
    with pytest.raises(error, match=match):
        wb.measure(_kernel, out, **{option: value})
    assert out[0] == 0  # nothing ran
