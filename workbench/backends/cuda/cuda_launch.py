"""The lean call path of a built CUDA kernel: checks and launch set-up once per shape
signature, then only pointers per call.

Calling a ``CudaKernel`` with device arrays the plain way costs, on every call: the shape
and dtype check of every argument (``CudaKernel._check_device_arguments``), then per
launch Numba's dispatch (typing each argument, ``__cuda_array_interface__`` turned into a
``DeviceNDArray`` wrapper, the argument list rebuilt from it) before the driver call.
For a kernel that runs a few microseconds that host work is the whole cost.

``LeanLauncher`` keeps, per *shape signature* (the ``(shape, dtype)`` of each argument, the
array types), a ``LaunchPlan`` made on the first call with that signature, after the full
checks passed and the normal path compiled and launched the kernels:

* the argument template of every kernel, in Numba's kernel ABI (for each array: meminfo,
  parent, size, itemsize, **data pointer**, shape, strides), with the workspace pointers
  filled in, so a call only writes the parameters' data pointers into it;
* the compiled kernel handle and the launch configuration (grid, block, stream), so a call
  is one ``cuda.core`` ``launch`` per kernel, exactly what Numba itself ends with.

A call whose signature has no plan takes the full path: the same checks, the same
``KernelArgumentError`` messages, nothing cached for a signature that failed. A
non-contiguous array never takes the lean path (its strides are not the plan's). Under
Numba's CUDA simulator there is no compiled kernel: the plan then calls the configured
dispatchers (the signature cache and the checks are the same, so CI tests them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from workbench.backends.cuda.cuda_graph import PackedLaunch, contiguous_strides


@dataclasses.dataclass
class _DriverLaunch:
    """One kernel, launched through the driver with its arguments packed once
    (``cuda_graph.PackedLaunch``: only the parameters' data pointers are rewritten)."""

    packed: object
    stream: int = 0

    def __call__(self, pointers: list[int], arrays) -> None:
        packed = self.packed
        for slot, pointer in zip(packed.slots, pointers, strict=False):
            packed.values[slot] = pointer
        packed(self.stream)


@dataclasses.dataclass
class _DispatcherLaunch:
    """One kernel, launched through Numba's configured dispatcher (the simulator)."""

    configured: Callable
    workspace: tuple

    def __call__(self, pointers, arrays) -> None:
        self.configured(*arrays, *self.workspace)


@dataclasses.dataclass
class LaunchPlan:
    """What one shape signature needs per call: how to read each argument's data pointer
    (and check it is contiguous), and one launcher per kernel."""

    pointer_of: tuple[Callable, ...]
    launches: tuple

    def run(self, arrays) -> bool:
        pointers = []
        for read, array in zip(self.pointer_of, arrays, strict=True):
            pointer = read(array)
            if pointer is None:
                return False  # not contiguous: the full path handles its strides
            pointers.append(pointer)
        for launch in self.launches:
            launch(pointers, arrays)
        return True


def signature(arrays) -> tuple:
    """The cache key of a call: each argument's type, shape and dtype."""
    return tuple((type(a), tuple(a.shape), a.dtype) for a in arrays)


def _torch_pointer(array):
    return array.data_ptr() if array.is_contiguous() else None


def _interface_pointer(array):
    face = array.__cuda_array_interface__
    strides = face.get("strides")
    if strides is not None:
        itemsize = np.dtype(face["typestr"]).itemsize
        if tuple(strides) != contiguous_strides(tuple(face["shape"]), itemsize):
            return None
    return face["data"][0]


def _simulated_pointer(array):
    """The simulator's arrays have no device pointer (its launches pass the arrays)."""
    return 0 if array.is_c_contiguous() else None


def pointer_reader(array) -> Callable:
    """The cheapest way to read ``array``'s data pointer (None when not C-contiguous)."""
    if type(array).__module__.startswith("torch"):
        return _torch_pointer
    if type(array).__name__ == "FakeCUDAArray":
        return _simulated_pointer
    return _interface_pointer


class LeanLauncher:
    """The per-signature plans of one ``CudaKernel`` (see the module docstring).

    ``enabled`` switches the lean path off (every call takes the full path), for measuring
    what it saves.
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.plans: dict[tuple, LaunchPlan] = {}
        self.enabled = True

    def try_launch(self, arrays) -> bool:
        """Launch through the plan of ``arrays``' signature; False when there is none
        (or an argument is not contiguous): the caller then takes the full path."""
        if not self.enabled:
            return False
        try:
            plan = self.plans.get(signature(arrays))
        except (AttributeError, TypeError):  # not arrays at all: the full path says why
            return False
        return plan is not None and plan.run(arrays)

    def remember(self, arrays) -> None:
        """After a full-path call with device ``arrays`` succeeded: make their plan."""
        if not self.enabled:
            return
        try:
            key = signature(arrays)
        except (AttributeError, TypeError):
            return
        if key in self.plans:
            return
        readers = tuple(pointer_reader(a) for a in arrays)
        if any(read(a) is None for read, a in zip(readers, arrays, strict=True)):
            return  # a non-contiguous argument: no plan, the full path every time
        self.plans[key] = LaunchPlan(readers, self._launches(arrays))

    def _launches(self, arrays) -> tuple:
        compiled = self.kernel._compiled
        workspace = tuple(self.kernel.workspace)
        scope = getattr(compiled.host, "__globals__", {})
        launches = []
        for dispatcher, config in zip(compiled.kernels, compiled.launches, strict=True):
            name = getattr(getattr(dispatcher, "py_func", None), "__name__", "")
            configured = scope.get(f"{name}_launch") or dispatcher[config.grid, config.block]
            launches.append(
                _driver_launch(dispatcher, configured, arrays, workspace)
                or _DispatcherLaunch(configured, workspace)
            )
        return tuple(launches)


def _driver_launch(dispatcher, configured, arrays, workspace) -> _DriverLaunch | None:
    """The driver-level launcher of one compiled kernel, or None (simulator, several
    overloads, debug or cooperative kernels, dynamic shared memory, a Numba without these
    internals)."""
    from numba import config as numba_config

    if numba_config.ENABLE_CUDASIM or configured.sharedmem:
        return None
    try:
        overloads = list(dispatcher.overloads.values())
        if len(overloads) != 1 or overloads[0].debug or overloads[0].cooperative:
            return None
        return _DriverLaunch(
            PackedLaunch(dispatcher, configured.griddim, configured.blockdim,
                         [*arrays, *workspace]),
            _stream_handle(configured.stream),
        )
    except Exception:  # numba internals differ: the dispatcher path is still correct
        return None


def _stream_handle(stream) -> int:
    """The raw ``CUstream`` of a Numba / cuda.core stream (0: the default stream)."""
    handle = getattr(stream, "handle", stream)
    try:
        return int(handle or 0)
    except TypeError:
        return int(getattr(handle, "getPtr", lambda: 0)())
