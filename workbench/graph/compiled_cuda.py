"""The device-resident runtime of a model compiled for ``cuda`` (``wb.compile(...,
target="cuda")``).

What lives on the device, allocated once: the weights (every constant of the graph, copied
once, when the first call needs them), the memory plan's arena (one device buffer per
plan buffer; each intermediate a view into it) and the kernels' workspaces. What a call
copies:

* **device inputs** (torch CUDA tensors, CuPy arrays, ``numba.cuda`` device arrays:
  anything with ``__cuda_array_interface__``; the simulator's device arrays) are read in
  place, no copy (C-contiguous ones only: a strided input is a ``ModelInputError``; a
  torch tensor that requires grad is read through its detached view); the output is a
  new device array of the caller's kind (a torch tensor for torch inputs, a CuPy array
  for CuPy inputs, else a Numba device array), one device-to-device copy out of the arena
  (the arena is reused by the next call); objects that offer only DLPack (``__dlpack__``)
  are not accepted: wrap them with ``torch.from_dlpack`` first;
* **host inputs** (numpy arrays, CPU tensors) are copied into device input buffers, and
  the output comes back as a numpy array: the only host copies, counted in
  ``workbench.backends.cuda.cuda_device.COPIES``.

Streams: the kernels run on the caller's stream (torch's current stream when torch has
initialised CUDA, else the default stream), so a torch program needs no synchronisation
around the call.

Launch paths (``mode``): the first call runs every kernel through ``CudaKernel`` (Numba
compiles each kernel then, on the default stream, with the device synchronised around
it); after it, ``"graph"`` (the default) replays the whole kernel sequence as one CUDA
graph, captured once per input address (``workbench.backends.cuda.cuda_graph``; under the
simulator a recorded list of launches stands in for it); ``"lean"`` launches each kernel
with its arguments packed once (one driver call per kernel); ``"kernels"`` keeps calling
the ``CudaKernel`` objects (checks and Numba's dispatch every time; for comparison).

Measured on an H200 (bench/RESULTS.md, issue 20): a transformer block of 12 kernels (27
launches) costs 50-56 us of host time per call through its graph, 245 us on the lean
path, 823 us through ``CudaKernel``; torch.compile's reduce-overhead 96 us at batch 1.

Example
-------
>>> compiled = wb.compile(model, (x,), target="cuda")   # doctest: +SKIP
>>> xd = x.cuda()                        # a torch CUDA tensor: no host copy  # doctest: +SKIP
>>> y = compiled(xd)                     # Numba compiles the kernels         # doctest: +SKIP
>>> y = compiled(xd)                     # the graph captured and replayed    # doctest: +SKIP
>>> compiled.runtime.sequence.stats      # doctest: +SKIP
GraphStats(launched=0, captured=1, replayed=1, dropped=0)
"""

from __future__ import annotations

import numpy as np

from workbench.backends.cuda.cuda_device import (
    caller_stream_handle,
    device_empty,
    is_contiguous,
    is_device_array,
    is_torch_tensor,
    to_device,
    to_host,
)
from workbench.graph.passes.memory_plan import VIEW_OPS

MODES = ("graph", "lean", "kernels")


