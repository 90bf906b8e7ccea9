"""Runners: build candidates in parallel worker processes, measure them one at a time.

A candidate is a schedule trace (JSON) of a ``Task``'s function. The runner

1. **builds** candidates in parallel, each in an isolated worker process
   (``workbench.tune.isolation``): replay the trace, lower, generate the source, compile
   it with Numba into the kernel cache on disk;
2. **measures** them serially in one isolated measuring process (the machine is not shared
   between two timed kernels): load the kernel (a disk-cache hit), run it on random inputs
   (seeded by the task's seed), compare every output with the numpy reference executor
   (``rtol``/``atol``), then time ``repeats`` calls.

Device targets (a kernel class with ``device_resident``, i.e. ``cuda``): the build
workers replay, lower, verify against the device's limits and generate the module, and
run no kernel (Numba compiles a CUDA kernel on its first launch, so that compile happens
in the measuring process); the measuring process is the one process running kernels:
inputs copied to the device once, checked, then timed with CUDA events
(``workbench.tune.measure_device``).
Every worker warms up on the task's ``warm_trace`` (the space's default candidate): the
unscheduled function binds no thread on ``cuda`` and does not build.

A candidate that crashes its worker (a segfault in a generated kernel), hangs past the time
limit or computes a wrong result comes back as a failed ``Outcome`` (``error_kind``
``"crash"``, ``"timeout"``, ``"wrong_result"``...) and the run goes on with a new worker.

Bounded kernel cache: the workers drop their in-memory kernels after every candidate
(``clear_memory_cache``) and are recycled every ``recycle_after`` calls; the runner compiles
into its own cache folder (``cache_dir``) and prunes it to the ``max_cache_entries`` newest
kernels after each batch.

``LocalRunner`` is the default; ``workbench.tune.runner_dask.DaskRunner`` has the same
``run(task, candidates) -> list[Outcome]`` interface on a ``dask.distributed`` cluster.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from workbench.backends.common.machine import machine_facts
from workbench.tune.isolation import CandidateError, IsolatedWorker, resolve


@dataclasses.dataclass
class Task:
    """What every candidate of one tuning run shares (sent to the workers).

    ``kernel_hook`` names a function ``hook(kernel, config) -> callable`` (as
    ``"module:function"``) that wraps each built kernel before it is checked and timed: a
    test seam for injecting faults, None otherwise.
    """

    func: object  # PrimFunc
    target: object = "cpu"  # a Target (or its name)
    options: dict = dataclasses.field(default_factory=dict)
    seed: int = 0
    repeats: int = 5
    min_repeat_s: float = 0.0
    rtol: float = 1e-3
    atol: float = 1e-3
    kernel_hook: str | None = None
    key: str = ""
    warm_trace: str = ""  # a buildable schedule of ``func`` (the space's default) to warm up


@dataclasses.dataclass
class Candidate:
    """One point of the search: its configuration and the trace that realises it."""

    config: dict
    trace: str


@dataclasses.dataclass
class Outcome:
    """What building and measuring one candidate gave."""

    times_s: list[float] = dataclasses.field(default_factory=list)
    build_s: float | None = None
    error: str | None = None
    error_kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.times_s)

    @property
    def latency_s(self) -> float | None:
        return statistics.median(self.times_s) if self.ok else None


# ----------------------------------------------------------------------------------------
# What the worker processes run (top-level functions: they are sent by reference)
# ----------------------------------------------------------------------------------------

_REFERENCES: dict[str, tuple] = {}


def _schedule_of(task: Task, trace_json: str):
    from workbench.schedule import Schedule, Trace

    trace = Trace.from_json(trace_json)
    return trace.apply(task.func) if len(trace) else Schedule(task.func)


def build_candidate(task: Task, trace_json: str) -> dict:
    """Replay, lower and compile one candidate into the disk kernel cache (build worker)."""
    from workbench.backends import build
    from workbench.backends.cpu.numba_cpu import clear_memory_cache
    from workbench.schedule import ScheduleError

    start = time.perf_counter()
    try:
        sch = _schedule_of(task, trace_json)
    except (ScheduleError, ValueError) as err:
        raise CandidateError("schedule", str(err)[:2000]) from None
    try:
        kernel = build(sch, target=task.target, **task.options)
    except Exception as err:  # noqa: BLE001 - any codegen/compile failure is the candidate's
        raise CandidateError("build", f"{type(err).__name__}: {err}"[:2000]) from None
    source = kernel.source
    clear_memory_cache()
    return {"build_s": time.perf_counter() - start, "source_lines": source.count("\n")}


def random_arguments(func, seed: int) -> list[np.ndarray]:
    """Random inputs (uniform in [-1, 1), never zeros) for every parameter, seeded."""
    rng = np.random.default_rng(seed)
    arrays = []
    for param in func.params:
        dtype = np.dtype(param.dtype)
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1, 1, size=param.shape).astype(dtype))
        elif dtype.kind in "iu":
            arrays.append(rng.integers(0, 8, size=param.shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 2, size=param.shape).astype(dtype))
    return arrays


def written_params(kernel) -> set[str]:
    """Names of the parameters the kernel's lowered function stores to (its outputs)."""
    from workbench.ir import BufferStore
    from workbench.ir.functor import collect

    stores = collect(kernel.lowered.body, lambda n: isinstance(n, BufferStore))
    return {store.buffer.name for store in stores}


def _reference(task: Task) -> tuple:
    """(inputs, expected outputs by parameter index), computed once per task and process."""
    cached = _REFERENCES.get(task.key)
    if cached is not None:
        return cached
    from workbench.backends import build

    args = random_arguments(task.func, task.seed)
    reference = build(task.func, target="numpy")
    expected = [a.copy() for a in args]
    reference(*expected)
    written = [i for i, p in enumerate(task.func.params) if p.name in written_params(reference)]
    _REFERENCES.clear()  # one task at a time: bounded
    _REFERENCES[task.key] = (args, {i: expected[i] for i in written})
    return _REFERENCES[task.key]


def _warm_build(task: Task) -> None:
    """Build the task's warm-up schedule (``task.warm_trace``, else the function as it
    is): Numba's and LLVM's start-up, which the first candidate would otherwise pay. A
    failure here is no candidate's: on ``cuda`` an unscheduled function binds no thread
    (``UnboundKernelError``), and every candidate must still be built and measured."""
    from workbench.backends import build
    from workbench.backends.cpu.numba_cpu import clear_memory_cache

    try:
        build(_schedule_of(task, task.warm_trace or "[]"), target=task.target, **task.options)
    except Exception:  # noqa: BLE001 - warming up only
        pass
    clear_memory_cache()


def prepare_task(task: Task) -> int:
    """Import, build the reference and compute the expected outputs (outside any timeout
    of a candidate); returns the number of outputs checked."""
    outputs = len(_reference(task)[1])
    _warm_build(task)  # loads Numba and LLVM
    return outputs


def warm_builder(task: Task) -> None:
    """Import the backend and compile the task's warm-up schedule once (build worker)."""
    _warm_build(task)


def ready() -> bool:
    """Nothing (a call that only makes a worker run its ``prepare`` step)."""
    return True


def measure_candidate(task: Task, trace_json: str, config: dict) -> list[float]:
    """Load, check against the reference, and time one candidate (measure worker)."""
    from workbench.backends import build
    from workbench.backends.cpu.numba_cpu import clear_memory_cache

    args, expected = _reference(task)
    try:
        kernel = build(_schedule_of(task, trace_json), target=task.target, **task.options)
    except Exception as err:  # noqa: BLE001
        raise CandidateError("build", f"{type(err).__name__}: {err}"[:2000]) from None
    call = resolve(task.kernel_hook)(kernel, config) if task.kernel_hook else kernel
    if getattr(kernel, "device_resident", False):
        from workbench.tune.measure_device import measure_on_device

        try:
            return measure_on_device(call, task, args, expected)
        finally:
            clear_memory_cache()
    try:
        run_args = poisoned_outputs(args, expected)
        call(*run_args)
        check_outputs(task, {index: run_args[index] for index in expected}, expected)
        start = time.perf_counter()
        call(*run_args)
        number = calls_per_timing(task, time.perf_counter() - start)
        times = []
        for _ in range(max(1, task.repeats)):
            start = time.perf_counter()
            for _ in range(number):
                call(*run_args)
            times.append((time.perf_counter() - start) / number)
    finally:
        clear_memory_cache()
    return times


def poisoned_outputs(args: list[np.ndarray], expected: dict) -> list[np.ndarray]:
    """Copies of ``args`` whose outputs (the indices of ``expected``) hold NaN (or 0), so a
    kernel that skips an element cannot pass on what a previous run left there."""
    copies = [a.copy() for a in args]
    for index in expected:
        copies[index][...] = np.nan if copies[index].dtype.kind == "f" else 0
    return copies


def check_outputs(task, got: dict[int, np.ndarray], expected: dict) -> None:
    """Raise ``CandidateError("wrong_result")`` naming the first output off the reference."""
    for index, want in expected.items():
        out = got[index]
        if not np.allclose(out, want, rtol=task.rtol, atol=task.atol, equal_nan=False):
            worst = float(np.nanmax(np.abs(out.astype("float64") - want))) if out.size else 0
            name = task.func.params[index].name
            raise CandidateError(
                "wrong_result",
                f"output {name} differs from the reference (max |diff| {worst:.3g})",
            )


def calls_per_timing(task, first: float) -> int:
    """Calls per timing: enough that one timing lasts ``task.min_repeat_s`` (``first``: the
    seconds of one call)."""
    if task.min_repeat_s > 0 and first < task.min_repeat_s:
        return int(task.min_repeat_s / max(first, 1e-7)) + 1
    return 1


