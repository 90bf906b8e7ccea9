"""The explorer's per-target views come from the target registry (issue 18 items 1 and 4):
no widget branches on a target's name, and a kind registered from the tests is explored."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops
from workbench.backends.common.target import (
    Target,
    get_target_kind,
    register_target,
    unregister_target,
)
from workbench.widgets.target_views import cpu_views, cuda_views, generic_views, views_for

WIDGETS = Path(wb.__file__).parent / "widgets"


def test_no_widget_branches_on_a_target_name():
    pattern = re.compile(r"""(==|!=)\s*["'](cpu|cuda|numpy)["']|["'](cpu|cuda)["']\s+(not )?in """)
    hits = [f"{path.name}:{n}: {line.strip()}" for path in sorted(WIDGETS.glob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


def test_views_come_from_each_kinds_hook():
    assert Target("cpu").hook("explorer_views") is cpu_views
    assert Target("cuda").hook("explorer_views") is cuda_views
    assert views_for("numpy") is views_for(Target("cpu"))  # the reference explores as cpu
    assert views_for("cuda").capacities() == {
        "shared": Target("cuda").device.shared_memory_per_block}
    assert "simulator" in views_for("cuda").not_measured()
    assert views_for("cpu").not_measured() is None and views_for("cpu").opening is None


@pytest.fixture
def plain_kind():
    """The cpu kind under another name, without explorer views of its own."""
    kind = register_target(dataclasses.replace(get_target_kind("cpu"), name="cpu-plain",
                                               explorer_views=None, module=__name__))
    yield kind.name
    unregister_target(kind.name)


def test_a_kind_without_views_is_explored_with_the_generic_ones(plain_kind):
    views = views_for(plain_kind)
    assert views.source.__qualname__.startswith(generic_views.__name__)
    ex = wb.explore(ops.matmul(16, 16, 16), target=plain_kind, peaks=PEAKS, measure=False)
    assert plain_kind in ex.controls.target.options and ex.target == plain_kind
    assert ex.split("i", [None, 4])
    ex.wait()
    assert "i_0" in ex.views["code"].value and "Error" not in ex.views["code"].value
    ex.close()
