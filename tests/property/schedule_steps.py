"""Hypothesis strategies for random schedules: an operator, then primitives drawn from its state.

The property tests (``test_random_schedules.py``) draw an operator of ``workbench.ops.LIBRARY``
and then, one step at a time, a primitive application whose arguments are chosen from the
*current* schedule: a block of ``sch.mod``, a loop around it, split factors from the loop's
divisors and non-divisors, a run of adjacent loops to fuse, a permutation to reorder, a
buffer index for ``cache_read``... Some draws are meant to be illegal (two ``None`` factors,
a handle to a loop an earlier step removed, a scope that does not exist): the property is
that every draw either succeeds or raises a ``ScheduleError`` and changes nothing.

The draw functions take hypothesis's ``draw`` (``data.draw`` of ``st.data()`` or the
``draw`` of a ``@st.composite``) and return a ``Step``: a description, for the report of a
failing example, and a call that applies the primitive. They never apply anything
themselves.

Primitives of issue 4 (compute location, memory, layout, reduction) are drawn only once
they exist on ``Schedule`` and answer a plausible call with something other than
``NotImplementedError`` / ``AttributeError`` (``available_primitives``).

Example
-------
>>> from hypothesis import given, strategies as st
>>> @given(st.data())
... def test_something(data):
...     spec = data.draw(op_specs())
...     sch = Schedule(spec.func())
...     pools = HandlePools()
...     step = draw_step(data.draw, sch, pools, available_primitives())
...     step.call()
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from workbench import ops
from workbench.ir import Block, IterKind, const_value
from workbench.ir.analysis import find_blocks
from workbench.schedule import INSTRUCTIONS, BlockRV, LoopRV, Schedule
from workbench.schedule.tree import reduce_binding

# --- the primitives --------------------------------------------------------------------

LOOP_PRIMITIVES = ("split", "fuse", "reorder", "parallel", "vectorize", "unroll", "annotate")
"""Primitives that are always drawn (issue 3: done)."""

LEGAL_STEP = "legal_primitives"
"""A pseudo-primitive: ask ``legal_primitives`` at a handle, apply one it calls legal."""

LOCATION_PRIMITIVES = (
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
)
MEMORY_PRIMITIVES = ("cache_read", "cache_write", "set_scope")
LAYOUT_PRIMITIVES = ("transform_layout",)
REDUCTION_PRIMITIVES = ("rfactor", "decompose_reduction")
NEW_PRIMITIVES = LOCATION_PRIMITIVES + MEMORY_PRIMITIVES + LAYOUT_PRIMITIVES + REDUCTION_PRIMITIVES
"""Primitives of issue 4, drawn once ``available_primitives`` finds them working."""

SCOPES = ("global", "local", "shared")
ANNOTATION_KEYS = ("pragma_unroll_explicit", "pragma_auto_unroll_max_step", "note")


def _probe_schedule() -> tuple[Schedule, dict[str, BlockRV]]:
    sch = Schedule(ops.matmul_bias_relu(4, 6, 3))
    return sch, {name: sch.get_block(name) for name in ("matmul", "T_add", "T_relu")}


def _probe_call(name: str) -> None:
    """Call primitive ``name`` once, with plausible arguments, on a small function."""
    sch, blocks = _probe_schedule()
    method = getattr(sch, name)
    calls: dict[str, Callable[[], object]] = {
        "compute_at": lambda: method(blocks["T_add"], sch.get_loops(blocks["T_relu"])[0]),
        "reverse_compute_at": lambda: method(blocks["T_relu"], sch.get_loops(blocks["T_add"])[0]),
        "compute_inline": lambda: method(blocks["T_add"]),
        "reverse_compute_inline": lambda: method(blocks["T_relu"]),
        "cache_read": lambda: method(blocks["matmul"], 0, "local"),
        "cache_write": lambda: method(blocks["matmul"], 0, "local"),
        "set_scope": lambda: method(blocks["matmul"], 0, "local"),
        "transform_layout": lambda: method(blocks["matmul"], ("write", 0), lambda i, j: (j, i)),
        "rfactor": lambda: method(sch.get_loops(blocks["matmul"])[2], 0),
        "decompose_reduction": lambda: method(blocks["matmul"], sch.get_loops(blocks["matmul"])[0]),
    }
    calls[name]()


@functools.cache
def primitive_status() -> dict[str, str]:
    """For each primitive of issue 4: ``"ok"``, or why it is not drawn yet."""
    from workbench.schedule import ScheduleError

    status = {}
    for name in NEW_PRIMITIVES:
        if not hasattr(Schedule, name):
            status[name] = "not a Schedule method yet"
            continue
        try:
            _probe_call(name)
        except (NotImplementedError, AttributeError) as err:
            status[name] = f"{type(err).__name__}: {err}"
            continue
        except ScheduleError:
            pass  # refused the probe's arguments: it exists and checks legality
        status[name] = "ok"
    return status


def available_primitives() -> tuple[str, ...]:
    """The primitives the property tests draw: the loop family plus every working new one."""
    status = primitive_status()
    new = tuple(name for name in NEW_PRIMITIVES if status[name] == "ok")
    return LOOP_PRIMITIVES + new + (LEGAL_STEP,)


# --- operators -------------------------------------------------------------------------


def op_specs(*, favour_several_blocks: bool = False) -> st.SearchStrategy[ops.OpSpec]:
    """An operator of the library, with its small default shapes.

    ``favour_several_blocks`` draws operators with two or more blocks (where compute
    location, inlining and caching have something to work on) three times as often.
    """
    if not favour_several_blocks:
        return st.sampled_from(ops.LIBRARY)
    several = [spec for spec in ops.LIBRARY if len(find_blocks(spec.func())) > 1]
    return st.sampled_from(list(ops.LIBRARY) + several * 2)


# --- handles ---------------------------------------------------------------------------


@dataclass
class HandlePools:
    """Every handle a schedule handed out, so a step can reuse one (maybe a removed one)."""

    loops: list[LoopRV] = field(default_factory=list)
    blocks: list[BlockRV] = field(default_factory=list)

    def add(self, result: object) -> None:
        """Remember the handles a primitive returned (one, a list, or none)."""
        items = result if isinstance(result, (list, tuple)) else [result]
        for item in items:
            if isinstance(item, LoopRV):
                self.loops.append(item)
            elif isinstance(item, BlockRV):
                self.blocks.append(item)


@dataclass(frozen=True)
class Step:
    """One drawn primitive application: ``call()`` applies it to the schedule.

    ``param_layouts`` lists ``(parameter name, index map)`` for each parameter whose layout
    the step changes when it applies (``transform_layout`` of a parameter), so the test can
    lay out the inputs (and read the output) the new way; a step whose arguments are only
    known when it runs fills it in ``call()``. ``must_succeed`` is set when
    ``legal_primitives`` promised the step is legal.
    """

    primitive: str
    description: str
    call: Callable[[], object]
    param_layouts: list[tuple[str, Callable]] = field(default_factory=list)
    must_succeed: bool = False


def pick(draw, items: list, label: str):
    """One of ``items``, drawn by index (so a failing example's report shows a number, not a
    handle's internals, and shrinks towards the first item)."""
    return items[draw(st.integers(0, len(items) - 1), label=label)]


def _rare(draw, label: str) -> bool:
    """True about one time in eight: for deliberately odd arguments."""
    return draw(st.integers(0, 7), label=label) == 0


def _block_names(sch: Schedule) -> list[str]:
    return [block.name for block in find_blocks(sch.mod)]


def draw_block(
    draw,
    sch: Schedule,
    pools: HandlePools,
    *,
    allow_old: bool = True,
    prefer: Callable[[Schedule, Block], bool] | None = None,
) -> BlockRV:
    """A block handle: a fresh ``get_block``, or (``allow_old``) sometimes an old handle that
    an earlier step may have removed. ``prefer`` picks, three times in four, among the
    blocks it accepts (blocks a primitive can apply to), so legal steps are common."""
    if allow_old and pools.blocks and _rare(draw, "reuse an old block handle"):
        return pick(draw, pools.blocks, "old block handle")
    blocks = find_blocks(sch.mod)
    names = [block.name for block in blocks]
    if prefer is not None:
        good = [block.name for block in blocks if prefer(sch, block)]
        if good and draw(st.integers(0, 3), label="prefer a fitting block") > 0:
            names = good
    name = pick(draw, names, "block")
    handle = sch.get_block(name)
    pools.add(handle)
    return handle


def is_reduction(sch: Schedule, block: Block) -> bool:
    """The block has a reduce axis."""
    return any(iv.kind == IterKind.REDUCE for iv in block.iter_vars)


def writes_intermediate(sch: Schedule, block: Block) -> bool:
    """The block writes a buffer that is not a parameter (it has consumers to inline into)."""
    params = {param.name for param in sch.mod.params}
    return any(region.buffer.name not in params for region in block.writes)


def is_spatial_producer(sch: Schedule, block: Block) -> bool:
    return not is_reduction(sch, block) and writes_intermediate(sch, block)


def reads_intermediate(sch: Schedule, block: Block) -> bool:
    """The block reads a buffer that is not a parameter (it has producers)."""
    params = {param.name for param in sch.mod.params}
    return any(region.buffer.name not in params for region in block.reads)


def is_spatial_consumer(sch: Schedule, block: Block) -> bool:
    return not is_reduction(sch, block) and reads_intermediate(sch, block)


def block_loops(sch: Schedule, block: BlockRV, pools: HandlePools) -> list[LoopRV]:
    """``sch.get_loops(block)``, remembered in the pools."""
    loops = sch.get_loops(block)
    pools.add(loops)
    return loops


def draw_loop(draw, sch: Schedule, pools: HandlePools) -> LoopRV | None:
    """A loop handle around a random block (None when that block has no loops)."""
    if pools.loops and _rare(draw, "reuse an old loop handle"):
        return pick(draw, pools.loops, "old loop handle")
    loops = block_loops(sch, draw_block(draw, sch, pools, allow_old=False), pools)
    if not loops:
        return None
    return pick(draw, loops, "loop")


def _name(sch: Schedule, handle) -> str:
    """A handle's name for descriptions (its trace name when it no longer resolves)."""
    try:
        return sch.name(handle)
    except Exception:  # a removed or foreign handle: the step is expected to refuse it
        return handle.ref


# --- loop primitives -------------------------------------------------------------------


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` (``n >= 1``), ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def draw_factors(draw, extent: int | None) -> list[int | None]:
    """Split factors: mostly one ``None`` with divisors and non-divisors, sometimes bad ones."""
    extent = extent if isinstance(extent, int) and extent > 0 else 8
    non_divisors = [f for f in range(2, extent + 3) if extent % f != 0][:4]
    candidates = sorted(set(divisors(extent) + non_divisors))
    count = draw(st.integers(2, 3), label="number of factors")
    factors: list[int | None] = [
        draw(st.sampled_from(candidates), label="factor") for _ in range(count)
    ]
    mode = draw(
        st.sampled_from(
            ["one None", "one None", "one None", "exact", "given", "two None", "non-positive"]
        ),
        label="factors mode",
    )
    if mode == "one None":
        factors[draw(st.integers(0, count - 1), label="None position")] = None
    elif mode == "exact":  # complete the others to the extent when they divide it
        rest = math.prod(factors[1:])
        factors[0] = extent // rest if extent % rest == 0 else None
    elif mode == "two None":
        factors[0] = factors[1] = None
    elif mode == "non-positive":
        factors[draw(st.integers(0, count - 1), label="bad position")] = draw(
            st.sampled_from([0, -1, -extent]), label="bad factor"
        )
    return factors


def _loop_extent(sch: Schedule, loop: LoopRV) -> int | None:
    try:
        return const_value(sch.get(loop).extent)
    except Exception:  # a removed handle: any factors do
        return None


def draw_split(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    loop = draw_loop(draw, sch, pools)
    if loop is None:
        return None
    factors = draw_factors(draw, _loop_extent(sch, loop))
    no_guard = draw(st.sampled_from([False, False, False, True]), label="disable_predication")
    options = {"disable_predication": True} if no_guard else {}
    return Step(
        "split",
        f"split({_name(sch, loop)}, factors={factors}"
        + (", disable_predication=True)" if no_guard else ")"),
        lambda: sch.split(loop, factors=factors, **options),
    )


def draw_fuse(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    loops = block_loops(sch, draw_block(draw, sch, pools, allow_old=False), pools)
    if len(loops) < 2:
        return None
    if _rare(draw, "fuse any loops"):
        count = draw(st.integers(2, 3), label="fused count")
        chosen = [pick(draw, loops, "fused loop") for _ in range(count)]
    else:
        length = draw(st.integers(2, min(3, len(loops))), label="fused count")
        start = draw(st.integers(0, len(loops) - length), label="first fused")
        chosen = loops[start : start + length]
    names = ", ".join(_name(sch, loop) for loop in chosen)
    return Step("fuse", f"fuse({names})", lambda: sch.fuse(*chosen))


def draw_reorder(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    loops = block_loops(sch, draw_block(draw, sch, pools, allow_old=False), pools)
    if len(loops) < 2:
        return None
    order = draw(st.permutations(range(len(loops))), label="permutation")
    count = draw(st.integers(2, len(loops)), label="reordered count")
    chosen = [loops[n] for n in order[:count]]
    if _rare(draw, "repeat a loop"):
        chosen.append(chosen[0])
    names = ", ".join(_name(sch, loop) for loop in chosen)
    return Step("reorder", f"reorder({names})", lambda: sch.reorder(*chosen))


def _draw_loop_kind(primitive: str):
    def draw_kind(draw, sch: Schedule, pools: HandlePools) -> Step | None:
        loop = draw_loop(draw, sch, pools)
        if loop is None:
            return None
        method = getattr(sch, primitive)
        return Step(primitive, f"{primitive}({_name(sch, loop)})", lambda: method(loop))

    return draw_kind


ANNOTATION_VALUES = st.one_of(
    st.integers(-2, 64),
    st.booleans(),
    st.sampled_from(["hot", "SSRSRS", ""]),
    st.floats(-4.0, 4.0, allow_nan=False, width=32),
)


def draw_annotate(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    if draw(st.booleans(), label="annotate a block"):
        target = draw_block(draw, sch, pools)
    else:
        target = draw_loop(draw, sch, pools)
        if target is None:
            return None
    key = draw(st.sampled_from(ANNOTATION_KEYS), label="key")
    if _rare(draw, "invalid annotation value"):
        value = draw(st.sampled_from([None, [1, 2], {"a": 1}]), label="bad value")
    else:
        value = draw(ANNOTATION_VALUES, label="value")
    return Step(
        "annotate",
        f"annotate({_name(sch, target)}, {key!r}, {value!r})",
        lambda: sch.annotate(target, key, value),
    )


# --- compute location ------------------------------------------------------------------


def _all_loops(sch: Schedule, pools: HandlePools) -> list[LoopRV]:
    """Handles to every loop of the function (one ``get_loops`` per block), deduplicated."""
    seen: dict[str, LoopRV] = {}
    for name in _block_names(sch):
        block = sch.get_block(name)
        pools.add(block)
        for loop in block_loops(sch, block, pools):
            seen.setdefault(sch.name(loop), loop)
    return list(seen.values())


def _neighbour_loops(
    sch: Schedule, block: BlockRV, primitive: str, pools: HandlePools
) -> list[LoopRV]:
    """Loops around the block's consumers (``compute_at``) or producers (the reverse one)."""
    try:
        query = sch.get_consumers if primitive == "compute_at" else sch.get_producers
        neighbours = query(block)
    except Exception:  # a removed handle: the primitive itself will refuse it
        return []
    pools.add(neighbours)
    loops: list[LoopRV] = []
    for neighbour in neighbours:
        loops.extend(block_loops(sch, neighbour, pools))
    return loops


def _draw_location(primitive: str):
    prefer = writes_intermediate if primitive == "compute_at" else reads_intermediate

    def draw_location(draw, sch: Schedule, pools: HandlePools) -> Step | None:
        block = draw_block(draw, sch, pools, prefer=prefer)
        loops = _neighbour_loops(sch, block, primitive, pools)
        if not loops or _rare(draw, "any loop as the location"):
            loops = _all_loops(sch, pools)
        if not loops:
            return None
        loop = pick(draw, loops, "target loop")
        preserve = draw(st.booleans(), label="preserve_unit_loops")
        method = getattr(sch, primitive)
        return Step(
            primitive,
            f"{primitive}({_name(sch, block)}, {_name(sch, loop)}, preserve_unit_loops={preserve})",
            lambda: method(block, loop, preserve_unit_loops=preserve),
        )

    return draw_location


def _draw_inline(primitive: str):
    prefer = is_spatial_producer if primitive == "compute_inline" else is_spatial_consumer

    def draw_inline(draw, sch: Schedule, pools: HandlePools) -> Step | None:
        block = draw_block(draw, sch, pools, prefer=prefer)
        method = getattr(sch, primitive)
        return Step(primitive, f"{primitive}({_name(sch, block)})", lambda: method(block))

    return draw_inline


# --- memory ----------------------------------------------------------------------------


def _region_count(sch: Schedule, block: BlockRV, which: str) -> int:
    try:
        return len(getattr(sch.get(block), which))
    except Exception:  # a removed handle
        return 1


def draw_scope(draw) -> str:
    if _rare(draw, "unknown scope"):
        return draw(st.sampled_from(["warp", "texture", "Local"]), label="bad scope")
    return draw(st.sampled_from(SCOPES), label="scope")


def _draw_cache(primitive: str, which: str):
    def draw_cache(draw, sch: Schedule, pools: HandlePools) -> Step | None:
        block = draw_block(draw, sch, pools)
        count = _region_count(sch, block, which)
        if _rare(draw, "bad index"):
            index = draw(st.sampled_from([-1, count]), label="bad index")
        else:
            index = draw(st.integers(0, max(count - 1, 0)), label="index")
        scope = draw_scope(draw)
        method = getattr(sch, primitive)
        return Step(
            primitive,
            f"{primitive}({_name(sch, block)}, {index}, {scope!r})",
            lambda: method(block, index, scope),
        )

    return draw_cache


# --- layout ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexMap:
    """A layout map as a Python lambda, with a readable description for reports."""

    description: str
    fn: Callable


def draw_index_map(draw, shape: tuple[int, ...]) -> IndexMap:
    """A permutation, a packing of one axis ``(.., i // f, .., i % f)``, or a bad map."""
    rank = len(shape)
    names = [f"v{n}" for n in range(rank)]
    kind = draw(
        st.sampled_from(["permute", "permute", "pack", "pack", "drop", "swap_extent"]),
        label="index map kind",
    )
    if kind == "permute" or rank == 0:
        order = draw(st.permutations(range(rank)), label="axis order")
        outs = [names[n] for n in order]
    elif kind == "pack":
        axis = draw(st.integers(0, rank - 1), label="packed axis")
        extent = shape[axis]
        factor = draw(st.sampled_from(sorted(set(divisors(extent) + [3]))), label="pack factor")
        position = draw(st.integers(0, rank), label="inner position")
        outs = [f"{n} // {factor}" if n == names[axis] else n for n in names]
        outs.insert(position, f"{names[axis]} % {factor}")
    elif kind == "drop":  # not bijective: loses an axis (or aliases all of them)
        outs = names[1:] if rank > 1 else ["0"]
    else:  # not bijective: folds an axis onto half its range
        outs = [f"{names[0]} // 2"] + names[1:]
    source = f"lambda {', '.join(names)}: ({', '.join(outs)}{',' if len(outs) == 1 else ''})"
    return IndexMap(source, eval(source))  # noqa: S307 - our own generated text


def draw_transform_layout(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    block = draw_block(draw, sch, pools, allow_old=False)
    node = sch.get(block)
    which = draw(st.sampled_from(["read", "write"]), label="read or write")
    regions = node.reads if which == "read" else node.writes
    if not regions:
        return None
    index = draw(st.integers(0, len(regions) - 1), label="buffer index")
    buffer = regions[index].buffer
    index_map = draw_index_map(draw, tuple(buffer.shape))
    by_name = draw(st.booleans(), label="buffer by name")
    target = buffer.name if by_name else (which, index)
    return Step(
        "transform_layout",
        f"transform_layout({_name(sch, block)}, {target!r}, {index_map.description})",
        lambda: sch.transform_layout(block, target, index_map.fn),
        param_layouts=param_layout(sch, buffer.name, index_map.fn),
    )


def param_layout(sch: Schedule, buffer: str, index_map: Callable) -> list[tuple[str, Callable]]:
    """``[(buffer, index_map)]`` when ``buffer`` is a parameter of ``sch.mod``, else ``[]``."""
    if any(param.name == buffer for param in sch.mod.params):
        return [(buffer, index_map)]
    return []


# --- reductions ------------------------------------------------------------------------


def draw_rfactor(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    if _rare(draw, "any loop to rfactor"):
        loop = draw_loop(draw, sch, pools)
    else:  # a loop that binds a reduce axis of a reduction block
        block = draw_block(draw, sch, pools, allow_old=False, prefer=is_reduction)
        loops = block_loops(sch, block, pools)
        reducing = [loop for loop in loops if reduce_binding(sch.get(loop)) is not None]
        loop = pick(draw, reducing or loops, "loop") if loops else None
    if loop is None:
        return None
    factor_axis = draw(st.integers(0, 2), label="factor_axis")
    return Step(
        "rfactor",
        f"rfactor({_name(sch, loop)}, factor_axis={factor_axis})",
        lambda: sch.rfactor(loop, factor_axis),
    )


def draw_decompose_reduction(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    block = draw_block(draw, sch, pools, allow_old=False, prefer=is_reduction)
    loops = block_loops(sch, block, pools)
    if not loops or _rare(draw, "any loop for the init"):
        loops = _all_loops(sch, pools)
    if not loops:
        return None
    loop = pick(draw, loops, "loop")
    return Step(
        "decompose_reduction",
        f"decompose_reduction({_name(sch, block)}, {_name(sch, loop)})",
        lambda: sch.decompose_reduction(block, loop),
    )


# --- legal_primitives -------------------------------------------------------------------


def draw_legal_step(draw, sch: Schedule, pools: HandlePools) -> Step | None:
    """A primitive that ``sch.legal_primitives(handle)`` says is legal, with its probe's
    default arguments: it must then apply. ``legal_primitives`` itself must change nothing."""
    if draw(st.booleans(), label="legal_primitives of a block"):
        handle = draw_block(draw, sch, pools, allow_old=False)
    else:
        block = draw_block(draw, sch, pools, allow_old=False)
        loops = block_loops(sch, block, pools)
        if not loops:
            return None
        handle = pick(draw, loops, "loop")
    state = sch._state
    table = sch.legal_primitives(handle)
    assert sch._state is state, f"legal_primitives({_name(sch, handle)}) changed the schedule"
    legal = table.legal()
    if not legal:
        return None
    primitive = pick(draw, legal, "legal primitive")
    name = _name(sch, handle)
    layouts: list[tuple[str, Callable]] = []

    def call():
        # The probe runs on a copy (its handles are made outside the trace); the step is
        # applied with traced handles to the same loops and blocks, so the trace replays.
        trial = sch.copy()
        args, kwargs = INSTRUCTIONS[primitive].probe(trial, handle)
        if primitive == "transform_layout":
            layouts.extend(_probe_layout(trial, *args))
        args = [traced_handle(sch, trial, arg, pools) for arg in args]
        return getattr(sch, primitive)(*args, **kwargs)

    return Step(
        f"{primitive} (legal_primitives)",
        f"{primitive} at {name} (legal by legal_primitives, probe arguments)",
        call,
        param_layouts=layouts,
        must_succeed=True,
    )


def _probe_layout(trial: Schedule, block: BlockRV, buffer, index_map) -> list:
    """The parameter layout a probed ``transform_layout(block, buffer, index_map)`` makes."""
    if not isinstance(buffer, str):
        which, index = buffer
        node = trial.get(block)
        buffer = (node.reads if which == "read" else node.writes)[index].buffer.name
    if isinstance(index_map, str):
        index_map = eval(index_map)  # noqa: S307 - the probe's "lambda ...: (...)" text
    return param_layout(trial, buffer, index_map)


def traced_handle(sch: Schedule, trial: Schedule, arg: object, pools: HandlePools) -> object:
    """``arg`` if it is not a handle of ``trial``, else a handle of ``sch`` (made by traced
    ``get_block``/``get_loops`` steps) to the same block or loop."""
    if not isinstance(arg, (BlockRV, LoopRV)):
        return arg
    name = trial.name(arg)
    if isinstance(arg, BlockRV):
        return sch.get_block(name) if name != "root" else arg
    for loop in _all_loops(sch, pools):
        if sch.name(loop) == name:
            return loop
    raise AssertionError(f"no block has loop {name!r} around it")


DRAWERS: dict[str, Callable] = {
    "split": draw_split,
    "fuse": draw_fuse,
    "reorder": draw_reorder,
    "parallel": _draw_loop_kind("parallel"),
    "vectorize": _draw_loop_kind("vectorize"),
    "unroll": _draw_loop_kind("unroll"),
    "annotate": draw_annotate,
    "compute_at": _draw_location("compute_at"),
    "reverse_compute_at": _draw_location("reverse_compute_at"),
    "compute_inline": _draw_inline("compute_inline"),
    "reverse_compute_inline": _draw_inline("reverse_compute_inline"),
    "cache_read": _draw_cache("cache_read", "reads"),
    "cache_write": _draw_cache("cache_write", "writes"),
    "set_scope": _draw_cache("set_scope", "writes"),
    "transform_layout": draw_transform_layout,
    "rfactor": draw_rfactor,
    "decompose_reduction": draw_decompose_reduction,
    "legal_primitives": draw_legal_step,
}


def draw_step(draw, sch: Schedule, pools: HandlePools, primitives: tuple[str, ...]) -> Step | None:
    """One primitive application drawn from ``sch``'s current state (None: nothing to draw)."""
    primitive = draw(st.sampled_from(primitives), label="primitive")
    return DRAWERS[primitive](draw, sch, pools)


# --- numerics --------------------------------------------------------------------------


def relayout(
    array: np.ndarray, fn: Callable, new_shape: tuple[int, ...], fill: np.ndarray
) -> np.ndarray:
    """``array`` stored through index map ``fn``: ``new[fn(*idx)] = array[idx]``.

    Elements of the new layout that no index maps to (padding) keep ``fill``'s values.
    """
    new = fill.copy().reshape(new_shape)
    coords = fn(*np.indices(array.shape))
    new[tuple(np.broadcast_to(np.asarray(c), array.shape) for c in coords)] = array
    return new


def unlayout(stored: np.ndarray, fn: Callable, shape: tuple[int, ...]) -> np.ndarray:
    """The logical array of shape ``shape`` that ``stored`` holds through ``fn``."""
    coords = fn(*np.indices(shape))
    return stored[tuple(np.broadcast_to(np.asarray(c), shape) for c in coords)]
