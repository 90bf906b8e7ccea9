"""One candidate at a time in a child process that may crash or hang without harm.

``IsolatedWorker`` keeps a fresh Python process (``python -c ...`` running ``_child_main``,
not a fork: the parent may hold Numba's OpenMP threads, which a fork would copy in a broken
state; not multiprocessing's spawn either, which re-runs the user's ``__main__`` script)
and calls top-level functions in it through a socket pair (functions go by reference,
pickled like multiprocessing does; the child gets the parent's ``sys.path``). A call
returns ``("ok", value)`` or ``("error", kind, message)`` where ``kind`` is:

* ``"crash"``: the child died (a segfault in a generated kernel, ``os.abort``...); the message
  names the signal; the next call starts a new child;
* ``"timeout"``: no answer within the time limit; the child is killed and replaced;
* anything a function raised as ``CandidateError(kind, message)`` (``"build"``,
  ``"wrong_result"``...), or ``"error"`` for any other exception (its traceback's tail).

Children are recycled after ``recycle_after`` calls, which bounds whatever a long run would
otherwise accumulate in them (compiled kernels, memory).
"""

from __future__ import annotations

import importlib
import os
import signal
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

START_TIMEOUT_S = 180.0
_CHILD_COMMAND = (
    "import sys; from multiprocessing.connection import Connection; "
    "from workbench.tune.isolation import _child_main; _child_main(Connection(int(sys.argv[1])))"
)


class CandidateError(Exception):
    """Raised by a worker function to report a failure of a given kind."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    def __reduce__(self):
        return type(self), (self.kind, self.message)


def resolve(qualname: str) -> Callable:
    """``"package.module:function"`` -> the function (imported in the calling process)."""
    module, _, name = qualname.partition(":")
    return getattr(importlib.import_module(module), name)


def _child_main(conn) -> None:
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if message is None:
            return
        fn, args = message
        try:
            conn.send(("ok", fn(*args)))
        except CandidateError as err:
            conn.send(("error", err.kind, err.message))
        except BaseException as err:  # noqa: BLE001 - report everything, keep serving
            tail = "".join(traceback.format_exception(err)[-3:])
            conn.send(("error", "error", f"{type(err).__name__}: {err}\n{tail}"[-2000:]))


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "the worker process stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker process died with {name}"
    return f"the worker process exited with status {exitcode}"


class IsolatedWorker:
    """A child process that runs one call at a time, replaced when it crashes or hangs.

    Parameters
    ----------
    env : dict, optional
        Environment variables set in the child before it runs anything.
    recycle_after : int
        Calls after which the child is replaced by a fresh one.
    """

    def __init__(self, env: dict | None = None, recycle_after: int = 200):
        self.env = dict(env or {})
        self.recycle_after = recycle_after
        self._process = None
        self._conn = None
        self._calls = 0
        self._prepared = None
        self.restarts = 0

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        from workbench.backends.common.machine import numba_child_env

        env = {**os.environ, **numba_child_env(), **self.env,
               "PYTHONPATH": os.pathsep.join(p or "." for p in sys.path)}
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD_COMMAND, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        conn = Connection(ours.detach())
        if not conn.poll(START_TIMEOUT_S):
            process.kill()
            raise RuntimeError("an isolated worker did not start")
        conn.recv()
        self._process, self._conn, self._calls = process, conn, 0

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _exitcode(self) -> int | None:
        try:
            return self._process.wait(5)
        except subprocess.TimeoutExpired:
            return None

    def _kill(self) -> None:
        if self._process is not None:
            if self._alive():
                self._process.kill()
            self._exitcode()
            self._conn.close()
        self._process = self._conn = None
        self._prepared = None

    def call(self, fn: Callable, args: tuple, timeout: float,
             prepare: tuple | None = None) -> tuple:
        """Run ``fn(*args)`` in the child; ``("ok", value)`` or ``("error", kind, message)``.

        ``prepare=(key, fn, args)`` runs first, outside the time limit, in every child that
        has not yet run that key (a new child after a crash, say): imports, references.
        """
        if prepare is not None:
            if self._process is None or not self._alive() or self._calls >= self.recycle_after:
                self.close()
                self._start()
            if self._prepared != prepare[0]:
                reply = self._call(prepare[1], prepare[2], START_TIMEOUT_S)
                if reply[0] != "ok":
                    return reply
                self._prepared = prepare[0]
        return self._call(fn, args, timeout)

    def _call(self, fn: Callable, args: tuple, timeout: float) -> tuple:
        if self._process is not None and (
            not self._alive() or self._calls >= self.recycle_after
        ):
            self.close()
        if self._process is None:
            self._start()
        self._calls += 1
        try:
            self._conn.send((fn, args))
            if self._conn.poll(timeout):
                return self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            message = describe_exit(self._exitcode())
            self._kill()
            self.restarts += 1
            return ("error", "crash", message)
        self._kill()
        self.restarts += 1
        return ("error", "timeout", f"no result within {timeout:g} s (the worker was killed)")

    def close(self) -> None:
        """Stop the child (politely, then by force)."""
        if self._process is None:
            return
        try:
            self._conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        try:
            self._process.wait(2)
        except subprocess.TimeoutExpired:
            pass
        self._kill()

    def __del__(self):
        try:
            self._kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

