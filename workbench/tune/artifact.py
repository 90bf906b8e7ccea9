"""Artifacts: the best schedule and its kernel in a folder, loadable in another process.

``export_artifact(result_or_schedule, folder)`` writes

* ``manifest.json``: function name, target, build options, parameters (name, shape, dtype),
  the kernel module's file and function, the record (latency, GFLOP/s, config) if any, and
  the sha256 of every other file (``workbench.integrity``);
* ``trace.json``: the schedule trace (replayable with ``wb.Trace.from_json(...).apply``);
* ``func.py``: the function as TVMScript-like text (``wb.from_source``);
* ``workbench_kernel_*.py``: the generated Numba source, for review and comparison.

``load_artifact(folder)`` checks every file's hash, parses ``func.py``, replays the trace
on it and builds the kernel with the stored target options (``wb.build``); the generated
source must equal the stored one. Nothing from the folder is imported or unpickled, so a
loaded artifact only runs code workbench generates. Numba's machine code is not shipped (its
cache index is a pickle): the first load on a machine compiles the kernel once into the
user's private kernel cache, later loads find it there (``LoadedKernel.cache_hits``).

Example
-------
>>> export_artifact(result, "best_matmul")            # doctest: +SKIP
>>> kernel = load_artifact("best_matmul")             # doctest: +SKIP  (a fresh process)
>>> kernel(a, b, c)                                   # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.backends.common.target import artifact_target, resolve_target
from workbench.integrity import (
    ArtifactIntegrityError,
    artifact_path,
    check_options,
    verify_folder,
    write_manifest,
)

MANIFEST = "manifest.json"
FORMAT = "workbench.tune.artifact/2"


def export_artifact(result_or_schedule, folder, target: str = "cpu", func=None,
                    **options) -> Path:
    """Write the best schedule of a ``TuneResult`` (or a ``Schedule`` of ``func``, the
    unscheduled function its trace replays on) and its kernel to ``folder`` (new or empty).

    The kernel written is the one ``load_artifact`` will build: the trace is replayed from
    its JSON on ``func`` parsed from its text, so an export that would not load the same
    kernel is refused here (``ValueError``).
    """
    from workbench.backends import build
    from workbench.schedule import Trace
    from workbench.script import from_source

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
        raise ValueError(f"artifacts hold the kernels of a target with an artifact format "
                         f"(cpu, cuda); target {resolved.name!r} has none")
    target = resolved.name
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty: export writes a new artifact folder")
    func_text, trace_text = func.script(), sch.trace.to_json(indent=1)
    replayed = Trace.from_json(trace_text).apply(from_source(func_text))
    if replayed.mod != sch.mod:
        raise ValueError(f"the schedule's trace replayed on {func.name} does not give the "
                         "schedule's function: pass the function the schedule started from")
    kernel = build(replayed, target=resolved, **options)
    compiled = kernel._compiled  # the CompiledKernel: its module file and function name
    module_name = Path(compiled.path).name
    scheduled = replayed.mod
    manifest = {
        "format": FORMAT,
        "func_name": scheduled.name,
        "target": target,
        "options": kernel.options,
        "params": [{"name": p.name, "shape": list(p.shape), "dtype": p.dtype}
                   for p in scheduled.params],
        "module": module_name,
        "function": compiled.generated.func_name,
        "record": None if record is None else {
            "latency_s": record.latency_s, "gflops": record.gflops, "config": record.config,
            "workload": record.workload},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / module_name).write_text(kernel.source)
    (folder / "trace.json").write_text(trace_text)
    (folder / "func.py").write_text(func_text)
    write_manifest(folder, manifest)
    return folder


class LoadedKernel:
    """A kernel loaded from an artifact folder: call it like the ``Kernel`` it was built as
    (the same argument checks: count, dtype, shape, contiguity, read-only, aliasing; its
    workspace passed along)."""

    def __init__(self, folder: Path, manifest: dict, kernel, func, trace_json: str):
        self.folder = folder
        self.manifest = manifest
        self.kernel = kernel
        self._func = func
        self.trace_json = trace_json

    @property
    def source(self) -> str:
        return self.kernel.source

    def func(self):
        """The unscheduled function (parsed from ``func.py``)."""
        return self._func

    def schedule(self):
        """The schedule, replayed from the trace on ``func()``."""
        from workbench.schedule import Trace

        return Trace.from_json(self.trace_json).apply(self._func)

    @property
    def _stats(self):
        """Numba's disk-cache statistics (None on ``cuda``: no machine code is cached)."""
        dispatcher = getattr(self.kernel._compiled, "dispatcher", None)
        return getattr(dispatcher, "stats", None)

    @property
    def cache_hits(self) -> int:
        stats = self._stats
        return 0 if stats is None else sum(stats.cache_hits.values())

    @property
    def cache_misses(self) -> int:
        stats = self._stats
        return 0 if stats is None else sum(stats.cache_misses.values())

    def __call__(self, *arrays: np.ndarray) -> None:
        self.kernel(*arrays)

    def __repr__(self) -> str:
        return f"<LoadedKernel {self.manifest['func_name']} from {str(self.folder)!r}>"


def load_artifact(folder) -> LoadedKernel:
    """Load an exported kernel: check its files, generate and build it again, compare.

    Raises
    ------
    ArtifactIntegrityError
        A file that is not as the manifest lists it (edited, truncated, replaced, missing,
        extra, a symlink, a path leaving the folder), or a stored kernel source that is not
        what workbench generates from ``func.py``, ``trace.json`` and the options. Raised
        before anything is compiled or run.
    """
    from workbench.backends import build
    from workbench.schedule import Trace
    from workbench.script import from_source

    folder = artifact_path(folder, "wb.load_artifact")
    files = verify_folder(folder, FORMAT)
    manifest = files.manifest
    func_text = files.read_text("func.py")
    trace_text = files.read_text("trace.json")
    stored = files.read_text(manifest.get("module"))
    target = artifact_target(manifest.get("target"))
    if target is None:
        raise ArtifactIntegrityError(folder, MANIFEST, f"unknown target "
                                     f"{manifest.get('target')!r}")
    options = check_options(folder, MANIFEST, manifest.get("options"))
    try:
        func = from_source(func_text)
        sch = Trace.from_json(trace_text).apply(func)
        kernel = build(sch, target=target, **options)
    except Exception as error:  # noqa: BLE001 -- any failure: data we did not write
        raise ArtifactIntegrityError(folder, "kernel", "its function, trace or options do "
                                     f"not build ({type(error).__name__}: {error})") from None
    name = f"kernel {manifest.get('function')!r} ({manifest.get('module')})"
    if kernel.source != stored:
        raise ArtifactIntegrityError(folder, name, "its stored source is not what workbench "
                                     "generates from func.py, trace.json and the options "
                                     "(edited, or made by another workbench version)")
    params = [{"name": p.name, "shape": list(p.shape), "dtype": p.dtype}
              for p in sch.mod.params]
    if params != manifest.get("params") or sch.mod.name != manifest.get("func_name"):
        raise ArtifactIntegrityError(folder, MANIFEST, "its parameters are not the "
                                     "function's")
    return LoadedKernel(folder, manifest, kernel, func, trace_text)
