"""The recipe registry: named hand-written schedules, by operator and target.

A recipe is a function ``recipe(func, **options) -> Schedule`` that schedules one operator
of the library (``ops.matmul(...)``, ``ops.softmax(...)``...) for one target. Recipes are
the baselines the notebooks, the benches and the tuner compare against. They take
``target=`` (a ``Target`` or its name, default ``"cpu"``, the host) and read its vector
width from ``target.device`` (``workbench.backends.cpu.cpu_facts.target_vector_lanes``)
instead of hard-coding it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from workbench.ir import PrimFunc
from workbench.schedule import Schedule, ScheduleError


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One named schedule: ``recipe(func, **options)`` returns a ``Schedule`` of ``func``."""

    op: str
    name: str
    target: str
    schedule: Callable[..., Schedule]

    @property
    def doc(self) -> str:
        """The first line of the schedule function's docstring."""
        text = (self.schedule.__doc__ or "").strip()
        return text.splitlines()[0] if text else ""

    def __call__(self, func: PrimFunc, *args, **options) -> Schedule:
        return self.schedule(func, *args, **options)


RECIPES: dict[tuple[str, str, str], Recipe] = {}


def register(op: str, name: str, target: str = "cpu"):
    """Decorator: add ``fn(func, **options) -> Schedule`` as recipe ``(op, name, target)``."""

    def add(fn: Callable[..., Schedule]) -> Callable[..., Schedule]:
        RECIPES[(op, name, target)] = Recipe(op, name, target, fn)
        return fn

    return add


def get(op: str, name: str, target="cpu") -> Recipe:
    """The recipe ``name`` for operator ``op`` on ``target`` (a name or a ``Target``: a kind
    that shares another's recipes, ``TargetKind.recipes``, gets that one's); ``KeyError``
    lists the known ones.

    Example
    -------
    >>> from workbench import ops, recipes
    >>> sch = recipes.get("matmul", "packed", "cpu")(ops.matmul(64, 64, 64))
    """
    from workbench.backends.common.target import resolve_target, target_names

    if isinstance(target, str) and target not in target_names():
        target_key = target  # not a target: reported as an unknown recipe below
    else:
        target_key = resolve_target(target, "recipes.get").recipe_target
    key = (op, name, target_key)
    if key not in RECIPES:
        known = ", ".join(f"{o}/{n}/{t}" for o, n, t in sorted(RECIPES))
        raise KeyError(f"no recipe {op}/{name}/{target}; known: {known}")
    return RECIPES[key]


RULE_REFUSALS = (ScheduleError, ValueError, IndexError, KeyError, LookupError)
"""What a recipe raises on a kernel it does not fit: its graph rule then answers None."""


def graph_rule(name: str, applies: Callable[[PrimFunc], bool],
               recipe: Callable[..., Schedule], doc: str) -> Callable[..., Schedule | None]:
    """The graph's default-schedule rule ``name`` of ``recipe``: ``recipe(func,
    parallel=parallel)`` for a kernel ``applies`` accepts; None for other kernels or where
    the recipe refuses (``RULE_REFUSALS``: the graph then tries its next rule)."""

    def rule(func: PrimFunc, parallel: bool = True) -> Schedule | None:
        if not applies(func):
            return None
        try:
            return recipe(func, parallel=parallel)
        except RULE_REFUSALS:
            return None

    rule.__name__ = rule.__qualname__ = name
    rule.__doc__ = doc
    return rule


def list_recipes(op: str | None = None, target: str | None = None) -> list[Recipe]:
    """All recipes (for one operator and/or target), sorted by operator, target and name."""
    return [
        RECIPES[key]
        for key in sorted(RECIPES, key=lambda k: (k[0], k[2], k[1]))
        if (op is None or key[0] == op) and (target is None or key[2] == target)
    ]
