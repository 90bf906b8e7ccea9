"""Type promotion as PyTorch does it (mixed into ``torch_aten.AtenOps``).

An op's result dtype is the one ``torch.export`` recorded on its node (``torch.result_type``
rules: ``int64 + float32 -> float32``, ``float32 * float64 -> float64``, ``bool + int64 ->
int64``); without it (an op emitted by another handler) it is ``torch.promote_types`` of the
operands' graph dtypes. Every operand is ``cast`` to the dtype the op computes in:

- a floating result: that dtype;
- an integer result (``int64 + int32``): float64, exact for integers up to 2**53, and the
  result cast back to the integer dtype (cast truncates toward zero, as PyTorch's does);
- a boolean result (a comparison, ``&``): the operands' promoted dtype (float64 for
  integers); the graph's booleans are 0/1 masks in that floating dtype.

Explicit conversions (``x.to(dtype)``, ``.float()``, ``.long()``, ``type_as``) are casts;
a conversion to ``bool`` is ``x != 0`` as a mask; ``float16``/``bfloat16`` are computed in
float32 (the kernels' dtype), so a conversion to them passes its input through.
"""

from __future__ import annotations

import numpy as np

_FLOATS = ("float32", "float64")
_HALF = ("float16", "bfloat16")


def is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def promote(*dtypes: str) -> str:
    """``torch.promote_types`` of graph dtype names (``bool`` included)."""
    import torch

    result = getattr(torch, dtypes[0])
    for dtype in dtypes[1:]:
        result = torch.promote_types(result, getattr(torch, dtype))
    return str(result).replace("torch.", "")


class PromotionOps:
    """Casts for mixed dtypes (``self`` is the converter: ``b``, ``_emit``, ``booleans``)."""

    result_dtype: str | None = None  # the torch dtype of the node being converted

    def _dtype(self, name: str) -> str:
        return self.b.types[name].dtype

    def _cast(self, x: str, dtype: str) -> str:
        """``x`` in ``dtype`` (a constant is converted at import, anything else by a
        ``cast`` node)."""
        if self._dtype(x) == dtype:
            return x
        constant = self._const(x)
        if constant is not None:
            return self.b.constant(self.hint, np.asarray(constant).astype(dtype))
        return self._emit("cast", [x], {"dtype": dtype})

    def _result(self, values) -> str:
        """The op's result dtype: recorded by torch.export, else promoted from the tensor
        operands (a python float scalar makes an integer computation float32)."""
        if self.result_dtype is not None and self.result_dtype not in _HALF:
            return self.result_dtype
        tensors = [self._dtype(v) for v in values if isinstance(v, str)]
        result = promote(*tensors) if tensors else "float32"
        if not result.startswith("float") and any(isinstance(v, float) for v in values):
            result = "float32"
        return "float32" if result in _HALF else result

    def _compute_dtype(self, values, result: str) -> str:
        if result in _FLOATS:
            return result
        if is_integer(result):
            return "float64"
        tensors = [self._dtype(v) for v in values if isinstance(v, str)]
        promoted = promote(*tensors) if tensors else "float32"
        if promoted in _FLOATS:
            return promoted
        return "float64" if is_integer(promoted) else "float32"

    def _operand(self, value, dtype: str) -> str:
        if isinstance(value, str):
            return self._cast(value, dtype)
        return self.b.constant("scalar", np.asarray(value, dtype=dtype))

    def _promoted(self, op: str, values: list, extra: list | None = None) -> str:
        """``op`` over ``values`` (tensors or python scalars) in the promoted dtype, then
        ``extra`` inputs as they are (a ``where``'s mask); integer results cast back."""
        result = self._result(values)
        dtype = self._compute_dtype(values, result)
        y = self._emit(op, [self._operand(v, dtype) for v in values] + list(extra or []))
        return self._cast(y, result) if is_integer(result) else y

    def _convert(self, x: str, dtype: str | None) -> str:
        """An explicit conversion of ``x`` to ``dtype``."""
        if dtype is None or dtype in _HALF or dtype == self._dtype(x):
            return x
        if dtype == "bool":
            if x in self.booleans:
                return x
            return self._emit("ne", [x, self._operand(0, self._dtype(x))])
        return self._cast(x, dtype)

    def _op__to_copy(self, x, *args, **kwargs):
        """A dtype conversion: ``cast`` (to ``bool``: ``x != 0``); same dtype: its input."""
        return self._convert(x, self.result_dtype)

    _op_to = _op__to_copy
    _op_type_as = _op__to_copy


__all__ = ["PromotionOps", "promote"]
