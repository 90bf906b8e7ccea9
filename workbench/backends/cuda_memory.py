"""The ``cuda`` target's memory passes, run after the barriers are placed (``cuda_sync``):

1. ``double_buffer_pass`` (``cuda_double_buffer``): shared stages annotated
   ``double_buffer_scope`` get two buffers, the next tile's copy issued before the current
   tile's compute, one barrier per iteration (it rewrites the barriers ``cuda_sync`` placed);
2. ``partition_pass`` (``cuda_partition``): kernels marked ``cuda.partition_edges`` get an
   interior copy of their body without the shape guards (edge blocks keep them);
3. ``widen_vector_loops`` (``cuda_vector``): vectorized loops of 4 become 128-bit loads and
   stores (``ld.global.v4.f32``...);
4. ``prefetch_pass`` (``cuda_prefetch``): in a double-buffered loop, the next tile's global
   loads go to registers at the top of the body and the shared stores after the compute;
5. ``unroll_explicit_pass`` (``cuda_unroll``): ``unroll`` loops annotated
   ``pragma_unroll_explicit`` become one copy of their body per iteration.

They run last because they change how accesses look, not what is accessed, and the barrier
analysis reads plain loads and stores.
"""

from __future__ import annotations

from workbench.backends.cuda_double_buffer import double_buffer_pass
from workbench.backends.cuda_partition import partition_pass
from workbench.backends.cuda_prefetch import prefetch_pass
from workbench.backends.cuda_unroll import unroll_explicit_pass
from workbench.backends.cuda_vector import widen_vector_loops

MEMORY_PASSES = (
    double_buffer_pass, partition_pass, widen_vector_loops, prefetch_pass, unroll_explicit_pass
)
