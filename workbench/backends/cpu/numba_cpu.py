"""The ``cpu`` target: generated Python source compiled with ``numba.njit``, with caches.

Caching, two levels:

* **in memory**: keyed by the lowered function (structural equality and hash) plus the
  options; a second ``build`` of the same schedule in one process compiles nothing;
* **on disk**: the generated module is written to the kernel cache directory
  (``kernel_cache.kernel_cache_dir``: ``$WORKBENCH_CACHE_DIR``, else the user's private cache
  folder) under a file name made from a sha256 digest of its source (stable across
  processes, unlike ``hash()``). The module is executed from the source this process
  generated, never read back from the file: a file whose content differs (corrupted, edited)
  is written again, with its Numba cache files removed. Its function is
  ``@numba.njit(cache=True)``, so Numba stores the machine code next to it (``__pycache__``);
  a new process (a re-run notebook) loads it instead of compiling. A file that matches is
  never rewritten, since Numba's cache checks the file's modification time. The folder is
  pruned to its bounds (``kernel_cache.prune_disk_cache``) after each new module.

Compiling turns on LLVM's SLP vectorizer (``numba.config.SLP_VECTORIZE``, off by default in
Numba) for the duration of the compile, then restores the previous value. Numba reads the
setting each time it builds its module pass pipeline, so setting it around one compile takes
effect for that compile only (checked: straight-line float32 code on one array is packed into
vector instructions with it and stays scalar without, whatever ``NUMBA_SLP_VECTORIZE`` said
at import). On the kernels measured so far (matmul tiles 4x4 and 4x8 unrolled, 4x64
vectorized) the machine code is the same with and without it: LLVM's loop vectorizer does
the work there, and straight-line code that mixes two parameter arrays is not packed because
Numba cannot tell LLVM that the arrays do not alias.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
import warnings
from pathlib import Path

from workbench.backends.common import kernel_cache
from workbench.backends.common.codegen_python import GeneratedSource
from workbench.backends.common.kernel_cache import LRUCache, source_digest
from workbench.backends.common.kernel_cache import import_generated as _import_generated
from workbench.ir import PrimFunc


def _forget(key, compiled) -> None:
    """An evicted kernel: its module leaves ``sys.modules`` and its dispatcher leaves the
    module's globals, so that the dispatcher is freed once no ``Kernel`` holds it (the cycle
    dispatcher -> overloads -> Numba environment -> module globals -> dispatcher goes through
    Numba objects the garbage collector cannot see into, so it was never collected)."""
    module = sys.modules.get(compiled.path.stem)
    if module is not None and getattr(module, compiled.generated.func_name, None) is \
            compiled.dispatcher:
        del sys.modules[compiled.path.stem]
    globals_ = getattr(compiled.dispatcher, "py_func", None).__globals__
    if globals_.get(compiled.generated.func_name) is compiled.dispatcher:
        del globals_[compiled.generated.func_name]


_MEMORY_CACHE = LRUCache(on_evict=_forget)
"""Compiled kernels of this process, least recently used dropped first (bounded)."""
_GENERATED = LRUCache()
"""Generated source of this process by (lowered function, target key, cache flag)."""
_INDEX_LISTINGS: dict[str, tuple[int, frozenset[str]]] = {}
"""Per ``__pycache__`` folder: (its modification time, modules with a Numba index)."""
_COMPILE_LOCK = threading.Lock()


@dataclasses.dataclass
class CompiledKernel:
    """A compiled Numba function and what produced it."""

    generated: GeneratedSource
    dispatcher: object
    signature: tuple
    path: Path
    compile_seconds: float
    disk_cache_hit: bool


def kernel_cache_dir() -> Path:
    """The directory generated kernel modules are written to (created private if missing)."""
    return kernel_cache.kernel_cache_dir()


def _as_target(target):
    """A ``Target``; a plain options dict means the ``cpu`` target with those options."""
    from workbench.backends.common.target import Target

    return target if isinstance(target, Target) else Target("cpu", **target)


def compile_cpu(lowered: PrimFunc, target) -> tuple[CompiledKernel, str | None]:
    """Compile lowered ``lowered`` for ``target`` (a ``Target``, or the ``cpu`` target's
    options); return it and where it came from.

    On a miss, the target's passes run (``Target.run_passes``) and its printer prints.
    The second value is ``"memory"`` or ``"disk"`` for a cache hit, else None.
    """
    target = _as_target(target)
    key = (lowered, target.key())
    with _COMPILE_LOCK:
        cached = _MEMORY_CACHE.get(key)
        if cached is not None:
            return cached, "memory"
        compiled = _compile(lowered, target, debug=False)
        _MEMORY_CACHE[key] = compiled
    return compiled, ("disk" if compiled.disk_cache_hit else None)


def is_cached(func: PrimFunc, target) -> bool:
    """Whether building ``func`` (unlowered) for ``target`` compiles nothing: the kernel is
    in this process's memory cache, or its module and Numba's cache index are on disk.
    ``wb.compile`` sends only the others to its worker processes.

    The lowering and the generated source this needs are kept (``lowered_of``,
    ``generate``): the ``build`` that follows reuses them instead of lowering, running
    the target's passes and printing the kernel a second time.
    """
    from workbench.backends.common.build import lowered_of

    target = _as_target(target)
    lowered = lowered_of(func)
    with _COMPILE_LOCK:
        if (lowered, target.key()) in _MEMORY_CACHE:
            return True
    generated = generate(lowered, target)
    module_name = f"{kernel_cache.MODULE_PREFIX}{generated.func_name}_" \
                  f"{source_digest(generated.source)}"
    directory = kernel_cache_dir()
    return module_name in _indexed_modules(directory / "__pycache__") and \
        (directory / f"{module_name}.py").exists()


def _indexed_modules(pycache: Path) -> frozenset[str]:
    """The modules with a Numba cache index (``<module>.<function>-<line>.pyXY.nbi``) in
    ``pycache``, listed once per change of the folder (its modification time) rather than
    scanned per kernel (a glob over a full cache folder, ~2700 files, took ~5 ms; a model
    asks for every kernel). Only a hint for ``wb.compile``'s split of the work: a listing
    a change made in the same clock tick left stale sends a kernel to the wrong side, and
    the build is still right."""
    try:
        mtime = os.stat(pycache).st_mtime_ns
    except OSError:
        return frozenset()
    kept = _INDEX_LISTINGS.get(str(pycache))
    if kept is not None and kept[0] == mtime:
        return kept[1]
    names = frozenset(name.split(".", 1)[0] for name in os.listdir(pycache)
                      if name.endswith(".nbi"))
    _INDEX_LISTINGS[str(pycache)] = (mtime, names)
    return names


def generate(lowered: PrimFunc, target, *, cache: bool = True) -> GeneratedSource:
    """The module text of lowered ``lowered`` for ``target``: the target's passes, then its
    printer (``@numba.njit(cache=cache)``). Kept per process (bounded, ``_GENERATED``): the
    text is what this process generated, so reusing it trusts nothing read from disk."""
    key = (lowered, target.key(), cache)
    generated = _GENERATED.get(key)
    if generated is None:
        generated = _print(lowered, target, cache)
        _GENERATED[key] = generated
    return generated


def _print(lowered: PrimFunc, target, cache: bool) -> GeneratedSource:
    return target.kind.printer.from_target(target.run_passes(lowered), target,
                                           cache=cache).run()


def clear_memory_cache() -> int:
    """Forget every kernel compiled in this process; return how many were dropped.

    The next ``build`` of any schedule compiles again (or loads from the disk cache, which
    this leaves alone: point ``WORKBENCH_CACHE_DIR`` at an empty directory to miss it
    too). Used to time compiles (``bench/bench_compile.py``).

    Example
    -------
    >>> from tests.ir_examples import add_relu
    >>> from workbench.backends import build
    >>> _ = build(add_relu(8), target="cpu")
    >>> clear_memory_cache() >= 1
    True
    >>> build(add_relu(8), target="cpu").cache_hit != "memory"
    True
    """
    from workbench.backends.common.build import clear_lowered

    with _COMPILE_LOCK:
        dropped = _MEMORY_CACHE.clear()
        _GENERATED.clear()
        clear_lowered()
        for name in [m for m in sys.modules if m.startswith(kernel_cache.MODULE_PREFIX)]:
            del sys.modules[name]
    return dropped


def compile_twin(lowered: PrimFunc, target, *, debug: bool) -> CompiledKernel:
    """The same kernel compiled again without Numba's disk cache, for inspection.

    Numba cannot show the LLVM IR or assembly of code it loaded from its disk cache, so
    ``kernel.llvm``/``kernel.asm`` of a disk-cache hit use this twin. With ``debug=True``
    the LLVM IR carries source line numbers: the vectorization report maps vector
    instructions to loops with it. Debug info does not change LLVM's optimizations, and the
    generated source has the same lines.
    """
    target = _as_target(target)
    key = (lowered, target.key(), "debug" if debug else "inspect")
    with _COMPILE_LOCK:
        cached = _MEMORY_CACHE.get(key)
        if cached is None:
            with warnings.catch_warnings():
                # parallel kernels: Numba cannot find source for its generated gufunc
                warnings.filterwarnings("ignore", message="Could not find source")
                cached = _compile(lowered, target, debug=debug, cache=False)
            _MEMORY_CACHE[key] = cached
    return cached


def _compile(lowered: PrimFunc, target, *, debug: bool, cache: bool = True) -> CompiledKernel:
    import numba
    import numpy as np
    from numba import types

    generated = generate(lowered, target, cache=cache)
    source = generated.source
    if debug:
        source = source.replace("@numba.njit(", "@numba.njit(debug=True, ", 1)
    module = _import_generated(source, generated.func_name)
    dispatcher = getattr(module, generated.func_name)
    signature = tuple(
        types.Array(numba.from_dtype(np.dtype(p.dtype)), p.ndim, "C")
        for p in lowered.params + generated.workspace
    )
    previous = numba.config.SLP_VECTORIZE
    numba.config.SLP_VECTORIZE = 1
    start = time.perf_counter()
    try:
        dispatcher.compile(signature)
    finally:
        numba.config.SLP_VECTORIZE = previous
    seconds = time.perf_counter() - start
    hits = sum(dispatcher.stats.cache_hits.values())
    return CompiledKernel(
        generated, dispatcher, signature, Path(module.__file__), seconds, hits > 0
    )
