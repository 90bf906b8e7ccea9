"""The tamper matrix: every file of every artifact kind edited, truncated, replaced,
deleted or swapped for a symlink, an extra file, a manifest pointing outside the folder, a
stored kernel that is not what workbench generates -> ``ArtifactIntegrityError`` naming the
file (or kernel), and no code of the folder run (a planted payload would set an environment
variable and write a marker file; neither happens).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.integrity import ArtifactIntegrityError, sha256_bytes, write_manifest
from workbench.tune.artifact import export_artifact, load_artifact

torch = pytest.importorskip("torch")

FLAG = "WB_TAMPER_PAYLOAD_RAN"


def _payload(marker) -> str:
    return (f"import os\nos.environ[{FLAG!r}] = '1'\nopen({str(marker)!r}, 'w').write('ran')\n"
            "def add(*args):\n    pass\n")


class _Pickled:
    """Unpickling this runs the payload (what a malicious Numba cache index could do)."""

    def __init__(self, code: str):
        self.code = code

    def __reduce__(self):
        return exec, (self.code,)


@pytest.fixture(scope="module")
def graph_artifact(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    x = torch.randn(2, 4)
    folder = tmp_path_factory.mktemp("graph") / "artifact"
    wb.compile(model, (x,)).save(folder)
    return folder, model, x


@pytest.fixture(scope="module")
def tune_artifact(tmp_path_factory):
    func = ops.add(4, 8)
    sch = wb.Schedule(func)
    folder = tmp_path_factory.mktemp("tune") / "artifact"
    export_artifact(sch, folder, func=func)
    return folder


def _files(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _loader(kind):
    return wb.load if kind == "graph" else load_artifact


@pytest.fixture
def guard(tmp_path):
    """The marker the payload would write; checked after the test: no code of it ran."""
    marker = tmp_path / "marker"
    modules = set(sys.modules)
    os.environ.pop(FLAG, None)
    yield marker
    assert FLAG not in os.environ, "code from the artifact ran"
    assert not marker.exists(), "code from the artifact ran"
    new = {m for m in set(sys.modules) - modules if m.startswith("workbench_kernel_")}
    assert not any(getattr(sys.modules[m], "__file__", "").startswith(str(tmp_path))
                   for m in new), "a module of the artifact folder was imported"


def _artifact(kind, graph_artifact, tune_artifact, tmp_path):
    source = graph_artifact[0] if kind == "graph" else tune_artifact
    folder = tmp_path / "copy"
    shutil.copytree(source, folder)
    return folder


def _rehash(folder, edit) -> None:
    """Edit the manifest and write it back with consistent hashes (a careful tamperer)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    for key in ("files", "manifest_sha256"):
        manifest.pop(key)
    write_manifest(folder, manifest)


MODES = ("edited", "truncated", "replaced", "deleted", "symlink")


def _tamper(path, mode, marker, tmp_path) -> None:
    data = path.read_bytes()
    if mode == "edited":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1:])
    elif mode == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif mode == "replaced":
        path.write_text(_payload(marker))
    elif mode == "deleted":
        path.unlink()
    elif mode == "symlink":  # same content, elsewhere: still refused
        target = tmp_path / ("outside-" + path.name)
        target.write_bytes(data)
        path.unlink()
        path.symlink_to(target)


@pytest.mark.parametrize("kind", ["graph", "tune"])
@pytest.mark.parametrize("mode", MODES)
def test_each_file_tampered_is_refused_naming_it(kind, mode, graph_artifact, tune_artifact,
                                                  tmp_path, guard):
    original = _artifact(kind, graph_artifact, tune_artifact, tmp_path / "orig")
    for rel in _files(original):
        folder = tmp_path / f"case-{rel.replace('/', '_')}"
        shutil.copytree(original, folder)
        _tamper(folder / rel, mode, guard, tmp_path)
        with pytest.raises(ArtifactIntegrityError) as info:
            _loader(kind)(folder)
        assert info.value.name == rel, (rel, str(info.value))
        assert rel in str(info.value)


@pytest.mark.parametrize("kind", ["graph", "tune"])
@pytest.mark.parametrize("extra", ["payload.py", "kernels/evil.py", "__pycache__/x.nbi",
                                   "weights/9.npy"])
