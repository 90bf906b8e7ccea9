"""The ``cuda`` target (Numba ``cuda.jit``): its registration, passes (barriers, reductions,
vector loads, double buffering...), printer, launcher, device runtime and verifier.

numba-cuda 0.30 registers an overload of ``np.row_stack`` when it compiles for a real GPU;
numpy 2.5 removed that alias of ``np.vstack``, so on such a machine (the H200 of issue 20:
numpy 2.5.2) the first ``cuda.jit`` compile failed with ``AttributeError`` unless every
script patched numpy first. Every module of workbench that imports ``numba.cuda`` lives in
this package, so the alias is restored here, once, only where numpy lacks it.
"""

import numpy as _np

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack
