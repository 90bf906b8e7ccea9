"""``transform_layout(..., unset_padding=True)``: a larger layout for a buffer the function
allocates, the padding left unwritten (every access comes from the old shape, so nothing
reads it): the per-thread register stage of the cuda row kernels."""

import pytest
from schedule_checks import raises_unchanged
from schedule_examples import matmul
from test_memory import TARGETS, assert_same

from workbench.schedule import InvalidArgumentError, PaddingRequiredError, Schedule, Trace


def _packed(unset: bool = True) -> Schedule:
    sch = Schedule(matmul)
    b_global = sch.cache_read(sch.get_block("C"), 2, "global")
    sch.transform_layout(b_global, ("write", 0), lambda k, j: (k, j // 5, j % 5),
                         unset_padding=unset)
    return sch


@pytest.mark.parametrize("target", TARGETS)
def test_padded_cache_without_a_fill_computes_the_reference(target):
    sch = _packed()
    (cache,) = sch.mod.root_block.alloc_buffers
    assert cache.shape == (16, 4, 5)  # 16 columns padded to 20
    assert "_pad" not in sch.mod.script()  # no fill block
    assert_same(sch, target)


def test_trace_records_the_flag_and_replays():
    sch = _packed()
    assert str(sch.trace).splitlines()[-1] == (
        'sch.transform_layout(b1, ["write", 0], "lambda k, j: (k, j // 5, j % 5)", '
        "unset_padding=True)"
    )
    again = Trace.from_json(sch.trace.to_json()).apply(matmul)
    assert again.mod == sch.mod and again.trace == sch.trace


def test_padding_still_needs_a_value_or_the_flag():
    sch = Schedule(matmul)
    b_global = sch.cache_read(sch.get_block("C"), 2, "global")
    raises_unchanged(sch, PaddingRequiredError, sch.transform_layout, b_global, ("write", 0),
                     lambda k, j: (k, j // 5, j % 5))


def test_refused_on_a_parameter_with_a_pad_value_or_not_a_bool():
    sch = Schedule(matmul)
    c = sch.get_block("C")
    err = raises_unchanged(sch, InvalidArgumentError, sch.transform_layout, c, "B",
                           lambda k, j: (k, j // 5, j % 5), unset_padding=True)
    assert "parameter 'B'" in str(err)
    b_global = sch.cache_read(c, 2, "global")
    for options in ({"pad_value": 0.0, "unset_padding": True}, {"unset_padding": 1}):
        raises_unchanged(sch, InvalidArgumentError, sch.transform_layout, b_global,
                         ("write", 0), lambda k, j: (k, j // 5, j % 5), **options)