def test_an_extra_file_is_refused(kind, extra, graph_artifact, tune_artifact, tmp_path, guard):
    folder = _artifact(kind, graph_artifact, tune_artifact, tmp_path)
    path = folder / extra
    path.parent.mkdir(parents=True, exist_ok=True)
    if extra.endswith(".nbi"):
        path.write_bytes(pickle.dumps(_Pickled(_payload(guard))))
    else:
        path.write_text(_payload(guard))
    with pytest.raises(ArtifactIntegrityError, match="not listed") as info:
        _loader(kind)(folder)
    assert info.value.name == extra


@pytest.mark.parametrize("kind", ["graph", "tune"])
def test_a_symlinked_folder_inside_is_refused(kind, graph_artifact, tune_artifact, tmp_path,
                                              guard):
    folder = _artifact(kind, graph_artifact, tune_artifact, tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (folder / "more").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ArtifactIntegrityError, match="symlink"):
        _loader(kind)(folder)


@pytest.mark.parametrize("kind", ["graph", "tune"])
@pytest.mark.parametrize("outside", ["../payload.py", "/tmp/payload.py", "./x/../../p.py"])
def test_a_module_path_outside_the_folder_is_refused(kind, outside, graph_artifact,
                                                     tune_artifact, tmp_path, guard):
    folder = _artifact(kind, graph_artifact, tune_artifact, tmp_path)
    (tmp_path / "payload.py").write_text(_payload(guard))

    def edit(manifest):
        if kind == "graph":
            manifest["kernels"][0]["module"] = outside
        else:
            manifest["module"] = outside

    _rehash(folder, edit)
    with pytest.raises(ArtifactIntegrityError, match="leaves the folder"):
        _loader(kind)(folder)


@pytest.mark.parametrize("kind", ["graph", "tune"])
def test_a_listed_file_outside_the_folder_is_refused(kind, graph_artifact, tune_artifact,
                                                     tmp_path, guard):
    folder = _artifact(kind, graph_artifact, tune_artifact, tmp_path)
    (tmp_path / "payload.py").write_text(_payload(guard))

    def edit(manifest):
        manifest["files"] = {**manifest["files"],
                             "../payload.py": sha256_bytes((tmp_path / "payload.py")
                                                           .read_bytes())}

    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    manifest.pop("manifest_sha256")
    from workbench.integrity import _canonical

    manifest["manifest_sha256"] = sha256_bytes(_canonical(manifest))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactIntegrityError, match="leaves the folder"):
        _loader(kind)(folder)


@pytest.mark.parametrize("kind", ["graph", "tune"])
def test_a_stored_kernel_that_workbench_does_not_generate_is_refused(
        kind, graph_artifact, tune_artifact, tmp_path, guard):
    """A careful tamperer rewrites the kernel and every hash: the source generated again
    from the function and trace differs, so the kernel is refused (by name)."""
    folder = _artifact(kind, graph_artifact, tune_artifact, tmp_path)
    module = next(p for p in folder.rglob("workbench_kernel_*.py"))
    module.write_text(_payload(guard))
    _rehash(folder, lambda manifest: None)
    with pytest.raises(ArtifactIntegrityError, match="not what workbench generates") as info:
        _loader(kind)(folder)
    assert "kernel" in info.value.name


def test_a_consistently_edited_input_size_is_refused(graph_artifact, tmp_path, guard):
    """The graph is data interpreted by workbench: an input of another size than its kernel
    reads is refused (the model's runners skip per-call checks)."""
    folder = _artifact("graph", graph_artifact, None, tmp_path)
    name = next(iter(json.loads((folder / "manifest.json").read_text())["graph"]["inputs"]))

    def edit_input(manifest):
        manifest["graph"]["inputs"][name] = [[8, 4], "float32"]

    _rehash(folder, edit_input)
    with pytest.raises(ArtifactIntegrityError, match=name):
        wb.load(folder)


def test_a_consistently_edited_kernel_order_is_refused(graph_artifact, tmp_path, guard):
    folder = _artifact("graph", graph_artifact, None, tmp_path)
    _rehash(folder, lambda manifest: manifest["kernels"].reverse() or
            manifest["kernels"].append(dict(manifest["kernels"][0])))
    with pytest.raises(ArtifactIntegrityError, match="kernel list"):
        wb.load(folder)


