"""The tuning records database: one JSON object per line (JSONL), never pickle.

Every measured candidate becomes one record: the workload, the target, the search space's
configuration and the schedule trace (JSON) that realises it, the machine and software
fingerprint, the seed, every timing and any error. ``Database.append`` writes the line and
flushes it (``os.fsync`` too), so killing a tuning run loses no finished record.
Reading skips lines that are not a valid record (a half-written last line after a kill, a
hand edit, a latency that is not a positive finite number, a string where a number belongs,
a trace that does not parse) and reports them in ``Database.corrupt`` and as one
``RecordWarning`` per line (once per ``Database``), never fatal: an invalid record is never
the best.

Two processes tuning into one file: appends hold the file's lock (``<file>.lock``, the
``filelock`` package), and ``claim`` hands each process configurations no record and no
other live process has taken (claims in ``<file>.claims``), so no trial is measured twice.

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
import math
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

    from workbench import __version__

    return {"workbench": __version__, "numpy": numpy.__version__,
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
        _check_fields(data)
        return cls(**{k: v for k, v in data.items() if k in fields})


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_fields(data: dict) -> None:
    """``ValueError`` naming the first field of a record line that has the wrong type or an
    impossible value (a hand edit, another tool's output)."""
    for name in ("workload", "target", "space", "func_name", "strategy", "timestamp"):
        if name in data and not isinstance(data[name], str):
            raise ValueError(f"{name} must be a string, not {data[name]!r}"[:200])
    for name in ("trace", "error", "error_kind"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise ValueError(f"{name} must be a string or null, not {data[name]!r}"[:200])
    latency = data.get("latency_s")
    if latency is not None and not (_is_number(latency) and math.isfinite(latency)
                                    and latency > 0):
        raise ValueError(f"latency_s must be a positive finite number, not {latency!r}"[:200])
    times = data.get("times_s", [])
    if not isinstance(times, list) or not all(
            _is_number(t) and math.isfinite(t) and t > 0 for t in times):
        raise ValueError(f"times_s must be a list of positive finite numbers, not {times!r}"
                         [:200])
    for name in ("gflops", "build_s"):
        value = data.get(name)
        if value is not None and not (_is_number(value) and math.isfinite(value)
                                      and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, not {value!r}"[:200])
    predicted = data.get("predicted_s")
    if predicted is not None and not (_is_number(predicted) and predicted == predicted):
        raise ValueError(f"predicted_s must be a number, not {predicted!r}"[:200])
    for name in ("seed", "trial"):
        value = data.get(name)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool)):
            raise ValueError(f"{name} must be an integer, not {value!r}"[:200])
    for name in ("machine", "software"):
        if name in data and not isinstance(data[name], dict):
            raise ValueError(f"{name} must be an object, not {data[name]!r}"[:200])
    if data.get("trace") is not None:
        from workbench.schedule.trace import Trace

        try:
            Trace.from_json(data["trace"])
        except Exception as err:  # noqa: BLE001 - any reason: the trace cannot be replayed
            raise ValueError(f"the trace does not parse: {err}"[:200]) from None


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
        self._warned: set[tuple[int, str]] = set()

    def _lock(self):
        """The file's lock (``<file>.lock``): appends and claims of every process hold it."""
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path) + ".lock")

    @property
    def claims_path(self) -> Path:
        return self.path.with_name(self.path.name + ".claims")

    def claim(self, workload: str, target: str, configs: list[dict]) -> list[dict]:
        """Of ``configs``, those that no record of ``workload`` on ``target`` and no other
        live process's claim has taken; they are claimed for this process until
        ``release``. Two processes tuning into one file so measure disjoint trials."""
        me = _claimant()
        with self._lock():
            taken = {r.key for r in self.records(workload, target)}
            for claim in self._claims():
                if (claim.get("workload"), claim.get("target")) == (workload, target) \
                        and _claimant_of(claim) != me and _alive(claim):
                    taken.add(claim.get("key"))
            kept, keys = [], set()
            for config in configs:
                key = config_key(config)
                if key not in taken and key not in keys:
                    keys.add(key)
                    kept.append(config)
            if kept:
                with open(self.claims_path, "a", encoding="utf-8") as handle:
                    for key in keys:
                        handle.write(json.dumps({"workload": workload, "target": target,
                                                 "key": key, **me}) + "\n")
        return kept

    def release(self) -> None:
        """Drop this process's claims, and those of processes that are gone."""
        if not self.claims_path.exists():
            return
        me = _claimant()
        with self._lock():
            keep = [c for c in self._claims() if _claimant_of(c) != me and _alive(c)]
            if keep:
                self.claims_path.write_text("".join(json.dumps(c) + "\n" for c in keep))
            else:
                self.claims_path.unlink(missing_ok=True)

    def _claims(self) -> list[dict]:
        if not self.claims_path.exists():
            return []
        out = []
        for line in self.claims_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                claim = json.loads(line)
            except ValueError:
                continue
            if isinstance(claim, dict):
                out.append(claim)
        return out

    def append(self, record: Record) -> None:
        """Write one record as one line, then flush and fsync: a kill loses nothing written.
        Holds the file's lock: lines of two processes never interleave."""
        line = record.to_json()
        with self._lock(), open(self.path, "a+b") as handle:
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
        new = [c for c in self.corrupt if c not in self._warned]
        if new:  # each invalid line is reported once per Database
            self._warned.update(new)
            lines = "; ".join(f"line {n}: {why}" for n, why in new[:10])
            warnings.warn(
                f"{self.path}: skipped {len(new)} corrupt record line(s): {lines}",
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


def _claimant() -> dict:
    return {"pid": os.getpid(), "host": hashlib.sha256(platform.node().encode()).hexdigest()[:12]}


def _claimant_of(claim: dict) -> dict:
    return {"pid": claim.get("pid"), "host": claim.get("host")}


def _alive(claim: dict) -> bool:
    """Whether the process that made ``claim`` still runs (a claim of another host is
    trusted: its processes cannot be checked from here)."""
    if claim.get("host") != _claimant()["host"]:
        return True
    pid = claim.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
