"""Keyword example inputs: ``wb.compile(model, args, example_kwargs={...})``, as
``torch.export.export(model, args, kwargs)`` takes them (a transformers model called with
``input_ids=..., attention_mask=...``).

The model is traced through ``KeywordModel``, a module whose ``forward`` takes every tensor
input positionally (the positional ones, then the keyword ones in the order given, as
``torch.export`` orders its inputs) and calls the model with the keywords; a keyword whose
value is not a tensor (``return_dict=False``, ``None``) is a constant of the trace. The
compiled model knows every input's name (``input_names``), so it is called as the torch model
is: ``compiled(ids, attention_mask=mask)`` or ``compiled(input_ids=ids, attention_mask=mask)``
(``bind_inputs``).

Example
-------
>>> import torch
>>> class Masked(torch.nn.Module):
...     def forward(self, x, mask=None):
...         return x * mask
>>> x, mask = torch.randn(2, 3), torch.ones(2, 3)
>>> model, args, names = keyword_model(Masked(), (x,), {"mask": mask})
>>> names
('x', 'mask')
>>> bool(torch.equal(model(*args), x * mask))
True
"""

from __future__ import annotations

import inspect

from workbench.graph.errors import ModelInputError


def keyword_model(model, args: tuple, kwargs: dict | None):
    """``(traced model, positional inputs, input names)``: ``model`` itself, ``args`` and
    None (the graph's input names serve) without keyword inputs; a ``KeywordModel`` taking
    the tensor keywords after ``args`` with them, and every input's name."""
    if not kwargs:
        return model, args, None
    import torch

    names = positional_names(model, args)
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ModelInputError("wb.compile(example_kwargs=...): expected a dict of keyword "
                              f"inputs by name, got {type(kwargs).__name__}")
    tensors = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
    constants = {k: v for k, v in kwargs.items() if k not in tensors}
    wrapper = _keyword_module()(model, len(args), tensors, constants)
    return wrapper, tuple(args) + tuple(kwargs[k] for k in tensors), names + tuple(tensors)


def positional_names(model, args: tuple) -> tuple:
    """The ``forward`` parameter name each positional input binds to (None where the
    signature does not say: ``*args``)."""
    try:
        signature = inspect.signature(model.forward)
    except (TypeError, ValueError, AttributeError):
        return (None,) * len(args)
    names: list = []
    for param in signature.parameters.values():
        if len(names) == len(args):
            break
        if param.kind == param.VAR_POSITIONAL:
            names += [None] * (len(args) - len(names))
        elif param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
    return tuple(names) + (None,) * (len(args) - len(names))


def _keyword_module():
    """``KeywordModel``, defined on first use (the graph level imports without torch)."""
    global KeywordModel
    if KeywordModel is not None:
        return KeywordModel
    import torch

    class KeywordModel(torch.nn.Module):  # noqa: F811 - the one definition, made on use
        """``model`` called with its first ``count`` inputs positionally and the rest as the
        keywords ``keys`` (plus the constant keywords ``constants``)."""

        def __init__(self, model, count: int, keys: list[str], constants: dict):
            super().__init__()
            self.model, self.count = model, count
            self.keys, self.constants = list(keys), dict(constants)

        def forward(self, *inputs):
            keywords = dict(zip(self.keys, inputs[self.count:], strict=True))
            return self.model(*inputs[:self.count], **keywords, **self.constants)

    return KeywordModel


KeywordModel = None
"""The ``torch.nn.Module`` tracing a model called with keywords (``_keyword_module``)."""


def bind_inputs(names: tuple, inputs: tuple, keywords: dict) -> tuple:
    """The compiled model's inputs in graph order from a call's positional ``inputs`` and
    ``keywords`` (``names``: each graph input's name, None for one taken by position only);
    ``ModelInputError`` for a keyword it does not take, one given twice, or one missing."""
    if not keywords:
        return inputs
    taken = ", ".join(n for n in names if n) or "none by name"
    unknown = [k for k in keywords if k not in names]
    if unknown:
        raise ModelInputError(f"the model takes no input named {unknown[0]!r} (its inputs by "
                              f"name: {taken})")
    twice = [k for k in keywords if names.index(k) < len(inputs)]
    if twice:
        raise ModelInputError(f"input {twice[0]!r} of the model given both by position and "
                              "by name")
    bound = list(inputs)
    for index in range(len(inputs), len(names)):
        if names[index] not in keywords:
            raise ModelInputError(f"input {names[index] or index!r} of the model is missing "
                                  f"(its inputs by name: {taken})")
        bound.append(keywords[names[index]])
    return tuple(bound)


__all__ = ["KeywordModel", "ModelInputError", "bind_inputs", "keyword_model",
           "positional_names"]
