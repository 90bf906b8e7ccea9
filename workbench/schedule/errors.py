"""Schedule errors: one class per reason a primitive refuses to run.

Every error names the primitive, the loop or block (by name), says what is wrong in one
line (``message``), why (``detail``) and, where there is one, what to do instead
(``suggestion``). It also keeps the function and the offending IR node, so that
``str(err)`` and ``err._repr_html_()`` show the IR with that node marked, as TVM's
``ScheduleError`` does.

Raising is cheap: nothing is rendered until the error is printed, so a search can try a
primitive, catch ``ScheduleError`` and move on (see ``Schedule.legal_primitives``).

Most errors have one shape, so a subclass is declared, not written (TVM's ``error.h``
style): ``fields`` names the constructor's arguments after ``primitive`` (``func`` and
``node`` follow them), and the class-level ``message``, ``why`` and ``suggestion`` format
strings are filled from those fields (and from properties of the class)::

    class NoConsumersError(ScheduleError):
        fields = ("block",)
        message = "block {block!r} has no consumers"
        why = "no block of its scope reads a buffer that {block!r} writes"
        suggestion = "compute_at needs a producer with a consumer"

    raise NoConsumersError("compute_at", "B", func, block_node)

The instance then has ``block``, ``name`` (the first field, or ``name_field``), and the
filled ``message`` / ``detail`` / ``suggestion``. Fields listed in ``named_fields`` are
passed as IR objects (a ``Block``, ``For`` or ``Buffer``) and kept by name, the objects in
``err.ir`` for the format strings and properties; ``node_field`` names the one marked in
the rendered IR when the caller passes no ``node``::

    class NotAConsumerError(ScheduleError):
        fields = ("block", "buffer")
        named_fields = ("block", "buffer")
        node_field = "block"
        message = "block {block!r} does not read {buffer!r}"

    raise NotAConsumerError("cache_read", block_node, buffer, func)   # err.buffer == "A"

Every error class of the schedule package and of the CUDA verifier
(``workbench.backends.cuda.cuda_verify``) is declared this way. A class that defines its own
``__init__`` calling ``super().__init__(primitive, name, message, detail=...,
suggestion=..., func=..., node=...)`` still works.

Example
-------
>>> try:
...     sch.vectorize(k)
... except ScheduleError as err:
...     print(err.primitive, err.name, type(err).__name__)
vectorize k ReductionLoopError
"""

from __future__ import annotations

import difflib
import html
from typing import ClassVar

from workbench.ir import Block, Buffer, For, Node, PrimFunc
from workbench.script.printer import script, script_html


def render_ir(func: PrimFunc | None, node: Node | None, label: str) -> str:
    """The function as text with ``node``'s line marked ``# <-- label``."""
    if func is None:
        return ""
    return script(func, mark=node, mark_label=label)


def render_ir_html(func: PrimFunc | None, node: Node | None, label: str) -> str:
    """The function as highlighted HTML with ``node``'s line marked."""
    if func is None:
        return ""
    return script_html(func, mark=node, mark_label=label)


class ScheduleError(Exception):
    """Base class of every schedule legality error.

    Attributes
    ----------
    primitive : str
        The primitive that refused (``"split"``, ``"vectorize"``...).
    name : str
        The loop variable or block name the error is about ("" when about no one node).
    message : str
        One line: what is wrong.
    detail : str
        Why it is wrong.
    suggestion : str
        What to do instead ("" when there is nothing obvious).
    func : PrimFunc or None
        The function the primitive was applied to (unchanged).
    node : Node or None
        The offending node (a ``For`` or a ``Block``), marked when the IR is rendered.

    Class attributes (the template; see the module docstring)
    ----------------------------------------------------------
    fields : tuple of str or None
        The constructor's arguments after ``primitive``; None: the class writes its own
        ``__init__``.
    name_field : str
        The field that is the error's ``name`` ("" for none; default: the first field).
    named_fields : tuple of str
        Fields passed as IR objects (a ``Block``, a ``For``, a ``Buffer``) and kept by name
        (``err.buffer == "A"``); the objects stay in ``err.ir`` for the format strings
        (``{ir[buffer].shape}``).
    node_field : str or None
        The field whose IR object is the node marked in the rendered IR when the caller
        passes no ``node``.
    message, why, suggestion : str
        Format strings filled from the fields and the instance's properties.
    """

    fields: ClassVar[tuple[str, ...] | None] = None
    name_field: ClassVar[str | None] = None
    named_fields: ClassVar[tuple[str, ...]] = ()
    node_field: ClassVar[str | None] = None
    message: ClassVar[str] = ""
    why: ClassVar[str] = ""
    suggestion: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "fields" in cls.__dict__ and "__init__" not in cls.__dict__:
            cls.__init__ = _template_init

    def __init__(
        self,
        primitive: str,
        name: str,
        message: str,
        *,
        detail: str = "",
        suggestion: str = "",
        func: PrimFunc | None = None,
        node: Node | None = None,
    ):
        super().__init__(message)
        self.primitive = primitive
        self.name = name
        self.message = message
        self.detail = detail
        self.suggestion = suggestion
        self.func = func
        self.node = node

    def __reduce__(self):
        # Subclass constructors take other arguments than ``args``: rebuild from the
        # attributes, so errors survive pickling (a tuning worker process sends them back).
        return _rebuild_error, (type(self), self.args, self.__dict__.copy())

    @property
    def ir_text(self) -> str:
        """The IR with the offending node marked (rendered on demand)."""
        return render_ir(self.func, self.node, self.message)

    def __str__(self) -> str:
        lines = [f"{self.primitive}: {self.message}"]
        if self.detail:
            lines.append(f"  why: {self.detail}")
        if self.suggestion:
            lines.append(f"  suggestion: {self.suggestion}")
        text = self.ir_text
        if text:
            lines.append("")
            lines.append(text)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [
            f"<div class='wb-schedule-error'><b>{html.escape(type(self).__name__)}</b> in "
            f"<code>{html.escape(self.primitive)}</code>: {html.escape(self.message)}"
        ]
        if self.detail:
            parts.append(f"<br><i>why:</i> {html.escape(self.detail)}")
        if self.suggestion:
            parts.append(f"<br><i>suggestion:</i> {html.escape(self.suggestion)}")
        parts.append(render_ir_html(self.func, self.node, self.message))
        parts.append("</div>")
        return "".join(parts)


