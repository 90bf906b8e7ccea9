"""Race detection for the property tests.

Two ways to catch a schedule whose parallel iterations are not independent:

* ``REFERENCE_ORDERS``: the numpy reference also runs every parallel / vectorized loop in a
  shuffled order (``iteration_order="shuffled"``, seeded); always on.
* ``WORKBENCH_RACE_THREADS=N`` (opt-in): the ``cpu`` kernel also runs on ``N`` Numba threads
  (``numba.set_num_threads`` when ``N`` is within ``NUMBA_NUM_THREADS``, else in a subprocess
  started with ``NUMBA_NUM_THREADS=N``), and must give the reference result too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import workbench as wb

REFERENCE_ORDERS = ({"iteration_order": "shuffled", "order_seed": 7},)
"""Extra ``numpy`` target options every legal random schedule is run with."""

RACE_THREADS = int(os.environ.get("WORKBENCH_RACE_THREADS", "0"))
"""Numba threads for the opt-in threaded run of the ``cpu`` kernel (0: off)."""

_CHILD = """
import sys
import numpy as np
import workbench as wb
folder = sys.argv[1]
func = wb.from_source(open(folder + "/func.py").read())
data = np.load(folder + "/args.npz")
args = [data[f"a{i}"] for i in range(len(data.files))]
wb.build(func, target="cpu")(*args)
np.save(folder + "/out.npy", args[-1])
"""


def run_cpu_threads(func: wb.ir.PrimFunc, args: list[np.ndarray], threads: int) -> np.ndarray:
    """The last argument (the output) after running ``func``'s cpu kernel on ``threads``
    Numba threads; ``args`` are not changed."""
    import numba

    args = [a.copy() for a in args]
    if threads <= numba.config.NUMBA_NUM_THREADS:
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            wb.build(func, target="cpu")(*args)
        finally:
            numba.set_num_threads(before)
        return args[-1]
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "func.py").write_text(func.script())
        np.savez(Path(folder, "args.npz"), **{f"a{i}": a for i, a in enumerate(args)})
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "NUMBA_NUM_THREADS": str(threads),
               "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
        subprocess.run([sys.executable, "-c", _CHILD, folder], check=True, env=env, cwd=root)
        return np.load(Path(folder, "out.npy"))
