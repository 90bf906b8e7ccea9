"""The layer table of docs/architecture.md, checked on the source: a package imports only from
itself and the layers below it, at the top of a module or inside a function.

Every layer of the table is checked: ``ir`` < ``script`` < ``schedule`` < ``ops`` <
``backends`` (``common``, then one package per target) < ``recipes`` < ``measure`` < ``viz``
< ``tune`` < ``graph`` < ``widgets`` < the package's façade and command line. Besides the
order:

- a backend never imports the operator library (``ops`` says what is computed; a backend
  compiles any PrimFunc), and ``backends/common`` imports no target package;
- a target package (``backends/cpu``, ``backends/cuda``, ``backends/numpy``) imports
  ``backends/common`` and never another target's package;
- ``graph`` imports ``tune`` only inside a function (the graph level loads without the
  tuner);
- the lazy back edges the docs name (``LAZY_EXCEPTIONS``): the notebook displays
  (``PrimFunc.script()`` / ``show()``, ``Kernel._repr_html_``, ``CompiledModel.explore``)
  import the layer that draws them when they are called.

The check reads every module with ``ast`` (no import is executed), so it also sees imports
written inside functions, which a run-time check would miss.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "workbench"

TARGET_PACKAGES = ("backends/numpy", "backends/cpu", "backends/cuda")

# layer -> its rank in docs/architecture.md's table (a layer imports lower ranks only)
RANK = {
    "integrity": 0,  # workbench/integrity.py: artifact file hashes, imports nothing
    "pyparse": 0,  # workbench/pyparse.py: ast.parse under one lock, imports nothing
    "ir": 1,
    "script": 2,
    "schedule": 3,
    "ops": 4,
    "backends/common": 5,
    "backends": 5,  # the package's __init__: the public names of backends/common
    **dict.fromkeys(TARGET_PACKAGES, 5),
    "recipes": 6,
    "measure": 7,
    "viz": 8,
    "tune": 9,
    "graph": 10,
    "widgets": 11,
    "workbench": 12,  # workbench/__init__.py (lazy façade), __main__.py, cli.py
}

# what a layer may import besides the lower ranks (same rank) ...
SAME_RANK = {
    "backends": {"backends/common"},
    **{target: {"backends/common"} for target in TARGET_PACKAGES},
}
# ... and which lower ranks it may not
NEVER = {
    "backends/common": {"ops"},
    "backends": {"ops"},
    **{target: {"ops"} for target in TARGET_PACKAGES},
}
# (layer, imported layer): allowed only inside a function
LAZY_ONLY = {("graph", "tune")}

# (module, imported module): the lazy back edges the docs name, only inside a function
LAZY_EXCEPTIONS = {
    ("ir/function.py", "workbench.script.printer"),  # PrimFunc.script() / show()
    ("backends/common/kernel.py", "workbench.viz.html"),  # Kernel._repr_html_()
    ("graph/compiler.py", "workbench"),  # CompiledModel.explore(): wb.explore
}

LAYERS = sorted(RANK)


def _public_names() -> dict[str, str]:
    """``workbench.__init__``'s public name -> the module that defines it (read, not run)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_PUBLIC" for t in targets):
                return ast.literal_eval(node.value)
    return {}


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for each absolute or relative import
    of a ``workbench`` module in ``path``; ``from workbench import name`` counts as an
    import of the module that defines ``name`` (``T``: ``workbench.script``), and of no
    layer for the package's metadata (``__version__``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ["workbench", *path.relative_to(PACKAGE).parent.parts]
    public = _public_names() if (PACKAGE / "__init__.py").exists() else {}
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
                    found.extend((_named(a.name, public), child.lineno, in_function)
                                 for a in child.names if not a.name.startswith("__"))
                else:
                    found.append((module, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return [(m, line, lazy) for m, line, lazy in found if m.split(".")[0] == "workbench"]


def _named(name: str, public: dict[str, str]) -> str:
    """The module ``from workbench import name`` loads (a subpackage or the definer)."""
    return public.get(name, f"workbench.{name}")


def _layer(module: str) -> str:
    """The layer of a module name (``workbench.backends.cpu.promote``: ``backends/cpu``)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("cli", "__main__"):
        return "workbench"
    if parts[1] == "backends" and len(parts) > 2 and f"backends/{parts[2]}" in RANK:
        return f"backends/{parts[2]}"
    return parts[1]


def _files(layer: str) -> list[Path]:
    if layer == "workbench":
        return sorted(p for p in PACKAGE.glob("*.py") if p.stem != "integrity")
    if layer == "integrity":
        return [PACKAGE / "integrity.py"]
    if layer == "backends":
        return [PACKAGE / "backends" / "__init__.py"]
    return sorted((PACKAGE / layer).rglob("*.py"))


def _allowed(layer: str, target: str, lazy: bool) -> bool:
    if target == layer or target in SAME_RANK.get(layer, ()):
        return True
    if target in NEVER.get(layer, ()) or target not in RANK or RANK[target] >= RANK[layer]:
        return False
    return lazy or (layer, target) not in LAZY_ONLY


def _violations(layer: str) -> list[str]:
    bad = []
    for path in _files(layer):
        if not path.exists():
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        for module, line, lazy in _imports(path):
            target = _layer(module)
            if _allowed(layer, target, lazy):
                continue
            if lazy and (rel, module) in LAZY_EXCEPTIONS:
                continue
            bad.append(f"workbench/{rel}:{line} imports {module} ({layer} -> {target})")
    return bad


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_from_below(layer):
    assert _violations(layer) == []


def test_every_package_is_in_the_table():
    """A new package (or target package) gets a row in the table and in ``RANK``."""
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    targets = {f"backends/{p.name}" for p in (PACKAGE / "backends").iterdir()
               if (p / "__init__.py").exists()}
    assert packages - set(RANK) == set()
    assert targets - set(RANK) == set()


def test_the_lazy_exceptions_are_still_needed():
    """Each listed exception is an import the source still has (else it goes)."""
    for rel, module in LAZY_EXCEPTIONS:
        assert (module, True) in {(m, lazy) for m, _, lazy in _imports(PACKAGE / rel)}, rel


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


def test_the_check_knows_the_rules_beside_the_order(tmp_path, monkeypatch):
    """A target package importing another's, a backend importing ``ops``, ``graph``
    importing ``tune`` at the top, and a name of the façade (``T``) are all seen."""
    fake = tmp_path / "workbench"
    for folder in ("backends/cuda", "backends/common", "graph", "ops"):
        (fake / folder).mkdir(parents=True)
    (fake / "__init__.py").write_text('_PUBLIC = {"T": "workbench.script", '
                                      '"tune": "workbench.tune"}\n')
    (fake / "backends" / "cuda" / "bad.py").write_text(
        "from workbench.backends.cpu import runtime\nfrom workbench.backends.common import x\n"
        "from workbench import ops\n")
    (fake / "backends" / "common" / "bad.py").write_text("def f():\n    import workbench.ops\n")
    (fake / "graph" / "bad.py").write_text(
        "from workbench.tune import api\ndef f():\n    from workbench.tune import api\n")
    (fake / "ops" / "good.py").write_text("from workbench import T, __version__\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    assert _violations("backends/cuda") == [
        "workbench/backends/cuda/bad.py:1 imports workbench.backends.cpu "
        "(backends/cuda -> backends/cpu)",
        "workbench/backends/cuda/bad.py:3 imports workbench.ops (backends/cuda -> ops)",
    ]
    assert _violations("backends/common") == [
        "workbench/backends/common/bad.py:2 imports workbench.ops (backends/common -> ops)"]
    assert _violations("graph") == [
        "workbench/graph/bad.py:1 imports workbench.tune (graph -> tune)"]
    assert _violations("ops") == []
