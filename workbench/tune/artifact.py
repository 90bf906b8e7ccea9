"""Artifacts: the best schedule and its kernel in a folder, loadable without compiling.

``export_artifact(result_or_schedule, folder)`` writes

* ``manifest.json``: function name, target, build options, parameters (name, shape, dtype),
  the kernel module's file and function, the record (latency, GFLOP/s, config) if any;
* ``trace.json``: the schedule trace (replayable with ``wb.Trace.from_json(...).apply``);
* ``func.py``: the function as TVMScript-like text (``wb.from_source``);
* ``workbench_kernel_*.py``: the generated Numba source, and ``__pycache__/``: Numba's cache
  of its machine code for this machine (index and data files, file times kept, since Numba
  checks the source file's time and size against its index).

``load_artifact(folder)`` imports the kernel module from the folder: Numba finds its cache
beside it, so nothing is tuned, lowered or compiled (``LoadedKernel.cache_hits`` says so).
Machine code only loads on a machine like the one that exported it (same CPU features);
elsewhere Numba compiles the generated source once, silently, into the folder.

Example
-------
>>> export_artifact(result, "best_matmul")            # doctest: +SKIP
>>> kernel = load_artifact("best_matmul")             # doctest: +SKIP  (a fresh process)
>>> kernel(a, b, c)                                   # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from workbench.backends.target import resolve_target

MANIFEST = "manifest.json"


def export_artifact(result_or_schedule, folder, target: str = "cpu", func=None,
                    **options) -> Path:
    """Write the best schedule of a ``TuneResult`` (or a ``Schedule`` of ``func``, the
    unscheduled function its trace replays on) and its kernel to ``folder``."""
    from workbench.backends import build

    record = getattr(result_or_schedule, "best", None)
    if hasattr(result_or_schedule, "apply") and hasattr(result_or_schedule, "records"):
        sch = result_or_schedule.apply()
        target = result_or_schedule.target
        func = result_or_schedule.func
    else:
        sch = result_or_schedule
        if func is None:
            raise TypeError("export_artifact(schedule, folder, func=...) needs the unscheduled "
                            "function the schedule's trace replays on")
    resolved = resolve_target(target, "export_artifact")
    if resolved.kind.artifact_format is None:
        raise ValueError(f"artifacts hold Numba CPU kernels; target {resolved.name!r} is "
                         "not supported")
    target = resolved.name
    kernel = build(sch, target=resolved, **options)
    compiled = kernel._compiled  # the CompiledKernel: its module file and function name
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    module_path = Path(compiled.path)
    shutil.copy2(module_path, folder / module_path.name)
    cache = folder / "__pycache__"
    cache.mkdir(exist_ok=True)
    for path in (module_path.parent / "__pycache__").glob(module_path.stem + ".*"):
        shutil.copy2(path, cache / path.name)
    scheduled = sch.mod
    manifest = {
        "format": "workbench.tune.artifact",
        "version": 1,
        "func_name": scheduled.name,
        "target": target,
        "options": kernel.options,
        "params": [{"name": p.name, "shape": list(p.shape), "dtype": p.dtype}
                   for p in scheduled.params],
        "module": module_path.name,
        "function": compiled.generated.func_name,
        "record": None if record is None else {
            "latency_s": record.latency_s, "gflops": record.gflops, "config": record.config,
            "workload": record.workload},
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2))
    (folder / "trace.json").write_text(sch.trace.to_json(indent=1))
    (folder / "func.py").write_text(func.script())
    return folder


class LoadedKernel:
    """A kernel loaded from an artifact folder: call it like a ``Kernel``."""

    def __init__(self, folder: Path, manifest: dict, dispatcher):
        self.folder = folder
        self.manifest = manifest
        self._dispatcher = dispatcher

    @property
    def source(self) -> str:
        return (self.folder / self.manifest["module"]).read_text()

    @property
    def trace_json(self) -> str:
        return (self.folder / "trace.json").read_text()

    def func(self):
        """The unscheduled function (parsed from ``func.py``)."""
        from workbench.script import from_source

        return from_source((self.folder / "func.py").read_text())

    def schedule(self):
        """The schedule, replayed from the trace on ``func()``."""
        from workbench.schedule import Trace

        return Trace.from_json(self.trace_json).apply(self.func())

    @property
    def cache_hits(self) -> int:
        return sum(self._dispatcher.stats.cache_hits.values())

    @property
    def cache_misses(self) -> int:
        return sum(self._dispatcher.stats.cache_misses.values())

    def __call__(self, *arrays: np.ndarray) -> None:
        params = self.manifest["params"]
        if len(arrays) != len(params):
            raise TypeError(f"{self.manifest['func_name']} takes {len(params)} arrays, "
                            f"got {len(arrays)}")
        for array, param in zip(arrays, params, strict=True):
            if tuple(array.shape) != tuple(param["shape"]) or str(array.dtype) != param["dtype"]:
                raise TypeError(f"{param['name']}: expected {param['dtype']}{param['shape']}, "
                                f"got {array.dtype}{list(array.shape)}")
        self._dispatcher(*arrays)

    def __repr__(self) -> str:
        return f"<LoadedKernel {self.manifest['func_name']} from {str(self.folder)!r}>"


def load_artifact(folder) -> LoadedKernel:
    """Load an exported kernel: imports its module, Numba loads the cached machine code."""
    folder = Path(folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    if manifest.get("format") != "workbench.tune.artifact":
        raise ValueError(f"{folder} is not a workbench artifact")
    path = folder / manifest["module"]
    name = path.stem  # Numba's cached code refers to the module by this name
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return LoadedKernel(folder, manifest, getattr(module, manifest["function"]))
