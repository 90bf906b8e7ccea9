"""Traces: printed Python, JSON round trip, validation on load, replay."""

import json

import pytest
from schedule_examples import add_relu, matmul, scale, scale2d

from workbench.schedule import BlockNotFoundError, Instruction, Schedule, Trace, TraceError


def tiled_matmul() -> Schedule:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.unroll(ii)
    sch.vectorize(ji)
    sch.annotate(block, "note", "hot")
    fused = sch.fuse(io, jo)
    sch.annotate(fused, "pragma_auto_unroll_max_step", 16)
    return sch


TILED_TRACE = """\
b0 = sch.get_block("C")
l1, l2, l3 = sch.get_loops(b0)
l4, l5 = sch.split(l1, factors=[None, 4])
l6, l7 = sch.split(l2, factors=[None, 8])
sch.reorder(l4, l6, l3, l5, l7)
sch.parallel(l4)
sch.unroll(l5)
sch.vectorize(l7)
sch.annotate(b0, key="note", value="hot")
l8 = sch.fuse(l4, l6)
sch.annotate(l8, key="pragma_auto_unroll_max_step", value=16)"""


def test_trace_prints_as_python():
    sch = tiled_matmul()
    assert str(sch.trace) == TILED_TRACE
    assert repr(sch.trace) == "Trace(11 steps)"
    assert "sch.get_block(&quot;C&quot;)" in sch.trace._repr_html_()


def test_printed_trace_runs_as_python():
    sch = Schedule(matmul)
    exec(TILED_TRACE, {"sch": sch})
    assert sch.mod == tiled_matmul().mod


def test_queries_print_lists():
    sch = Schedule(add_relu)
    root = sch.get_block("root")
    sch.get_child_blocks(root)
    sch.get_producers(sch.get_block("C"))
    sch.get_consumers(sch.get_block("C"))
    assert str(sch.trace) == "\n".join(
        [
            'b0 = sch.get_block("root")',
            "b1, b2 = sch.get_child_blocks(b0)",
            'b3 = sch.get_block("C")',
            "b4, = sch.get_producers(b3)",
            'b5 = sch.get_block("C")',
            "_ = sch.get_consumers(b5)",
        ]
    )


def test_json_round_trip_and_replay():
    sch = tiled_matmul()
    text = sch.trace.to_json()
    data = json.loads(text)
    assert data["format"] == "workbench.trace" and data["version"] == 1
    assert data["steps"][2] == {
        "primitive": "split",
        "inputs": ["l1"],
        "attrs": {"factors": [None, 4]},
        "outputs": ["l4", "l5"],
    }
    loaded = Trace.from_json(text)
    assert loaded == sch.trace
    replayed = loaded.apply(matmul)
    assert replayed.mod == sch.mod
    assert replayed.trace == sch.trace
    assert replayed.func_before is matmul


def test_replay_after_undo_keeps_handle_ids():
    sch = Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 2])
    sch.undo()
    a, b = sch.split(j, factors=[None, 2])  # ids 5, 6: 3, 4 went with the undo
    assert sch.trace.steps[-1].outputs == ("l5", "l6")
    replayed = Trace.from_json(sch.trace.to_json()).apply(scale2d)
    assert replayed.mod == sch.mod and replayed.trace == sch.trace
    assert str(replayed.trace).splitlines()[-1] == "l3, l4 = sch.split(l2, factors=[None, 2])"
    # the replayed schedule can go on from there
    i, j_0, j_1 = replayed.get_loops(replayed.get_block("B"))
    assert replayed.name(replayed.fuse(j_0, j_1)) == "j_0_j_1_fused"


def test_empty_trace():
    trace = Trace.from_json(Trace().to_json())
    assert len(trace) == 0 and repr(trace) == "Trace(empty)" and str(trace) == ""
    assert trace.apply(scale).mod == scale


def test_trace_slicing_and_indexing():
    trace = tiled_matmul().trace
    assert isinstance(trace[0], Instruction) and trace[0].primitive == "get_block"
    assert trace[:3].apply(matmul).mod == Trace(trace.steps[:3]).apply(matmul).mod


# --- validation on load ----------------------------------------------------------------


def _steps(*steps) -> str:
    return json.dumps({"format": "workbench.trace", "version": 1, "steps": list(steps)})


