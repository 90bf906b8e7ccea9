"""Script tests: the ``--regen-golden`` flag and the ``golden`` fixture.

Golden files live in ``tests/golden/<name>.txt``. A test calls ``golden("name", text)``: the
text must equal the file's content; with ``pytest --regen-golden`` the file is rewritten
instead (review the change with ``git diff tests/golden``).
"""

from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


@pytest.fixture
def golden(request):
    regen = request.config.getoption("--regen-golden", default=False)

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / f"{name}.txt"
        if regen:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")
            return
        if not path.exists():
            pytest.fail(f"golden file {path} is missing; run pytest --regen-golden")
        expected = path.read_text()[:-1]  # files end with one newline
        assert text == expected, f"output differs from {path} (run pytest --regen-golden)"

    return check
