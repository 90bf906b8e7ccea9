"""Backend tests: the ``golden`` fixture (files in tests/backends/golden/) and helpers.

``pytest --regen-golden`` rewrites the golden files instead of comparing (review the
change with ``git diff tests/backends/golden``).
"""

import sys
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scheduled_examples
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ir_examples


@pytest.fixture
def golden_backend(request):
    regen = request.config.getoption("--regen-golden", default=False)

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if regen:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        if not path.exists():
            pytest.fail(f"golden file {path} is missing; run pytest --regen-golden")
        assert text == path.read_text(), f"output differs from {path} (run pytest --regen-golden)"

    return check
