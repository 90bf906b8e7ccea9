"""Building a model's kernels: each distinct kernel once, the cold ones in worker processes.

``wb.compile`` schedules every kernel, then hands the schedules here:

- **dedupe**: kernels are named by their pattern (``workbench.graph.lower.kernel_name``),
  so the repeated blocks of a model (a resnet's basic blocks, a transformer's layers) lower
  to structurally equal functions; scheduled functions are grouped by structural equality
  (the IR's structural hash) and each group is built once, for the model's target and
  options, and its kernel shared by the group's nodes (they run one after the other, so one
  workspace serves them all);
- **parallel**: on a target that keeps compiled code on disk (``cpu``: Numba's cache
  beside the generated module), the distinct kernels not cached yet
  (``numba_cpu.is_cached``) are split into ``jobs`` shares: this process compiles one,
  ``jobs - 1`` fresh interpreters (``python -m workbench.graph.compile_jobs``, the
  functions and target pickled on stdin) the others. Each worker's result comes back
  through the disk cache: the parent's own ``build`` then loads the machine code instead
  of compiling it. Not ``multiprocessing``: a forked child of a process running Numba's
  and torch's thread pools is not safe, and a spawned one runs the caller's main script
  again (a notebook-less ``python script.py`` without a ``__main__`` guard compiled its
  model in every worker). A kernel a worker fails to build is built in the parent (its
  error, if any, raised there);
- **progress**: a ``tqdm`` bar over the builds when there are ``PROGRESS_MIN`` or more cold
  kernels (``progress=True``/``False`` forces it on/off).

Example
-------
>>> from workbench import ops
>>> from workbench.schedule import Schedule
>>> kernels, stats = build_kernels([Schedule(ops.relu(64))] * 3, "cpu", jobs=1)
>>> stats.distinct, stats.kernels, kernels[0] is kernels[2]
(1, 3, True)
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from pathlib import Path

from workbench.backends.common.machine import machine_facts
from workbench.backends.common.target import resolve_target

PARALLEL_MIN = 4
"""Cold distinct kernels from which worker processes are used (starting one costs ~2 s)."""
PROGRESS_MIN = 8
"""Cold distinct kernels from which a progress bar is shown."""


@dataclasses.dataclass
class BuildStats:
    """What ``build_kernels`` did: ``kernels`` asked for, ``distinct`` built, ``cold`` of
    those not cached before, ``parallel`` of those compiled in worker processes first."""

    kernels: int = 0
    distinct: int = 0
    cold: int = 0
    parallel: int = 0


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may run on
    (``machine_facts().cores``)."""
    return machine_facts().cores


def _run_worker() -> None:
    """A worker's body (``python -m workbench.graph.compile_jobs``): build the pickled
    ``(funcs, target)`` read from stdin; print how many were built."""
    from workbench.backends import build

    funcs, target = pickle.load(sys.stdin.buffer)
    done = 0
    for func in funcs:
        try:
            build(func, target=target)
            done += 1
        except Exception:  # noqa: BLE001,S112 -- built (and its error raised) in the parent
            continue
    print(done)


def _is_cached(func, target) -> bool:
    is_cached = target.hook("is_cached")
    if is_cached is None or target.options.get("debug"):
        return True  # no disk cache to fill: nothing for a worker to do
    return is_cached(func, target)


def _prebuild(funcs: list, target, jobs: int, bar=None) -> int:
    """Compile ``funcs`` split over this process and ``jobs - 1`` workers; how many the
    workers built (the rest: here, into the memory cache). ``bar`` (tqdm) advances as this
    process's share compiles, then as each worker finishes its share."""
    from workbench.backends import build
    from workbench.backends.common.machine import numba_child_env

    chunks = [funcs[i::jobs] for i in range(min(jobs, len(funcs)))]
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **numba_child_env(), "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    workers = []
    for chunk in chunks[1:]:
        proc = subprocess.Popen([sys.executable, "-m", "workbench.graph.compile_jobs"],  # noqa: S603
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        proc.stdin.write(pickle.dumps((chunk, target)))
        proc.stdin.close()
        workers.append(proc)
    try:
        for func in chunks[0]:
            build(func, target=target)
            if bar is not None:
                bar.update(1)
    finally:
        done = 0
        for proc, chunk in zip(workers, chunks[1:], strict=True):
            out = proc.stdout.read()
            proc.wait()
            proc.stdout.close()
            done += int(out.strip() or 0) if proc.returncode == 0 else 0
            if bar is not None:
                bar.update(len(chunk))
    return done


def build_kernels(schedules: list, target="cpu", *, jobs: int | None = None,
                  progress: bool | None = None) -> tuple[list, BuildStats]:
    """One built kernel per schedule (structurally equal scheduled functions share one),
    and what was done (``BuildStats``).

    Parameters
    ----------
    schedules : list of Schedule (or PrimFunc)
    target : str or Target
    jobs : int, optional
        Worker processes for the cold kernels (default ``default_jobs()``; 1: none).
    progress : bool, optional
        Show a progress bar (default: when ``PROGRESS_MIN`` or more kernels are cold).
    """
    from workbench.backends import build

    target = resolve_target(target, "compile")
    funcs = [getattr(s, "mod", s) for s in schedules]
    distinct: dict = {}
    for func in funcs:
        distinct.setdefault(func, len(distinct))
    unique = list(distinct)
    cold = [func for func in unique if not _is_cached(func, target)]
    stats = BuildStats(kernels=len(funcs), distinct=len(unique), cold=len(cold))
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    show = len(cold) >= PROGRESS_MIN if progress is None else bool(progress)
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(unique), desc="compiling kernels", unit="kernel")
    try:
        prebuilt = set()
        if jobs > 1 and len(cold) >= PARALLEL_MIN:
            stats.parallel = _prebuild(cold, target, jobs, bar)
            prebuilt = set(cold)
        built = []
        for func in unique:
            built.append(build(func, target=target))
            if bar is not None and func not in prebuilt:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return [built[distinct[func]] for func in funcs], stats


if __name__ == "__main__":
    _run_worker()

__all__ = ["BuildStats", "PARALLEL_MIN", "PROGRESS_MIN", "build_kernels", "default_jobs"]
