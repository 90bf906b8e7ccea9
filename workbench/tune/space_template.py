"""Template spaces (AutoTVM style): a schedule function with knobs.

A template is ``template(cfg, func) -> Schedule``. It declares its knobs on ``cfg`` and
reads their values back, the same code path for declaring and for applying::

    def matmul_template(cfg, func):
        sch = wb.Schedule(func)
        i, j, k = sch.get_loops(sch.get_block("C"))
        cfg.define_split("tile_i", i, num_outputs=2)          # the loop's extent
        cfg.define_knob("unroll", [True, False])
        io, ii = sch.split(i, factors=cfg["tile_i"])
        ...
        return sch

``TemplateSpace(template, func)`` runs the template once with a defining ``ConfigSpace`` (each
``cfg[name]`` gives the knob's first value) to learn the knobs; ``schedule(config)`` runs it
again with the config's values. Knobs:

* ``define_split(name, loop_or_extent, num_outputs=2, max_innermost_factor=None,
  policy="factors" | "power2")``: perfect tilings, lists of factors whose product is the
  extent (outermost first), as ``sch.split(loop, factors=...)`` takes them;
* ``define_knob(name, values)``: any list of JSON values;
* ``define_reorder(name, n)``: permutations of ``range(n)``; ``cfg.permute(name, items)``
  reorders a list of loops by the chosen permutation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from workbench.tune.space import SearchSpace


def perfect_tiles(extent: int, n: int, max_innermost: int | None = None,
                  power2: bool = False) -> list[list[int]]:
    """All ways to write ``extent`` as a product of ``n`` factors (outermost first).

    Example
    -------
    >>> perfect_tiles(4, 2)
    [[4, 1], [2, 2], [1, 4]]
    """
    if n == 1:
        return [[extent]]
    out = []
    for inner in range(1, extent + 1):
        if extent % inner or (max_innermost and inner > max_innermost):
            continue
        if power2 and inner & (inner - 1):
            continue
        for rest in perfect_tiles(extent // inner, n - 1, None, power2):
            out.append(rest + [inner])
    return out


class ConfigSpace:
    """The ``cfg`` object a template sees: declares knobs, returns their values."""

    def __init__(self, func, config: dict | None = None):
        self.func = func
        self.config = config
        self.domains: dict[str, list] = {}

    def _extent(self, loop_or_extent) -> int:
        if isinstance(loop_or_extent, int):
            return loop_or_extent
        raise TypeError(
            "define_split takes the loop's extent as an int "
            "(e.g. sch.get(loop).extent.value)"
        )

    def _define(self, name: str, values: list) -> None:
        if not values:
            raise ValueError(f"knob {name!r} has no values")
        if name in self.domains and self.domains[name] != values:
            raise ValueError(f"knob {name!r} defined twice with different values")
        self.domains[name] = values

    def define_split(self, name: str, loop_or_extent, num_outputs: int = 2,
                     max_innermost_factor: int | None = None, policy: str = "factors") -> None:
        if policy not in ("factors", "power2"):
            raise ValueError(f"define_split policy must be 'factors' or 'power2', not {policy!r}")
        extent = self._extent(loop_or_extent)
        values = perfect_tiles(extent, num_outputs, max_innermost_factor, policy == "power2")
        self._define(name, values)

    def define_knob(self, name: str, values: list) -> None:
        self._define(name, list(values))

    def define_reorder(self, name: str, n: int, candidates: list[list[int]] | None = None) -> None:
        values = candidates or [list(p) for p in itertools.permutations(range(n))]
        self._define(name, [list(v) for v in values])

    def __getitem__(self, name: str):
        if name not in self.domains:
            raise KeyError(f"knob {name!r} is read before it is defined")
        if self.config is None:
            return self.domains[name][0]
        return self.config[name]

    def permute(self, name: str, items: list) -> list:
        """``items`` in the order of reorder knob ``name``."""
        return [items[i] for i in self[name]]


class TemplateSpace(SearchSpace):
    """The space of a template function over ``func``.

    Example
    -------
    >>> space = TemplateSpace(matmul_template, ops.matmul(64, 64, 64))   # doctest: +SKIP
    >>> space.knobs                                                        # doctest: +SKIP
    ['tile_i', 'tile_j', 'tile_k', 'order', 'unroll']
    """

    kind = "template"

    def __init__(self, template: Callable, func, name: str = ""):
        super().__init__(func, name or getattr(template, "__name__", "template"))
        self.template = template
        cfg = ConfigSpace(func)
        template(cfg, func)
        self._domains = cfg.domains

    def _schedule(self, config: dict):
        return self.template(ConfigSpace(self.func, config), self.func)


def loop_extent(sch, loop) -> int:
    """The constant extent of ``loop`` (a template helper)."""
    return int(sch.get(loop).extent.value)
