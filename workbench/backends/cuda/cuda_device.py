"""Device memory of the ``cuda`` target: every host/device copy in one place (and
counted), device arrays recognised without copies, the caller's stream, event timing.

What the target accepts as a device array: anything with ``__cuda_array_interface__``
(``numba.cuda`` device arrays, CuPy arrays, torch CUDA tensors) and, under Numba's CUDA
simulator, its ``FakeCUDAArray``. Such arrays go to the kernels as they are: no copy.
Host arrays (numpy) are copied to the device and back, through ``to_device`` and
``to_host`` only, which count what they copy in ``COPIES`` (tests assert that a call with
device arrays copies nothing).

Streams: ``caller_stream()`` is the stream the caller's framework runs on: torch's current
stream when torch has initialised CUDA (``torch.cuda.current_stream().cuda_stream`` as a
Numba external stream), else Numba's default stream. Work launched there is ordered with
the caller's own kernels, no synchronisation needed.

Example
-------
>>> import numpy as np
>>> before = dict(COPIES)
>>> d = to_device(np.ones(4, np.float32))
>>> COPIES["to_device"] - before["to_device"]
1
"""

from __future__ import annotations

import sys
import time

import numpy as np

COPIES = {"to_device": 0, "to_host": 0, "bytes_to_device": 0, "bytes_to_host": 0}
"""Host-to-device and device-to-host copies made by the cuda target in this process."""


def is_device_array(value) -> bool:
    """A device array: ``__cuda_array_interface__`` (numba, CuPy, torch CUDA) or the
    simulator's ``FakeCUDAArray``. A torch tensor is asked ``is_cuda``: its interface
    raises ``RuntimeError`` (not ``AttributeError``, which ``hasattr`` expects) for a CUDA
    tensor that requires grad."""
    if isinstance(value, np.ndarray):
        return False
    if is_torch_tensor(value):
        return bool(value.is_cuda)
    return hasattr(value, "__cuda_array_interface__") or type(value).__name__ == "FakeCUDAArray"


def is_torch_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


def is_contiguous(value) -> bool:
    """Whether device array ``value`` is C-contiguous (torch, the simulator's arrays, or
    the strides of its ``__cuda_array_interface__``: none, or a C array's)."""
    if is_torch_tensor(value):
        return bool(value.is_contiguous())
    if type(value).__name__ == "FakeCUDAArray":
        return bool(value.is_c_contiguous())
    face = value.__cuda_array_interface__
    strides = face.get("strides")
    if strides is None:
        return True
    shape = tuple(int(n) for n in face["shape"])
    step, expected = np.dtype(face["typestr"]).itemsize, []
    for extent in reversed(shape):
        expected.append(step)
        step *= max(extent, 1)
    return all(s == e for s, e, n in zip(strides, reversed(expected), shape, strict=True)
               if n > 1)


def to_device(host: np.ndarray, stream=0, out=None):
    """A new device array holding ``host``, or ``out`` (a device array of its shape)
    overwritten with it (counted in ``COPIES``)."""
    from numba import cuda

    host = np.ascontiguousarray(host)
    COPIES["to_device"] += 1
    COPIES["bytes_to_device"] += host.nbytes
    if out is not None:
        out.copy_to_device(host, stream=stream)
        return out
    return cuda.to_device(host, stream=stream)


def to_host(device, out: np.ndarray | None = None, stream=0) -> np.ndarray:
    """``device`` copied into ``out`` (a new array when None; counted in ``COPIES``)."""
    COPIES["to_host"] += 1
    COPIES["bytes_to_host"] += int(np.prod(device.shape)) * np.dtype(device.dtype).itemsize
    if out is None:
        return device.copy_to_host(stream=stream)
    device.copy_to_host(out, stream=stream)
    return out


def device_empty(shape, dtype, stream=0):
    """An uninitialised device array (no copy)."""
    from numba import cuda

    return cuda.device_array(tuple(int(n) for n in shape), dtype=np.dtype(dtype), stream=stream)


def torch_in_use() -> bool:
    """Whether torch is imported and has initialised CUDA (its stream is then the caller's)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 - a torch without CUDA
        return False


def caller_stream_handle() -> int:
    """The raw ``CUstream`` the caller runs on (0: the default stream)."""
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    if simulator_enabled() or not torch_in_use():
        return 0
    import torch

    return int(torch.cuda.current_stream().cuda_stream)


def caller_stream():
    """The caller's stream as a Numba stream (see the module docstring)."""
    from numba import cuda

    handle = caller_stream_handle()
    return cuda.external_stream(handle) if handle else cuda.default_stream()


class EventTimer:
    """Seconds between ``start()`` and ``stop()`` on the device, from CUDA events on
    ``stream`` (under the simulator, which has no device clock: wall time after the
    work finished)."""

    def __init__(self, stream=0):
        from numba import cuda

        from workbench.backends.cuda.numba_cuda import simulator_enabled

        self.simulated = simulator_enabled()
        if isinstance(stream, int) and stream and not self.simulated:
            # a raw CUstream (``caller_stream_handle``: torch's current stream): Numba's
            # ``Event.record`` takes only 0 or a Stream object (TypeError otherwise)
            stream = cuda.external_stream(stream)
        self.stream = stream
        self._start, self._stop = cuda.event(), cuda.event()
        self._wall = 0.0

    def start(self) -> None:
        self._wall = time.perf_counter()
        self._start.record(self.stream)

    def stop(self) -> float:
        self._stop.record(self.stream)
        self._stop.synchronize()
        if self.simulated:
            return time.perf_counter() - self._wall
        return self._start.elapsed_time(self._stop) / 1e3
