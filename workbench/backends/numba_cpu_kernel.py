"""``CpuKernel``: a kernel of the ``cpu`` target, with its workspace and its inspection."""

from __future__ import annotations

import numpy as np

from workbench.backends.kernel import Kernel


class CpuKernel(Kernel):
    """A PrimFunc compiled with ``numba.njit``.

    Global scratch buffers (a packed panel, an rfactor buffer) are the kernel's *workspace*:
    allocated once, when the kernel is built, and passed to every call, so that a call does
    not pay for fresh pages (``np.empty`` per call made the packed matmul 1024 bimodal). The
    workspace makes one kernel object unsafe to call from two threads at once; build it
    twice (``clear_memory_cache``) or copy it (``kernel.copy()``) for that.

    Attributes
    ----------
    workspace : tuple of numpy.ndarray
        The scratch arrays passed after the parameters (empty when there are none).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.workspace = tuple(
            np.empty(tuple(int(n) for n in buf.shape), dtype=buf.dtype)
            for buf in self._compiled.generated.workspace
        )

    def _launch(self, arrays: tuple[np.ndarray, ...]) -> None:
        self._runner(*arrays, *self.workspace)

    def copy(self) -> CpuKernel:
        """The same compiled code with a workspace of its own (for another thread)."""
        twin = CpuKernel.__new__(CpuKernel)
        twin.__dict__.update(self.__dict__)
        twin.workspace = tuple(np.empty_like(a) for a in self.workspace)
        return twin

    def _inspectable(self, what: str):
        """The compiled kernel, or its uncached twin when it came from Numba's disk cache
        (Numba cannot inspect code it loaded from disk)."""
        from workbench.backends.numba_cpu import compile_twin

        compiled = self._compiled
        if compiled.disk_cache_hit:
            return compile_twin(self.lowered, self.target_info or self.options, debug=False)
        return compiled

    @property
    def llvm(self) -> str:
        """The optimized LLVM IR of the kernel (Numba's ``inspect_llvm``)."""
        compiled = self._inspectable("llvm")
        return compiled.dispatcher.inspect_llvm(compiled.signature)

    @property
    def asm(self) -> str:
        """The machine code of the kernel as assembly text (Numba's ``inspect_asm``)."""
        compiled = self._inspectable("asm")
        return compiled.dispatcher.inspect_asm(compiled.signature)

    def vectorization_report(self):
        """For each ``vectorized`` loop and each innermost loop: did LLVM vectorize it, how wide.

        Compiles a debug twin of the kernel once (line numbers in its LLVM IR) and maps
        vector instructions to the loops' source lines; see
        ``workbench.backends.vectorization`` for the heuristic and its limits.

        Returns
        -------
        VectorizationReport
            A list of ``LoopVectorization(loop, kind, innermost, vectorized, lanes,
            element, bits)``, printed one loop per line.

        Example
        -------
        >>> print(kernel.vectorization_report())                  # doctest: +SKIP
        loop j_1 (vectorized, innermost): 16 x float (512-bit)
        """
        from workbench.backends import vectorization
        from workbench.backends.numba_cpu import compile_twin

        twin = compile_twin(self.lowered, self.target_info or self.options, debug=True)
        llvm_ir = twin.dispatcher.inspect_llvm(twin.signature)
        return vectorization.report(self._compiled.generated.loops, llvm_ir)
