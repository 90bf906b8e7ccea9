"""The layer order of shared/DESIGN.md, checked on the source: a package imports only from
itself and the layers below it (``ir`` < ``script`` < ``schedule``), at the top of a module
or inside a function. The one back edge is ``PrimFunc.script()`` / ``show()`` /
``_repr_html_()``, which import the DSL printer when called.

The check reads every module with ``ast`` (no import is executed), so it also sees imports
written inside functions, which a run-time check would miss.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "workbench"

# what each checked layer may import (besides itself)
ALLOWED = {
    "ir": set(),
    "script": {"ir"},
    "schedule": {"ir", "script"},
}

# (module, imported module): the lazy back edges the design names, only inside a function
LAZY_EXCEPTIONS = {
    ("ir/function.py", "workbench.script.printer"),
}


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for each absolute or relative import
    of a ``workbench`` module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ["workbench", *path.relative_to(PACKAGE).parent.parts]
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - child.level + 1]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                if module == "workbench":  # from workbench import x: the modules named
                    found.extend((f"workbench.{a.name}", child.lineno, in_function)
                                 for a in child.names)
                else:
                    found.append((module, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return [(m, line, lazy) for m, line, lazy in found if m.split(".")[0] == "workbench"]


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "workbench"


def _violations(layer: str) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for module, line, lazy in _imports(path):
            target = _layer(module)
            if target == layer or target in ALLOWED[layer]:
                continue
            if lazy and (rel, module) in LAZY_EXCEPTIONS:
                continue
            bad.append(f"workbench/{rel}:{line} imports {module} ({layer} -> {target})")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_from_below(layer):
    assert _violations(layer) == []


def test_the_parser_uses_the_dependence_analysis_of_the_ir_layer():
    """The DSL's T.parallel check reads ``workbench.ir.dependence``; the analysis imports
    nothing from the DSL or the schedule layer."""
    loop_kinds = [m for m, _, _ in _imports(PACKAGE / "script" / "loop_kinds.py")]
    assert "workbench.ir.dependence" in loop_kinds
    for path in (PACKAGE / "ir" / "dependence").rglob("*.py"):
        assert {_layer(m) for m, _, _ in _imports(path)} <= {"ir"}, path


def test_the_check_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    """The checker itself: an import inside a function and a relative one are both seen."""
    fake = tmp_path / "workbench"
    (fake / "ir").mkdir(parents=True)
    (fake / "ir" / "bad.py").write_text(
        "def f():\n    from workbench.schedule import Schedule\n"
        "from ..script import printer\n"
        "from workbench import tune\n"
    )
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    assert _violations("ir") == [
        "workbench/ir/bad.py:2 imports workbench.schedule (ir -> schedule)",
        "workbench/ir/bad.py:3 imports workbench.script (ir -> script)",
        "workbench/ir/bad.py:4 imports workbench.tune (ir -> tune)",
    ]
