"""ScheduleError subclasses raised by the loop primitives (``split``, ``fuse``, ``reorder``,
the loop-kind primitives and the loop arguments of the others): loop nests, loop kinds and
split factors. One class per reason, declared with the template of
``workbench.schedule.errors`` (the base class and the handle errors live there, and it
re-exports these names).
"""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError, divisors

__all__ = [
    "LoopsNotInSameNestError",
    "NotPerfectlyNestedError",
    "LoopsNotAdjacentError",
    "DuplicateLoopError",
    "DependentLoopBoundError",
    "MixedLoopReorderError",
    "HasAnnotationOrThreadBindingError",
    "AnnotatedLoopError",
    "ThreadBoundLoopError",
    "NonSerialLoopError",
    "NonAffineBindingError",
    "ReductionLoopError",
    "NotInnermostLoopError",
    "NonConstantExtentError",
    "MultipleNoneFactorsError",
    "NonPositiveFactorError",
    "WrongFactorProductError",
    "NonDividingFactorError",
]


# ---------------------------------------------------------------------------------------
# Loop nests
# ---------------------------------------------------------------------------------------


class LoopsNotInSameNestError(ScheduleError):
    """The loops are not nested one inside the other (they are in different loop nests)."""

    fields = ("outer", "other")
    name_field = "other"
    message = "loops {outer!r} and {other!r} are not in the same loop nest"
    why = (
        "{other!r} is neither inside nor around {outer!r}; {primitive} works on one chain of "
        "nested loops"
    )
    suggestion = "pass loops from one sch.get_loops(block) result"


class NotPerfectlyNestedError(ScheduleError):
    """Something other than the next loop (a block, several statements) sits between the loops."""

    fields = ("loop", "found")
    message = "loop {loop!r} is not perfectly nested: its body is {found}"
    why = (
        "{primitive} can only rearrange loops whose bodies are exactly the next loop; "
        "statements at several levels would change what runs how often"
    )
    suggestion = "apply it to the loops inside (or outside) that point only"


class LoopsNotAdjacentError(ScheduleError):
    """Fuse was given loops that are not directly nested, or not outermost first."""

    fields = ("outer", "inner", "between")
    name_field = "inner"
    message = "loops {outer!r} and {inner!r} are not adjacent"
    why = "{reason}"
    suggestion = "{advice}"

    @property
    def reason(self) -> str:
        if self.between:
            names = ", ".join(self.between)
            return f"loop(s) {names} lie between {self.outer!r} and {self.inner!r}"
        return f"{self.inner!r} is outside {self.outer!r}"

    @property
    def advice(self) -> str:
        if self.between:
            return (
                f"fuse all of them, or reorder so that {self.inner!r} is directly inside "
                f"{self.outer!r}"
            )
        return "pass the loops outermost first"


class DuplicateLoopError(ScheduleError):
    """The same loop was passed twice."""

    fields = ("loop",)
    message = "loop {loop!r} is given more than once"
    why = "each loop may appear once"


class DependentLoopBoundError(ScheduleError):
    """After the reorder a loop's bounds would use a loop variable defined inside it."""

    fields = ("loop", "depends_on")
    message = "the bounds of loop {loop!r} depend on loop {depends_on!r}"
    why = "{loop!r} cannot move outside {depends_on!r}: its min or extent uses it"
    suggestion = "keep {depends_on!r} outside {loop!r}"


class MixedLoopReorderError(ScheduleError):
    """Reorder of a loop that binds both spatial and reduction variables of a block."""

    fields = ("loop", "block", "spatial", "reduce")
    message = "loop {loop!r} binds both spatial and reduction variables of block {block!r}"
    why = (
        "it drives spatial {spatial!r} and reduction {reduce!r} at once (a fused or split "
        "spatial-and-reduction loop); moving it would interleave the reduction steps of "
        "different output elements, so an element's init could run after some of its "
        "updates"
    )
    suggestion = (
        "reorder before fusing spatial and reduction loops, or fuse only loops of one kind"
    )


class HasAnnotationOrThreadBindingError(ScheduleError):
    """Base of the reasons ``split``/``fuse`` refuse a loop carrying annotations or a thread
    binding (TVM's error of this name); catch it to catch both."""


class AnnotatedLoopError(HasAnnotationOrThreadBindingError):
    """``split``/``fuse`` of a loop with annotations (``annotate`` pragmas): as TVM, refused,
    since it is not known which of the new loops an annotation would belong to."""

    fields = ("loop", "keys")
    message = "loop {loop!r} has annotations ({keys_text})"
    why = (
        "{primitive} replaces the loop with new ones; an annotation of the old loop has no "
        "defined place among them, and dropping it would silently change the code"
    )
    suggestion = "{primitive} before annotating the loop"

    @property
    def keys_text(self) -> str:
        return ", ".join(repr(k) for k in self.keys)


