"""Loop-kind and annotation primitives: ``parallel``, ``vectorize``, ``unroll``, ``annotate``.

Pure functions ``func -> func`` over loop names (and block names for ``annotate``). They
change a loop's ``kind`` or an ``annotations`` entry and nothing else.
"""

from __future__ import annotations

from typing import Any

from workbench.ir import For, ForKind, PrimFunc, const_value
from workbench.schedule.errors import InvalidAnnotationError, InvalidArgumentError
from workbench.schedule.errors_loops import NonConstantExtentError, ReductionLoopError
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.scope import DepKind, loop_conflicts
from workbench.schedule.scope_errors import (
    LoopCarriedDependenceError,
    LoopWriteConflictError,
    NestedVectorizeError,
)
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import (
    find_block,
    find_loop,
    reduce_binding,
    replace_block,
    replace_loop,
    walk,
)


def _set_kind(func: PrimFunc, loop: str, kind: ForKind) -> PrimFunc:
    """The loop with ``kind``; a thread binding it had is replaced, as TVM's
    ``ParallelizeComputation`` does (the printed script could not hold both)."""
    return replace_loop(func, loop, lambda node: node.replace(kind=kind, thread_binding=None))


def _check_independent(primitive: str, func: PrimFunc, loop: For) -> None:
    """TVM's rule (the loop drives only data-parallel block iterators), then the dependence
    analysis: no two iterations may touch one element with one of them writing it."""
    bound = reduce_binding(loop)
    if bound is not None:
        block, iter_var = bound
        raise ReductionLoopError(primitive, loop.loop_var.name, block, iter_var, func, loop)
    conflicts = loop_conflicts(func, loop.loop_var.name)
    if not conflicts:
        return
    writes = [c for c in conflicts if c.kind is DepKind.WAW]
    if writes:
        raise LoopWriteConflictError(primitive, writes[0], func, loop)
    raise LoopCarriedDependenceError(primitive, conflicts[0], func, loop)


def parallel(func: PrimFunc, loop: str) -> PrimFunc:
    """Mark a loop parallel: its iterations run on several CPU threads.

    The loop must not bind a reduction variable of any block inside it
    (``ReductionLoopError``, TVM's rule), and no two of its iterations may touch one element
    with one of them writing it (``workbench.schedule.scope.loop_conflicts``): two writes are
    ``LoopWriteConflictError`` (``B[vk] = B[vk] + A[vi, vk]`` over ``i``), a write and a read
    ``LoopCarriedDependenceError`` (``A[i + 1] = A[i + 1] + A[i]``).

    Before (``parallel(func, "i")``)::

        for i in range(16):
            for j in range(16):
                with T.block("B"): ...

    After::

        for i in T.parallel(16):
            for j in range(16):
                with T.block("B"): ...

    Example
    -------
    >>> new_func = parallel(func, "i")
    """
    primitive = "parallel"
    target, _ = find_loop(func, loop, primitive)
    _check_independent(primitive, func, target)
    return _set_kind(func, loop, ForKind.PARALLEL)


def vectorize(func: PrimFunc, loop: str) -> PrimFunc:
    """Mark a loop of constant extent vectorized (its iterations run as vector lanes).

    As in TVM the loop may have loops inside it and a ``T.where`` predicate around its
    blocks. Refused for a loop inside or around a vectorized loop (``NestedVectorizeError``),
    a loop whose extent is not a constant (``NonConstantExtentError``), a loop binding a
    reduction variable (``ReductionLoopError``) and a loop whose iterations are not
    independent (``LoopWriteConflictError``, ``LoopCarriedDependenceError``; see
    ``parallel``).

    Before (``vectorize(func, "j")``)::

        for i in range(16):
            for j in range(16):
                with T.block("B"): ...

    After::

        for i in range(16):
            for j in T.vectorized(16):
                with T.block("B"): ...

    Example
    -------
    >>> new_func = vectorize(func, "j")
    """
    primitive = "vectorize"
    target, ancestors = find_loop(func, loop, primitive)
    for stmt in [s for s, _ in walk(target.body)] + list(ancestors):
        if isinstance(stmt, For) and stmt.kind is ForKind.VECTORIZED:
            raise NestedVectorizeError(primitive, loop, stmt.loop_var.name, func, target)
    if not isinstance(const_value(target.extent), int):
        raise NonConstantExtentError(primitive, loop, target.extent, func, target)
    _check_independent(primitive, func, target)
    return _set_kind(func, loop, ForKind.VECTORIZED)


def unroll(func: PrimFunc, loop: str) -> PrimFunc:
    """Mark a loop unrolled (the code generator repeats its body ``extent`` times).

    Before (``unroll(func, "k")``)::

        for k in range(4):
            with T.block("C"): ...

    After::

        for k in T.unroll(4):
            with T.block("C"): ...

    Example
    -------
    >>> new_func = unroll(func, "k")
    """
    find_loop(func, loop, "unroll")
    return _set_kind(func, loop, ForKind.UNROLLED)


ANNOTATION_VALUE_TYPES = (bool, int, float, str)


def _with_annotation(annotations: tuple, key: str, value: object) -> tuple:
    kept = tuple((k, v) for k, v in annotations if k != key)
    return kept + ((key, value),)


