"""``compile``: a model in one line to a callable running every kernel through Numba.

Example
-------
>>> import torch, numpy as np, workbench as wb
>>> model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.GELU()).eval()
>>> x = torch.randn(2, 8)
>>> compiled = wb.compile(model, (x,))                              # doctest: +SKIP
>>> np.allclose(compiled(x), model(x).detach().numpy(), atol=1e-5)  # doctest: +SKIP
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from workbench.backends.common.target import resolve_target
from workbench.graph.compile_checks import (
    check_dtypes,
    check_examples_fit,
    check_jobs,
    check_model,
    check_pipeline,
    check_schedules,
    check_signature,
    eager_check,
    example_keywords,
    example_tuple,
    host_array,
    onnx_with_example_dims,
    quiet_fake_tensors,
    warn_unmatched,
)
from workbench.graph.errors import ModelInputError
from workbench.graph.frontends.torch_fx import modes_kept
from workbench.graph.index_bounds import check_inputs, index_checks
from workbench.graph.ir import Graph
from workbench.graph.keyword_inputs import bind_inputs, keyword_model
from workbench.graph.lower import LoweredKernel, lower_graph
from workbench.graph.passes.memory_plan import VIEW_OPS, MemoryPlan, plan_memory
from workbench.graph.passes.pipeline import Pipeline


def kernel_array(array: np.ndarray) -> np.ndarray:
    """``array`` itself when it is C-contiguous and writable, else such a copy: the arrays
    every compiled kernel is typed for (``numba_cpu`` compiles each for writable C arrays).

    Example
    -------
    >>> a = np.ones(3, "float32"); a.flags.writeable = False
    >>> kernel_array(a).flags.writeable
    True
    """
    if not isinstance(array, np.ndarray):
        return array
    return np.require(array, requirements=("C", "W"))


class KernelRunner:
    """Calls a compiled Numba function with the kernel's arrays and its workspace (the
    function's global scratch buffers, allocated once)."""

    def __init__(self, dispatcher, workspace: tuple = ()):
        self.dispatcher, self.workspace = dispatcher, tuple(workspace)

    def __call__(self, *arrays) -> None:
        self.dispatcher(*arrays, *self.workspace)


def cpu_runner(kernel):
    """The ``cpu`` kind's ``graph_runner``: the Numba dispatcher called directly, with the
    kernel's workspace (no argument checks per call)."""
    compiled = getattr(kernel, "_compiled", None)
    if compiled is None:
        return kernel
    return KernelRunner(compiled.dispatcher, getattr(kernel, "workspace", ()))


def _runner_of(kernel, target):
    """How a compiled model calls ``kernel``: the target's ``graph_runner`` (the Kernel
    itself where the kind has none: the numpy reference, cuda)."""
    runner = resolve_target(target, "compile").hook("graph_runner")
    return kernel if runner is None else runner(kernel)


@dataclass
class CompiledKernel:
    """One kernel of a compiled model: the lowered node, its schedule and its runner."""

    node: str
    pattern: str
    inputs: tuple[str, ...]
    runner: object
    source: str = ""
    trace_json: str = "[]"
    func_source: str = ""
    schedule: object = None
    kernel: object = None
    shapes: tuple = ()  # every parameter's shape (the output's last): the views passed
    func: object = None  # the unscheduled PrimFunc (parsed from func_source when loaded)

    def call(self, arrays: list) -> None:
        """Run the kernel on ``arrays`` (its inputs, then its output), viewed in its shapes."""
        if self.shapes:
            arrays = [a.reshape(s) for a, s in zip(arrays, self.shapes, strict=True)]
        self.runner(*arrays)


def _device_resident(target) -> bool:
    """Whether ``target``'s kernels run on a device that keeps the model's buffers."""
    kind = resolve_target(target, "compile").kind
    return bool(getattr(kind.kernel_class, "device_resident", False))


def import_graph(model, example_inputs) -> Graph:
    """A ``Graph`` from a torch module, an ONNX model (or path), or a ``Graph``."""
    return _import(model, example_inputs)[0]


