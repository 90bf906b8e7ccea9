"""``DaskRunner``: the runner interface on a ``dask.distributed`` cluster.

Same contract as ``LocalRunner.run(task, candidates) -> list[Outcome]``: builds go to the
cluster in parallel (one task per candidate), measurements one at a time, all on one
worker chosen at start (the *measuring* worker), so two timed kernels never share a
machine. Inside a Dask worker every candidate still runs in an ``IsolatedWorker`` child
process kept per Dask worker thread, so a segfault or a hang costs that child, never the
Dask worker (Dask would otherwise retry a task that killed its worker, and could not stop
a hung one).

On one machine (a ``LocalCluster``) builds land in the shared kernel cache and the
measurement loads them; on a real cluster a measurement whose kernel was built elsewhere
compiles it again (correct, only slower).

Example
-------
>>> from dask.distributed import Client, LocalCluster            # doctest: +SKIP
>>> client = Client(LocalCluster(processes=True, n_workers=2))   # doctest: +SKIP
>>> wb.tune(func, runner=DaskRunner(client), trials=64)           # doctest: +SKIP
"""

from __future__ import annotations

import threading

from workbench.tune.isolation import IsolatedWorker
from workbench.tune.runner import (
    Candidate,
    Outcome,
    Task,
    build_candidate,
    default_cache_dir,
    measure_candidate,
    prepare_task,
    prune_kernel_cache,
)

_LOCAL = threading.local()


def _worker(env: dict) -> IsolatedWorker:
    worker = getattr(_LOCAL, "worker", None)
    if worker is None:
        worker = _LOCAL.worker = IsolatedWorker(env)
    return worker


def dask_build(task: Task, trace: str, timeout: float, env: dict) -> tuple:
    """A Dask task: build one candidate in this worker thread's isolated child."""
    return _worker(env).call(build_candidate, (task, trace), timeout)


def dask_measure(task: Task, candidate: Candidate, timeout: float, env: dict) -> tuple:
    """A Dask task: check and time one candidate in the isolated child."""
    return _worker(env).call(
        measure_candidate, (task, candidate.trace, candidate.config), timeout,
        prepare=(task.key, prepare_task, (task,)),
    )


def dask_prune(directory: str, max_entries: int) -> int:
    from pathlib import Path

    return prune_kernel_cache(Path(directory), max_entries)


class DaskRunner:
    """Run candidates on a ``dask.distributed.Client``.

    Parameters
    ----------
    client : dask.distributed.Client
    build_timeout_s, measure_timeout_s : float
        Per-candidate limits (past them the isolated child is killed).
    cache_dir : str, optional
        Kernel cache folder on the workers (default: the local runner's default path).
    max_cache_entries : int
    """

    def __init__(self, client, build_timeout_s: float = 300.0, measure_timeout_s: float = 120.0,
                 cache_dir: str | None = None, max_cache_entries: int = 512):
        self.client = client
        self.build_timeout_s = build_timeout_s
        self.measure_timeout_s = measure_timeout_s
        self.cache_dir = str(cache_dir or default_cache_dir())
        self.max_cache_entries = max_cache_entries
        self.env = {"WORKBENCH_CACHE_DIR": self.cache_dir}
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        self.measuring_worker = workers[0]

    def run(self, task: Task, candidates: list[Candidate], events=None) -> list[Outcome]:
        """Build on the whole cluster, then measure one by one on the measuring worker
        (``events(index, state)`` as ``LocalRunner.run``)."""
        tell = events or (lambda index, state: None)
        for index in range(len(candidates)):
            tell(index, "building")
        futures = [
            self.client.submit(dask_build, task, c.trace, self.build_timeout_s, self.env,
                               pure=False, retries=0)
            for c in candidates
        ]
        built = self.client.gather(futures)
        outcomes = []
        for index, (candidate, reply) in enumerate(zip(candidates, built, strict=True)):
            if reply[0] != "ok":
                outcomes.append(Outcome(error=reply[2], error_kind=reply[1]))
                tell(index, "failed")
                continue
            tell(index, "measuring")
            future = self.client.submit(
                dask_measure, task, candidate, self.measure_timeout_s, self.env,
                pure=False, retries=0, workers=[self.measuring_worker],
                allow_other_workers=False,
            )
            measured = future.result()
            if measured[0] == "ok":
                outcomes.append(Outcome(times_s=list(measured[1]), build_s=reply[1]["build_s"]))
            else:
                outcomes.append(Outcome(build_s=reply[1]["build_s"], error=measured[2],
                                        error_kind=measured[1]))
            tell(index, "measured" if outcomes[-1].ok else "failed")
        self.client.run(dask_prune, self.cache_dir, self.max_cache_entries)
        return outcomes

    def close(self) -> None:
        """Nothing to stop here: the client and its cluster belong to the caller."""

    def __enter__(self) -> DaskRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