def _rebuild_error(cls: type, args: tuple, state: dict) -> ScheduleError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error

class _FieldView(dict):
    """``str.format_map`` mapping that reads an error's attributes (fields, properties)."""

    def __init__(self, error: ScheduleError):
        super().__init__()
        self.error = error

    def __missing__(self, key: str):
        return getattr(self.error, key)


def ir_name(value: object) -> object:
    """A ``Block``'s or ``Buffer``'s name, a ``For``'s loop variable name; anything else
    (a name already, None) unchanged."""
    if isinstance(value, For):
        return value.loop_var.name
    if isinstance(value, (Block, Buffer)):
        return value.name
    return value


def _template_init(self: ScheduleError, primitive: str, *values, **named) -> None:
    """The ``__init__`` of a template error: bind ``fields`` (then ``func``, ``node``),
    fill the class's format strings, and call ``ScheduleError.__init__``."""
    cls = type(self)
    names = (*cls.fields, "func", "node")
    if len(values) > len(names):
        raise TypeError(f"{cls.__name__} takes at most {len(names) + 1} arguments")
    bound = dict(zip(names, values, strict=False))
    for key, value in named.items():
        if key not in names or key in bound:
            raise TypeError(f"{cls.__name__} got an unexpected or repeated argument {key!r}")
        bound[key] = value
    missing = [f for f in cls.fields if f not in bound]
    if missing:
        raise TypeError(f"{cls.__name__} is missing {', '.join(missing)}")
    self.primitive = primitive
    self.ir = {}
    for key in cls.fields:
        value = bound[key]
        if key in cls.named_fields:
            self.ir[key] = value
            value = ir_name(value)
        setattr(self, key, value)
    node = bound.get("node")
    if node is None and cls.node_field is not None:
        node = self.ir.get(cls.node_field)
    bound["node"] = node
    self.func, self.node = bound.get("func"), node
    name_field = cls.name_field if cls.name_field is not None else (cls.fields or ("",))[0]
    view = _FieldView(self)
    ScheduleError.__init__(
        self,
        primitive,
        str(getattr(self, name_field)) if name_field else "",
        cls.message.format_map(view),
        detail=cls.why.format_map(view),
        suggestion=cls.suggestion.format_map(view),
        func=bound.get("func"),
        node=bound.get("node"),
    )



def did_you_mean(given: str, known, otherwise: str = "") -> str:
    """``did you mean 'a' or 'b'?`` for the up to three names of ``known`` closest to ``given``."""
    close = difflib.get_close_matches(given, list(known), n=3)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else otherwise