def test_untampered_artifacts_load_and_compute(graph_artifact, tune_artifact, guard):
    folder, model, x = graph_artifact
    np.testing.assert_allclose(wb.load(folder)(x), model(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    kernel = load_artifact(tune_artifact)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4, 8)).astype("float32")
    c = np.empty((4, 8), "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_an_old_artifact_without_hashes_is_refused(tune_artifact, tmp_path):
    folder = _artifact("tune", None, tune_artifact, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["files"], manifest["manifest_sha256"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactIntegrityError, match="no file list"):
        load_artifact(folder)


def test_the_error_is_public_and_a_value_error():
    assert wb.ArtifactIntegrityError is ArtifactIntegrityError
    assert issubclass(ArtifactIntegrityError, ValueError)
    error = ArtifactIntegrityError("/x", "weights/0.npy", "is missing")
    assert error.name == "weights/0.npy" and "weights/0.npy: is missing" in str(error)
    assert pickle.loads(pickle.dumps(error)).name == "weights/0.npy"


def test_a_symlink_to_the_artifact_folder_itself_loads(tune_artifact, tmp_path):
    (tmp_path / "latest").symlink_to(tune_artifact)
    kernel = load_artifact(tmp_path / "latest")
    a, b = np.random.default_rng(1).standard_normal((2, 4, 8)).astype("float32")
    c = np.empty((4, 8), "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_the_integrity_module_example_runs():
    import doctest

    import workbench.integrity

    assert doctest.testmod(workbench.integrity).failed == 0


def test_a_name_with_line_breaks_never_becomes_code(tune_artifact, tmp_path, guard):
    """A careful tamperer puts code in a block name (``T.block`` takes any string) and stores
    the source workbench generates for it, with every hash: the name is printed escaped, so
    the artifact loads, computes, and the payload never runs."""
    import ast

    from workbench.schedule import Trace
    from workbench.script import from_source

    folder = _artifact("tune", None, tune_artifact, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    name = (f"T_add\n{' ' * 12}pass\nimport os\nos.environ[{FLAG!r}] = '1'\n"
            f"open({str(guard)!r}, 'w').write('ran')\nif True:")
    text = (folder / "func.py").read_text()
    assert 'T.block("T_add")' in text
    evil = text.replace('T.block("T_add")', f"T.block({name!r})")
    sch = Trace.from_json((folder / "trace.json").read_text()).apply(from_source(evil))
    source = wb.build(sch, target="cpu", **manifest["options"]).source
    assert "# block T_add\\n            pass\\nimport os" in source
    top = [type(node).__name__ for node in ast.parse(source).body]
    assert set(top) <= {"Expr", "Import", "ImportFrom", "FunctionDef"}, top
    (folder / "func.py").write_text(evil)
    (folder / manifest["module"]).write_text(source)
    _rehash(folder, lambda manifest: None)
    kernel = load_artifact(folder)
    a, b = np.random.default_rng(2).standard_normal((2, 4, 8)).astype("float32")
    c = np.empty((4, 8), "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


@pytest.mark.parametrize("where", ["dtype", "int"])
def test_data_that_is_not_an_ir_value_is_never_printed_as_code(where):
    from workbench.backends.expr_printer import ExprPrinter, np_dtype_name
    from workbench.ir import IntImm

    if where == "dtype":
        with pytest.raises(ValueError, match="not printed"):
            np_dtype_name('float32); import os; (')
    else:
        with pytest.raises(ValueError):
            ExprPrinter({}).print(IntImm("0); import os; (", "int32"))


@pytest.mark.parametrize("kind", ["graph", "tune"])
def test_build_options_that_are_not_plain_values_are_refused(kind, graph_artifact, tune_artifact,
                                                              tmp_path, guard):
    folder = _artifact(kind, graph_artifact, tune_artifact, tmp_path)
    payload = f"False)\nimport os\nos.environ[{FLAG!r}] = '1'\nif (0"

    def edit(manifest):
        options = manifest["kernels"][0]["options"] if kind == "graph" else manifest["options"]
        options["boundscheck"] = payload if kind == "graph" else [payload]

    _rehash(folder, edit)
    with pytest.raises(ArtifactIntegrityError, match="options"):
        _loader(kind)(folder)


def test_option_values_are_never_printed_raw():
    source = wb.build(ops.add(4, 4), target="cpu", boundscheck="False); import os; (0").source
    assert "import os" not in source and "boundscheck=True" in source
