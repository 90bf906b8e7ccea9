"""The ``cuda`` target's memory passes, run after the barriers are placed (``cuda_sync``):

1. ``widen_vector_loops`` (``cuda_vector``): vectorized loops of 4 become 128-bit loads and
   stores (``ld.global.v4.f32``...).

They run last because they change how accesses look, not what is accessed, and the barrier
analysis reads plain loads and stores.
"""

from __future__ import annotations

from workbench.backends.cuda_vector import widen_vector_loops

MEMORY_PASSES = (widen_vector_loops,)
