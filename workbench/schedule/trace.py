"""Traces: the replayable record of what was done to a schedule.

Every ``Schedule`` method (queries included) appends one ``Instruction``: the primitive's
name, its handle inputs (``"b0"``, ``"l3"``), its literal attributes (``factors``...) and the
handles it returned. A trace prints as the Python that redoes it::

    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    l4, l5 = sch.split(l1, factors=[None, 32])

serialises to JSON (``to_json`` / ``from_json``, never pickle) and replays on a fresh
function (``apply``). Which primitives exist, what their inputs and attributes are, and
how to probe them for ``legal_primitives`` is the ``INSTRUCTIONS`` registry, filled with
``register_instruction`` (see ``workbench/schedule/instructions.py``).

Errors in a stored trace (bad JSON, an unknown primitive, an attribute of the wrong type,
a handle used before any step made it) raise ``TraceError``, a ``ValueError``: the trace is
bad data, not an illegal schedule. A trace that is well formed but does not fit the
function it is applied to raises the primitive's own ``ScheduleError``, with a note
naming the step.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workbench.schedule.handles import parse_ref

if TYPE_CHECKING:
    from workbench.ir import PrimFunc
    from workbench.schedule.schedule import Schedule

TRACE_FORMAT = "workbench.trace"
TRACE_VERSION = 1


class TraceError(ValueError):
    """A trace that cannot be read or replayed: names the step and what is wrong with it."""

    def __init__(self, message: str, step: int | None = None):
        where = f"step {step}: " if step is not None else ""
        super().__init__(where + message)
        self.message = message
        self.step = step

    def __reduce__(self):
        return type(self), (self.message, self.step)


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------

_REQUIRED = object()


@dataclasses.dataclass(frozen=True)
class AttrSpec:
    """A literal argument of a primitive: its name, a type check and a default."""

    name: str
    check: Callable[[Any], bool]
    expected: str
    default: Any = _REQUIRED
    positional: bool = False

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


@dataclasses.dataclass(frozen=True)
class InstructionKind:
    """How one primitive is recorded, printed, validated and probed.

    Attributes
    ----------
    name : str
        The ``Schedule`` method name; replay calls ``getattr(sch, name)(*inputs, **attrs)``.
    inputs : tuple of str
        Handle arguments in order: ``"block"``, ``"loop"``, ``"block_or_loop"``; a last
        ``"*loop"`` (or ``"*block"``) takes one or more handles.
    attrs : tuple of AttrSpec
        Literal keyword arguments (JSON values).
    outputs : str
        ``"none"``, ``"block"``, ``"loop"`` (one handle), ``"blocks"`` or ``"loops"`` (a list).
    applies_to : tuple of str
        Handle kinds ``legal_primitives`` probes this primitive at (empty: never).
    probe : callable or None
        ``probe(sch, handle) -> (args, kwargs)``: default arguments for trying the primitive
        at ``handle`` on a copy of ``sch``; may raise a ``ScheduleError`` itself.
    """

    name: str
    inputs: tuple[str, ...]
    attrs: tuple[AttrSpec, ...] = ()
    outputs: str = "none"
    applies_to: tuple[str, ...] = ()
    probe: Callable | None = None

    def attr(self, name: str) -> AttrSpec | None:
        return next((a for a in self.attrs if a.name == name), None)


INSTRUCTIONS: dict[str, InstructionKind] = {}


def register_instruction(kind: InstructionKind) -> InstructionKind:
    """Add a primitive to the registry (replacing one of the same name)."""
    INSTRUCTIONS[kind.name] = kind
    return kind


# ---------------------------------------------------------------------------------------
# Instructions and traces
# ---------------------------------------------------------------------------------------


def to_json_value(value: Any) -> Any:
    """Tuples become lists, recursively, so a value equals itself after a JSON round trip."""
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One step of a trace.

    ``inputs`` and ``outputs`` are handle references (``"b0"``, ``"l4"``); ``attrs`` maps
    attribute names to JSON values.
    """

    primitive: str
    inputs: tuple[str, ...] = ()
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)
    outputs: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "primitive": self.primitive,
            "inputs": list(self.inputs),
            "attrs": dict(self.attrs),
            "outputs": list(self.outputs),
        }


