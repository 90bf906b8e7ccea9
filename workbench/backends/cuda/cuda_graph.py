"""A sequence of CUDA kernel launches with its arguments packed once, and its capture
as a CUDA graph, replayed per call (the launch path of a device-resident compiled model).

``PackedLaunch`` is one kernel launch through the driver (``cuLaunchKernel``) whose
parameters live in one preallocated buffer, in Numba's kernel ABI (per array: meminfo,
parent, size, itemsize, **data pointer**, shape, strides; all 64-bit). Made once, after
Numba compiled the kernel on its first call; a call rewrites only the data pointers that
change (a model's inputs) and calls the driver once: no argument typing, no
``__cuda_array_interface__`` parsing, no Python objects per argument.

``LaunchSequence`` is the ordered launches of a model; ``set_input(j, array)`` points
every launch argument that reads input ``j`` at ``array``; ``run(stream)`` launches them
all, ``replay(stream)`` runs the sequence through a CUDA graph:

* the first call with a given *key* (every input's data pointer and shape) captures the
  launches on a private stream (``cuStreamBeginCapture`` ... ``cuStreamEndCapture``) and
  instantiates the graph (``cuGraphInstantiate``);
* later calls with the same key launch that graph on the caller's stream
  (``cuGraphLaunch``): one driver call however many kernels the model has;
* a call with another key (an input at another address) is a miss: the graph baked the
  old pointers in, so it cannot serve; a new one is captured. The last ``max_graphs`` stay
  (alternating between two input buffers recaptures nothing); ``invalidate()`` drops all
  (a kernel of the model was rebuilt).

Under Numba's CUDA simulator nothing is compiled and there is no driver: the launches call
the configured dispatchers on the arrays, and a "graph" is the recorded list of launches
with the arrays they had at capture (what a real graph bakes in), so the bookkeeping
(capture, replay, invalidation, and a stale graph computing from old inputs) is the same
and is what CI tests.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses

import numpy as np


class CudaDriverError(RuntimeError):
    """A CUDA driver call failed (its name and the driver's error code)."""


_LIBCUDA: list = []


def libcuda():
    """The driver library through ``ctypes`` (None where it cannot be loaded): a launch
    through it passes C ints made once, where ``cuda.bindings`` wraps every argument in a
    Python object per call (7.2 us a launch measured on the H200 this way; the bindings'
    cost was not measured apart)."""
    if not _LIBCUDA:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            lib.cuLaunchKernel.restype = ctypes.c_int
            lib.cuGraphLaunch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.cuGraphLaunch.restype = ctypes.c_int
            _LIBCUDA.append(lib)
        except (OSError, AttributeError):
            _LIBCUDA.append(None)
    return _LIBCUDA[0]


def _address(handle) -> int:
    """The address a driver handle object (``CUfunction``, ``CUgraphExec``...) wraps."""
    try:
        return int(handle)
    except TypeError:
        return int(handle.getPtr())


def _check(result, call: str):
    """The driver result ``(err, *values)``: raise on an error, return the values."""
    from cuda.bindings import driver

    err = result[0] if isinstance(result, tuple) else result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise CudaDriverError(f"{call} failed: {err!r}")
    values = result[1:] if isinstance(result, tuple) else ()
    return values[0] if len(values) == 1 else values


def contiguous_strides(shape: tuple, itemsize: int) -> tuple:
    """Byte strides of a C-contiguous array of ``shape`` (extents of 0 count as 1)."""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def _dim3(dims) -> tuple[int, int, int]:
    """A grid or block size as 3 ints (an int or a shorter tuple padded with 1)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def data_pointer(array) -> int:
    """The device address of ``array``'s first element (torch, CuPy, Numba arrays; under
    the simulator the address of the host memory its ``FakeCUDAArray`` wraps)."""
    if hasattr(array, "data_ptr"):
        return int(array.data_ptr())
    if type(array).__name__ == "FakeCUDAArray":
        return int(array._ary.__array_interface__["data"][0])
    return int(array.__cuda_array_interface__["data"][0])


def _array_fields(array) -> tuple[list[int], int]:
    """Numba's kernel-ABI fields of a C-contiguous ``array`` and the index of its data
    pointer among them."""
    face = array.__cuda_array_interface__
    shape = tuple(int(n) for n in face["shape"])
    itemsize = np.dtype(face["typestr"]).itemsize
    size = int(np.prod(shape)) if shape else 1
    fields = [0, 0, size, itemsize, int(face["data"][0]), *shape]
    fields += list(contiguous_strides(shape, itemsize))
    return fields, 4


class PackedLaunch:
    """One kernel launch with its parameters packed once (see the module docstring).

    Parameters
    ----------
    dispatcher : numba.cuda dispatcher, compiled once already (one overload)
    grid, block : tuple of 3 ints
    arrays : the kernel's arguments (device arrays, C-contiguous), in order
    """

    def __init__(self, dispatcher, grid, block, arrays):
        from cuda.bindings import driver

        overloads = list(dispatcher.overloads.values())
        if len(overloads) != 1:
            raise ValueError(f"{len(overloads)} compiled overloads: call the kernel once first")
        overload = overloads[0]
        if len(overload.argument_types) != len(arrays):
            raise ValueError("the kernel takes another number of arguments")
        handle = overload._codelibrary.get_cufunc().handle
        try:
            self.function = _check(driver.cuKernelGetFunction(handle), "cuKernelGetFunction")
        except (TypeError, CudaDriverError):  # a module function already
            self.function = handle
        values, self.slots = [], []
        for array in arrays:
            fields, pointer = _array_fields(array)
            self.slots.append(len(values) + pointer)
            values += fields
        self.grid, self.block = _dim3(grid), _dim3(block)
        self.values = (ctypes.c_int64 * len(values))(*values)
        base = ctypes.addressof(self.values)
        self.params = (ctypes.c_void_p * len(values))(*(base + 8 * i for i in range(len(values))))
        self.params_address = ctypes.addressof(self.params)
        lib = libcuda()
        if lib is not None:  # C ints made once: a call passes the stream only
            self._c_launch = lib.cuLaunchKernel
            self._c_head = (ctypes.c_void_p(_address(self.function)),
                            *(ctypes.c_uint(n) for n in (*self.grid, *self.block, 0)))
            self._c_params = ctypes.c_void_p(self.params_address)
        else:
            self._c_launch = None
        self._launch = driver.cuLaunchKernel
        self._ok = driver.CUresult.CUDA_SUCCESS

    def set_array(self, position: int, array) -> None:
        """Point argument ``position`` at ``array`` (same shape; only its address moves)."""
        self.values[self.slots[position]] = data_pointer(array)

    def __call__(self, stream: int) -> None:
        if self._c_launch is not None:
            err = self._c_launch(*self._c_head, stream or None, self._c_params, None)
            if err:
                raise CudaDriverError(f"cuLaunchKernel failed: CUresult {err}")
            return
        (err,) = self._launch(self.function, *self.grid, *self.block, 0, stream,
                              self.params_address, 0)
        if err != self._ok:
            raise CudaDriverError(f"cuLaunchKernel failed: {err!r}")


class SimulatedLaunch:
    """The simulator's stand-in for ``PackedLaunch``: the configured dispatcher called on
    the arrays it holds (swapped by ``set_array``)."""

    def __init__(self, dispatcher, grid, block, arrays):
        self.configured = dispatcher[tuple(grid), tuple(block)]
        self.arrays = list(arrays)

    def set_array(self, position: int, array) -> None:
        self.arrays[position] = array

    def __call__(self, stream) -> None:
        self.configured(*self.arrays)


@dataclasses.dataclass
class GraphStats:
    """What ``LaunchSequence`` did: launches issued one by one, graphs captured, graph
    replays, graphs dropped (evicted by another key or invalidated)."""

    launched: int = 0
    captured: int = 0
    replayed: int = 0
    dropped: int = 0


class _DriverGraph:
    def __init__(self, launches, capture_stream: int):
        from cuda.bindings import driver

        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        _check(driver.cuStreamBeginCapture(capture_stream, mode), "cuStreamBeginCapture")
        try:
            for launch in launches:
                launch(capture_stream)
        finally:
            graph = _check(driver.cuStreamEndCapture(capture_stream), "cuStreamEndCapture")
        self.graph = graph
        self.exec = _check(driver.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        self._launch = driver.cuGraphLaunch
        lib = libcuda()
        self._c_launch = lib.cuGraphLaunch if lib is not None else None
        self._c_exec = ctypes.c_void_p(_address(self.exec))

    def __call__(self, stream: int) -> None:
        if self._c_launch is not None:
            err = self._c_launch(self._c_exec, stream or None)
            if err:
                raise CudaDriverError(f"cuGraphLaunch failed: CUresult {err}")
            return
        (err,) = self._launch(self.exec, stream)
        if err != 0:
            raise CudaDriverError(f"cuGraphLaunch failed: {err!r}")

    def destroy(self) -> None:
        from cuda.bindings import driver

        driver.cuGraphExecDestroy(self.exec)
        driver.cuGraphDestroy(self.graph)


class _SimulatedGraph:
    """The launches with the arrays they held at capture (a real graph's baked pointers)."""

    def __init__(self, launches):
        self.calls = [(launch.configured, tuple(launch.arrays)) for launch in launches]

    def __call__(self, stream) -> None:
        for configured, arrays in self.calls:
            configured(*arrays)

    def destroy(self) -> None:
        self.calls = []


class LaunchSequence:
    """The kernel launches of a model in order, and where each input goes (see the module
    docstring).

    Parameters
    ----------
    launches : list of PackedLaunch or SimulatedLaunch
    input_slots : per model input, the ``(launch index, argument position, shape)`` of
        every argument that reads it (``shape``: the kernel's view of it)
    simulated : bool
    max_graphs : int
        Captured graphs kept (one per key), least recently used dropped first.
    """

    def __init__(self, launches, input_slots, simulated: bool, max_graphs: int = 4):
        self.launches = list(launches)
        self.input_slots = input_slots
        self.simulated = simulated
        self.max_graphs = max_graphs
        self.graphs: collections.OrderedDict = collections.OrderedDict()
        self.stats = GraphStats()
        self._capture_stream = None

    def set_inputs(self, arrays) -> tuple:
        """Point every argument reading an input at ``arrays``; returns the key of the
        call (each input's address and shape)."""
        key = []
        for slots, array in zip(self.input_slots, arrays, strict=True):
            if self.simulated:  # the dispatchers take the arrays, in the kernels' shapes
                for index, position, shape in slots:
                    view = array if tuple(array.shape) == shape else array.reshape(shape)
                    self.launches[index].set_array(position, view)
                # the address, not id(array): a graph holds the views it was captured with,
                # not the input object, whose id a new input may then reuse (a stale graph
                # replayed on the old data); the views keep the old memory alive, so an
                # address seen again is the same memory, as on the device
                key.append((data_pointer(array), tuple(array.shape)))
                continue
            pointer = data_pointer(array)  # a reshape moves no data: the address is all
            for index, position, _ in slots:
                launch = self.launches[index]
                launch.values[launch.slots[position]] = pointer
            key.append((pointer, tuple(array.shape)))
        return tuple(key)

    def run(self, stream=0) -> None:
        """Launch every kernel, one driver call each."""
        for launch in self.launches:
            launch(stream)
        self.stats.launched += len(self.launches)

    def replay(self, key: tuple, stream=0) -> str:
        """Run through the graph of ``key`` (captured first on a miss); returns
        ``"replayed"`` or ``"captured"``."""
        graph = self.graphs.get(key)
        outcome = "replayed"
        if graph is None:
            graph = self._capture()
            self.graphs[key] = graph
            self.stats.captured += 1
            outcome = "captured"
            while len(self.graphs) > self.max_graphs:
                _, old = self.graphs.popitem(last=False)
                old.destroy()
                self.stats.dropped += 1
        else:
            self.graphs.move_to_end(key)
        graph(stream)
        self.stats.replayed += 1
        return outcome

    def invalidate(self) -> None:
        """Drop every captured graph (the next ``replay`` captures again)."""
        for graph in self.graphs.values():
            graph.destroy()
        self.stats.dropped += len(self.graphs)
        self.graphs.clear()

    def _capture(self):
        if self.simulated:
            return _SimulatedGraph(self.launches)
        if self._capture_stream is None:
            from cuda.bindings import driver

            flags = driver.CUstream_flags.CU_STREAM_NON_BLOCKING
            stream = _check(driver.cuStreamCreate(flags), "cuStreamCreate")
            self._capture_stream = _address(stream)
        return _DriverGraph(self.launches, self._capture_stream)
