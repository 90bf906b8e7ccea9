"""Shared by the tests of ``bench/gpu``'s scripts: a script imported as a module."""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import sys

BENCH_GPU = pathlib.Path(__file__).resolve().parents[1] / "bench" / "gpu"


@contextlib.contextmanager
def bench_module(name: str):
    """``bench/gpu/<name>.py`` imported as module ``name``, in ``sys.modules`` while the
    ``with`` lasts (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, BENCH_GPU / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
