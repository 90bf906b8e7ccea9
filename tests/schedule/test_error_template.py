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