def divisors(n: int) -> list[int]:
    """All divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


# ---------------------------------------------------------------------------------------
# Handles and names
# ---------------------------------------------------------------------------------------


class InvalidArgumentError(ScheduleError, TypeError):
    """An argument has the wrong type or form (not a handle, a factor that is not an int...)."""

    fields = ("argument", "expected", "got")
    name_field = ""
    message = "argument {argument!r} must be {expected}, got {got!r}"
    why = "{primitive} received {got_type} for {argument!r}"

    @property
    def got_type(self) -> str:
        return type(self.got).__name__


class ForeignHandleError(ScheduleError):
    """A handle created by another Schedule was passed to this one."""

    fields = ("handle",)
    name_field = ""
    message = "{handle!r} belongs to another Schedule"
    why = (
        "handles are only valid in the schedule that created them (and in copies made "
        "after they were created)"
    )
    suggestion = (
        "get the loop or block again from this schedule: sch.get_block(name), "
        "sch.get_loops(block)"
    )


class RemovedHandleError(ScheduleError):
    """A handle whose loop or block an earlier primitive removed (or an undo dropped)."""

    fields = ("handle", "removed_name", "removed_by", "func")
    name_field = "removed_name"
    message = "{kind} {removed_name!r} no longer exists: it was removed by {removed_by}"
    why = "{removed_by} replaced {kind} {removed_name!r} with new ones"
    suggestion = "use the handles that primitive returned, or sch.get_loops(block) again"

    @property
    def kind(self) -> str:
        return self.handle.kind


class WrongHandleKindError(ScheduleError):
    """A block handle where a loop was expected, or the other way round."""

    fields = ("argument", "expected", "handle")
    name_field = ""
    message = "argument {argument!r} must be a {expected} handle, got {handle!r}"
    why = "{primitive} works on {expected}s"


class KnownNames:
    """For a "no X named ..." error: ``known_text`` lists the names there are (the field
    ``known``), ``did_you_mean`` suggests the closest to the one looked up (the field
    ``looked_up``; ``otherwise`` when none is close)."""

    looked_up: ClassVar[str]
    quote_known: ClassVar[bool] = False
    otherwise: ClassVar[str] = ""

    @property
    def known_text(self) -> str:
        names = [repr(k) for k in self.known] if self.quote_known else list(self.known)
        return ", ".join(names) or "none"

    @property
    def did_you_mean(self) -> str:
        return did_you_mean(getattr(self, self.looked_up), self.known, self.otherwise)


class BlockNotFoundError(KnownNames, ScheduleError):
    """No block of that name exists in the function; suggests close names."""

    fields = ("block", "func", "known")
    looked_up, quote_known = "block", True
    message = "no block named {block!r} in {func.name}"
    why = "blocks in the function: {known_text}"
    suggestion = "{did_you_mean}"

    @property
    def candidates(self) -> list[str]:
        return difflib.get_close_matches(self.block, self.known, n=3)


class LoopNotFoundError(KnownNames, ScheduleError):
    """No loop with that loop variable exists (pure functions take loop names)."""

    fields = ("loop", "func", "known")
    looked_up = "loop"
    message = "no loop named {loop!r} in {func.name}"
    why = "loops in the function: {known_text}"
    suggestion = "{did_you_mean}"


class AmbiguousNameError(ScheduleError):
    """A name where a loop or a block is accepted, and both a loop and a block have it."""

    fields = ("argument", "given", "candidates")
    name_field = "given"
    message = "argument {argument!r}: {given!r} names both a loop and a block"
    why = "{primitive} takes a loop or a block here; candidates: {candidates_text}"
    suggestion = ("pass a handle: sch.get_block({given!r}) for the block, a handle from "
                  "sch.get_loops(block) for the loop")

    @property
    def candidates_text(self) -> str:
        return " and ".join(f"{kind} {self.given!r}" for kind in self.candidates)


class NameNotFoundError(ScheduleError):
    """No loop and no block has the name given where either is accepted."""

    fields = ("given", "func", "loops", "blocks")
    name_field = "given"
    message = "no loop or block named {given!r} in {func.name}"
    why = "loops: {loops_text}; blocks: {blocks_text}"
    suggestion = "{did_you_mean}"

    @property
    def loops_text(self) -> str:
        return ", ".join(self.loops) or "none"

    @property
    def blocks_text(self) -> str:
        return ", ".join(repr(b) for b in self.blocks) or "none"

    @property
    def did_you_mean(self) -> str:
        return did_you_mean(self.given, [*self.loops, *self.blocks])


# ---------------------------------------------------------------------------------------
# Schedule state
# ---------------------------------------------------------------------------------------


class NothingToUndoError(ScheduleError):
    """``undo()`` on a schedule with an empty trace."""

    fields = ()
    message = "there is no step to undo"
    why = "the trace is empty"

    def __init__(self):
        _template_init(self, "undo")


class InvalidAnnotationError(ScheduleError):
    """An annotation key that is not a string or a value that is not a JSON scalar."""

    fields = ("annotated", "key", "value")
    message = "annotation {key!r}={value!r} is not allowed"
    why = (
        "keys are strings and values are int, float, str or bool (they go into the trace "
        "as JSON)"
    )

# ---------------------------------------------------------------------------------------
# The loop errors live in errors_loops.py; their names stay importable from here
# ---------------------------------------------------------------------------------------


def __getattr__(name: str):
    """``from workbench.schedule.errors import ReductionLoopError`` keeps working: the loop
    errors are ``workbench.schedule.errors_loops``'s (imported on first use, which avoids
    an import cycle: that module builds on this one)."""
    if name.endswith("Error") and not name.startswith("_"):
        from workbench.schedule import errors_loops

        if name in errors_loops.__all__:
            return getattr(errors_loops, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
