"""PyTorch frontend: ``torch.export`` (ATen graph), with ``make_fx`` (torch.fx tracing of the
ATen ops) as the fallback where export cannot trace.

The exported program is first *functionalized* on a defined opset:
``ExportedProgram.run_decompositions(decomp_table=DECOMPOSITIONS)`` removes in-place ops
(``relu_``, ``add_``: ``nn.ReLU(inplace=True)``, ``out += identity``) without decomposing the
ATen ops the converter knows (the full default table would turn ``scaled_dot_product_attention``
into a dozen small ops and ``conv1d`` into ``convolution``). Parameters, buffers (persistent
ones from ``state_dict``, non-persistent ones and lifted tensor constants from
``ExportedProgram.constants``) become graph constants.

``_Converter`` maps each ATen op to graph operators (``torch_aten.AtenOps``, one method per
op). An op whose tensor inputs are all constants (``arange``, a causal mask built from
``cumsum``/``eq``/``index``, rotary ``cos``/``sin`` tables) is *folded*: run by PyTorch at
import time, its result a constant, whatever the op. Every op neither folded nor known is
collected with its source location; the model gets ONE ``UnsupportedOperatorError`` listing
all of them with counts, before any lowering.

Example
-------
>>> import torch
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
>>> graph = from_torch(model, (torch.randn(2, 4),))
>>> [node.op for node in graph.nodes]
['transpose', 'matmul', 'add', 'relu']
"""

from __future__ import annotations

import contextlib
import operator
import re

import numpy as np

from workbench.graph.builder import GraphBuilder
from workbench.graph.errors import UnsupportedOperatorError
from workbench.graph.frontends.torch_aten import REFUSED, AtenOps
from workbench.graph.frontends.torch_index import Refused
from workbench.graph.ir import Graph, TensorType

DECOMPOSITIONS: dict = {}
"""The decomposition table given to ``run_decompositions``: empty, so the program is only
functionalized (every op the converter does not know stays visible in the error)."""

_NEVER_FOLD = {operator.getitem}


def from_torch(model, example_inputs: tuple = (), *, method: str = "auto") -> Graph:
    """Import a PyTorch model as a ``Graph``.

    Parameters
    ----------
    model : torch.nn.Module, torch.export.ExportedProgram, or ``ExportedProgram.module()``
        A module is put in eval mode and exported; an exported program is used as it is.
    example_inputs : tuple of torch.Tensor
        Fix the shapes of the graph's inputs (not needed for an ``ExportedProgram``).
    method : {"auto", "export", "fx"}
        ``"auto"`` tries ``torch.export`` and falls back to ``make_fx`` tracing.
    """
    return import_torch(model, example_inputs, method=method)[0]


def import_torch(model, example_inputs: tuple = (), *, method: str = "auto"):
    """``(graph, out_spec)``: ``from_torch``'s graph and, where a module was exported, how its
    outputs nest (``torch.export``'s ``out_spec``, a pytree ``TreeSpec``; None otherwise)."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        return _from_exported(model), None
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"from_torch: expected a torch.nn.Module or an ExportedProgram, got "
                        f"{type(model).__name__}")
    with modes_kept(model):
        try:
            model.eval()
        except NotImplementedError:  # ExportedProgram.module(): already in its exported mode
            pass
        example_inputs = tuple(example_inputs)
        if method in ("auto", "export"):
            try:
                exported = torch.export.export(model, example_inputs)
            except Exception:
                if method == "export":
                    raise
            else:
                return _from_exported(exported), exported.call_spec.out_spec
        return _from_make_fx(model, example_inputs), None


@contextlib.contextmanager
def modes_kept(model):
    """Trace in eval mode (as ``torch.onnx.export`` does by default) and give every
    submodule its own ``training`` flag back afterwards: neither ``wb.compile`` nor
    ``from_torch`` changes the user's model (docs/decisions.md)."""
    modules = list(model.modules()) if hasattr(model, "modules") else []
    flags = [m.training for m in modules]
    try:
        yield
    finally:
        for module, flag in zip(modules, flags, strict=True):
            module.training = flag


def _from_exported(exported) -> Graph:
    exported = exported.run_decompositions(decomp_table=dict(DECOMPOSITIONS))
    sig = exported.graph_signature
    state, constants = exported.state_dict, exported.constants
    tensors = {}
    sources = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
               **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
    for placeholder, fqn in sources.items():
        tensors[placeholder] = state[fqn] if fqn in state else constants[fqn]
    return _Converter(tensors, list(sig.user_inputs)).convert(exported.graph_module.graph)


def _from_make_fx(model, example_inputs) -> Graph:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        try:
            traced = make_fx(lambda *xs: model(*xs), record_stack_traces=True)(*example_inputs)
        except TypeError:  # an older make_fx without record_stack_traces
            traced = make_fx(lambda *xs: model(*xs))(*example_inputs)
    tensors = {}
    for node in traced.graph.nodes:
        if node.op == "get_attr":
            tensors[node.name] = getattr(traced, node.target)
    users = [n.name for n in traced.graph.nodes if n.op == "placeholder"]
    return _Converter(tensors, users).convert(traced.graph)


def source_location(fx_node) -> str:
    """``file:line`` of the user's code that created ``fx_node`` (last frame of its stack)."""
    trace = fx_node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    if user:
        path, line = user[-1]
        return f"{path}:{line}"
    return f"<fx node {fx_node.name}>"


def op_name(target) -> str:
    """``aten.add.Tensor`` -> ``add``; builtins such as ``operator.getitem`` -> ``getitem``."""
    text = str(target)
    if text.startswith("aten."):
        return text.split(".")[1]
    return getattr(target, "__name__", text)