def annotate(
    func: PrimFunc, name: str, key: str, value: object, *, target: str = "loop"
) -> PrimFunc:
    """Set annotation ``key`` to ``value`` on a loop or a block (replacing an old value).

    Annotations are hints for the code generator (``"pragma_unroll_explicit"``,
    ``"meta_schedule.tiling_structure"``...); values are JSON scalars so traces stay JSON.

    Before (``annotate(func, "i", "pragma_auto_unroll_max_step", 16)``)::

        for i in range(16):
            with T.block("B"): ...

    After::

        for i in range(16, annotations={"pragma_auto_unroll_max_step": 16}):
            with T.block("B"): ...

    Parameters
    ----------
    func : PrimFunc
    name : str
        The loop variable's name (``target="loop"``) or the block's name (``target="block"``).
    key : str
    value : int, float, str or bool
    target : {"loop", "block"}

    Example
    -------
    >>> new_func = annotate(func, "C", "note", "hot", target="block")
    """
    primitive = "annotate"
    if not isinstance(key, str) or not isinstance(value, ANNOTATION_VALUE_TYPES):
        raise InvalidAnnotationError(primitive, name, key, value)
    if target == "loop":
        find_loop(func, name, primitive)
        return replace_loop(
            func,
            name,
            lambda node: node.replace(annotations=_with_annotation(node.annotations, key, value)),
        )
    if target == "block":
        find_block(func, name, primitive)
        return replace_block(
            func,
            name,
            lambda node: node.replace(annotations=_with_annotation(node.annotations, key, value)),
        )
    raise InvalidArgumentError(primitive, "target", '"loop" or "block"', target)


# ---------------------------------------------------------------------------------------
# Schedule methods: resolve handles, call the pure function, record the step
# ---------------------------------------------------------------------------------------


class AnnotationMethods:
    """The loop-kind and annotation methods of ``Schedule``.

    Mixed into ``Schedule``, which provides ``mod``, ``_name_of``, ``_resolve`` and
    ``_commit`` (see ``workbench/schedule/README.md``).
    """

    def parallel(self, loop: LoopRV) -> None:
        """Run a loop's iterations in parallel (not for reduction loops).

        Before / after (``sch.parallel(i)``)::

            for i in range(16):          for i in T.parallel(16):

        Raises ``ReductionLoopError``, ``LoopWriteConflictError``,
        ``LoopCarriedDependenceError``. See ``workbench.schedule.annotations.parallel``.

        Example
        -------
        >>> sch.parallel(io)
        """
        new_func = parallel(self.mod, self._name_of(loop, "parallel"))
        self._commit("parallel", (loop,), {}, new_func, [])

    def vectorize(self, loop: LoopRV) -> None:
        """Vectorize a constant-extent loop whose iterations are independent.

        Before / after (``sch.vectorize(j)``)::

            for j in range(16):          for j in T.vectorized(16):

        Raises ``NestedVectorizeError``, ``NonConstantExtentError``, ``ReductionLoopError``,
        ``LoopWriteConflictError``, ``LoopCarriedDependenceError``. See
        ``workbench.schedule.annotations.vectorize``.

        Example
        -------
        >>> sch.vectorize(ji)
        """
        new_func = vectorize(self.mod, self._name_of(loop, "vectorize"))
        self._commit("vectorize", (loop,), {}, new_func, [])

    def unroll(self, loop: LoopRV) -> None:
        """Unroll a loop.

        Before / after (``sch.unroll(k)``)::

            for k in range(4):           for k in T.unroll(4):

        Example
        -------
        >>> sch.unroll(ii)
        """
        new_func = unroll(self.mod, self._name_of(loop, "unroll"))
        self._commit("unroll", (loop,), {}, new_func, [])

    def annotate(self, block_or_loop: BlockRV | LoopRV, key: str, value: Any) -> None:
        """Set annotation ``key`` to ``value`` (int, float, str or bool) on a loop or block.

        Before / after (``sch.annotate(i, "pragma_auto_unroll_max_step", 16)``)::

            for i in range(16):
            for i in range(16, annotations={"pragma_auto_unroll_max_step": 16}):

        Raises ``InvalidAnnotationError``. See ``workbench.schedule.annotations.annotate``.

        Example
        -------
        >>> sch.annotate(sch.get_block("C"), "note", "hot")
        """
        kind, name = self._resolve(block_or_loop, "block_or_loop", "annotate", "block_or_loop")
        new_func = annotate(self.mod, name, key, value, target=kind)
        self._commit("annotate", (block_or_loop,), {"key": key, "value": value}, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------

KEY = AttrSpec("key", lambda v: isinstance(v, str), "a string")
VALUE = AttrSpec(
    "value", lambda v: isinstance(v, ANNOTATION_VALUE_TYPES), "an int, float, str or bool"
)


def _probe_loop(sch, loop: LoopRV):
    return (loop,), {}


def _probe_annotate(sch, handle: BlockRV | LoopRV):
    return (handle,), {"key": "probe", "value": 1}


for _name in ("parallel", "vectorize", "unroll"):
    register_instruction(InstructionKind(_name, ("loop",), applies_to=("loop",), probe=_probe_loop))
register_instruction(
    InstructionKind(
        "annotate",
        ("block_or_loop",),
        (KEY, VALUE),
        applies_to=("loop", "block"),
        probe=_probe_annotate,
    )
)