GET_C = {"primitive": "get_block", "inputs": [], "attrs": {"name": "C"}, "outputs": ["b0"]}
LOOPS = {"primitive": "get_loops", "inputs": ["b0"], "attrs": {}, "outputs": ["l1", "l2", "l3"]}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "the trace is not valid JSON"),
        ("[]", 'the trace must be a JSON object with a "steps" list'),
        (json.dumps({"format": "other", "steps": []}), "unknown trace format 'other'"),
        (json.dumps({"version": 9, "steps": []}), "unsupported trace version 9"),
        (
            _steps(GET_C, {"primitive": "tile", "inputs": [], "attrs": {}, "outputs": []}),
            "step 1: unknown primitive 'tile'",
        ),
        (
            _steps(GET_C, {"primitive": "get_loops", "inputs": ["b7"], "attrs": {}, "outputs": []}),
            "step 1: get_loops: input 'b7' is not produced by any earlier step",
        ),
        (
            _steps(GET_C, {"primitive": "get_loops", "inputs": ["x"], "attrs": {}, "outputs": []}),
            "step 1: get_loops: input 'x' is not a handle reference like 'l3'",
        ),
        (
            _steps(
                GET_C,
                LOOPS,
                {
                    "primitive": "split",
                    "inputs": ["b0"],
                    "attrs": {"factors": [None, 4]},
                    "outputs": ["l4", "l5"],
                },
            ),
            "step 2: split: input 'b0' must be a loop, it is a block",
        ),
        (
            _steps(
                GET_C,
                LOOPS,
                {
                    "primitive": "split",
                    "inputs": ["l1"],
                    "attrs": {"factors": "4"},
                    "outputs": ["l4", "l5"],
                },
            ),
            "step 2: split: attribute 'factors' must be a list of at least two ints or None, got '4'",
        ),
        (
            _steps(
                GET_C,
                LOOPS,
                {"primitive": "split", "inputs": ["l1"], "attrs": {}, "outputs": ["l4", "l5"]},
            ),
            "step 2: split: missing attribute 'factors'",
        ),
        (
            _steps(
                GET_C,
                LOOPS,
                {"primitive": "parallel", "inputs": ["l1"], "attrs": {"how": 1}, "outputs": []},
            ),
            "step 2: parallel: unknown attribute 'how'",
        ),
        (
            _steps(
                GET_C,
                LOOPS,
                {"primitive": "parallel", "inputs": ["l1", "l2"], "attrs": {}, "outputs": []},
            ),
            "step 2: parallel takes 1 inputs, got 2",
        ),
        (
            _steps(
                GET_C,
                LOOPS,
                {"primitive": "fuse", "inputs": ["l1", "l2"], "attrs": {}, "outputs": ["l1"]},
            ),
            "step 2: fuse: output 'l1' is already defined by an earlier step",
        ),
        (
            _steps(
                GET_C, {"primitive": "get_loops", "inputs": ["b0"], "attrs": {}, "outputs": ["b1"]}
            ),
            "step 1: get_loops: output 'b1' must be a loop reference",
        ),
        (
            _steps(
                {"primitive": "get_block", "inputs": [], "attrs": {"name": 3}, "outputs": ["b0"]}
            ),
            "step 0: get_block: attribute 'name' must be a string, got 3",
        ),
        (_steps("get_block"), "step 0: a step must be a JSON object"),
    ],
)
def test_from_json_rejects_bad_traces(text, message):
    with pytest.raises(TraceError) as info:
        Trace.from_json(text)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_trace_error_names_the_step():
    with pytest.raises(TraceError) as info:
        Trace.from_json(
            _steps(GET_C, {"primitive": "tile", "inputs": [], "attrs": {}, "outputs": []})
        )
    assert info.value.step == 1


def test_replay_on_a_function_that_does_not_fit():
    trace = tiled_matmul().trace
    with pytest.raises(BlockNotFoundError) as info:
        trace.apply(scale2d)
    assert info.value.__notes__ == ['while replaying step 0: b0 = sch.get_block("C")']


def test_replay_with_a_different_number_of_loops():
    sch = Schedule(scale2d)
    sch.get_loops(sch.get_block("B"))
    with pytest.raises(TraceError) as info:
        sch.trace.apply(scale)
    assert str(info.value) == "step 1: get_loops made 1 handles here, the trace expects 2 (l1, l2)"
