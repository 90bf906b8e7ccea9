"""No layer branches on a target's name (issue 18): what differs between targets is a hook
of the target's registry entry (``workbench.backends.common.target.TargetKind``), so adding a
target adds files, not branches. This test reads the source: outside the registry, no
comparison of anything with ``"cpu"``, ``"cuda"`` or ``"numpy"``.

Every package is read, ``workbench/widgets/`` included (its branches moved to the target's
hooks in issue 18, item 4). ``NOT_YET`` lists folders a change in progress may leave out.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "workbench"
REGISTRY = {"backends/common/target.py"}
NOT_YET: tuple[str, ...] = ()
NAMES = r"""["'](?:cpu|cuda|numpy)["']"""
BRANCH = re.compile(
    rf"""(?:[=!]=\s*{NAMES})|(?:{NAMES}\s*[=!]=)|(?:\bin\s*[(\[{{]\s*{NAMES})"""
)


def branches(text: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each comparison with a target's name in ``text``."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if BRANCH.search(line)]


def test_the_pattern_finds_the_branches_it_is_meant_to():
    found = branches('if target == "cuda":\nif "cpu" != t:\nif t in ("cpu", "numpy"):\n'
                     "if t.name != 'numpy':\nbuild(f, target=\"cpu\")\n")
    assert [n for n, _ in found] == [1, 2, 3, 4]


def test_no_layer_branches_on_a_target_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in REGISTRY or rel.startswith(NOT_YET):
            continue
        found += [f"workbench/{rel}:{n}: {line}" for n, line in branches(path.read_text())]
    assert not found, "branches on a target's name (use a TargetKind hook):\n" + "\n".join(found)
