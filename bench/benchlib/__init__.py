"""Shared helpers of the benchmark scripts in ``bench/``.

Every script measures its candidates side by side in one process run, in interleaved
rounds: round ``r`` times every candidate once (a median of ``repeats`` calls), in an
order that alternates between rounds so that no candidate always runs first after a
pause. On a machine shared with other work the absolute numbers drift by 2x and more
within minutes; the ratio of two candidates timed in the same round drifts much less, so
the scripts report the median per candidate and the median of the per-round ratios.

numpy's BLAS is timed twice: in this process with the environment as it is, and in a
worker subprocess started with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` (see
``NumpyWorker``), since those two variables (set on the VM this was developed on) make
OpenBLAS pick a slower kernel. The variables are changed for that subprocess only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "RESULTS.md"
OPENBLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

if str(REPO_ROOT) not in sys.path:  # run as `python bench/x.py` from a checkout
    sys.path.insert(0, str(REPO_ROOT))


# --- timing -------------------------------------------------------------------------------


def time_calls(fn: Callable, args: tuple, repeats: int, warmup: int = 1) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``fn(*args)``, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn(*args)
        times.append((time.perf_counter_ns() - start) * 1e-9)
    return times


class Rounds:
    """What ``interleaved_rounds`` measured.

    Attributes
    ----------
    medians : dict[str, list[float]]
        Per candidate, the median seconds of its calls in each round.
    calls : dict[str, list[float]]
        Per candidate, the seconds of every timed call of every round.
    """

    def __init__(self, names: list[str]) -> None:
        self.medians: dict[str, list[float]] = {name: [] for name in names}
        self.calls: dict[str, list[float]] = {name: [] for name in names}

    def best(self, name: str) -> float:
        """The fastest single call: the closest to what a quiet machine gives."""
        return min(self.calls[name])


def interleaved_rounds(
    candidates: dict[str, Callable[[], list[float]]],
    rounds: int,
    log: Callable[[str], None] = print,
) -> Rounds:
    """Run ``rounds`` rounds; each calls every candidate once (it returns call times).

    The order alternates (forward in even rounds, reversed in odd ones).
    """
    names = list(candidates)
    result = Rounds(names)
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            times = candidates[name]()
            result.calls[name].extend(times)
            result.medians[name].append(median(times))
        log(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{name} {result.medians[name][-1] * 1e3:.2f} ms" for name in names))
    return result


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def ratios(numerator: list[float], denominator: list[float]) -> list[float]:
    """Per-round ratios ``numerator[r] / denominator[r]``."""
    return [a / b for a, b in zip(numerator, denominator, strict=True)]


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# --- numpy with the OpenBLAS variables unset ------------------------------------------------


class NumpyWorker:
    """A subprocess running numpy with ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` unset.

    It is started with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python
    bench/benchlib/numpy_worker.py`` and answers one JSON line per JSON request on stdin:
    ``setup`` (make the operands), ``check`` (max error against a float64 product),
    ``time`` (median seconds of ``repeats`` calls) and ``info`` (threadpoolctl's view).

    Example
    -------
    >>> with NumpyWorker() as worker:                  # doctest: +SKIP
    ...     worker.request("setup", what="matmul", n=1024, seed=0)
    ...     worker.request("time", repeats=10)["median_s"]
    """

    def __init__(self) -> None:
        command = ["env"]
        for name in OPENBLAS_VARIABLES:
            command += ["-u", name]
        command += [sys.executable, str(Path(__file__).with_name("numpy_worker.py"))]
        self.command = command
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def request(self, op: str, **kwargs) -> dict:
        self.process.stdin.write(json.dumps({"op": op, **kwargs}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"numpy worker exited (code {self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"numpy worker: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)

    def __enter__(self) -> NumpyWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- machine and library facts -----------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name, with its family/model numbers and widest SIMD (a VM may report
    only "AMD EPYC"; family 26 is AMD Zen 5)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or platform.machine()
    flags = fields.get("flags", "").split()
    simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    return (f"{fields.get('model name', platform.machine())} (family {fields.get('cpu family')}, "
            f"model {fields.get('model')}, {simd})")


def blas_info() -> list[dict]:
    """threadpoolctl's description of the BLAS libraries loaded in this process."""
    import threadpoolctl

    keys = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
    return [
        {key: entry.get(key) for key in keys}
        for entry in threadpoolctl.threadpool_info()
        if entry.get("user_api") == "blas"
    ]


def describe_blas(info: list[dict]) -> str:
    return "; ".join(
        f"{e['internal_api']} {e['version']}, kernel {e['architecture']}, "
        f"{e['num_threads']} threads" for e in info
    ) or "no BLAS found by threadpoolctl"


def machine_lines() -> list[str]:
    """Markdown bullet lines: date, machine, library versions, the OpenBLAS variables."""
    import numba
    import numpy

    env = ", ".join(f"`{name}={os.environ.get(name, '(unset)')}`" for name in OPENBLAS_VARIABLES)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"- date: {now}",
        f"- machine: {cpu_model()}, {os.cpu_count()} cores visible "
        f"({platform.system()} {platform.release()}, Python {platform.python_version()})",
        f"- numpy {numpy.__version__}, numba {numba.__version__} "
        f"(threading layer {_threading_layer()}, {numba.get_num_threads()} threads)",
        f"- environment: {env}",
        "- the machine was shared with other work (other engineers' tests and builds) while "
        f"this ran (load average 1/5/15 min at the end: {load_average()} on "
        f"{os.cpu_count()} cores): absolute numbers drift, and a parallel kernel whose "
        "second thread shares a core with another process runs at the pace of that thread. "
        "The per-round ratios are the meaningful part; the best single call of each "
        "candidate approximates a quiet machine.",
    ]


def _threading_layer() -> str:
    import numba

    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel ran yet
        return numba.config.THREADING_LAYER


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def command_line() -> str:
    script = Path(sys.argv[0]).resolve()
    try:
        shown = script.relative_to(REPO_ROOT)
    except ValueError:
        shown = script
    return " ".join([".venv/bin/python", str(shown), *sys.argv[1:]])


# --- RESULTS.md ------------------------------------------------------------------------------


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in
    ``path`` with ``body`` (append the section when the markers are missing)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def parser(description: str) -> argparse.ArgumentParser:
    """The command line every script shares: ``--quick`` (a fast smoke run at tiny sizes
    that never writes RESULTS.md) and ``--rounds``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes, few rounds; print only, never write bench/RESULTS.md")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    p.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    return p
