"""``Kernel``: a built PrimFunc, callable with numpy arrays.

The base class of every target's kernels: the ``numpy`` reference builds a ``Kernel``;
``CpuKernel`` (``numba_cpu_kernel``) adds the LLVM/assembly inspection and the workspace,
``CudaKernel`` (``numba_cuda``) the launch and the GPU inspection.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.backends.common.arguments import check_arguments
from workbench.backends.common.bounds_checks import reraise_bounds_error
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
        The target's name: ``"numpy"``, ``"cpu"`` or ``"cuda"``.
    target_info : Target or None
        The ``Target`` it was built for (kind, options, device facts).
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
        target_info=None,
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
        self.target_info = target_info

    def __call__(self, *arrays: np.ndarray) -> None:
        check_arguments(self.func, arrays, self._written, self._read)
        if not self.bounds_checks:
            self._launch(arrays)
            return
        try:
            self._launch(arrays)
        except IndexError as error:
            reraise_bounds_error(error, self.bounds_checks)
            raise

    def _launch(self, arrays: tuple[np.ndarray, ...]) -> None:
        """Run the compiled code on checked arguments (targets add what they pass along)."""
        self._runner(*arrays)

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
