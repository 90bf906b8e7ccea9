"""Schedule errors: one class per reason a primitive refuses to run.

Every error names the primitive, the loop or block (by name), says what is wrong in one
line (``message``), why (``detail``) and, where there is one, what to do instead
(``suggestion``). It also keeps the function and the offending IR node, so that
``str(err)`` and ``err._repr_html_()`` show the IR with that node marked, as TVM's
``ScheduleError`` does.

Raising is cheap: nothing is rendered until the error is printed, so a search can try a
primitive, catch ``ScheduleError`` and move on (see ``Schedule.legal_primitives``).

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

from workbench.ir import Node, PrimFunc


def render_ir(func: PrimFunc | None, node: Node | None, label: str) -> str:
    """The function as text with ``node``'s line marked ``# <-- label``."""
    if func is None:
        return ""
    try:
        from workbench.script.printer import script
    except ImportError:  # the printer is not there yet: show the marked node itself
        return f"(in {func.name}) {label}: {node!r}" if node is not None else f"(in {func.name})"
    return script(func, mark=node, mark_label=label)


def render_ir_html(func: PrimFunc | None, node: Node | None, label: str) -> str:
    """The function as highlighted HTML with ``node``'s line marked."""
    if func is None:
        return ""
    try:
        from workbench.script.printer import script_html
    except ImportError:
        return "<pre>" + html.escape(render_ir(func, node, label)) + "</pre>"
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
    """

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


def divisors(n: int) -> list[int]:
    """All divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


# ---------------------------------------------------------------------------------------
# Handles and names
# ---------------------------------------------------------------------------------------


class InvalidArgumentError(ScheduleError, TypeError):
    """An argument has the wrong type or form (not a handle, a factor that is not an int...)."""

    def __init__(self, primitive: str, argument: str, expected: str, got: object):
        super().__init__(
            primitive,
            "",
            f"argument {argument!r} must be {expected}, got {got!r}",
            detail=f"{primitive} received {type(got).__name__} for {argument!r}",
        )
        self.argument = argument


class ForeignHandleError(ScheduleError):
    """A handle created by another Schedule was passed to this one."""

    def __init__(self, primitive: str, handle: object):
        super().__init__(
            primitive,
            "",
            f"{handle!r} belongs to another Schedule",
            detail="handles are only valid in the schedule that created them "
            "(and in copies made after they were created)",
            suggestion="get the loop or block again from this schedule: "
            "sch.get_block(name), sch.get_loops(block)",
        )


class RemovedHandleError(ScheduleError):
    """A handle whose loop or block an earlier primitive removed (or an undo dropped)."""

    def __init__(self, primitive: str, handle: object, name: str, removed_by: str, func: PrimFunc):
        super().__init__(
            primitive,
            name,
            f"{handle.kind} {name!r} no longer exists: it was removed by {removed_by}",
            detail=f"{removed_by} replaced {handle.kind} {name!r} with new ones",
            suggestion="use the handles that primitive returned, or sch.get_loops(block) again",
            func=func,
        )
        self.removed_by = removed_by


class WrongHandleKindError(ScheduleError):
    """A block handle where a loop was expected, or the other way round."""

    def __init__(self, primitive: str, argument: str, expected: str, handle: object):
        super().__init__(
            primitive,
            "",
            f"argument {argument!r} must be a {expected} handle, got {handle!r}",
            detail=f"{primitive} works on {expected}s",
        )


class BlockNotFoundError(ScheduleError):
    """No block of that name exists in the function; suggests close names."""

    def __init__(self, primitive: str, name: str, func: PrimFunc, known: list[str]):
        close = difflib.get_close_matches(name, known, n=3)
        suggestion = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(
            primitive,
            name,
            f"no block named {name!r} in {func.name}",
            detail="blocks in the function: " + (", ".join(repr(k) for k in known) or "none"),
            suggestion=suggestion,
            func=func,
        )
        self.candidates = close


class LoopNotFoundError(ScheduleError):
    """No loop with that loop variable exists (pure functions take loop names)."""

    def __init__(self, primitive: str, name: str, func: PrimFunc, known: list[str]):
        close = difflib.get_close_matches(name, known, n=3)
        super().__init__(
            primitive,
            name,
            f"no loop named {name!r} in {func.name}",
            detail="loops in the function: " + (", ".join(known) or "none"),
            suggestion=f"did you mean {' or '.join(repr(c) for c in close)}?" if close else "",
            func=func,
        )


# ---------------------------------------------------------------------------------------
# Loop nests
# ---------------------------------------------------------------------------------------


class LoopsNotInSameNestError(ScheduleError):
    """The loops are not nested one inside the other (they are in different loop nests)."""

    def __init__(self, primitive: str, outer: str, other: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            other,
            f"loops {outer!r} and {other!r} are not in the same loop nest",
            detail=f"{other!r} is neither inside nor around {outer!r}; "
            f"{primitive} works on one chain of nested loops",
            suggestion="pass loops from one sch.get_loops(block) result",
            func=func,
            node=node,
        )


