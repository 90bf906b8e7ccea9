"""``help(wb.measure)`` leads with the function a person calls (issue 21 item 11)."""

from __future__ import annotations

import pydoc

import workbench as wb
import workbench.measure  # noqa: F401 - binds wb.measure to the package, as a notebook does


def test_help_of_wb_measure_starts_with_the_call():
    text = pydoc.render_doc(wb.measure, renderer=pydoc.plaintext)
    description = text.split("DESCRIPTION", 1)[1]
    assert "wb.measure(kernel, *args, **options) -> MeasureResult" in text.split("DESCRIPTION")[0]
    assert description.lstrip().startswith("Time ``kernel(*args)``")
    assert "The timing protocol" in description  # the package's protocol follows
