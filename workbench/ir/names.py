"""Fresh names: one rule for every layer that invents a name (loops, blocks, graph values)."""

from __future__ import annotations


def fresh_name(base: str, taken: set[str]) -> str:
    """``base`` if free, else ``base_1``, ``base_2``... The result is added to ``taken``.

    Example
    -------
    >>> taken = {"i", "i_1"}
    >>> fresh_name("i", taken), fresh_name("j", taken)
    ('i_2', 'j')
    """
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name