class NotPerfectlyNestedError(ScheduleError):
    """Something other than the next loop (a block, several statements) sits between the loops."""

    def __init__(self, primitive: str, loop: str, found: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is not perfectly nested: its body is {found}",
            detail=f"{primitive} can only rearrange loops whose bodies are exactly the next loop; "
            "statements at several levels would change what runs how often",
            suggestion="apply it to the loops inside (or outside) that point only",
            func=func,
            node=node,
        )


class LoopsNotAdjacentError(ScheduleError):
    """Fuse was given loops that are not directly nested, or not outermost first."""

    def __init__(
        self, primitive: str, outer: str, inner: str, between: list[str], func: PrimFunc, node: Node
    ):
        if between:
            detail = f"loop(s) {', '.join(between)} lie between {outer!r} and {inner!r}"
            suggestion = (
                f"fuse all of them, or reorder so that {inner!r} is directly inside {outer!r}"
            )
        else:
            detail = f"{inner!r} is outside {outer!r}"
            suggestion = "pass the loops outermost first"
        super().__init__(
            primitive,
            inner,
            f"loops {outer!r} and {inner!r} are not adjacent",
            detail=detail,
            suggestion=suggestion,
            func=func,
            node=node,
        )


class DuplicateLoopError(ScheduleError):
    """The same loop was passed twice."""

    def __init__(self, primitive: str, loop: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is given more than once",
            detail="each loop may appear once",
            func=func,
            node=node,
        )


class DependentLoopBoundError(ScheduleError):
    """After the reorder a loop's bounds would use a loop variable defined inside it."""

    def __init__(self, primitive: str, loop: str, depends_on: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"the bounds of loop {loop!r} depend on loop {depends_on!r}",
            detail=f"{loop!r} cannot move outside {depends_on!r}: its min or extent uses it",
            suggestion=f"keep {depends_on!r} outside {loop!r}",
            func=func,
            node=node,
        )


class MixedLoopReorderError(ScheduleError):
    """Reorder of a loop that binds both spatial and reduction variables of a block."""

    def __init__(
        self,
        primitive: str,
        loop: str,
        block: str,
        spatial: str,
        reduce: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} binds both spatial and reduction variables of block {block!r}",
            detail=f"it drives spatial {spatial!r} and reduction {reduce!r} at once (a fused "
            "or split spatial-and-reduction loop); moving it would interleave the reduction "
            "steps of different output elements, so an element's init could run after some "
            "of its updates",
            suggestion="reorder before fusing spatial and reduction loops, or fuse only loops "
            "of one kind",
            func=func,
            node=node,
        )
        self.block = block


class HasAnnotationOrThreadBindingError(ScheduleError):
    """Base of the reasons ``split``/``fuse`` refuse a loop carrying annotations or a thread
    binding (TVM's error of this name); catch it to catch both."""


class AnnotatedLoopError(HasAnnotationOrThreadBindingError):
    """``split``/``fuse`` of a loop with annotations (``annotate`` pragmas): as TVM, refused,
    since it is not known which of the new loops an annotation would belong to."""

    def __init__(self, primitive: str, loop: str, keys: list[str], func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} has annotations ({', '.join(repr(k) for k in keys)})",
            detail=f"{primitive} replaces the loop with new ones; an annotation of the old loop "
            "has no defined place among them, and dropping it would silently change the code",
            suggestion=f"{primitive} before annotating the loop",
            func=func,
            node=node,
        )
        self.keys = keys


class ThreadBoundLoopError(HasAnnotationOrThreadBindingError):
    """``split``/``fuse`` of a loop bound to a GPU thread axis (TVM refuses it too)."""

    def __init__(self, primitive: str, loop: str, thread: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is bound to {thread!r}",
            detail=f"{primitive} would replace a thread-bound loop with unbound ones; "
            "the binding cannot be split or merged",
            suggestion=f"{primitive} first, then bind the resulting loop",
            func=func,
            node=node,
        )
        self.thread = thread


class NonSerialLoopError(ScheduleError):
    """``fuse`` of loops whose parallel/vectorized/unrolled kind the fused loop cannot keep
    (two different kinds, or a kind whose primitive refuses the fused loop). TVM silently
    makes the fused loop serial; here the kind is kept or the fuse refused."""

    def __init__(
        self, primitive: str, loop: str, kind: str, why: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is {kind} and the fused loop cannot be",
            detail=f"{primitive} keeps a loop kind on the fused loop only when that is legal; "
            f"here: {why}",
            suggestion=f"{primitive} before marking loop {loop!r} {kind}, then mark the loop "
            "you mean",
            func=func,
            node=node,
        )
        self.kind = kind


