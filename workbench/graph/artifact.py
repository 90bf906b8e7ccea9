"""The deployment artifact: ``compiled.save(folder)`` offline, ``load(folder)`` online.

Layout of ``folder`` (JSON and .npy only, never pickle)::

    manifest.json          graph (nodes, fused groups, inputs, outputs), memory plan, kernels
    weights/<i>.npy        one file per constant
    kernels/<module>.py    each kernel's generated Numba source (``@numba.njit(cache=True)``)
    kernels/__pycache__/   Numba's cache of its machine code (copied with the file's mtime)
    kernels/<node>.dsl.py  each kernel's PrimFunc (DSL text) before scheduling
    kernels/<node>.trace.json  its schedule trace (replayable with ``Trace.from_json``)

``load`` imports the generated modules: Numba finds their machine code in the cache next to
them, so nothing is traced, scheduled or compiled (``CompiledModel.compile_free`` says so
after the first call).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType

FORMAT = "workbench-graph-artifact/1"


def _jsonable(value):
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def graph_to_dict(graph: Graph, weights: dict[int, np.ndarray]) -> dict:
    """``graph`` as JSON-able data; constants go into ``weights`` (id -> array)."""
    constants = {}
    for name, array in graph.constants.items():
        index = len(weights)
        weights[index] = array
        constants[name] = index
    nodes = []
    for node in graph.nodes:
        attrs = {k: _jsonable(v) for k, v in node.attrs.items() if k != "graph"}
        if node.op == "fused":
            attrs["graph"] = graph_to_dict(node.attrs["graph"], weights)
        nodes.append({"name": node.name, "op": node.op, "inputs": list(node.inputs),
                      "attrs": attrs, "shape": list(node.type.shape), "dtype": node.type.dtype,
                      "source": node.source})
    return {"inputs": {n: [list(t.shape), t.dtype] for n, t in graph.inputs.items()},
            "constants": constants, "nodes": nodes, "outputs": list(graph.outputs)}


def graph_from_dict(data: dict, weights: dict[int, np.ndarray]) -> Graph:
    nodes = []
    for item in data["nodes"]:
        attrs = dict(item["attrs"])
        if item["op"] == "fused":
            attrs["graph"] = graph_from_dict(attrs["graph"], weights)
        nodes.append(Node(item["name"], item["op"], tuple(item["inputs"]), attrs,
                          TensorType(tuple(item["shape"]), item["dtype"]), item["source"]))
    return Graph({n: TensorType(tuple(s), d) for n, (s, d) in data["inputs"].items()},
                 {n: weights[i] for n, i in data["constants"].items()}, tuple(nodes),
                 tuple(data["outputs"]))


def save(compiled, folder) -> None:
    """Write ``compiled`` (a ``CompiledModel`` built for the ``cpu`` target) to ``folder``."""
    folder = Path(folder)
    if compiled.target_info.kind.artifact_format is None:
        raise ValueError(f"only models of a target with an artifact format (cpu) are saved "
                         f"(their Numba cache is the point), not {compiled.target!r}")
    (folder / "weights").mkdir(parents=True, exist_ok=True)
    kernel_dir = folder / "kernels"
    (kernel_dir / "__pycache__").mkdir(parents=True, exist_ok=True)
    weights: dict[int, np.ndarray] = {}
    graph = graph_to_dict(compiled.graph, weights)
    for index, array in weights.items():
        np.save(folder / "weights" / f"{index}.npy", array, allow_pickle=False)
    kernels = []
    for kernel in compiled.kernels:
        built = kernel.kernel._compiled
        module_path = Path(built.path)
        shutil.copy2(module_path, kernel_dir / module_path.name)
        for cached in (module_path.parent / "__pycache__").glob(module_path.stem + ".*"):
            shutil.copy2(cached, kernel_dir / "__pycache__" / cached.name)
        (kernel_dir / f"{kernel.node}.dsl.py").write_text(kernel.func_source)
        (kernel_dir / f"{kernel.node}.trace.json").write_text(kernel.trace_json)
        kernels.append({"node": kernel.node, "pattern": kernel.pattern,
                        "inputs": list(kernel.inputs), "module": module_path.name,
                        "function": built.generated.func_name,
                        "shapes": [list(shape) for shape in kernel.shapes],
                        "workspace": [[list(a.shape), str(a.dtype)]
                                      for a in kernel.runner.workspace]})
    memory = compiled.memory
    manifest = {"format": FORMAT, "target": compiled.target, "graph": graph,
                "kernels": kernels,
                "memory": {"buffers": list(memory.buffers), "assignment": memory.assignment,
                           "bytes_without_reuse": memory.bytes_without_reuse,
                           "bytes_with_reuse": memory.bytes_with_reuse}}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _import(path: Path):
    name = path.stem
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load(folder):
    """A ``CompiledModel`` from ``folder``, with no tracing, scheduling or compiling.

    Example
    -------
    >>> import workbench as wb
    >>> model = wb.load("artifact/")          # doctest: +SKIP
    >>> model(x)                              # doctest: +SKIP
    """
    from workbench.graph.compiler import CompiledKernel, CompiledModel, KernelRunner
    from workbench.graph.passes.memory_plan import MemoryPlan

    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{folder} is not a workbench graph artifact ({manifest.get('format')})")
    weights = {int(p.stem): np.load(p, allow_pickle=False)
               for p in (folder / "weights").glob("*.npy")}
    graph = graph_from_dict(manifest["graph"], weights)
    kernels = []
    for item in manifest["kernels"]:
        module = _import(folder / "kernels" / item["module"])
        dsl = (folder / "kernels" / f"{item['node']}.dsl.py").read_text()
        trace = (folder / "kernels" / f"{item['node']}.trace.json").read_text()
        workspace = [np.empty(tuple(shape), dtype) for shape, dtype in item["workspace"]]
        runner = KernelRunner(getattr(module, item["function"]), workspace)
        kernels.append(CompiledKernel(item["node"], item["pattern"], tuple(item["inputs"]),
                                      runner,
                                      (folder / "kernels" / item["module"]).read_text(),
                                      trace, dsl,
                                      shapes=tuple(tuple(s) for s in item.get("shapes", []))))
    m = manifest["memory"]
    memory = MemoryPlan(tuple(m["buffers"]), m["assignment"], m["bytes_without_reuse"],
                        m["bytes_with_reuse"])
    return CompiledModel(graph, kernels, memory, manifest["target"])


def compile_free(compiled) -> bool:
    """True when no kernel of ``compiled`` was compiled in this process (all cache hits)."""
    for kernel in compiled.kernels:
        stats = getattr(getattr(kernel.runner, "dispatcher", None), "stats", None)
        if stats is None or sum(stats.cache_misses.values()) or \
                not sum(stats.cache_hits.values()):
            return False
    return True