def _py_literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py_literal(v) for v in value) + "]"
    return repr(value)


class Trace:
    """An immutable sequence of instructions.

    Example
    -------
    >>> print(sch.trace)
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    >>> again = Trace.from_json(sch.trace.to_json()).apply(matmul)
    >>> again.mod == sch.mod
    True
    """

    def __init__(self, steps: tuple[Instruction, ...] | list[Instruction] = ()):
        self.steps: tuple[Instruction, ...] = tuple(steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Trace(self.steps[index])
        return self.steps[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.steps == other.steps

    __hash__ = None  # instructions hold dicts: traces compare, they do not hash

    def append(self, step: Instruction) -> Trace:
        """A new trace with ``step`` at the end."""
        return Trace(self.steps + (step,))

    # --- printing ------------------------------------------------------------------

    def lines(self) -> list[str]:
        """One Python line per step; handles renamed ``b0, l1, ...`` in order of creation."""
        names: dict[str, str] = {}
        lines = []
        for step in self.steps:
            lines.append(self._line(step, names))
        return lines

    @staticmethod
    def _line(step: Instruction, names: dict[str, str]) -> str:
        kind = INSTRUCTIONS.get(step.primitive)
        args = [names.get(ref, ref) for ref in step.inputs]
        keywords = []
        for key, value in step.attrs.items():
            spec = kind.attr(key) if kind is not None else None
            if spec is not None and spec.positional:
                args.append(_py_literal(value))
            elif spec is None or spec.required or value != spec.default:
                keywords.append(f"{key}={_py_literal(value)}")
        call = f"sch.{step.primitive}({', '.join(args + keywords)})"
        for ref in step.outputs:
            names[ref] = f"{ref[0]}{len(names)}"
        outs = [names[ref] for ref in step.outputs]
        many = kind is not None and kind.outputs in ("blocks", "loops")
        if many and not outs:
            return f"_ = {call}"
        if many and len(outs) == 1:
            return f"{outs[0]}, = {call}"
        if outs:
            return f"{', '.join(outs)} = {call}"
        return call

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"Trace({len(self.steps)} steps)" if self.steps else "Trace(empty)"

    def _repr_html_(self) -> str:
        import html

        return "<pre>" + html.escape(str(self)) + "</pre>"

    # --- JSON ------------------------------------------------------------------------

    def to_json(self, indent: int | None = None) -> str:
        """The trace as JSON text: ``{"format", "version", "steps": [...]}``."""
        data = {
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "steps": [step.to_dict() for step in self.steps],
        }
        return json.dumps(data, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """Read and validate a trace written by ``to_json``.

        Raises ``TraceError`` naming the step for bad JSON, an unknown primitive, missing
        or unknown attributes, attributes of the wrong type, and handle references that
        no earlier step produced (or that name the wrong kind of handle).

        Example
        -------
        >>> Trace.from_json(sch.trace.to_json()) == sch.trace
        True
        """
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as err:
            raise TraceError(f"the trace is not valid JSON: {err}") from None
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            raise TraceError('the trace must be a JSON object with a "steps" list')
        if data.get("format", TRACE_FORMAT) != TRACE_FORMAT:
            raise TraceError(f"unknown trace format {data.get('format')!r}")
        if data.get("version", TRACE_VERSION) != TRACE_VERSION:
            raise TraceError(
                f"unsupported trace version {data.get('version')!r} "
                f"(this workbench reads version {TRACE_VERSION})"
            )
        return cls(validate_steps(data["steps"]))

    # --- replay ----------------------------------------------------------------------

    def apply(self, func: PrimFunc) -> Schedule:
        """Replay the trace on ``func`` and return the new Schedule.

        Example
        -------
        >>> sch2 = sch.trace.apply(matmul)
        >>> sch2.mod == sch.mod and sch2.trace == sch.trace
        True
        """
        from workbench.schedule.schedule import Schedule

        schedule = Schedule(func)
        for index, step in enumerate(self.steps):
            schedule._replay_step(index, step)
        return schedule


def _input_kinds(kind: InstructionKind, count: int, index: int) -> list[str]:
    specs = list(kind.inputs)
    if specs and specs[-1].startswith("*"):
        fixed, many = specs[:-1], specs[-1][1:]
        if count < len(fixed) + 1:
            raise TraceError(
                f"{kind.name} takes at least {len(fixed) + 1} inputs, got {count}", index
            )
        return fixed + [many] * (count - len(fixed))
    if count != len(specs):
        raise TraceError(f"{kind.name} takes {len(specs)} inputs, got {count}", index)
    return specs


def validate_steps(raw_steps: list) -> list[Instruction]:
    """Check raw JSON steps against the registry; return them as Instructions."""
    defined: dict[str, str] = {}
    steps = []
    for index, raw in enumerate(raw_steps):
        if not isinstance(raw, dict):
            raise TraceError(f"a step must be a JSON object, got {raw!r}", index)
        name = raw.get("primitive")
        kind = INSTRUCTIONS.get(name) if isinstance(name, str) else None
        if kind is None:
            known = ", ".join(sorted(INSTRUCTIONS))
            raise TraceError(f"unknown primitive {name!r} (known: {known})", index)
        inputs, attrs, outputs = raw.get("inputs", []), raw.get("attrs", {}), raw.get("outputs", [])
        if (
            not isinstance(inputs, list)
            or not isinstance(attrs, dict)
            or not isinstance(outputs, list)
        ):
            raise TraceError(f"{name}: inputs and outputs must be lists and attrs an object", index)

        for ref, expected in zip(inputs, _input_kinds(kind, len(inputs), index), strict=True):
            parsed = parse_ref(ref)
            if parsed is None:
                raise TraceError(
                    f"{name}: input {ref!r} is not a handle reference like 'l3'", index
                )
            if ref not in defined:
                raise TraceError(
                    f"{name}: input {ref!r} is not produced by any earlier step", index
                )
            if expected != "block_or_loop" and parsed[0] != expected:
                raise TraceError(
                    f"{name}: input {ref!r} must be a {expected}, it is a {parsed[0]}", index
                )

        for key, value in attrs.items():
            spec = kind.attr(key)
            if spec is None:
                raise TraceError(f"{name}: unknown attribute {key!r}", index)
            if not spec.check(value):
                raise TraceError(
                    f"{name}: attribute {key!r} must be {spec.expected}, got {value!r}", index
                )
        for spec in kind.attrs:
            if spec.required and spec.name not in attrs:
                raise TraceError(f"{name}: missing attribute {spec.name!r}", index)

        expected_out = {
            "none": None,
            "block": "block",
            "loop": "loop",
            "blocks": "block",
            "loops": "loop",
        }[kind.outputs]
        if kind.outputs == "none" and outputs:
            raise TraceError(f"{name} returns nothing, the step lists outputs {outputs}", index)
        if kind.outputs in ("block", "loop") and len(outputs) != 1:
            raise TraceError(f"{name} returns one {kind.outputs}, the step lists {outputs}", index)
        for ref in outputs:
            parsed = parse_ref(ref)
            if parsed is None or parsed[0] != expected_out:
                raise TraceError(
                    f"{name}: output {ref!r} must be a {expected_out} reference", index
                )
            if ref in defined:
                raise TraceError(
                    f"{name}: output {ref!r} is already defined by an earlier step", index
                )
            defined[ref] = parsed[0]
        steps.append(Instruction(name, tuple(inputs), dict(attrs), tuple(outputs)))
    return steps
