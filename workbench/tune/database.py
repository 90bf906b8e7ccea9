"""The tuning records database: one JSON object per line (JSONL), never pickle.

Every measured candidate becomes one record: the workload, the target, the search space's
configuration and the schedule trace (JSON) that realises it, the machine and software
fingerprint, the seed, every timing and any error. ``Database.append`` writes the line and
flushes it (``os.fsync`` too), so killing a tuning run loses no finished record.
Reading skips lines that are not a valid record (a half-written last line after a kill, a
hand edit) and reports them in ``Database.corrupt`` and as a ``RecordWarning``, never fatal.

Example
-------
>>> db = Database("records.jsonl")                       # doctest: +SKIP
>>> db.append(Record("matmul-3f2a", "cpu", {"tile": [4, 64]}))   # doctest: +SKIP
>>> [r.config for r in db.records(workload="matmul-3f2a")]  # doctest: +SKIP
[{'tile': [4, 64]}]
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import platform
import warnings
from pathlib import Path
from typing import Any

RECORD_FORMAT = "workbench.tune.record"
RECORD_VERSION = 1


class RecordWarning(UserWarning):
    """A line of a records file that is not a valid record (skipped)."""


def config_key(config: dict) -> str:
    """The canonical text of a configuration: equal configs give equal keys."""
    return json.dumps(_jsonable(config), sort_keys=True, separators=(",", ":"))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()  # numpy scalars
    return value


def workload_key(func, target: str) -> str:
    """A stable key for (function, target): the function's name and a digest of its text."""
    text = func.script() + "\n" + str(target)
    return f"{func.name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def machine_fingerprint() -> dict:
    """What the timings depend on: CPU model, cores, OS, Python (cheap, no measurement)."""
    from workbench.backends.common.machine import machine_facts
    from workbench.measure.peaks import cpu_model

    return {
        "cpu": cpu_model(),
        "cores": machine_facts().cpu_count,
        "system": platform.system(),
        "release": platform.release(),
        "python": platform.python_version(),
        "host": hashlib.sha256(platform.node().encode()).hexdigest()[:12],
    }


def software_fingerprint() -> dict:
    """Versions of the packages a kernel depends on."""
    import numba
    import numpy

    import workbench

    return {"workbench": workbench.__version__, "numpy": numpy.__version__,
            "numba": numba.__version__}


@dataclasses.dataclass
class Record:
    """One measured (or failed) candidate.

    ``latency_s`` is the median of ``times_s`` (None when the candidate failed);
    ``error_kind`` is one of ``"schedule"``, ``"build"``, ``"crash"``, ``"timeout"``,
    ``"wrong_result"``, ``"run"`` (None on success).
    """

    workload: str
    target: str
    config: dict
    trace: str | None = None
    space: str = ""
    func_name: str = ""
    latency_s: float | None = None
    times_s: list[float] = dataclasses.field(default_factory=list)
    gflops: float | None = None
    build_s: float | None = None
    predicted_s: float | None = None
    error: str | None = None
    error_kind: str | None = None
    seed: int | None = None
    trial: int | None = None
    strategy: str = ""
    machine: dict = dataclasses.field(default_factory=dict)
    software: dict = dataclasses.field(default_factory=dict)
    timestamp: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and self.latency_s is not None

    @property
    def key(self) -> str:
        return config_key(self.config)

    def to_json(self) -> str:
        data = {"format": RECORD_FORMAT, "version": RECORD_VERSION}
        data.update(_jsonable(dataclasses.asdict(self)))
        if not data["timestamp"]:
            data["timestamp"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return json.dumps(data, sort_keys=False)

    @classmethod
    def from_json(cls, line: str) -> Record:
        """Parse one line; raises ``ValueError`` for anything that is not a record."""
        data = json.loads(line)
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            raise ValueError("not a workbench tuning record")
        if data.get("version") != RECORD_VERSION:
            raise ValueError(f"unsupported record version {data.get('version')!r}")
        fields = {f.name for f in dataclasses.fields(cls)}
        missing = {"workload", "target", "config"} - set(data)
        if missing:
            raise ValueError(f"record without {', '.join(sorted(missing))}")
        if not isinstance(data["config"], dict):
            raise ValueError("record config must be an object")
        return cls(**{k: v for k, v in data.items() if k in fields})


class Database:
    """Records in a JSONL file; appends are flushed and synced one record at a time.

    Parameters
    ----------
    path : str or Path
        The file (created with its folder on the first append).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.corrupt: list[tuple[int, str]] = []

    def append(self, record: Record) -> None:
        """Write one record as one line, then flush and fsync: a kill loses nothing written."""
        line = record.to_json()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as handle:
            # a run killed mid-line left no newline: start on a fresh line, so the damage
            # stays one corrupt line and this record stays readable
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write((line + "\n").encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())

    def records(self, workload: str | None = None, target: str | None = None) -> list[Record]:
        """Every valid record (optionally of one workload and target), in file order.

        Invalid lines are skipped; their line numbers and reasons land in ``self.corrupt``
        and one ``RecordWarning`` names them.
        """
        self.corrupt = []
        if not self.path.exists():
            return []
        out = []
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = Record.from_json(line)
                except (ValueError, TypeError) as err:
                    self.corrupt.append((number, str(err)[:200]))
                    continue
                if workload is not None and record.workload != workload:
                    continue
                if target is not None and record.target != target:
                    continue
                out.append(record)
        if self.corrupt:
            lines = ", ".join(str(n) for n, _ in self.corrupt[:10])
            warnings.warn(
                f"{self.path}: skipped {len(self.corrupt)} corrupt record line(s): {lines}",
                RecordWarning,
                stacklevel=2,
            )
        return out

    def measured_keys(self, workload: str, target: str) -> set[str]:
        """Config keys already recorded (measured or failed) for this workload and target."""
        return {r.key for r in self.records(workload, target)}

    def best(self, workload: str | None = None, target: str | None = None) -> Record | None:
        """The fastest successful record, or None."""
        ok = [r for r in self.records(workload, target) if r.ok]
        return min(ok, key=lambda r: r.latency_s) if ok else None

    def workloads(self) -> list[tuple[str, str]]:
        """The (workload, target) pairs present, in order of first appearance."""
        seen: dict[tuple[str, str], None] = {}
        for r in self.records():
            seen.setdefault((r.workload, r.target), None)
        return list(seen)

    def __len__(self) -> int:
        return len(self.records())

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r})"