def _import(model, example_inputs):
    """``(graph, out_spec)``: ``import_graph``'s graph and the exported module's output
    nesting (``torch_fx.import_torch``; None for other models)."""
    if isinstance(model, Graph):
        return model, None
    if isinstance(model, str) or type(model).__name__ == "ModelProto":
        from workbench.graph.frontends.onnx import from_onnx

        return from_onnx(model), None
    from workbench.graph.frontends.torch_fx import import_torch

    with modes_kept(model):
        return import_torch(model, example_inputs)


def _import_checked(model, example_inputs):
    """``_import``; where tracing fails, the model run once in eager PyTorch says whether
    the inputs are at fault (``ModelInputError``, ``eager_check``) rather than the tracer
    (its error then re-raised). Nothing runs eagerly when tracing succeeds."""
    from workbench.graph.errors import GraphError

    try:
        with quiet_fake_tensors():
            return _import(model, example_inputs)
    except GraphError:
        raise
    except Exception:
        eager_check(model, example_inputs)
        raise


def structure_from_spec(spec, count: int):
    """``output_structure``'s answer read from ``torch.export``'s output ``TreeSpec``, without
    running the model; None where the spec holds anything but tuples, lists, dicts and
    leaves (a namedtuple, a ``ModelOutput``, a None: ``output_structure`` then runs the model)
    or not ``count`` leaves."""
    leaves = 0

    def encode(node):
        nonlocal leaves
        if node.is_leaf():
            leaves += 1
            return leaves - 1
        children = [encode(child) for child in (node.children() if hasattr(node, "children")
                                                 else node.children_specs)]  # torch < 2.12
        if node.type is tuple:
            return {"tuple": children}
        if node.type is list:
            return {"list": children}
        if node.type is dict:
            return {"dict": [[key, child] for key, child in zip(node.context, children,
                                                                  strict=True)]}
        raise TypeError(node.type)

    try:
        tree = encode(spec)
    except (TypeError, AttributeError):
        return None
    if leaves != count or isinstance(tree, int):
        return None
    return tree