class NonAffineBindingError(ScheduleError):
    """A block binding under the loops is not quasi-affine in them (``(k * k) // 2``):
    ``reorder`` and ``rfactor`` need affine bindings (TVM's affine-binding check)."""

    def __init__(
        self,
        primitive: str,
        name: str,
        block: str,
        iter_var: str,
        value: object,
        func: PrimFunc,
        node: Node,
    ):
        from workbench.script.printer_expr import expr_text  # a short expression only

        super().__init__(
            primitive,
            name,
            f"block {block!r} binds {iter_var!r} to {expr_text(value)}, which is not "
            "quasi-affine",
            detail=f"{primitive} reasons about which loop iterations give which block "
            "iterations; that needs bindings built from the loop variables with +, -, * by a "
            "constant and // or % by a constant",
            suggestion="rewrite the block so that its iteration variables are affine in the "
            "loops and the non-affine index is computed inside the block",
            func=func,
            node=node,
        )
        self.block = block
        self.iter_var = iter_var


# ---------------------------------------------------------------------------------------
# Loop kinds
# ---------------------------------------------------------------------------------------


class ReductionLoopError(ScheduleError):
    """Parallel or vectorize over a loop that binds a reduction iteration variable."""

    def __init__(
        self, primitive: str, loop: str, block: str, iter_var: str, func: PrimFunc, node: Node
    ):
        if primitive == "vectorize":
            suggestion = "reorder so the reduction loop is outside and vectorize a spatial loop"
        else:
            suggestion = f"{primitive} a spatial loop instead (or rfactor the reduction first)"
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is a reduction loop",
            detail=f"it binds the reduction variable {iter_var!r} of block {block!r}: iterations "
            "accumulate into the same element, so they cannot run at the same time",
            suggestion=suggestion,
            func=func,
            node=node,
        )
        self.block = block


class NotInnermostLoopError(ScheduleError):
    """Vectorize of a loop that has loops inside it."""

    def __init__(self, primitive: str, loop: str, inner: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is not an innermost loop",
            detail=f"loop {inner!r} is inside it; only innermost loops can be vectorized",
            suggestion=f"vectorize {inner!r}, or reorder so {loop!r} is innermost",
            func=func,
            node=node,
        )


class NonConstantExtentError(ScheduleError):
    """The primitive needs a loop whose extent is a known constant."""

    def __init__(self, primitive: str, loop: str, extent: object, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} has a non-constant extent",
            detail=f"its extent is {extent}; {primitive} needs a constant trip count",
            func=func,
            node=node,
        )


# ---------------------------------------------------------------------------------------
# Split factors
# ---------------------------------------------------------------------------------------


def _divisor_hint(extent: int) -> str:
    inner = [d for d in divisors(extent) if d < extent] or [extent]
    return f"split by a divisor of {extent}: {', '.join(str(d) for d in inner)}"


class MultipleNoneFactorsError(ScheduleError):
    """More than one factor of a split is None (only one can be inferred)."""

    def __init__(self, primitive: str, loop: str, factors: list, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"factors {factors} for loop {loop!r} have more than one None",
            detail="None means 'infer this factor from the extent'; that works for one factor only",
            suggestion="give all factors but one",
            func=func,
            node=node,
        )


class NonPositiveFactorError(ScheduleError):
    """A split factor is zero or negative."""

    def __init__(self, primitive: str, loop: str, factors: list, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"factors {factors} for loop {loop!r} contain a non-positive factor",
            detail="every factor is a loop extent, so it must be at least 1",
            func=func,
            node=node,
        )


class WrongFactorProductError(ScheduleError):
    """The factors multiply to less than the loop's extent (they do not cover the loop)."""

    def __init__(
        self, primitive: str, loop: str, factors: list, extent: int, func: PrimFunc, node: Node
    ):
        product = 1
        for f in factors:
            product *= f
        super().__init__(
            primitive,
            loop,
            f"factors {factors} for loop {loop!r} multiply to {product}, not {extent}",
            detail=f"the new loops would run {product} iterations but loop {loop!r} has {extent}",
            suggestion=f"use None for one factor to infer it, or {_divisor_hint(extent)}",
            func=func,
            node=node,
        )


class NonDividingFactorError(ScheduleError):
    """With ``disable_predication=True`` the factors must divide the extent exactly."""

    def __init__(
        self, primitive: str, loop: str, factors: list, extent: int, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            loop,
            f"factors {factors} do not divide the extent {extent} of loop {loop!r}",
            detail="disable_predication=True forbids the guard a non-dividing split needs",
            suggestion=_divisor_hint(extent),
            func=func,
            node=node,
        )


# ---------------------------------------------------------------------------------------
# Schedule state
# ---------------------------------------------------------------------------------------


class NothingToUndoError(ScheduleError):
    """``undo()`` on a schedule with an empty trace."""

    def __init__(self):
        super().__init__("undo", "", "there is no step to undo", detail="the trace is empty")


class InvalidAnnotationError(ScheduleError):
    """An annotation key that is not a string or a value that is not a JSON scalar."""

    def __init__(self, primitive: str, name: str, key: object, value: object):
        super().__init__(
            primitive,
            name,
            f"annotation {key!r}={value!r} is not allowed",
            detail="keys are strings and values are int, float, str or bool (they go into the "
            "trace as JSON)",
        )
