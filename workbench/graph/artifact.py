"""The deployment artifact: ``compiled.save(folder)`` offline, ``load(folder)`` online.

Layout of ``folder`` (JSON, text and .npy only: never pickle, never imported)::

    manifest.json          graph (nodes, fused groups, inputs, outputs), memory plan, kernels,
                           and the sha256 of every other file (``workbench.integrity``)
    weights/<i>.npy        one file per constant (read with ``allow_pickle=False``)
    kernels/<module>.py    each kernel's generated Numba source, for review and comparison
    kernels/<node>.dsl.py  each kernel's PrimFunc (DSL text) before scheduling
    kernels/<node>.trace.json  its schedule trace (replayable with ``Trace.from_json``)

``load`` checks every file's hash first (``ArtifactIntegrityError`` naming the file), then
derives the model again from the artifact's data: the graph is lowered to its kernels'
functions (which must equal the stored DSL text), each trace is replayed on its function and
built for the stored target (one whose kind has an artifact format: ``cpu``, ``cuda``) with
the stored options, and the generated source must equal the stored one (``ArtifactIntegrityError``
naming the kernel). Nothing from the folder is imported or unpickled: the code that runs
is the code workbench generates, compiled through ``wb.build``'s own private kernel cache.
Numba's machine code is not shipped (its cache index is a pickle): the first load on a
machine compiles every kernel (the CNN of ``tests/graph``, six kernels: ~2 s; see
docs/decisions.md), later loads by the same user hit the kernel cache and compile nothing
(``compile_free``).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from workbench.backends.common.target import artifact_target
from workbench.graph.ir import Graph, Node, TensorType
from workbench.integrity import (
    ArtifactIntegrityError,
    artifact_path,
    check_options,
    verify_folder,
    write_manifest,
)

FORMAT = "workbench-graph-artifact/2"


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


def _weight_indices(data: dict) -> set[int]:
    found = set(data["constants"].values())
    for item in data["nodes"]:
        if item["op"] == "fused":
            found |= _weight_indices(item["attrs"]["graph"])
    return found


def save(compiled, folder) -> None:
    """Write ``compiled`` (a ``CompiledModel`` built for ``cpu`` or ``cuda``) to ``folder``.

    ``folder`` must be new or empty: the manifest lists every file in it, and ``load``
    refuses files it does not list.
    """
    folder = artifact_path(folder, "CompiledModel.save")
    if compiled.target_info.kind.artifact_format is None:
        raise ValueError(f"only models of a target with an artifact format (cpu, cuda) are "
                         f"saved (their kernels are generated again from the artifact when it is "
                         f"loaded), not {compiled.target!r}")
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder} is a file: save writes a new artifact folder")
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty: save writes a new artifact folder")
    weights: dict[int, np.ndarray] = {}
    graph = graph_to_dict(compiled.graph, weights)
    kernels = []
    for kernel in compiled.kernels:
        built = kernel.kernel._compiled
        kernels.append({"node": kernel.node, "pattern": kernel.pattern,
                        "inputs": list(kernel.inputs), "module": Path(built.path).name,
                        "function": built.generated.func_name,
                        "options": dict(kernel.kernel.options),
                        "shapes": [list(shape) for shape in kernel.shapes]})
    memory = compiled.memory
    manifest = {"format": FORMAT, "target": compiled.target, "graph": graph,
                "kernels": kernels, "fold_layout": compiled.fold_layout,
                "plan": compiled.plan, "outputs": compiled.output_structure,
                "input_names": list(compiled.input_names),
                "memory": {"buffers": list(memory.buffers), "assignment": memory.assignment,
                           "bytes_without_reuse": memory.bytes_without_reuse,
                           "bytes_with_reuse": memory.bytes_with_reuse}}
    # what load will derive must be what was compiled: check before writing anything
    for kernel, item in zip(compiled.kernels, kernels, strict=True):
        _check_derivable(kernel, item, compiled.target_info.name)
    (folder / "weights").mkdir(parents=True, exist_ok=True)
    (folder / "kernels").mkdir(exist_ok=True)
    for index, array in weights.items():
        np.save(folder / "weights" / f"{index}.npy", array, allow_pickle=False)
    for kernel, item in zip(compiled.kernels, kernels, strict=True):
        (folder / "kernels" / item["module"]).write_text(kernel.source)
        (folder / "kernels" / f"{kernel.node}.dsl.py").write_text(kernel.func_source)
        (folder / "kernels" / f"{kernel.node}.trace.json").write_text(kernel.trace_json)
    write_manifest(folder, manifest)


def _check_derivable(kernel, item: dict, target) -> None:
    from workbench.backends import build
    from workbench.schedule import Trace
    from workbench.script import from_source

    func = from_source(kernel.func_source)
    rebuilt = build(Trace.from_json(kernel.trace_json).apply(func), target=target,
                    **item["options"])
    if rebuilt.source != kernel.source:
        raise ValueError(f"kernel {kernel.node!r}: its trace replayed on its function does "
                         "not generate its source; the model cannot be saved")


def load(folder):
    """A ``CompiledModel`` from ``folder``: its files checked, its kernels generated again.

    Raises
    ------
    ArtifactIntegrityError
        A file that is not as the manifest lists it (edited, truncated, replaced, missing,
        extra, a symlink, a path leaving the folder), or a kernel whose source is not what
        workbench generates from the artifact's function, trace and options. Raised before
        any kernel is compiled or run.

    Example
    -------
    >>> import workbench as wb
    >>> model = wb.load("artifact/")          # doctest: +SKIP
    >>> model(x)                              # doctest: +SKIP
    """
    folder = artifact_path(folder, "wb.load")
    files = verify_folder(folder, FORMAT)
    manifest = files.manifest
    try:
        graph_data = manifest["graph"]
        weights = {i: np.load(io.BytesIO(files.read(f"weights/{i}.npy")), allow_pickle=False)
                   for i in sorted(_weight_indices(graph_data))}
        graph = graph_from_dict(graph_data, weights)
        items = list(manifest["kernels"])
        target, fold_layout = manifest["target"], manifest["fold_layout"]
        manifest["plan"], manifest["outputs"]  # noqa: B018 -- present, checked here
    except ArtifactIntegrityError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ArtifactIntegrityError(folder, "manifest.json", "does not describe a model "
                                     f"({type(error).__name__}: {error})") from None
    if artifact_target(target) is None:
        raise ArtifactIntegrityError(folder, "manifest.json", f"unknown target {target!r}")
    kernels = _derive_kernels(files, graph, items, fold_layout, target)
    return _assemble(files, graph, kernels, manifest)


def _derive_kernels(files, graph: Graph, items: list, fold_layout, target="cpu") -> list:
    """The kernels generated again from the graph and the stored traces and options; each
    must equal what the artifact stores."""
    from workbench.backends import build
    from workbench.graph.compiler import CompiledKernel, _runner_of
    from workbench.graph.lower import lower_graph
    from workbench.schedule import Trace

    folder = files.folder
    try:
        lowered_all = lower_graph(graph, fold_layout=bool(fold_layout))
    except Exception as error:  # noqa: BLE001 -- any failure: the graph is not one we wrote
        raise ArtifactIntegrityError(folder, "manifest.json", "its graph does not lower "
                                     f"({type(error).__name__}: {error})") from None
    if [k.node for k in lowered_all] != [item.get("node") for item in items]:
        raise ArtifactIntegrityError(folder, "manifest.json", "its kernel list is not the "
                                     "graph's kernels in execution order")
    kernels = []
    for lowered, item in zip(lowered_all, items, strict=True):
        node = lowered.node
        stored = {"pattern": item.get("pattern"), "inputs": item.get("inputs"),
                  "shapes": item.get("shapes")}
        derived = {"pattern": lowered.pattern, "inputs": list(lowered.inputs),
                   "shapes": [list(s) for s in lowered.shapes]}
        if stored != derived:
            raise ArtifactIntegrityError(folder, f"kernel {node!r}", "its pattern, inputs or "
                                         "shapes in the manifest are not the graph's")
        dsl = files.read_text(f"kernels/{node}.dsl.py")
        trace = files.read_text(f"kernels/{node}.trace.json")
        source = files.read_text(f"kernels/{item.get('module')}")
        if dsl != lowered.source:
            raise ArtifactIntegrityError(folder, f"kernel {node!r}", "its stored function "
                                         "is not the one its graph node lowers to")
        options = check_options(folder, f"kernel {node!r}", item.get("options"))
        try:
            sch = Trace.from_json(trace).apply(lowered.func)
            kernel = build(sch, target=target, **options)
        except Exception as error:  # noqa: BLE001 -- a trace or options we did not write
            raise ArtifactIntegrityError(folder, f"kernel {node!r}", "its trace or options "
                                         f"do not build ({type(error).__name__}: {error})"
                                         ) from None
        if kernel.source != source:
            raise ArtifactIntegrityError(folder, f"kernel {node!r}", "its stored source is "
                                         "not what workbench generates from its function, "
                                         "trace and options (edited, or made by another "
                                         "workbench version)")
        kernels.append(CompiledKernel(node, lowered.pattern, lowered.inputs,
                                      _runner_of(kernel, target), kernel.source, trace, dsl,
                                      sch, kernel, lowered.shapes, lowered.func))
    return kernels


def _assemble(files, graph: Graph, kernels: list, manifest: dict):
    from workbench.graph.compiler import CompiledModel
    from workbench.graph.passes.memory_plan import plan_memory

    folder = files.folder
    memory = plan_memory(graph, reuse=bool(manifest["plan"]))
    stored = manifest.get("memory", {})
    if (list(memory.buffers) != stored.get("buffers")
            or memory.assignment != stored.get("assignment")):
        raise ArtifactIntegrityError(folder, "manifest.json", "its memory plan is not the "
                                     "graph's")
    _check_bindings(folder, graph, kernels)
    try:
        return CompiledModel(graph, kernels, memory, manifest["target"],
                             fold_layout=manifest["fold_layout"],
                             plan=manifest["plan"], output_structure=manifest["outputs"],
                             input_names=manifest.get("input_names"))
    except (KeyError, TypeError, ValueError) as error:
        raise ArtifactIntegrityError(folder, "manifest.json", "does not describe a model "
                                     f"({type(error).__name__}: {error})") from None


def _check_bindings(folder, graph: Graph, kernels: list) -> None:
    """Every value a kernel is called with has its parameter's size and dtype (the runners
    of a model skip the per-call checks: a mismatch here would read past a buffer)."""
    types = {name: (int(np.prod(t.shape)), t.dtype) for name, t in graph.inputs.items()}
    types |= {name: (a.size, str(a.dtype)) for name, a in graph.constants.items()}
    types |= {n.name: (int(np.prod(n.type.shape)), n.type.dtype) for n in graph.nodes}
    for kernel in kernels:
        params = kernel.kernel.func.params
        names = list(kernel.inputs) + [kernel.node]
        if len(params) != len(names):
            raise ArtifactIntegrityError(folder, f"kernel {kernel.node!r}", "takes another "
                                         "number of values than the graph gives it")
        for name, param in zip(names, params, strict=True):
            want = (int(np.prod(param.shape)), str(param.dtype))
            if types.get(name) != want:
                raise ArtifactIntegrityError(folder, f"kernel {kernel.node!r}", f"value "
                                             f"{name!r} is {types.get(name)} (size, dtype) in "
                                             f"the graph, the kernel takes {want}")


def compile_free(compiled) -> bool:
    """True when no kernel of ``compiled`` was compiled in this process (all cache hits)."""
    for kernel in compiled.kernels:
        stats = getattr(getattr(kernel.runner, "dispatcher", None), "stats", None)
        if stats is None or sum(stats.cache_misses.values()) or \
                not sum(stats.cache_hits.values()):
            return False
    return True
