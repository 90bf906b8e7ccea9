"""Loop and block names where a primitive takes a handle: ``sch.vectorize("j")``.

Every public ``Schedule`` method with a ``LoopRV`` / ``BlockRV`` parameter also takes the
loop's or block's name there, as the explorer does. The name is turned into a handle of
the schedule's own trace once, at the API boundary, before the primitive runs: a handle the
trace already fetched (``get_block`` / ``get_loops`` output) when there is one, else a new
``get_block`` (and ``get_loops`` for a loop), as a user would type them, so the trace replays.
Loop variable and block names are unique in a function (``workbench.ir.verify``); a name
is ambiguous only where a loop or a block is accepted and both have it
(``AmbiguousNameError``); an unknown name raises ``LoopNotFoundError`` /
``BlockNotFoundError`` / ``NameNotFoundError`` naming the candidates. Whatever is refused,
the schedule is left as it was (the fetches are undone with the failed step).

Example
-------
>>> sch = Schedule(ops.matmul(64, 64, 64))                    # doctest: +SKIP
>>> sch.vectorize("j")                                         # doctest: +SKIP
>>> sch.trace.lines()[-1]                                      # doctest: +SKIP
'sch.vectorize(l3)'
"""

from __future__ import annotations

import functools
import inspect

from workbench.schedule.errors import (
    AmbiguousNameError,
    BlockNotFoundError,
    LoopNotFoundError,
    NameNotFoundError,
)
from workbench.schedule.tree import block_names, child_blocks, find_loop, loop_names

_EXPECTED = {"LoopRV": "loop", "BlockRV": "block", "BlockRV | LoopRV": "block_or_loop",
             "LoopRV | BlockRV": "block_or_loop"}


def accept_names(cls: type) -> type:
    """Wrap every public method of ``cls`` taking a handle so that it takes a name too."""
    for attr in dir(cls):
        if attr.startswith("_"):
            continue
        method = getattr(cls, attr)
        if not callable(method) or not inspect.isfunction(method):
            continue
        params = {p.name: (_EXPECTED[str(p.annotation)], p.kind is p.VAR_POSITIONAL)
                  for p in inspect.signature(method).parameters.values()
                  if str(p.annotation) in _EXPECTED}
        if params:
            setattr(cls, attr, _by_name(method, params))
    return cls


def _by_name(method, params: dict[str, tuple[str, bool]]):
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not any(isinstance(a, str) for a in args) and \
                not any(isinstance(v, str) for v in kwargs.values()):
            return method(self, *args, **kwargs)  # handles only: nothing to resolve
        bound = signature.bind(self, *args, **kwargs)
        before = self._state
        try:
            for name, (expected, many) in params.items():
                if name not in bound.arguments:
                    continue
                value = bound.arguments[name]
                if many:
                    bound.arguments[name] = tuple(
                        handle_of(self, v, expected, method.__name__, name) for v in value)
                else:
                    bound.arguments[name] = handle_of(self, value, expected, method.__name__,
                                                      name)
            return method(*bound.args, **bound.kwargs)
        except BaseException:
            self._state = before  # the fetches go with the refused step
            raise

    return wrapper


def handle_of(sch, value, expected: str, primitive: str, argument: str):
    """``value`` if it is not a string, else the traced handle of the loop or block it names."""
    if not isinstance(value, str):
        return value
    func = sch.mod
    loops, blocks = loop_names(func), block_names(func)
    kinds = ("loop", "block") if expected == "block_or_loop" else (expected,)
    found = [k for k in kinds if value in (loops if k == "loop" else blocks)]
    if len(found) > 1:
        raise AmbiguousNameError(primitive, argument, value, tuple(found))
    if not found:
        if expected == "loop":
            raise LoopNotFoundError(primitive, value, func, loops)
        if expected == "block":
            raise BlockNotFoundError(primitive, value, func, blocks)
        raise NameNotFoundError(primitive, value, func, tuple(loops), tuple(blocks))
    kind = found[0]
    traced = _traced(sch, kind, value)
    if traced is not None:
        return traced
    if kind == "block":
        return sch.get_block(value)
    loop, _ = find_loop(func, value, primitive)
    inner = child_blocks(loop)
    for handle in sch.get_loops(_traced(sch, "block", inner[0].name)
                                or sch.get_block(inner[0].name)):
        if sch.name(handle) == value:
            return handle
    raise LoopNotFoundError(primitive, value, func, loops)  # not reached: the loop is around


def _traced(sch, kind: str, name: str):
    """The newest handle to ``name`` that a step of the trace output (so a replay has it)."""
    from workbench.schedule.handles import make_handle, parse_ref

    state = sch._state
    outputs = {parse_ref(ref)[1] for step in state.trace.steps for ref in step.outputs
               if parse_ref(ref) is not None}
    ids = [i for i, entry in state.names.items() if entry == (kind, name) and i in outputs]
    return make_handle(kind, max(ids), sch._uid, sch) if ids else None
