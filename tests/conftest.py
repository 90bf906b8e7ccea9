"""Shared pytest set-up.

Order matters here: Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when it is first imported, so
the variable is set before anything below (or any test module) can import numba. CI has no GPU;
the CUDA backend's tests run under Numba's CUDA simulator.
"""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# Headless: matplotlib must never try to open a window.
os.environ.setdefault("MPLBACKEND", "Agg")

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def _session_cache_dir() -> None:
    """Point ``WORKBENCH_CACHE_DIR`` at a fresh temp dir for this test session.

    Tests must neither read kernels a user compiled nor leave theirs behind. A value already
    set (by the user, or inherited by a pytest-xdist worker from the controller) is kept; the
    process that created the directory removes it at exit.
    """
    if "WORKBENCH_CACHE_DIR" in os.environ:
        return
    path = tempfile.mkdtemp(prefix="workbench-test-cache-")
    os.environ["WORKBENCH_CACHE_DIR"] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)


_session_cache_dir()


def _session_machine() -> None:
    """``WB_TEST_MACHINE=<name>``: the whole session plans for that machine description
    (``tests/machines.py``) instead of the host, installed before any test module is imported
    so that module-level constants read it too. CI runs the machine-sensitive files under
    each description (``docs/ci_audit.md``)."""
    name = os.environ.get("WB_TEST_MACHINE")
    if not name:
        return
    from machines import MACHINES, install

    if name not in MACHINES:
        raise pytest.UsageError(f"WB_TEST_MACHINE={name!r}: not one of {sorted(MACHINES)}")
    install(MACHINES[name])


_session_machine()


@pytest.fixture
def machine(request, monkeypatch):
    """The host facts replaced by a machine description of ``tests/machines.py`` for one test
    (parametrize indirectly with its name); yields the description."""
    from machines import MACHINES, install

    described = MACHINES[request.param]
    undo = install(described, monkeypatch.setattr)
    yield described
    undo()


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded random generator: tests use random non-zero inputs, reproducibly."""
    return np.random.default_rng(0)


def pytest_addoption(parser):
    """``pytest --regen-golden`` rewrites golden files (printed IR, generated source) instead of
    comparing with them; review the change with ``git diff tests/``."""
    parser.addoption(
        "--regen-golden",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output",
    )