# ----------------------------------------------------------------------------------------
# The local runner
# ----------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """The tuner's own kernel cache folder (pruned), apart from the interactive one: under
    the user's private cache folder (``kernel_cache.cache_root``), never a shared ``/tmp``
    name another user could create first."""
    from workbench.backends.common.kernel_cache import cache_root, private_dir

    return private_dir(cache_root() / "tune-kernels")


def prune_kernel_cache(directory: Path, max_entries: int) -> int:
    """Keep the ``max_entries`` most recently used generated kernels (and their Numba cache
    files); see ``kernel_cache.prune_disk_cache``."""
    from workbench.backends.common.kernel_cache import prune_disk_cache

    return prune_disk_cache(directory, max_entries=max_entries)


class LocalRunner:
    """Build in ``n_build`` worker processes, measure serially in one, all isolated.

    Parameters
    ----------
    n_build : int, optional
        Parallel build workers (default: the number of CPUs, at most 4).
    build_timeout_s, measure_timeout_s : float
        Per-candidate limits; past them the worker is killed and the candidate fails.
    cache_dir : path, optional
        Kernel cache folder of the workers (default ``default_cache_dir()``).
    max_cache_entries : int
        Kernels kept in ``cache_dir`` after each batch.
    recycle_after : int
        Calls after which a worker process is replaced.

    Example
    -------
    >>> with LocalRunner(n_build=2) as runner:             # doctest: +SKIP
    ...     outcomes = runner.run(task, candidates)
    """

    def __init__(
        self,
        n_build: int | None = None,
        build_timeout_s: float = 300.0,
        measure_timeout_s: float = 120.0,
        cache_dir: str | os.PathLike | None = None,
        max_cache_entries: int = 512,
        recycle_after: int = 200,
    ):
        self.n_build = n_build or max(1, min(4, machine_facts().cpu_count))
        self.build_timeout_s = build_timeout_s
        self.measure_timeout_s = measure_timeout_s
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.max_cache_entries = max_cache_entries
        env = {"WORKBENCH_CACHE_DIR": str(self.cache_dir)}
        self._builders: queue.SimpleQueue = queue.SimpleQueue()
        self._all_builders = [
            IsolatedWorker(env, recycle_after) for _ in range(self.n_build)
        ]
        for worker in self._all_builders:
            self._builders.put(worker)
        self._measurer = IsolatedWorker(env, recycle_after)
        self._lock = threading.Lock()

    def _build_one(self, task: Task, candidate: Candidate) -> tuple:
        worker = self._builders.get()
        try:
            return worker.call(build_candidate, (task, candidate.trace), self.build_timeout_s)
        finally:
            self._builders.put(worker)

    def warm_up(self, task: Task) -> None:
        """Start every worker and prepare it for ``task`` (imports, the first compile,
        the measuring worker's reference), in parallel. ``wb.tune`` runs this in a thread
        while the strategy ranks its first candidates; ``run`` waits for it."""
        def warm(worker):
            worker.call(warm_builder, (task,), self.build_timeout_s)

        with self._lock:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            with ThreadPoolExecutor(self.n_build + 1) as pool:
                jobs = [pool.submit(warm, w) for w in self._all_builders]
                jobs.append(pool.submit(self._measurer.call, ready, (), self.measure_timeout_s,
                                        (id(task), prepare_task, (task,))))
                for job in jobs:
                    job.result()

    def run(self, task: Task, candidates: list[Candidate],
            events: Callable[[int, str], None] | None = None) -> list[Outcome]:
        """Build all candidates in parallel, then measure the built ones one by one.

        ``events(index, state)``, when given, hears each candidate go through
        ``building``, ``measuring`` and ``measured`` or ``failed`` (``progress.STAGES``).
        """
        tell = events or (lambda index, state: None)
        with self._lock:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            for index in range(len(candidates)):
                tell(index, "building")
            with ThreadPoolExecutor(self.n_build) as pool:
                built = list(pool.map(lambda c: self._build_one(task, c), candidates))
            outcomes = []
            for index, (candidate, build_reply) in enumerate(zip(candidates, built,
                                                                 strict=True)):
                if build_reply[0] != "ok":
                    outcomes.append(Outcome(error=build_reply[2], error_kind=build_reply[1]))
                    tell(index, "failed")
                    continue
                build_s = build_reply[1]["build_s"]
                tell(index, "measuring")
                reply = self._measurer.call(
                    measure_candidate,
                    (task, candidate.trace, candidate.config),
                    self.measure_timeout_s,
                    prepare=(id(task), prepare_task, (task,)),
                )
                if reply[0] == "ok":
                    outcomes.append(Outcome(times_s=list(reply[1]), build_s=build_s))
                else:
                    outcomes.append(Outcome(build_s=build_s, error=reply[2], error_kind=reply[1]))
                tell(index, "measured" if outcomes[-1].ok else "failed")
            prune_kernel_cache(self.cache_dir, self.max_cache_entries)
            return outcomes

    @property
    def restarts(self) -> int:
        """Worker processes replaced after a crash or a timeout so far."""
        return self._measurer.restarts + sum(w.restarts for w in self._all_builders)

    def close(self) -> None:
        for worker in self._all_builders:
            worker.close()
        self._measurer.close()

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