class DeviceRuntime:
    """Runs a ``CompiledModel``'s kernels on device-resident buffers (module docstring).

    Attributes
    ----------
    mode : "graph", "lean" or "kernels"
    sequence : LaunchSequence or None
        Made after the first call (the kernels are compiled then).
    """

    def __init__(self, model, mode: str = "graph"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.model, self.mode = model, mode
        self.values: dict | None = None
        self.sequence = None
        self._host_inputs: list | None = None
        self._torch_outputs: dict = {}
        self._ran = False
        self._checked: set = set()  # device input signatures that passed the checks

    # ---- buffers ------------------------------------------------------------------------

    def _allocate(self) -> None:
        """Weights to the device, the arena and every intermediate's view of it."""
        model = self.model
        graph, memory = model.graph, model.memory
        arena = [device_empty((size,), np.uint8) for size in memory.buffers]
        values = {name: to_device(array) for name, array in graph.constants.items()}
        for node in graph.nodes:
            if node.op in VIEW_OPS or node.name not in memory.assignment:
                continue
            ty = node.type
            raw = arena[memory.assignment[node.name]][: ty.nbytes]
            values[node.name] = raw.view(np.dtype(ty.dtype)).reshape(ty.shape)
        self.arena, self.values = arena, values

    def _resolve(self, name: str, inputs: dict):
        """The device array of value ``name``: an input, a weight, an arena view, or a
        reshape of one of those (a view node)."""
        if name in inputs:
            return inputs[name]
        if name in self.values:
            return self.values[name]
        node = self.model.graph.producer(name)
        if node is not None and node.op in VIEW_OPS:
            return self._resolve(node.inputs[0], inputs).reshape(node.type.shape)
        raise KeyError(f"no device buffer for value {name!r}")

    def _device_inputs(self, inputs) -> tuple[list, bool]:
        """The inputs as device arrays (copied only when on the host) and whether the
        caller passed device arrays. Device inputs of a (type, shape, dtype) signature
        that passed the checks once are only checked for contiguity after."""
        # a torch tensor that requires grad (the output of a torch layer outside no_grad)
        # has no __cuda_array_interface__: its detached view (no copy) is what runs
        inputs = tuple(x.detach() if getattr(x, "requires_grad", False) else x
                       for x in inputs)
        try:
            signature = tuple((type(x), tuple(x.shape), x.dtype) for x in inputs)
        except AttributeError:
            signature = None
        if signature is not None and signature in self._checked:
            if all(is_contiguous(x) for x in inputs):
                return list(inputs), True
        arrays, on_device = self._check_inputs(inputs)
        if on_device and signature is not None:
            self._checked.add(signature)
        return arrays, on_device

    def _check_inputs(self, inputs) -> tuple[list, bool]:
        from workbench.graph.compiler import ModelInputError
        from workbench.graph.index_bounds import check_inputs

        graph = self.model.graph
        if len(inputs) != len(graph.inputs):
            raise ModelInputError(f"the model takes {len(graph.inputs)} input(s) "
                                  f"({', '.join(graph.inputs)}), got {len(inputs)}")
        on_device = [is_device_array(x) for x in inputs]
        if any(on_device) and not all(on_device):
            raise ModelInputError("pass every input on the device or every input on the host")
        arrays = []
        for (name, ty), x in zip(graph.inputs.items(), inputs, strict=True):
            shape, dtype = tuple(ty.shape), np.dtype(ty.dtype)
            expected = f"{dtype} array of shape {shape}"
            if not (on_device[0] or isinstance(x, np.ndarray) or hasattr(x, "detach")):
                hint = (" (a DLPack-only array: pass torch.from_dlpack(x))"
                        if hasattr(x, "__dlpack__") else "")
                raise ModelInputError(f"input {name!r} of the model: expected {expected}, "
                                      f"got {type(x).__name__}{hint}")
            got_dtype = np.dtype(str(x.dtype).replace("torch.", ""))
            if tuple(x.shape) != shape or got_dtype != dtype:
                raise ModelInputError(f"input {name!r} of the model: expected {expected}, "
                                      f"got {got_dtype} array of shape {tuple(x.shape)}")
            arrays.append(x)
        if all(on_device):
            # every kind of device array: the launch sequence and the graphs pack C strides
            # (a strided array would be read as if contiguous after the first call)
            for name, x in zip(graph.inputs, arrays, strict=True):
                if not is_contiguous(x):
                    how = ".contiguous()" if is_torch_tensor(x) else "a C-contiguous copy"
                    raise ModelInputError(f"input {name!r} of the model is not C-contiguous "
                                          f"(pass {how})")
            return arrays, True
        if self._host_inputs is None:
            self._host_inputs = [device_empty(ty.shape, ty.dtype) for ty in graph.inputs.values()]
        hosts = {}
        for name, x in zip(graph.inputs, arrays, strict=True):
            hosts[name] = x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
        # host index inputs are bounds-checked as on the cpu (device ones are not: a check
        # would copy them back)
        check_inputs(getattr(self.model, "_index_checks", []), hosts)
        for buffer, host in zip(self._host_inputs, hosts.values(), strict=True):
            to_device(np.ascontiguousarray(host, dtype=buffer.dtype), out=buffer)
        return list(self._host_inputs), False

    # ---- running ------------------------------------------------------------------------

    def __call__(self, *inputs):
        arrays, on_device = self._device_inputs(inputs)
        if self.values is None:
            self._allocate()
        named = dict(zip(self.model.graph.inputs, arrays, strict=True))
        stream = caller_stream_handle()
        if self.mode == "kernels" or self.sequence is None:
            self._run_kernels(named)
            if self.mode != "kernels":
                self.sequence = self._make_sequence(named)
        elif self.mode == "lean":
            self.sequence.set_inputs(arrays)
            self.sequence.run(stream)
        else:
            key = self.sequence.set_inputs(arrays)
            self.sequence.replay(key, stream)
        return self._outputs(named, arrays, on_device)

    def _kernel_arrays(self, kernel, named: dict) -> list:
        args = [self._resolve(n, named) for n in kernel.inputs] + [self._resolve(kernel.node,
                                                                                  named)]
        if kernel.shapes:
            args = [a if tuple(a.shape) == tuple(s) else a.reshape(s)
                    for a, s in zip(args, kernel.shapes, strict=True)]
        return args

    def _run_kernels(self, named: dict) -> None:
        """Every kernel through its ``CudaKernel`` (Numba's dispatch, on the default
        stream; Numba compiles them on the first call, when the device is synchronised
        around it so that the caller's stream and this one see each other's work)."""
        from numba import cuda

        first = not self._ran
        if first:
            cuda.synchronize()
        for kernel in self.model.kernels:
            kernel.kernel(*self._kernel_arrays(kernel, named))
        if first:
            cuda.synchronize()
            self._ran = True

    def _make_sequence(self, named: dict):
        """The launches of every kernel with packed arguments, and where inputs go."""
        from workbench.backends.cuda.cuda_graph import LaunchSequence, PackedLaunch, SimulatedLaunch
        from workbench.backends.cuda.numba_cuda import simulator_enabled

        simulated = simulator_enabled()
        make = SimulatedLaunch if simulated else PackedLaunch
        roots = {name: name for name in self.model.graph.inputs}
        launches, slots = [], {name: [] for name in self.model.graph.inputs}
        for kernel in self.model.kernels:
            arrays = self._kernel_arrays(kernel, named)
            compiled = kernel.kernel._compiled
            workspace = tuple(kernel.kernel.workspace)
            names = list(kernel.inputs) + [kernel.node]
            for dispatcher, config in zip(compiled.kernels, compiled.launches, strict=True):
                for position, name in enumerate(names):
                    root = self._root(name, roots)
                    if root is not None:
                        slots[root].append((len(launches), position, tuple(arrays[position].shape)))
                launches.append(make(dispatcher, config.grid, config.block,
                                     [*arrays, *workspace]))
        return LaunchSequence(launches, [slots[n] for n in self.model.graph.inputs], simulated)

    def _root(self, name: str, roots: dict) -> str | None:
        """The model input ``name`` reads (through views), or None."""
        while name not in roots:
            node = self.model.graph.producer(name)
            if node is None or node.op not in VIEW_OPS:
                return None
            name = node.inputs[0]
        return roots[name]

    def _outputs(self, named: dict, arrays: list, on_device: bool):
        results = []
        torch_caller = on_device and arrays and is_torch_tensor(arrays[0])
        for name in self.model.graph.outputs:
            value = self._resolve(name, named)
            if not on_device:
                results.append(to_host(value))
            elif torch_caller:
                results.append(self._torch_copy(name, value))
            elif type(arrays[0]).__module__.startswith("cupy"):
                import cupy

                results.append(cupy.array(value))  # a device-to-device copy, CuPy's kind
            else:
                out = device_empty(value.shape, value.dtype)
                out.copy_to_device(value)
                results.append(out)
        return results[0] if len(results) == 1 else results

    def _torch_copy(self, name: str, value):
        """A new torch tensor holding ``value`` (a device-to-device copy on torch's
        stream; the arena is reused by the next call)."""
        import torch

        view = self._torch_outputs.get(name)
        if view is None:
            view = torch.as_tensor(value, device="cuda")  # zero-copy, through the interface
            self._torch_outputs[name] = view
        return view.clone()

    def kernel_seconds(self, *inputs, repeat: int = 20) -> list[float]:
        """Median device seconds of each kernel of the model (CUDA events around its
        launches, ``repeat`` times; under the simulator, wall time), after a warm-up call."""
        from workbench.backends.cuda.cuda_device import EventTimer

        self(*inputs)  # compiles every kernel
        arrays, _ = self._device_inputs(inputs)
        if self.sequence is None:  # the "kernels" mode makes none
            self.sequence = self._make_sequence(dict(zip(self.model.graph.inputs, arrays,
                                                         strict=True)))
        self.sequence.set_inputs(arrays)
        stream = caller_stream_handle()
        timer = EventTimer(stream)
        per_kernel = [len(k.kernel._compiled.kernels) for k in self.model.kernels]
        runs = []
        for _ in range(repeat):
            times, first = [], 0
            for count in per_kernel:
                timer.start()
                for launch in self.sequence.launches[first:first + count]:
                    launch(stream)
                times.append(timer.stop())
                first += count
            runs.append(times)
        return [float(t) for t in np.median(np.array(runs), axis=0)]

    def invalidate(self) -> None:
        """Forget the launch sequence and its graphs (a kernel was rebuilt)."""
        if self.sequence is not None:
            self.sequence.invalidate()
        self.sequence = None
        self._ran = False