class _Converter(AtenOps):
    def __init__(self, tensors: dict, user_inputs: list[str]):
        self.tensors = tensors
        self.user_inputs = user_inputs
        self.b = GraphBuilder()
        self.values: dict[str, object] = {}
        self.unsupported: list[tuple[str, str]] = []
        self.booleans: set[str] = set()  # values that are 0/1 masks of a torch.bool tensor
        self.refusals: dict[str, str] = {}  # "op (node)" -> why this use is refused

    # ---- driving -------------------------------------------------------------------------

    def convert(self, fx_graph) -> Graph:
        outputs: list[str] = []
        for fx_node in fx_graph.nodes:
            if fx_node.op in ("placeholder", "get_attr"):
                self._leaf(fx_node)
            elif fx_node.op == "call_function":
                self._call(fx_node)
            elif fx_node.op == "output":
                outputs = self._outputs(fx_node.args[0])
        if self.unsupported:
            reasons = {op: REFUSED[op_name(op)] for op, _ in self.unsupported
                       if op_name(op) in REFUSED}
            reasons.update(self.refusals)
            raise UnsupportedOperatorError(self.unsupported, reasons)
        return self.b.finish(outputs)

    def _outputs(self, result) -> list[str]:
        import torch

        items = torch.utils._pytree.tree_leaves(result)
        return [self.values.get(item.name, _MISSING) for item in items
                if hasattr(item, "name")]

    def _leaf(self, fx_node) -> None:
        if fx_node.name in self.tensors:
            array = self.tensors[fx_node.name].detach().cpu().numpy()
            self.values[fx_node.name] = self.b.constant(fx_node.name, array)
            return
        if fx_node.name not in self.user_inputs:
            return
        val = fx_node.meta.get("val")
        shape = tuple(int(s) for s in val.shape)
        dtype = str(val.dtype).replace("torch.", "")
        value = self.b.input(fx_node.name, TensorType(shape, dtype))
        if dtype == "bool":  # the graph's booleans are 0/1 floats: one cast at the boundary
            self.source, self.hint = source_location(fx_node), fx_node.name
            value = self._emit("cast", [value], {"dtype": "float32"})
            self.booleans.add(value)
        self.values[fx_node.name] = value

    def _call(self, fx_node) -> None:
        name = op_name(fx_node.target)
        location = source_location(fx_node)
        args = [self._arg(a) for a in fx_node.args]
        kwargs = {k: self._arg(v) for k, v in fx_node.kwargs.items()}
        if _contains(args, _MISSING) or _contains(list(kwargs.values()), _MISSING):
            if self.handler(name) is None:
                self.unsupported.append((str(fx_node.target), location))
            return  # an input came from an unsupported operator: already reported
        self.source = location
        self.hint = fx_node.name
        val = fx_node.meta.get("val")
        dtype = getattr(val, "dtype", None) if not isinstance(val, list | tuple) else None
        self.result_dtype = None if dtype is None else str(dtype).replace("torch.", "")
        if fx_node.target not in _NEVER_FOLD and self._foldable(fx_node):
            self.values[fx_node.name] = self._fold(fx_node)
            return
        handler = self.handler(name)
        if handler is None or name in REFUSED:
            self.unsupported.append((str(fx_node.target), location))
            return
        try:
            self.values[fx_node.name] = handler(*args, **kwargs)
        except (Refused, NotImplementedError) as refusal:
            self.unsupported.append((str(fx_node.target), location))
            self.refusals[f"{fx_node.target} (node {fx_node.name} at {location})"] = str(refusal)
            return
        if self.result_dtype == "bool":
            self.booleans.add(self.values[fx_node.name])

    def _arg(self, value):
        from torch.fx import Node as FxNode

        if isinstance(value, FxNode):
            return self.values.get(value.name, _MISSING)
        if isinstance(value, list | tuple):
            return type(value)(self._arg(v) for v in value)
        return value

    # ---- constant folding by PyTorch -------------------------------------------------------

    def _foldable(self, fx_node) -> bool:
        """True when every tensor argument is a constant (looked up from the fx node's
        arguments: a string argument such as ``rounding_mode="floor"`` is not a value)."""
        from torch.fx import Node as FxNode

        nodes = [v for v in _flat(list(fx_node.args) + list(fx_node.kwargs.values()))
                 if isinstance(v, FxNode)]
        values = _flat([self.values.get(n.name) for n in nodes])
        return all(v in self.b.constants for v in values if isinstance(v, str))

    def _fold(self, fx_node):
        import torch
        from torch.fx import Node as FxNode

        def value_of(value):  # a converted value: constant names become tensors
            if isinstance(value, str):
                return torch.from_numpy(np.array(self.b.constants[value]))
            if isinstance(value, list | tuple):
                return type(value)(value_of(v) for v in value)
            return value

        def to_torch(value):
            if isinstance(value, FxNode):
                return value_of(self.values[value.name])
            if isinstance(value, list | tuple):
                return type(value)(to_torch(v) for v in value)
            return value

        with torch.no_grad():
            result = fx_node.target(*to_torch(list(fx_node.args)),
                                    **{k: to_torch(v) for k, v in fx_node.kwargs.items()})
        return self._from_torch_value(result)

    def _from_torch_value(self, value):
        import torch

        if isinstance(value, torch.Tensor):
            return self.b.constant(self.hint, value.detach().cpu().numpy())
        if isinstance(value, list | tuple):
            return [self._from_torch_value(v) for v in value]
        return value


def _flat(values):
    for value in values:
        if isinstance(value, list | tuple):
            yield from _flat(value)
        else:
            yield value


def _contains(values, item) -> bool:
    return any(v is item for v in _flat(values))


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