def output_structure(model, example_inputs, count: int):
    """How a torch ``model`` nests its outputs, as JSON-able data (leaves: indices into the
    graph's flat outputs): ``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": [[key,
    ...], ...]}`` or an index. None for other models, or when the nesting does not have
    ``count`` tensor leaves (the outputs are then returned flat)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return None
    with modes_kept(model), torch.no_grad():
        try:
            model.eval()
        except NotImplementedError:  # ExportedProgram.module(): keeps its exported mode
            pass
        result = model(*example_inputs)
    leaves = []

    def encode(value):
        if isinstance(value, torch.Tensor):
            leaves.append(value)
            return len(leaves) - 1
        if isinstance(value, dict):
            return {"dict": [[key, encode(v)] for key, v in value.items()]}
        if isinstance(value, list):
            return {"list": [encode(v) for v in value]}
        if isinstance(value, tuple):
            return {"tuple": [encode(v) for v in value]}
        raise TypeError(type(value).__name__)

    try:
        tree = encode(result)
    except TypeError:
        return None
    if len(leaves) != count or isinstance(tree, int):
        return None
    return tree


def _unflatten(tree, outputs: list):
    if isinstance(tree, int):
        return outputs[tree]
    (kind, items), = tree.items()
    if kind == "dict":
        return {key: _unflatten(sub, outputs) for key, sub in items}
    values = [_unflatten(sub, outputs) for sub in items]
    return tuple(values) if kind == "tuple" else values


def records_schedule(func, target, records, *, parallel: bool = True):
    """The best schedule recorded for ``func`` in the tuning records ``records``; the default
    schedule when the records hold none for it."""
    from workbench.recipes.graph_cpu import default_schedule
    from workbench.schedule import ScheduleError
    from workbench.tune import load_best  # on use: the graph level loads without the tuner

    try:
        best = load_best(records, func, target=target)
    except (KeyError, LookupError, ValueError):
        best = None
    except ScheduleError as error:  # a record whose trace no longer replays on the function
        import warnings

        from workbench.tune.database import RecordWarning

        warnings.warn(f"{getattr(records, 'path', records)}: the best record of {func.name} "
                      f"does not replay ({error.message}); its default schedule is used",
                      RecordWarning,
                      stacklevel=2)
        best = None
    return best if best is not None else default_schedule(func, target, parallel=parallel)


def _schedule_for(kernel: LoweredKernel, target, schedules, parallel: bool):
    from workbench.recipes.graph_cpu import default_schedule

    if schedules == "default":
        return default_schedule(kernel.func, target, parallel=parallel)
    if schedules in (None, "none"):
        from workbench.schedule import Schedule

        return Schedule(kernel.func)
    return records_schedule(kernel.func, target, schedules, parallel=parallel)


def compile(model, example_inputs=(), target="cpu", schedules="default",
            pipeline: Pipeline | None = None, plan: bool = True,
            parallel: bool = True, fold_layout: bool = False, jobs: int | None = None,
            progress: bool | None = None, layout: bool = True,
            example_kwargs: dict | None = None) -> CompiledModel:
    """Import, optimise, lower, schedule and build ``model``.

    Parameters
    ----------
    model : torch.nn.Module, onnx.ModelProto, path to an .onnx file, or Graph
        A torch module is traced in eval mode (as ``torch.onnx.export`` does by default)
        and left as it was: every submodule's ``training`` flag is restored afterwards.
    example_inputs : tuple
        Example inputs (torch tensors or numpy arrays; a lone one is one input): they fix
        the shapes. Inputs a torch module's ``forward`` does not take, or that it fails on
        in eager PyTorch, raise ``ModelInputError`` (the eager run only when tracing fails).
    target : str or Target
        ``"cpu"`` (Numba njit), ``"cuda"`` (Numba cuda.jit; weights and intermediates stay
        on the device, device inputs such as torch CUDA tensors are used in place and give
        device outputs, host inputs are copied in and the output out: see
        ``workbench.graph.compiled_cuda``) or ``"numpy"`` (the reference executor).
    schedules : "default", "none" or a tuning-records path
        The rule-based schedules of ``workbench.recipes.graph_*`` for ``target`` (recipes on
        cpu, thread binding on cuda), no schedule at all, or the best recorded schedule per
        kernel (the default schedule for kernels the records do not hold; a path that does
        not exist raises ``FileNotFoundError``, a folder ``IsADirectoryError``).
    pipeline : Pipeline, optional
        The graph passes (``Pipeline()`` by default: folding, simplification, CSE, BatchNorm
        folding, DCE, fusion).
    plan : bool
        Preallocate intermediate buffers from the liveness-based memory plan (``False``: one
        buffer per value).
    parallel : bool
        Let the default cpu schedules run big loops in parallel (``False``: every kernel
        serial; steadier on a machine shared with other work).
    fold_layout : bool
        Fold transposes and selects read only by kernels into those kernels' loads
        (``workbench.graph.lower_layout``); off by default (see ``lower_graph``).
    jobs : int, optional
        Worker processes (a positive integer) compiling the kernels not cached yet
        (default: one per CPU; 1:
        all in this process). Structurally equal kernels (repeated blocks) are scheduled
        and built once whatever ``jobs`` is (``workbench.graph.compile_jobs``); what was
        done is in ``compiled.build_stats``.
    progress : bool, optional
        A progress bar over the builds (default: shown when many kernels are cold).
    layout : bool
        Run the target's layout pass before fusion (its ``graph_layout`` hook; ``cpu``:
        conv weights packed by blocks of output channels, the packed conv kernels);
        ``False`` keeps the model's layouts.
    example_kwargs : dict, optional
        Keyword example inputs of a torch module, as ``torch.export.export(model, args,
        kwargs)`` takes them (``input_ids=..., attention_mask=...``): tensors become inputs
        of the compiled model after the positional ones, in the order given; other values
        (``return_dict=False``) are constants of the trace. The compiled model is then
        called as the module is, by position or by name (``workbench.graph.keyword_inputs``).
    """
    # every argument checked before any work (workbench.graph.compile_checks)
    target = resolve_target(target, "compile")
    check_schedules(schedules)
    check_jobs(jobs)
    check_pipeline(pipeline)
    model = check_model(model)
    example_inputs = example_tuple(model, example_inputs)
    example_kwargs = example_keywords(model, example_kwargs)
    check_signature(model, example_inputs, example_kwargs)
    check_dtypes(model, example_inputs + tuple(example_kwargs.values()))
    model, example_inputs, input_names = keyword_model(model, example_inputs, example_kwargs)
    if type(model).__name__ == "ModelProto":
        model = onnx_with_example_dims(model, example_inputs)
    graph, out_spec = _import_checked(model, example_inputs)
    if isinstance(model, Graph) or type(model).__name__ == "ModelProto":
        check_examples_fit(graph, example_inputs)  # not traced from them: they must fit
    structure = None if out_spec is None else structure_from_spec(out_spec, len(graph.outputs))
    if (structure is None and not isinstance(model, Graph | str)
            and type(model).__name__ != "ModelProto"):
        try:  # the model's first eager run (where the spec does not answer)
            structure = output_structure(model, example_inputs, len(graph.outputs))
        except Exception:
            eager_check(model, example_inputs)  # the inputs at fault: named
            raise
    layout_pass = target.hook("graph_layout") if layout else None
    graph = (pipeline or Pipeline())(
        graph, layout=None if layout_pass is None else lambda g: layout_pass(g, target))
    lowered_all = lower_graph(graph, fold_layout=fold_layout)
    scheduled: dict = {}  # repeated blocks lower to equal functions: scheduled once
    for lowered in lowered_all:
        if lowered.func not in scheduled:
            scheduled[lowered.func] = _schedule_for(lowered, target, schedules, parallel)
    warn_unmatched(schedules, list(scheduled), target.name)
    built, stats = _build_all(lowered_all, scheduled, target, jobs, progress)
    kernels = []
    for lowered, kernel in zip(lowered_all, built, strict=True):
        sch = scheduled[lowered.func]
        runner = _runner_of(kernel, target)
        kernels.append(CompiledKernel(lowered.node, lowered.pattern, lowered.inputs, runner,
                                      kernel.source, sch.trace.to_json(), lowered.source, sch,
                                      kernel, lowered.shapes, lowered.func))
    compiled = CompiledModel(graph, kernels, plan_memory(graph, reuse=plan), target,
                             fold_layout=fold_layout, plan=plan, output_structure=structure,
                             input_names=input_names)
    compiled.build_stats = stats
    return compiled


def _build_all(lowered_all: list, scheduled: dict, target, jobs, progress):
    """``build_kernels`` for every lowered kernel: those testing for NaN (``ieee``) for
    ``target`` without fast-math where its kernels use it (``cpu``: LLVM's no-NaN flag
    would fold ``x != x`` to false), the others for ``target``."""
    from workbench.backends.common.target import Target
    from workbench.graph.compile_jobs import BuildStats, build_kernels

    strict = [i for i, k in enumerate(lowered_all) if k.ieee]
    if not strict or not target.options.get("fastmath"):
        return build_kernels([scheduled[k.func] for k in lowered_all], target, jobs=jobs,
                             progress=progress)
    groups = [(strict, Target(target, fastmath=False)),
              ([i for i, k in enumerate(lowered_all) if not k.ieee], target)]
    built: list = [None] * len(lowered_all)
    stats = BuildStats()
    for indices, group_target in groups:
        kernels, part = build_kernels([scheduled[lowered_all[i].func] for i in indices],
                                      group_target, jobs=jobs, progress=progress)
        for i, kernel in zip(indices, kernels, strict=True):
            built[i] = kernel
        for field in ("kernels", "distinct", "cold", "parallel"):
            setattr(stats, field, getattr(stats, field) + getattr(part, field))
    return built, stats


class CompiledModel:
    """A compiled model: call it with the model's inputs (torch tensors or numpy arrays).

    Attributes
    ----------
    graph : Graph
        The optimised (fused) graph.
    kernels : list of CompiledKernel
        In execution order.
    memory : MemoryPlan
        Where every intermediate lives; the buffers are allocated once, here.
    target : str
        The target's name (``target_info``: the ``Target`` itself).
    """

    def __init__(self, graph: Graph, kernels: list[CompiledKernel], memory: MemoryPlan,
                 target="cpu", *, fold_layout: bool = False, plan: bool = True,
                 output_structure=None, input_names=None):
        self.graph, self.kernels, self.memory = graph, kernels, memory
        # each input's name, for a call by keyword (None: by position only); by default the
        # graph's input names (an ONNX model's, a torch module's forward parameters)
        self.input_names = (tuple(graph.inputs) if input_names is None
                            else tuple(input_names))
        if len(self.input_names) != len(graph.inputs):
            raise ValueError(f"input_names: {len(self.input_names)} name(s) for the graph's "
                             f"{len(graph.inputs)} input(s)")
        self.target_info = resolve_target(target, "CompiledModel")
        self.target = self.target_info.name
        self.fold_layout, self.plan = bool(fold_layout), bool(plan)
        self.output_structure = output_structure
        self.build_stats = None  # compile's BuildStats (kernels, distinct, cold, parallel)
        self._arena = [np.empty(size, np.uint8) for size in memory.buffers]
        # every constant C-contiguous and writable, once: Numba types a read-only array (an
        # ONNX initializer, an np.load'ed weight) as another type than the one each kernel was
        # compiled for, so a call with one compiles the kernel again and runs a slower variant
        # (one MLP kernel measured 13x slower)
        self._values: dict[str, np.ndarray] = {name: kernel_array(value)
                                               for name, value in graph.constants.items()}
        for node in graph.nodes:
            if node.op in VIEW_OPS and node.name in memory.assignment:
                continue
            ty = node.type
            raw = self._arena[memory.assignment[node.name]][:ty.nbytes]
            self._values[node.name] = raw.view(ty.dtype).reshape(ty.shape)
        self._views = [n for n in graph.nodes if n.op in VIEW_OPS]
        self._index_checks = index_checks(graph)  # integer inputs used as indices
        self._by_node = {k.node: k for k in kernels}
        self.runtime = None  # device-resident targets: buffers and launches on the device
        if _device_resident(target):
            from workbench.graph.compiled_cuda import DeviceRuntime

            self.runtime = DeviceRuntime(self)

    # ---- running -------------------------------------------------------------------------

    def _bind(self, inputs) -> dict[str, np.ndarray]:
        """The inputs checked (count, shape, dtype: never reshaped or cast) and bound."""
        if len(inputs) != len(self.graph.inputs):
            names = ", ".join(self.graph.inputs)
            raise ModelInputError(f"the model takes {len(self.graph.inputs)} input(s) "
                                  f"({names}), got {len(inputs)}")
        values = dict(self._values)
        for (name, ty), x in zip(self.graph.inputs.items(), inputs, strict=True):
            expected = f"{ty.dtype} array of shape {tuple(ty.shape)}"
            array = host_array(x, name, expected)
            if not isinstance(array, np.ndarray):
                raise ModelInputError(f"input {name!r} of the model: expected {expected}, "
                                      f"got {type(x).__name__}")
            if array.dtype != np.dtype(ty.dtype) or tuple(array.shape) != tuple(ty.shape):
                raise ModelInputError(f"input {name!r} of the model: expected {expected}, "
                                      f"got {array.dtype} array of shape "
                                      f"{tuple(array.shape)}")
            values[name] = kernel_array(array)
        check_inputs(self._index_checks, values)
        return values

    def _run(self, values: dict, timings: list | None = None) -> None:
        views = iter(self._views)
        pending = next(views, None)
        order = {n.name: i for i, n in enumerate(self.graph.nodes)}
        for kernel in self.kernels:
            while pending is not None and order[pending.name] < order[kernel.node]:
                values[pending.name] = values[pending.inputs[0]].reshape(pending.type.shape)
                pending = next(views, None)
            args = [values[name] for name in kernel.inputs] + [values[kernel.node]]
            start = time.perf_counter()
            kernel.call(args)
            if timings is not None:
                timings.append(time.perf_counter() - start)
        while pending is not None:
            values[pending.name] = values[pending.inputs[0]].reshape(pending.type.shape)
            pending = next(views, None)

    def __call__(self, *inputs, **keywords):
        """The model's output(s) as numpy arrays (copies: the buffers are reused), nested as
        the torch model returns them (a tuple, list or dict); one array for one output. On a
        device-resident target (``cuda``) device inputs give device outputs, no host copy
        (``workbench.graph.compiled_cuda``).

        Inputs are given by position or by name, as to the torch module (``input_names``;
        ``wb.compile(..., example_kwargs=...)``).

        Raises ``ModelInputError`` for an input of another count, shape or dtype than the
        model was compiled for (inputs are never reshaped or cast), or a name it does not
        take."""
        inputs = bind_inputs(self.input_names, inputs, keywords)
        if self.runtime is not None:
            result = self.runtime(*inputs)
            if self.output_structure is None:
                return result
            flat = [result] if len(self.graph.outputs) == 1 else list(result)
            return _unflatten(self.output_structure, flat)
        values = self._bind(inputs)
        self._run(values)
        outputs = [np.array(values[name]) for name in self.graph.outputs]
        if self.output_structure is not None:
            return _unflatten(self.output_structure, outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def latency_report(self, *inputs, repeat: int = 20):
        """Per-kernel median latency as a DataFrame (kernel, pattern, median_us, share)."""
        import pandas as pd

        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise ValueError(f"latency_report: repeat must be a positive integer, got "
                             f"{repeat!r}")

        if self.runtime is not None:  # device time per kernel, CUDA events
            medians = np.array(self.runtime.kernel_seconds(*inputs, repeat=repeat)) * 1e6
            frame = pd.DataFrame({"kernel": [k.node for k in self.kernels],
                                  "pattern": [k.pattern for k in self.kernels],
                                  "median_us": medians})
            frame["share"] = frame["median_us"] / frame["median_us"].sum()
            return frame
        values = self._bind(inputs)
        self._run(values)  # warm-up
        runs = []
        for _ in range(repeat):
            timings: list[float] = []
            self._run(values, timings)
            runs.append(timings)
        medians = np.median(np.array(runs), axis=0) * 1e6
        frame = pd.DataFrame({"kernel": [k.node for k in self.kernels],
                              "pattern": [k.pattern for k in self.kernels],
                              "median_us": medians})
        frame["share"] = frame["median_us"] / frame["median_us"].sum()
        return frame

    # ---- inspection ----------------------------------------------------------------------

    def _kernel(self, node: str) -> CompiledKernel:
        kernel = self._by_node.get(node)
        if kernel is None:
            raise KeyError(f"no kernel computes {node!r}; the kernels are: "
                           f"{', '.join(self._by_node)}")
        return kernel

    def func(self, node: str):
        """The unscheduled ``PrimFunc`` of the kernel computing ``node``."""
        from workbench.script import from_source

        kernel = self._kernel(node)
        if kernel.func is None:
            kernel.func = from_source(kernel.func_source)
        return kernel.func

    def schedule(self, node: str):
        """The ``Schedule`` of the kernel computing ``node`` (a fused group's name)."""
        from workbench.schedule import Trace

        kernel = self._kernel(node)
        if kernel.schedule is None:
            kernel.schedule = Trace.from_json(kernel.trace_json).apply(self.func(node))
        return kernel.schedule

    def explore(self, node: str, **kwargs):
        """Open ``node``'s kernel (its loop nest and current schedule) in ``wb.explore``.

        The explorer continues the kernel's trace; ``compiled.reschedule(node, explorer)``
        puts what was found there back into the model.

        Example
        -------
        >>> ex = compiled.explore("matmul_2")                   # doctest: +SKIP
        >>> ex.apply("unroll", "i_1"); compiled.reschedule("matmul_2", ex)   # doctest: +SKIP
        """
        import workbench

        try:
            explore = workbench.explore
        except AttributeError as error:
            raise NotImplementedError("wb.explore is not available in this build; "
                                      "use .schedule(node) instead") from error
        return explore(self.schedule(node), target=self.target_info.explore_target, **kwargs)

    def reschedule(self, node: str, schedule, *, check: bool = True) -> None:
        """Swap the schedule of ``node``'s kernel, rebuild it, and use it from now on.

        Parameters
        ----------
        node : str
            The node (or fused group) the kernel computes.
        schedule : Schedule, Trace, trace JSON, explorer, or callable
            A ``Schedule`` of the kernel's function, a ``Trace`` (or its JSON) replayed on
            it, an explorer (its current schedule), or ``fn(func) -> Schedule`` (a recipe).
        check : bool
            Run the new kernel and the ``numpy`` reference of the unscheduled function on
            the same random inputs first; a different result raises ``ValueError``.

        Errors (an unknown node, a trace that does not replay, a schedule of another
        function, a wrong result) leave the model as it was.

        Example
        -------
        >>> from workbench import recipes
        >>> compiled.reschedule("matmul_2", recipes.get("matmul", "tiled"))   # doctest: +SKIP
        """
        from workbench.backends import build

        kernel = self._kernel(node)
        sch = self._as_schedule(node, schedule)
        target = self.target_info
        if self.target_info.options.get("fastmath") and getattr(
                kernel.kernel, "options", {}).get("fastmath") is False:
            from workbench.backends.common.target import Target

            target = Target(target, fastmath=False)  # a NaN-testing kernel (``_build_all``)
        built = build(sch, target=target)
        if check:
            self._check_kernel(node, built)
        kernel.schedule, kernel.kernel = sch, built
        kernel.runner = _runner_of(built, self.target_info)
        if self.runtime is not None:
            self.runtime.invalidate()  # its launches and graphs hold the old kernel
        kernel.trace_json, kernel.source = sch.trace.to_json(), built.source

    def _as_schedule(self, node: str, schedule):
        from workbench.schedule import Schedule, Trace

        func = self.func(node)
        if hasattr(schedule, "current") and isinstance(schedule.current, Schedule):
            schedule = schedule.current  # an explorer
        if isinstance(schedule, str):
            schedule = Trace.from_json(schedule)
        if isinstance(schedule, Trace):
            return schedule.apply(func)
        if callable(schedule) and not isinstance(schedule, Schedule):
            schedule = schedule(func)
        if not isinstance(schedule, Schedule):
            raise TypeError(f"reschedule needs a Schedule, a Trace, trace JSON, an explorer or "
                            f"fn(func) -> Schedule; got {type(schedule).__name__}")
        if schedule.func_before != func:
            raise ValueError(f"the schedule is of function {schedule.func_before.name!r}, not "
                             f"of {node!r}'s kernel ({func.name}); start from "
                             f"compiled.func({node!r})")
        return schedule

    def _check_kernel(self, node: str, built) -> None:
        from workbench.backends import build

        func = self.func(node)
        rng = np.random.default_rng(0)
        arrays = [rng.uniform(-1, 1, p.shape).astype(p.dtype) for p in func.params]
        want = [a.copy() for a in arrays]
        build(func, target="numpy")(*want)
        got = [a.copy() for a in arrays]
        built(*got)
        if not np.allclose(got[-1], want[-1], rtol=1e-3, atol=1e-4):
            worst = float(np.max(np.abs(got[-1] - want[-1])))
            raise ValueError(f"the new schedule of {node!r} computes a different result "
                             f"(max abs difference {worst:.3g}); the model keeps its old "
                             "kernel")

    def save(self, folder) -> None:
        """Write the deployment artifact (see ``workbench.graph.artifact``)."""
        from workbench.graph.artifact import save

        save(self, folder)

    def __repr__(self) -> str:
        return (f"<CompiledModel: {len(self.kernels)} kernels, target={self.target!r}, "
                f"{self.memory}>")
