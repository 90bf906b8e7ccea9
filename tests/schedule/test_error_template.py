"""The ScheduleError template (TVM's error.h style): declared subclasses, the legacy
constructor still working, and errors surviving pickling (tuning workers send them back)."""

import pickle

import pytest

from workbench.schedule import NoConsumersError, RegionNotCoveredError, ScheduleError


class _Declared(ScheduleError):
    fields = ("block", "loop")
    message = "block {block!r} cannot go under {loop!r}"
    why = "{primitive} needs {reason}"
    suggestion = "try {loop!r}'s parent"

    @property
    def reason(self) -> str:
        return "a consumer loop"


class _Legacy(ScheduleError):
    def __init__(self, primitive: str, name: str):
        super().__init__(primitive, name, f"legacy {name}", detail="old style")


def test_declared_error_fills_its_templates():
    err = _Declared("compute_at", "B", "i", func=None, node=None)
    assert (err.primitive, err.name, err.block, err.loop) == ("compute_at", "B", "B", "i")
    assert err.message == "block 'B' cannot go under 'i'"
    assert err.detail == "compute_at needs a consumer loop"
    assert err.suggestion == "try 'i''s parent"
    assert str(err).splitlines()[:3] == [
        "compute_at: block 'B' cannot go under 'i'",
        "  why: compute_at needs a consumer loop",
        "  suggestion: try 'i''s parent",
    ]
    assert type(err).message == "block {block!r} cannot go under {loop!r}"  # the template


def test_declared_error_checks_its_arguments():
    with pytest.raises(TypeError, match="missing loop"):
        _Declared("compute_at", "B")
    with pytest.raises(TypeError, match="unexpected"):
        _Declared("compute_at", "B", "i", colour="red")


def test_legacy_constructor_still_works():
    err = _Legacy("split", "i")
    assert (err.name, err.message, err.detail, err.suggestion) == ("i", "legacy i", "old style", "")


def test_template_errors_pickle():
    for err in (
        NoConsumersError("compute_at", "B", None, None),
        RegionNotCoveredError("reverse_compute_inline", "C", "", "a reason", None, None),
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err)
        assert (back.message, back.detail, back.suggestion) == (
            err.message,
            err.detail,
            err.suggestion,
        )
    assert NoConsumersError("compute_at", "B", None, None).message == "block 'B' has no consumers"
    assert RegionNotCoveredError("x", "C", "", "r", None, None).message.startswith("here,")


def test_every_schedule_error_is_declared_with_the_template():
    """Issue 7: the schedule package's and the CUDA verifier's error classes all use the
    template (no hand-written ``__init__`` beyond the base class and ``NothingToUndoError``'s
    fixed primitive)."""
    import workbench.backends.cuda.cuda_verify as cuda_verify
    import workbench.schedule as schedule
    from workbench.schedule.errors import NothingToUndoError, _template_init

    hand_written = []
    classes = [(name, getattr(module, name)) for module in (schedule, cuda_verify)
               for name in dir(module)]
    assert any(name == "ScopeAcrossKernelsError" for name, _ in classes)
    for name, cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, ScheduleError)):
            continue
        if cls in (ScheduleError, NothingToUndoError):
            continue
        if cls.__init__ is not _template_init and cls.fields is not None:
            hand_written.append(name)
        elif cls.fields is None and cls.__init__ is not ScheduleError.__init__:
            hand_written.append(name)
    assert hand_written == []


def test_named_fields_keep_names_and_mark_the_node():
    from schedule_examples import matmul

    from workbench.schedule import BufferIndexError, NotAConsumerError
    from workbench.schedule.tree import find_block

    block, _ = find_block(matmul, "C", "test")
    a = matmul.params[0]
    err = NotAConsumerError("cache_read", block, a, matmul)
    assert (err.name, err.block, err.buffer) == ("C", "C", "A")
    assert err.node is block and err.ir["buffer"] is a
    assert err.message == "block 'C' does not read 'A'"
    back = pickle.loads(pickle.dumps(err))
    assert (back.block, back.buffer, back.message) == ("C", "A", err.message)
    err = BufferIndexError("cache_read", block, "read", 7, matmul)
    assert err.buffers == [r.buffer.name for r in block.reads]
    assert err.suggestion == f"pass an index from 0 to {len(block.reads) - 1}"
