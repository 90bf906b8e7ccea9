"""Former helper module of the compute location primitives, kept so that its names stay
importable. The code now lives by concern:

* ``workbench.ir.region_infer``: region inference (``relax``, ``solve_iter_domains``...);
* ``compute_location_scope``: ``ScopeInfo``, ``check_movable`` (producers and consumers:
  ``scope.BlockScope``);
* ``compute_location_nest``: ``build_nest``, ``remove_realize``, ``insert_into_loop``;
* ``compute_location_substitute``: ``inline_loads``, ``fold_consumer``.
"""

from __future__ import annotations

from workbench.ir.region_infer import relax, solve_iter_domains
from workbench.schedule.compute_location_nest import build_nest, insert_into_loop, remove_realize
from workbench.schedule.compute_location_scope import ScopeInfo, check_movable
from workbench.schedule.compute_location_substitute import fold_consumer, inline_loads

__all__ = [
    "ScopeInfo",
    "check_movable",
    "relax",
    "solve_iter_domains",
    "build_nest",
    "remove_realize",
    "insert_into_loop",
    "inline_loads",
    "fold_consumer",
]
