"""The named search spaces ``wb.tune(space=...)`` and ``python -m workbench tune --space``
take, and the targets each exists for.

``"generated"`` (the default) is made by the target kind's ``tuning_rules``, so it exists
for every target that has them; ``"matmul"`` is a CPU template (a parallel outer loop and a
vectorized inner one), so it exists for the kinds that run the cpu's schedules (``cpu``, and
``numpy`` which runs the cpu space for tests). A named space asked for a target it does not
exist for is refused before any work (``SpaceTargetError``), naming the spaces that target
has.

Example
-------
>>> check_space("matmul", "cuda", "tune")
Traceback (most recent call last):
...
workbench.tune.spaces.SpaceTargetError: tune: space 'matmul' exists for the cpu targets only \
(kinds cpu, numpy), not for target 'cuda'; the spaces of 'cuda': 'generated' (or a \
SearchSpace, or a template function)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.backends.common.target import resolve_target


class SpaceTargetError(ValueError):
    """A named search space asked for a target it does not exist for."""


@dataclass(frozen=True)
class NamedSpace:
    """A search space by name: ``make(func, target)`` builds it; ``kinds`` are the target
    kinds it exists for (None: every target whose kind has ``tuning_rules``)."""

    name: str
    make: Callable
    kinds: tuple[str, ...] | None = None
    where: str = ""  # what the kinds are, for the error ("the cpu targets")

    def exists_for(self, target) -> bool:
        if self.kinds is None:
            return target.hook("tuning_rules") is not None
        return target.kind.name in self.kinds


def _generated(func, target):
    from workbench.tune.space_generated import GeneratedSpace

    return GeneratedSpace(func, target=target)


def _matmul(func, target):
    from workbench.tune.space_template import TemplateSpace
    from workbench.tune.templates import matmul_template

    return TemplateSpace(matmul_template, func)


SPACES: dict[str, NamedSpace] = {
    "generated": NamedSpace("generated", _generated, None, "the targets with tuning rules"),
    "matmul": NamedSpace("matmul", _matmul, ("cpu", "numpy"), "the cpu targets only"),
}
"""The named spaces, by name (one home: ``make_space``, the CLI's ``--space`` choices and
``check_space`` read it)."""


def spaces_for(target) -> list[str]:
    """The names of the spaces that exist for ``target``."""
    target = resolve_target(target, "spaces_for")
    return [name for name, space in SPACES.items() if space.exists_for(target)]


def check_space(space, target, where: str = "tune") -> None:
    """``SpaceTargetError`` when ``space`` names a space that does not exist for ``target``
    (a ``SearchSpace``, a template function, None or an unknown name pass: ``make_space``
    names an unknown one)."""
    named = SPACES.get(space) if isinstance(space, str) else None
    if named is None:
        return
    target = resolve_target(target, where)
    if named.exists_for(target):
        return
    others = ", ".join(repr(name) for name in spaces_for(target)) or "none by name"
    kinds = f" (kinds {', '.join(named.kinds)})" if named.kinds else ""
    raise SpaceTargetError(f"{where}: space {space!r} exists for {named.where}{kinds}, not for "
                           f"target {target.name!r}; the spaces of {target.name!r}: {others} "
                           "(or a SearchSpace, or a template function)")


__all__ = ["NamedSpace", "SPACES", "SpaceTargetError", "check_space", "spaces_for"]
