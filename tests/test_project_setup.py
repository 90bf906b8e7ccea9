"""The project's set-up files agree with each other: pyproject.toml, environment.yml, the
Makefile and the CI script."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# conda-forge names that differ from the PyPI names in pyproject.toml
CONDA_TO_PYPI = {"python-graphviz": "graphviz", "pytorch": "torch"}


def normalise(requirement: str) -> str:
    """The PEP 503 normalised project name of a requirement string ("PyYAML>=6" -> "pyyaml")."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def environment() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def environment_names(environment: dict) -> set[str]:
    names = set()
    for entry in environment["dependencies"]:
        if isinstance(entry, dict):
            names |= {normalise(req) for req in entry.get("pip", [])}
        else:
            name = normalise(entry)
            names.add(CONDA_TO_PYPI.get(name, name))
    return names


def test_normalise() -> None:
    assert normalise("PyYAML>=6.0") == "pyyaml"
    assert normalise("pytest_xdist >= 3") == "pytest-xdist"
    assert normalise("torch==2.13.0") == "torch"
    assert normalise("numba.cuda") == "numba-cuda"


def test_pyproject_metadata(pyproject: dict) -> None:
    project = pyproject["project"]
    assert project["name"] == "workbench"
    assert project["requires-python"] == ">=3.11"
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == ["workbench*"]
    core = {normalise(r) for r in project["dependencies"]}
    assert core == {
        "numba",
        "numpy",
        "pandas",
        "matplotlib",
        "graphviz",
        "ipywidgets",
        "ipyevents",  # the explorer's keyboard (issue 21 item 12)
        "pygments",
        "tqdm",
        "platformdirs",  # the user's cache folder (kernel cache, issue 17)
        "filelock",  # the tuning records' lock (two processes, one database; issue 17)
    }
    # every core dependency carries a lower bound
    assert all(">=" in r for r in project["dependencies"])


def test_pyproject_extras(pyproject: dict) -> None:
    extras = pyproject["project"]["optional-dependencies"]
    assert set(extras) >= {"dev", "gpu", "graph"}
    assert {normalise(r) for r in extras["dev"]} >= {
        "pytest",
        "pytest-xdist",
        "hypothesis",
        "nbclient",
        "nbformat",
        "ipykernel",
        "jupyterlab",
        "ruff",
        "pyyaml",
    }
    assert {normalise(r) for r in extras["gpu"]} == {"numba-cuda"}
    # torch must stay pinned exactly: a bare "torch" resolves to a multi-GB CUDA build
    assert "torch==2.13.0" in [r.replace(" ", "") for r in extras["graph"]]
    assert "onnx" in {normalise(r) for r in extras["graph"]}
    # the test zoo: torchvision pinned to the release for torch 2.13.0, transformers
    assert "torchvision==0.28.0" in [r.replace(" ", "") for r in extras["models"]]
    assert "transformers" in {normalise(r) for r in extras["models"]}


def test_pytest_config(pyproject: dict) -> None:
    config = pyproject["tool"]["pytest"]["ini_options"]
    assert config["testpaths"] == ["tests"]
    assert "tests" in config["pythonpath"]  # tests import ir_examples
    assert any(marker.startswith("slow:") for marker in config["markers"])
    assert pyproject["tool"]["ruff"]["line-length"] == 100


def test_environment_lists_every_pyproject_dependency(pyproject: dict, environment: dict) -> None:
    project = pyproject["project"]
    wanted = {normalise(r) for r in project["dependencies"]}
    for requirements in project["optional-dependencies"].values():
        wanted |= {normalise(r) for r in requirements}
    missing = wanted - environment_names(environment)
    assert not missing, f"environment.yml lacks {sorted(missing)} (listed in pyproject.toml)"


def test_environment_is_conda_forge_and_pins_torch(environment: dict) -> None:
    assert environment["channels"] == ["conda-forge"]
    pip_section = next(e["pip"] for e in environment["dependencies"] if isinstance(e, dict))
    assert "torch==2.13.0" in pip_section


def test_ci_script_runs_make_test() -> None:
    script = ROOT / ".ci" / "run"
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert re.search(r"^make test$", text, re.MULTILINE)
    assert script.stat().st_mode & 0o111, ".ci/run must be executable"


@pytest.mark.parametrize("target", ["setup", "lab", "test", "notebooks", "bench", "lint"])
def test_makefile_targets_parse(target: str) -> None:
    """`make -n` (dry run) parses the Makefile and plans each target without running it."""
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_make_test_runs_pytest_with_xdist() -> None:
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "test"], capture_output=True, text=True, timeout=60
    )
    assert "-m pytest -q -n 2" in result.stdout


def test_workbench_imports_lazily() -> None:
    """`import workbench` must not pull in numba or pandas (notebook start-up stays fast)."""
    code = "import sys, workbench; print('numba' in sys.modules, 'pandas' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_test_module_names_are_unique() -> None:
    """pytest's default (prepend) import mode imports test files and their sibling helpers
    (``schedule_examples``) by bare module name, so two files with one name in different
    test folders collide ("import file mismatch"). Name them by package instead."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name in ("conftest.py", "__init__.py") or "golden" in path.parts:
            continue
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        seen.setdefault(path.name, path)
    assert not clashes, "test modules with the same name: " + "; ".join(clashes)


def _imports_workbench(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.ImportFrom) and (sub.module or "").split(".")[0] == "workbench":
            return True
        if isinstance(sub, ast.Import) and any(
            a.name.split(".")[0] == "workbench" for a in sub.names
        ):
            return True
    return False


def _caught_names(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"BaseException"}
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {t.id if isinstance(t, ast.Name) else ast.unparse(t) for t in types}


def test_no_import_retry_scaffolding() -> None:
    """Issue 7: no ``try: import workbench... except ImportError/TypeError`` around the
    project's own modules (it hides real bugs), and no test skips on them
    (``pytest.importorskip("workbench...")``)."""
    hiding = {"ImportError", "ModuleNotFoundError", "TypeError", "Exception", "BaseException"}
    found = []
    for folder in ("workbench", "tests", "bench", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            where = path.relative_to(ROOT)
            for node in ast.walk(tree):
                if isinstance(node, ast.Try) and any(_imports_workbench(s) for s in node.body):
                    caught = set().union(*(_caught_names(h) for h in node.handlers))
                    if caught & hiding:
                        found.append(f"{where}:{node.lineno}: import retry ({', '.join(caught)})")
                if (
                    isinstance(node, ast.Call)
                    and ast.unparse(node.func).endswith("importorskip")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).split(".")[0] == "workbench"
                ):
                    found.append(f"{where}:{node.lineno}: importorskip({node.args[0].value!r})")
    assert not found, "\n".join(found)
