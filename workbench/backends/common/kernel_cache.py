"""Kernel caches: a bounded in-memory LRU, and the private, bounded folder on disk.

**In memory.** Each target keeps one ``LRUCache`` (``numba_cpu``, ``numba_cuda``): a notebook
that builds hundreds of schedules (a tuning run) keeps only the ``maxsize`` most recently used
kernels, where an unbounded dict kept every one until the process ended. An evicted entry is
handed to ``on_evict`` (``numba_cpu`` drops the generated module, so the dispatcher is freed
once no ``Kernel`` holds it). What stays per compile is LLVM's: Numba's JIT never unloads a
module (measured ~1.2 MB RSS per compiled kernel on this machine, Python objects < 0.03 MB),
which is why the tuner compiles in recycled worker processes.

**On disk.** ``kernel_cache_dir()`` is ``$WORKBENCH_CACHE_DIR`` or the user's cache folder
(``platformdirs.user_cache_dir("workbench")/kernels``, ``~/.cache/workbench/kernels`` on
Linux): never a predictable name in a shared ``/tmp``. ``private_dir`` creates it ``0700``
and refuses a folder another user owns (``CacheFolderError``); one of the user's own that
others may read is tightened to ``0700``. Generated modules are named by the sha256 of their
source, Numba's version and the text of every workbench module the source imports (the
runtime helpers it inlines: Numba's cache checks only the cached module's own file, so a
changed helper would otherwise keep its old machine code); ``import_generated`` compares a
file's content with its source before use (and executes the source it generated, never the
file). ``prune_disk_cache`` keeps the folder within
``DISK_MAX_KERNELS`` modules and ``DISK_MAX_BYTES`` (least recently used first: every use
sets the module file's access time).

Example
-------
>>> cache = LRUCache(maxsize=2)
>>> cache["a"] = 1; cache["b"] = 2; _ = cache.get("a"); cache["c"] = 3
>>> sorted(cache.keys())
['a', 'c']
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import stat
import sys
import tempfile
import threading
import time
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

from workbench.pyparse import parse

DEFAULT_MAXSIZE = 256
DISK_MAX_KERNELS = 2000
"""Generated modules kept in a kernel cache folder (least recently used pruned first)."""
DISK_MAX_BYTES = 1 << 30
"""Bytes kept in a kernel cache folder (modules and Numba's cache files)."""
MODULE_PREFIX = "workbench_kernel_"


class CacheFolderError(PermissionError):
    """A kernel cache folder that is not private to the user: owned by someone else, or not
    a folder. Set ``WORKBENCH_CACHE_DIR`` to a folder of your own."""


class LRUCache:
    """``key -> value`` with at most ``maxsize`` entries; the least recently used goes first."""

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE,
                 on_evict: Callable[[Hashable, object], None] | None = None):
        if maxsize < 1:
            raise ValueError(f"LRUCache: maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self.on_evict = on_evict
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def get(self, key: Hashable, default=None):
        with self._lock:
            if key not in self._data:
                self.misses += 1
                return default
            self.hits += 1
            self._data.move_to_end(key)
            return self._data[key]

    def __setitem__(self, key: Hashable, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._shrink(self.maxsize)

    def _shrink(self, maxsize: int) -> None:
        while len(self._data) > maxsize:
            key, value = self._data.popitem(last=False)
            self.evictions += 1
            if self.on_evict is not None:
                self.on_evict(key, value)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def keys(self) -> list:
        with self._lock:
            return list(self._data)

    def clear(self) -> int:
        """Drop every entry; return how many there were."""
        with self._lock:
            count = len(self._data)
            self._shrink(0)
            self.evictions -= count  # cleared, not evicted
            return count

    def resize(self, maxsize: int) -> None:
        """Change the bound (evicting the oldest entries if needed)."""
        with self._lock:
            self.maxsize = maxsize
            self._shrink(maxsize)


# ---- the folder on disk --------------------------------------------------------------------


def cache_root() -> Path:
    """``$WORKBENCH_CACHE_DIR`` if set, else the user's cache folder for workbench."""
    directory = os.environ.get("WORKBENCH_CACHE_DIR")
    if directory:
        return Path(directory).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("workbench", appauthor=False))


def kernel_cache_dir() -> Path:
    """The private folder generated kernel modules are written to (created if missing)."""
    if os.environ.get("WORKBENCH_CACHE_DIR"):
        return private_dir(cache_root())
    return private_dir(cache_root() / "kernels")


def private_dir(path) -> Path:
    """``path`` created ``0700`` if missing, checked to be a folder the user owns (one of
    theirs that others may read or write is set to ``0700``); ``CacheFolderError`` if not."""
    path = Path(path).expanduser()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.stat(path)  # a symlink is followed: its target must be the user's
    if not stat.S_ISDIR(info.st_mode):
        raise CacheFolderError(f"kernel cache {path} is not a folder")
    if hasattr(os, "getuid"):
        if info.st_uid != os.getuid():
            raise CacheFolderError(
                f"kernel cache {path} is owned by user id {info.st_uid}, not you "
                f"({os.getuid()}): workbench imports what it finds there; set "
                "WORKBENCH_CACHE_DIR to a folder of your own")
        if info.st_mode & 0o077:
            os.chmod(path, 0o700)
    return path


def touch(path: Path) -> None:
    """Mark module ``path`` used now (its access time; the modification time, which Numba's
    cache index checks, is kept)."""
    try:
        info = os.stat(path)
        os.utime(path, ns=(time.time_ns(), info.st_mtime_ns))
    except OSError:
        pass


def prune_disk_cache(directory, max_entries: int = DISK_MAX_KERNELS,
                     max_bytes: int = DISK_MAX_BYTES) -> int:
    """Delete the least recently used generated modules of ``directory`` (and their Numba
    cache files) until at most ``max_entries`` are left and they take at most ``max_bytes``;
    return how many were deleted."""
    directory = Path(directory)
    pycache = directory / "__pycache__"
    cached: dict[str, list[os.DirEntry]] = {}
    if pycache.is_dir():
        for entry in os.scandir(pycache):
            cached.setdefault(entry.name.split(".", 1)[0], []).append(entry)
    modules = []
    for entry in os.scandir(directory):
        if not (entry.name.startswith(MODULE_PREFIX) and entry.name.endswith(".py")):
            continue
        stem = entry.name[:-3]
        try:
            info = entry.stat(follow_symlinks=False)
            size = info.st_size + sum(e.stat(follow_symlinks=False).st_size
                                      for e in cached.get(stem, []))
        except OSError:
            continue  # removed by another process meanwhile
        modules.append((info.st_atime_ns, stem, size))
    modules.sort()
    total = sum(size for _, _, size in modules)
    removed = 0
    for _, stem, size in modules:
        if len(modules) - removed <= max_entries and total <= max_bytes:
            break
        for entry in cached.get(stem, []):
            Path(entry.path).unlink(missing_ok=True)
        (directory / f"{stem}.py").unlink(missing_ok=True)
        total -= size
        removed += 1
    return removed


@functools.cache
def _module_text(name: str) -> tuple[str, str]:
    """(sha256 of module ``name``'s file, its text), or empty strings for no such file."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return "", ""
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return "", ""
    with open(spec.origin, "rb") as file:
        data = file.read()
    return hashlib.sha256(data).hexdigest(), data.decode(errors="replace")


def _modules_digest(source: str) -> str:
    """One digest of every workbench module ``source`` imports, and theirs in turn."""
    seen, todo = set(), sorted(_imports(source))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        text = _module_text(name)[1]
        if text:
            todo.extend(_imports(text) - seen)
    return hashlib.sha256("".join(f"{name}:{_module_text(name)[0]}\n"
                                  for name in sorted(seen)).encode()).hexdigest()


def _imports(source: str) -> set[str]:
    """The workbench modules ``source`` imports at its top level (``from pkg import mod``
    names both; imports inside functions are left out)."""
    try:
        body = parse(source).body
    except SyntaxError:  # not Python: nothing it imports can be known
        return set()
    names = set()
    for node in body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] == "workbench"}


def source_digest(source: str) -> str:
    """A stable digest of generated source (same text -> same name in every process), of
    Numba's version and of the workbench modules the source imports (their own imports
    too): a changed runtime helper names a new module, whose Numba cache starts empty.

    >>> a = "from workbench.backends.cpu import runtime as rt"
    >>> source_digest(a) == source_digest(a) != source_digest(a.replace("as rt", "as r2"))
    True
    """
    import numba

    text = f"numba {numba.__version__}\n{_modules_digest(source)}\n{source}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def import_generated(source: str, func_name: str):
    """Write ``source`` to the cache directory (once) and execute it as a module (the
    ``cpu`` and ``cuda`` targets' generated modules, named by ``source_digest``).

    The module runs the text this process generated, never what the file holds; the file
    (which Numba's cache index is keyed on) must hold the same text, else it is written
    again and its Numba cache files are removed.
    """
    digest = source_digest(source)
    module_name = f"{MODULE_PREFIX}{func_name}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    directory = kernel_cache_dir()
    path = directory / f"{module_name}.py"
    data = source.encode()
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        current = None
    if current != data:
        if current is not None:
            warnings.warn(f"kernel cache: {path.name} did not hold the source its name's digest "
                          "stands for (corrupted or edited); it is written again", stacklevel=3)
            for cached in (directory / "__pycache__").glob(f"{module_name}.*"):
                cached.unlink(missing_ok=True)
        # write then rename: a concurrent process never sees a half-written module
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
        prune_disk_cache(directory)
    else:
        touch(path)
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 -- generated here
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
