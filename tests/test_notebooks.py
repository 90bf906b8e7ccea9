"""The tutorial notebooks are tested artifacts: each one must run top to bottom, and each is
committed with its outputs (so it reads well on GitHub without running it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 600

# With no notebook yet, parametrize over a single skipped placeholder rather than erroring.
_PARAMS = [pytest.param(path, id=path.name) for path in NOTEBOOKS] or [
    pytest.param(None, id="no-notebooks", marks=pytest.mark.skip(reason="no notebooks yet"))
]


def _code_cells(notebook) -> list:
    """Code cells with some source (Jupyter never executes an empty cell)."""
    return [c for c in notebook.cells if c.cell_type == "code" and c.source.strip()]


def execute_notebook(path: Path, cwd: Path):
    """Run every cell of the notebook at ``path`` in a fresh ``python3`` kernel whose working
    directory is ``cwd``; fail the test, naming the notebook and the cell, if a cell raises."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        pytest.fail(f"{path.name}: a cell raised\n{err}", pytrace=False)
    return notebook


@pytest.fixture
def kernel_finds_workbench(monkeypatch):
    """The kernel runs in notebooks/, so put the repository root on its PYTHONPATH: the
    notebooks import the checkout's workbench even where it is not pip-installed."""
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("path", _PARAMS)
def test_notebook_executes(path: Path, kernel_finds_workbench) -> None:
    notebook = execute_notebook(path, cwd=NOTEBOOK_DIR)
    for index, cell in enumerate(_code_cells(notebook)):
        errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
        assert not errors, f"{path.name}: code cell {index} produced an error output"


@pytest.mark.notebook
@pytest.mark.parametrize("path", _PARAMS)
def test_notebook_is_committed_with_outputs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(path, as_version=4)
    code_cells = _code_cells(notebook)
    assert code_cells, f"{path.name} has no code cell"
    unexecuted = [i for i, cell in enumerate(code_cells) if cell.get("execution_count") is None]
    assert not unexecuted, (
        f"{path.name}: code cells {unexecuted} have no execution_count; "
        "run `make notebooks` and commit the outputs"
    )


@pytest.mark.slow
@pytest.mark.notebook
def test_the_runner_executes_and_reports_a_raising_cell(tmp_path, kernel_finds_workbench):
    """The harness itself: a good notebook runs in the given directory, a raising cell fails
    the test with the notebook's name and the error."""
    nbformat = pytest.importorskip("nbformat")
    (tmp_path / "data.txt").write_text("41")
    good = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import workbench\nvalue = int(open('data.txt').read())"),
            nbformat.v4.new_code_cell("value + 1"),
        ]
    )
    nbformat.write(good, tmp_path / "good.ipynb")
    executed = execute_notebook(tmp_path / "good.ipynb", cwd=tmp_path)
    assert executed.cells[1].outputs[0]["data"]["text/plain"] == "42"
    assert [c.execution_count for c in executed.cells] == [1, 2]

    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    nbformat.write(bad, tmp_path / "bad.ipynb")
    with pytest.raises(pytest.fail.Exception) as info:
        execute_notebook(tmp_path / "bad.ipynb", cwd=tmp_path)
    assert "bad.ipynb: a cell raised" in str(info.value)
    assert "ZeroDivisionError" in str(info.value)


@pytest.mark.notebook
@pytest.mark.parametrize("path", _PARAMS)
def test_no_committed_drawing_is_wider_than_the_output_area(path: Path) -> None:
    """Issue 21 item 11: the loop-nest drawings of 03 and 04 were cut off on the right; an
    SVG output is at most ``viz.loopnest.MAX_WIDTH_PT`` wide (``fit_svg``)."""
    import re

    from workbench.viz.loopnest import MAX_WIDTH_PT

    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(path, as_version=4)
    widths = [float(w) for cell in _code_cells(notebook) for out in cell.get("outputs", [])
              for w in re.findall(r'<svg width="([\d.]+)pt"',
                                  "".join(out.get("data", {}).get("image/svg+xml", "")))]
    assert all(w <= MAX_WIDTH_PT for w in widths), (path.name, widths)
