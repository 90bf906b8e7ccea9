"""``wb.compile``'s arguments checked before any work (nothing imported, traced or built).

Each refusal names the argument, what was expected and what was given, and is raised
before the model is traced, so the user's model and any records file are left as they
were (docs/decisions.md, "Bad input at the graph level"):

- ``model``: a torch module, an ``ExportedProgram``, an ONNX ``ModelProto``, a path to an
  ``.onnx`` file (it must exist and parse: ``ModelFileError``) or a ``Graph`` (``TypeError``);
- ``example_inputs``: a tuple (a lone tensor or array is taken as one input; numpy arrays
  become torch tensors for a torch model); the module's ``forward`` must accept that many
  (``ModelInputError``), and where tracing fails the model is run on them in eager PyTorch
  to name the inputs' fault (``ModelInputError``) rather than the tracer's;
- ``schedules``: ``"default"``, ``"none"`` or an existing records file, not a folder
  (``FileNotFoundError``, ``IsADirectoryError``, ``TypeError``);
- ``jobs``: None or a positive integer.

Example
-------
>>> check_jobs(0)
Traceback (most recent call last):
...
ValueError: wb.compile(jobs=0): expected a positive number of worker processes or None
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import logging
import os
import sys

from workbench.graph.errors import ModelFileError, ModelInputError, UnsupportedDtypeError

SCHEDULE_WORDS = ("default", "none")


def _torch():
    return sys.modules.get("torch")


def _is_torch_model(model) -> bool:
    torch = _torch()
    return torch is not None and isinstance(model, torch.nn.Module | torch.export.ExportedProgram)


def check_model(model):
    """``model`` as ``_import`` takes it (a path: the ONNX model read from it); ``TypeError``
    for anything that is not a model, ``ModelFileError`` for a path that is not an ONNX
    model."""
    from workbench.graph.ir import Graph

    if isinstance(model, str | os.PathLike):
        return read_onnx(model)  # loaded once, here
    if isinstance(model, Graph) or type(model).__name__ == "ModelProto" or _is_torch_model(model):
        return model
    raise TypeError(f"wb.compile(model=...): expected a torch.nn.Module, a torch.export."
                    f"ExportedProgram, an onnx.ModelProto, a path to an .onnx file or a Graph, "
                    f"got {type(model).__name__}")


def read_onnx(path):
    """The ``onnx.ModelProto`` stored at ``path``; ``ModelFileError`` naming the path when it
    does not exist, is a folder, or does not parse as an ONNX model."""
    import onnx

    text = os.fspath(path)
    if not os.path.exists(text):
        raise ModelFileError(f"model file {text!r} does not exist")
    if os.path.isdir(text):
        raise ModelFileError(f"model file {text!r} is a folder, not an .onnx file")
    try:
        return onnx.load(text)
    except Exception as error:  # protobuf's DecodeError, a truncated file, external data
        first = str(error).splitlines()[0] if str(error) else ""
        raise ModelFileError(f"model file {text!r} is not an ONNX model "
                             f"({type(error).__name__}: {first})"[:400]) from None


def check_schedules(schedules) -> None:
    """``"default"``, ``"none"``, None, or the path of an existing records file."""
    if schedules is None or (isinstance(schedules, str) and schedules in SCHEDULE_WORDS):
        return
    if type(schedules).__name__ == "Database":  # an open tuning database: read as it is
        return
    if not isinstance(schedules, str | os.PathLike):
        raise TypeError(f"wb.compile(schedules=...): expected 'default', 'none', the path of "
                        f"a tuning-records file or a Database, got {type(schedules).__name__}")
    text = os.fspath(schedules)
    if os.path.isdir(text):
        raise IsADirectoryError(f"wb.compile(schedules={text!r}): is a folder, not a tuning "
                                "records file")
    if not os.path.exists(text):
        close = difflib.get_close_matches(text, SCHEDULE_WORDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise FileNotFoundError(f"wb.compile(schedules={text!r}): no such tuning records file "
                                f"(expected 'default', 'none' or a records path){hint}")
    _check_records_file(text)


def _check_records_file(path: str) -> None:
    """A records file with lines but not one valid record (an .onnx, a CSV, a file of another
    tool) is refused; a file with some corrupt lines is read as always (each corrupt line one
    ``RecordWarning``, when the records are read)."""
    import warnings

    from workbench.tune.database import Database  # on use: the graph level loads alone

    database = Database(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        valid = database.records()
    if not valid and database.corrupt:
        line, why = database.corrupt[0]
        raise ValueError(f"wb.compile(schedules={path!r}): holds no tuning record "
                         f"({len(database.corrupt)} line(s), none a record; line {line}: {why})")


def warn_unmatched(path, funcs, target: str) -> None:
    """One ``RecordWarning`` when the records file ``path`` holds no record of any of
    ``funcs`` (the model's kernels) on ``target``: records of another model or another target
    compile with the default schedules, said once, not silently."""
    import warnings

    from workbench.tune.database import Database, RecordWarning, workload_key

    if path is None or (isinstance(path, str) and path in SCHEDULE_WORDS):
        return
    database = path if isinstance(path, Database) else Database(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        present = database.workloads()
    keys = {workload_key(func, target) for func in funcs}
    if not keys & {workload for workload, _ in present}:
        held = sorted({t for _, t in present})
        warnings.warn(f"{database.path}: no record of any of this model's {len(keys)} kernels "
                      f"on {target!r} (the file holds {len(present)} workload(s) on "
                      f"{', '.join(held) or 'no target'}); default schedules used",
                      RecordWarning, stacklevel=3)


def check_jobs(jobs) -> None:
    """None or a positive ``int`` (not a bool)."""
    if jobs is None:
        return
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"wb.compile(jobs=...): expected a positive integer or None, got "
                        f"{type(jobs).__name__}")
    if jobs < 1:
        raise ValueError(f"wb.compile(jobs={jobs}): expected a positive number of worker "
                         "processes or None")


def example_tuple(model, example_inputs) -> tuple:
    """``example_inputs`` as a tuple: a lone tensor or array is one input (iterating it would
    pass its rows); for a torch model numpy arrays become tensors (``torch.export`` traces
    tensors only)."""
    import numpy as np

    torch = _torch()
    lone = isinstance(example_inputs, np.ndarray) or (
        torch is not None and isinstance(example_inputs, torch.Tensor))
    if lone:
        example_inputs = (example_inputs,)
    elif isinstance(example_inputs, list):
        example_inputs = tuple(example_inputs)
    elif isinstance(example_inputs, dict):
        raise ModelInputError("wb.compile(example_inputs=...): expected a tuple of tensors or "
                              "arrays, got a dict: keyword inputs go in example_kwargs=, as "
                              "torch.export.export(model, args, kwargs) takes them")
    elif not isinstance(example_inputs, tuple):
        raise ModelInputError(f"wb.compile(example_inputs=...): expected a tuple of tensors or "
                              f"arrays, got {type(example_inputs).__name__}")
    if _is_torch_model(model):
        example_inputs = tuple(torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                               for x in example_inputs)
    return example_inputs


def example_keywords(model, example_kwargs) -> dict:
    """``example_kwargs`` (None: no keyword inputs) as a dict of keyword inputs, numpy arrays
    made torch tensors; ``ModelInputError`` for another type, or for a model that is not a
    torch module (an ONNX model or a ``Graph`` takes its inputs by position)."""
    import numpy as np

    if example_kwargs is None or (isinstance(example_kwargs, dict) and not example_kwargs):
        return {}
    if not isinstance(example_kwargs, dict) or not all(isinstance(k, str)
                                                        for k in example_kwargs):
        raise ModelInputError(f"wb.compile(example_kwargs=...): expected a dict of keyword "
                              f"inputs by name, got {type(example_kwargs).__name__}")
    torch = _torch()
    if torch is None or not isinstance(model, torch.nn.Module):
        raise ModelInputError(f"wb.compile(example_kwargs=...): only a torch module takes "
                              f"keyword inputs; a {type(model).__name__} takes its inputs by "
                              "position (example_inputs)")
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
            for k, v in example_kwargs.items()}


def check_signature(model, example_inputs: tuple, example_kwargs: dict | None = None) -> None:
    """``ModelInputError`` when a torch module's ``forward`` does not take
    ``example_inputs`` (too few, too many) and the keywords ``example_kwargs``, before
    anything is traced."""
    torch = _torch()
    if torch is None or not isinstance(model, torch.nn.Module):
        return
    try:
        signature = inspect.signature(model.forward)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(*example_inputs, **(example_kwargs or {}))
        except TypeError as error:
            keywords = f" and the keyword(s) {', '.join(example_kwargs)}" if example_kwargs \
                else ""
            raise ModelInputError(f"wb.compile(example_inputs=...): {type(model).__name__}."
                                  f"forward{signature} does not take {len(example_inputs)} "
                                  f"input(s){keywords}: {error}") from None


@contextlib.contextmanager
def quiet_fake_tensors():
    """``torch.export``'s fake-tensor dispatcher logs a whole traceback (at ERROR) for every
    operator that fails on the inputs' shapes, before the exception that ``eager_check``
    names in one line: that one logger is silenced while the model is traced."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def eager_check(model, example_inputs: tuple) -> None:
    """Run a torch ``model`` once on ``example_inputs`` in eval mode (its flags given back),
    as PyTorch would: ``ModelInputError`` saying why the inputs do not fit (a shape or
    dtype its first layer refuses, a list where a tensor belongs), else nothing. Called
    where tracing failed, to tell the user's inputs from the tracer's limits."""
    torch = _torch()
    if torch is None or not isinstance(model, torch.nn.Module):
        return
    from workbench.graph.frontends.torch_fx import modes_kept

    with modes_kept(model), torch.no_grad():
        try:
            model.eval()
        except NotImplementedError:  # ExportedProgram.module(): keeps its exported mode
            pass
        try:
            model(*example_inputs)
        except Exception as error:  # noqa: BLE001 - whatever the model raises, named
            given = ", ".join(_describe(x) for x in example_inputs)
            raise ModelInputError(f"wb.compile(example_inputs=...): the model fails on them in "
                                  f"eager PyTorch ({type(error).__name__}: {error}); the "
                                  f"inputs: {given}"[:800]) from error


def _describe(value) -> str:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{str(dtype).replace('torch.', '')}{list(shape)}"
    return type(value).__name__


def check_pipeline(pipeline) -> None:
    """None or a callable ``Pipeline``-like object (``pipeline(graph, layout=...)``)."""
    if pipeline is not None and not callable(pipeline):
        raise TypeError(f"wb.compile(pipeline=...): expected a workbench.graph.passes.Pipeline "
                        f"or None, got {type(pipeline).__name__}")


def check_examples_fit(graph, example_inputs: tuple) -> None:
    """For a model imported without tracing (ONNX, a ``Graph``) the example inputs, when
    given, must be what the graph takes: their count, shapes and dtypes (``ModelInputError``
    naming the input); a traced torch model's graph is made from them."""
    import numpy as np

    if not example_inputs:
        return
    if len(example_inputs) != len(graph.inputs):
        raise ModelInputError(f"wb.compile(example_inputs=...): the model takes "
                              f"{len(graph.inputs)} input(s) ({', '.join(graph.inputs)}), "
                              f"got {len(example_inputs)}")
    for (name, ty), x in zip(graph.inputs.items(), example_inputs, strict=True):
        array = host_array(x, name, f"{ty.dtype} array of shape {tuple(ty.shape)}",
                           "wb.compile(example_inputs=...): ")
        got = (f"{array.dtype} array of shape {tuple(array.shape)}"
               if isinstance(array, np.ndarray) else type(x).__name__)
        if (not isinstance(array, np.ndarray) or array.dtype != np.dtype(ty.dtype)
                or tuple(array.shape) != tuple(ty.shape)):
            raise ModelInputError(f"wb.compile(example_inputs=...): input {name!r} of the "
                                  f"model: expected {ty.dtype} array of shape "
                                  f"{tuple(ty.shape)}, got {got}")


def host_array(x, name: str, expected: str, where: str = ""):
    """``x`` as a numpy array (a torch tensor detached and copied to the host), or ``x``
    itself when it is not a tensor; ``ModelInputError`` naming input ``name`` for a tensor
    numpy cannot hold (bfloat16, a meta or sparse tensor) instead of torch's own error."""
    if not hasattr(x, "detach"):
        return x
    try:
        return x.detach().cpu().numpy()
    except (TypeError, RuntimeError, NotImplementedError) as error:
        raise ModelInputError(f"{where}input {name!r} of the model: expected {expected}, got "
                              f"a {x.dtype} tensor of shape {tuple(x.shape)} on "
                              f"{x.device} ({type(error).__name__}: {error})"[:400]) from None


def _numpy_holds(dtype) -> bool:
    torch = _torch()
    if dtype not in _HELD:
        try:
            torch.empty(0, dtype=dtype).numpy()
            _HELD[dtype] = True
        except (TypeError, RuntimeError):
            _HELD[dtype] = False
    return _HELD[dtype]


_HELD: dict = {}


def check_dtypes(model, example_inputs: tuple) -> None:
    """``UnsupportedDtypeError`` naming the first example input, parameter or buffer of a
    torch module whose dtype numpy cannot hold (the graph's constants and the compiled
    model's buffers are numpy arrays), before anything is traced."""
    torch = _torch()
    if torch is None or not isinstance(model, torch.nn.Module):
        return
    named = [(f"example input {i}", x) for i, x in enumerate(example_inputs)]
    named += [(f"parameter {n!r}", p) for n, p in model.named_parameters()]
    named += [(f"buffer {n!r}", b) for n, b in model.named_buffers()]
    for what, tensor in named:
        if isinstance(tensor, torch.Tensor) and not _numpy_holds(tensor.dtype):
            raise UnsupportedDtypeError(
                f"wb.compile: {what} of the model is {tensor.dtype}: workbench computes in "
                "numpy's dtypes (float16/32/64, integers, bool); convert the model and its "
                "inputs, e.g. model.float() and x.float()")


def onnx_with_example_dims(proto, example_inputs: tuple):
    """An ONNX model whose graph inputs have symbolic dimensions (``"batch"``, unset) with
    those dimensions set from ``example_inputs`` (a copy; ``proto`` is left as it was), or
    ``proto`` itself when every dimension is fixed. Without example inputs a symbolic
    dimension is a ``ModelInputError`` naming the input: read as 0, it compiled a model of
    empty tensors."""
    initializers = {init.name for init in proto.graph.initializer}
    inputs = [inp for inp in proto.graph.input if inp.name not in initializers]

    def shape_text(inp) -> str:
        dims = inp.type.tensor_type.shape.dim
        return "(" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else
                               repr(d.dim_param or "?") for d in dims) + ")"

    symbolic = [inp for inp in inputs if any(not d.HasField("dim_value")
                                             for d in inp.type.tensor_type.shape.dim)]
    if not symbolic:
        return proto
    if not example_inputs:
        raise ModelInputError(f"wb.compile: input {symbolic[0].name!r} of the ONNX model has "
                              f"symbolic dimensions {shape_text(symbolic[0])}: pass "
                              "example_inputs to fix them")
    if len(example_inputs) != len(inputs):
        raise ModelInputError(f"wb.compile(example_inputs=...): the model takes {len(inputs)} "
                              f"input(s) ({', '.join(i.name for i in inputs)}), got "
                              f"{len(example_inputs)}")
    fixed = type(proto)()
    fixed.CopyFrom(proto)
    fixed_inputs = [inp for inp in fixed.graph.input if inp.name not in initializers]
    for inp, x in zip(fixed_inputs, example_inputs, strict=True):
        shape = tuple(getattr(x, "shape", ()))
        dims = inp.type.tensor_type.shape.dim
        if len(shape) != len(dims):
            raise ModelInputError(f"wb.compile(example_inputs=...): input {inp.name!r} of the "
                                  f"model has shape {shape_text(inp)}, got {len(shape)} "
                                  f"dimension(s) {shape}")
        for dim, size in zip(dims, shape, strict=True):
            if not dim.HasField("dim_value"):
                dim.dim_value = int(size)  # the oneof: clears dim_param
    return fixed
