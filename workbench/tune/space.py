"""What every search space offers the strategies: named knobs with finite, ordered domains.

A configuration is a dict ``{knob: value}`` of JSON values; ``schedule(config)`` turns it
into a ``Schedule`` whose trace is what the records keep. Template spaces
(``space_template``) and generated spaces (``space_generated``) both implement this, so
every strategy searches either. ``pin(**values)`` fixes some knobs; the strategies then
search the rest.
"""

from __future__ import annotations

import itertools
import math
import random

from workbench.tune.database import _jsonable


class SearchSpace:
    """Base class: subclasses fill ``self._domains`` and implement ``_schedule``."""

    kind = "space"

    def __init__(self, func, name: str = ""):
        self.func = func
        self.name = name or self.kind
        self._domains: dict[str, list] = {}
        self.pinned: dict[str, object] = {}

    # --- knobs ---------------------------------------------------------------------

    @property
    def domains(self) -> dict[str, list]:
        """Each knob's values; a pinned knob has its pinned value only."""
        return {k: ([self.pinned[k]] if k in self.pinned else list(v))
                for k, v in self._domains.items()}

    @property
    def knobs(self) -> list[str]:
        return list(self._domains)

    @property
    def free_knobs(self) -> list[str]:
        return [k for k in self._domains if k not in self.pinned]

    def size(self) -> int:
        return math.prod(len(v) for v in self.domains.values())

    def pin(self, **values) -> SearchSpace:
        """Fix knobs to values (checked against their domains); returns ``self``.

        Example
        -------
        >>> space.pin(order=[0, 2, 1]).size() < space.size()     # doctest: +SKIP
        True
        """
        for name, value in values.items():
            if name not in self._domains:
                knobs = ", ".join(self._domains)
                raise KeyError(f"{self.name} has no knob {name!r}; knobs: {knobs}")
            value = _jsonable(value)
            if value not in [_jsonable(v) for v in self._domains[name]]:
                raise ValueError(f"{value!r} is not a value of knob {name!r}")
            self.pinned[name] = value
        return self

    # --- configurations --------------------------------------------------------------

    def default_config(self) -> dict:
        return {k: _jsonable(v[0]) for k, v in self.domains.items()}

    def valid(self, config: dict) -> bool:
        """Whether ``config`` is a candidate at all (a space with constraints between its
        knobs overrides this; the strategies propose only valid configurations)."""
        return True

    def random_config(self, rng: random.Random) -> dict:
        return {k: _jsonable(rng.choice(v)) for k, v in self.domains.items()}

    def grid(self):
        """Every configuration, in order (the last knob changes fastest)."""
        names = list(self.domains)
        for values in itertools.product(*self.domains.values()):
            yield {n: _jsonable(v) for n, v in zip(names, values, strict=True)}

    def index_of(self, knob: str, value) -> int:
        values = [_jsonable(v) for v in self._domains[knob]]
        return values.index(_jsonable(value))

    def schedule(self, config: dict):
        """The ``Schedule`` of ``config`` (may raise a ``ScheduleError``)."""
        missing = set(self._domains) - set(config)
        if missing:
            raise KeyError(f"config misses knob(s) {', '.join(sorted(missing))}")
        return self._schedule(config)

    def _schedule(self, config: dict):
        raise NotImplementedError

    def __repr__(self) -> str:
        pinned = f", {len(self.pinned)} pinned" if self.pinned else ""
        return (f"{type(self).__name__}({self.name!r}, {len(self._domains)} knobs, "
                f"size {self.size()}{pinned})")