class ThreadBoundLoopError(HasAnnotationOrThreadBindingError):
    """``split``/``fuse`` of a loop bound to a GPU thread axis (TVM refuses it too)."""

    fields = ("loop", "thread")
    message = "loop {loop!r} is bound to {thread!r}"
    why = (
        "{primitive} would replace a thread-bound loop with unbound ones; the binding cannot "
        "be split or merged"
    )
    suggestion = "{primitive} first, then bind the resulting loop"


class NonSerialLoopError(ScheduleError):
    """``fuse`` of loops whose parallel/vectorized/unrolled kind the fused loop cannot keep
    (two different kinds, or a kind whose primitive refuses the fused loop). TVM silently
    makes the fused loop serial; here the kind is kept or the fuse refused."""

    fields = ("loop", "kind", "reason")
    message = "loop {loop!r} is {kind} and the fused loop cannot be"
    why = "{primitive} keeps a loop kind on the fused loop only when that is legal; here: {reason}"
    suggestion = "{primitive} before marking loop {loop!r} {kind}, then mark the loop you mean"


class NonAffineBindingError(ScheduleError):
    """A block binding under the loops is not quasi-affine in them (``(k * k) // 2``):
    ``reorder`` and ``rfactor`` need affine bindings (TVM's affine-binding check)."""

    fields = ("name", "block", "iter_var", "value")
    message = "block {block!r} binds {iter_var!r} to {value_text}, which is not quasi-affine"
    why = (
        "{primitive} reasons about which loop iterations give which block iterations; that "
        "needs bindings built from the loop variables with +, -, * by a constant and // or % "
        "by a constant"
    )
    suggestion = (
        "rewrite the block so that its iteration variables are affine in the loops and the "
        "non-affine index is computed inside the block"
    )

    @property
    def value_text(self) -> str:
        from workbench.ir.expr_text import expr_text  # a short expression only

        return expr_text(self.value)


# ---------------------------------------------------------------------------------------
# Loop kinds
# ---------------------------------------------------------------------------------------


class ReductionLoopError(ScheduleError):
    """Parallel or vectorize over a loop that binds a reduction iteration variable."""

    fields = ("loop", "block", "iter_var")
    message = "loop {loop!r} is a reduction loop"
    why = (
        "it binds the reduction variable {iter_var!r} of block {block!r}: iterations "
        "accumulate into the same element, so they cannot run at the same time"
    )
    suggestion = "{advice}"

    @property
    def advice(self) -> str:
        if self.primitive == "vectorize":
            return "reorder so the reduction loop is outside and vectorize a spatial loop"
        return f"{self.primitive} a spatial loop instead (or rfactor the reduction first)"


class NotInnermostLoopError(ScheduleError):
    """Vectorize of a loop that has loops inside it."""

    fields = ("loop", "inner")
    message = "loop {loop!r} is not an innermost loop"
    why = "loop {inner!r} is inside it; only innermost loops can be vectorized"
    suggestion = "vectorize {inner!r}, or reorder so {loop!r} is innermost"


class NonConstantExtentError(ScheduleError):
    """The primitive needs a loop whose extent is a known constant."""

    fields = ("loop", "extent")
    message = "loop {loop!r} has a non-constant extent"
    why = "its extent is {extent}; {primitive} needs a constant trip count"


# ---------------------------------------------------------------------------------------
# Split factors
# ---------------------------------------------------------------------------------------


def _divisor_hint(extent: int) -> str:
    inner = [d for d in divisors(extent) if d < extent] or [extent]
    return f"split by a divisor of {extent}: {', '.join(str(d) for d in inner)}"


class MultipleNoneFactorsError(ScheduleError):
    """More than one factor of a split is None (only one can be inferred)."""

    fields = ("loop", "factors")
    message = "factors {factors} for loop {loop!r} have more than one None"
    why = "None means 'infer this factor from the extent'; that works for one factor only"
    suggestion = "give all factors but one"


class NonPositiveFactorError(ScheduleError):
    """A split factor is zero or negative."""

    fields = ("loop", "factors")
    message = "factors {factors} for loop {loop!r} contain a non-positive factor"
    why = "every factor is a loop extent, so it must be at least 1"


class WrongFactorProductError(ScheduleError):
    """The factors multiply to less than the loop's extent (they do not cover the loop)."""

    fields = ("loop", "factors", "extent")
    message = "factors {factors} for loop {loop!r} multiply to {product}, not {extent}"
    why = "the new loops would run {product} iterations but loop {loop!r} has {extent}"
    suggestion = "use None for one factor to infer it, or {hint}"

    @property
    def product(self) -> int:
        product = 1
        for f in self.factors:
            product *= f
        return product

    @property
    def hint(self) -> str:
        return _divisor_hint(self.extent)


class NonDividingFactorError(ScheduleError):
    """With ``disable_predication=True`` the factors must divide the extent exactly."""

    fields = ("loop", "factors", "extent")
    message = "factors {factors} do not divide the extent {extent} of loop {loop!r}"
    why = "disable_predication=True forbids the guard a non-dividing split needs"
    suggestion = "{hint}"

    @property
    def hint(self) -> str:
        return _divisor_hint(self.extent)
