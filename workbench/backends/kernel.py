"""``Kernel``: a built PrimFunc, callable with numpy arrays."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.backends.arguments import check_arguments
from workbench.backends.bounds_checks import reraise_bounds_error
from workbench.ir import BufferLoad, PrimFunc
from workbench.ir.functor import collect


class Kernel:
    """A compiled (or reference-interpreted) PrimFunc.

    Call it with one numpy array per parameter, in parameter order; outputs are written in
    place. Arrays are checked (dtype, shape, C-contiguity, count) and never copied or cast:
    a mismatch raises ``KernelArgumentError``.

    Attributes
    ----------
    func : PrimFunc
        The function that was built (before lowering).
    lowered : PrimFunc
        The lowered function the code was generated from.
    target : str
        ``"numpy"`` or ``"cpu"``.
    options : dict
        The build options (part of the cache key).
    source : str
        The generated Python source (``cpu``), or the loop-path sources of the reference.
    bounds_checks : tuple of BoundsCheck
        The run-time index checks of a ``debug=True`` build (empty otherwise).
    compile_seconds : float
        Time spent building (0.0 for an in-memory cache hit).
    cache_hit : str or None
        ``"memory"`` or ``"disk"`` when the build was served from a cache, else None.

    Example
    -------
    >>> import numpy as np
    >>> from tests.ir_examples import matmul
    >>> kernel = build(matmul(4, 4, 4), target="numpy")          # doctest: +SKIP
    >>> a, b = np.ones((4, 4), "float32"), np.ones((4, 4), "float32")
    >>> c = np.empty((4, 4), "float32"); kernel(a, b, c); c[0, 0]  # doctest: +SKIP
    4.0
    """

    def __init__(
        self,
        func: PrimFunc,
        lowered: PrimFunc,
        target: str,
        runner: Callable,
        *,
        options: dict,
        source: str,
        written: frozenset[str],
        compile_seconds: float = 0.0,
        cache_hit: str | None = None,
        compiled=None,
    ):
        self.func = func
        self.lowered = lowered
        self.target = target
        self.options = dict(options)
        self.source = source
        self.compile_seconds = compile_seconds
        self.cache_hit = cache_hit
        self._runner = runner
        self._written = written
        self._read = frozenset(
            load.buffer.name for load in collect(lowered.body, lambda n: isinstance(n, BufferLoad))
        )
        self._compiled = compiled
        self.bounds_checks: tuple = ()  # set by build(..., debug=True)

    def __call__(self, *arrays: np.ndarray) -> None:
        check_arguments(self.func, arrays, self._written, self._read)
        if not self.bounds_checks:
            self._runner(*arrays)
            return
        try:
            self._runner(*arrays)
        except IndexError as error:
            reraise_bounds_error(error, self.bounds_checks)
            raise

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.func.params)
        return f"<Kernel {self.func.name}({params}) target={self.target!r}>"

    # -- display ----------------------------------------------------------------------

    def _repr_html_(self) -> str:
        """In a notebook: the kernel's signature and its generated source, highlighted."""
        import html

        from workbench.viz.html import code_html

        header = html.escape(repr(self))
        timing = f"compiled in {self.compile_seconds:.2f} s" if self.compile_seconds else ""
        if self.cache_hit:
            timing = f"from the {self.cache_hit} cache"
        return (f"<div class='wb-kernel'><code>{header}</code> "
                f"<small style='color:#666'>{html.escape(timing)}</small>"
                f"{code_html(self.source, 'python').html}</div>")

    def show(self) -> None:
        """Display the generated source: highlighted HTML in Jupyter, text elsewhere.

        Example
        -------
        >>> kernel.show()                                          # doctest: +SKIP
        """
        from IPython import get_ipython  # a dependency (through ipywidgets)
        from IPython.display import HTML, display

        shell = get_ipython()
        if shell is not None and hasattr(shell, "kernel"):
            display(HTML(self._repr_html_()))
            return
        print(self.source)

    # -- inspection (cpu target) ----------------------------------------------------

    def _require_compiled(self, what: str):
        if self._compiled is None:
            raise ValueError(
                f"kernel.{what} exists for the 'cpu' target only (this kernel is {self.target!r})"
            )
        return self._compiled

    def _inspectable(self, what: str):
        """The compiled kernel, or its uncached twin when it came from Numba's disk cache
        (Numba cannot inspect code it loaded from disk)."""
        from workbench.backends.numba_cpu import compile_twin

        compiled = self._require_compiled(what)
        if compiled.disk_cache_hit:
            return compile_twin(self.lowered, self.options, debug=False)
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

        compiled = self._require_compiled("vectorization_report()")
        twin = compile_twin(self.lowered, self.options, debug=True)
        llvm_ir = twin.dispatcher.inspect_llvm(twin.signature)
        return vectorization.report(compiled.generated.loops, llvm_ir)
