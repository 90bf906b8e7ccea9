"""Every character the widgets and drawings put on a page has a glyph in the fonts a bare
Linux browser has (Liberation, DejaVu: what `make setup` and fontconfig install): the
explorer's busy mark was the hourglass emoji, drawn as a box by headless Chromium (issue 21)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DRAWN = {"·", "…", "×", "↓", "→", "↑", "⇧", "⚠", "–", "▼", "▲", "≤", "±", "²", "µ", "○",
         "●", "—", "←", "≈", "⌀"}
"""Non-ASCII characters seen to render in DejaVu Sans (fontconfig's default on Debian)."""


@pytest.mark.parametrize("package", ["widgets", "viz"])
def test_no_character_without_a_common_glyph(package):
    found = {}
    for path in sorted((ROOT / "workbench" / package).glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for char in line:
                if ord(char) > 127 and char not in DRAWN:
                    found.setdefault(char, f"{path.name}:{number}")
    assert not found, f"characters that may draw as boxes (no emoji font): {found}"
