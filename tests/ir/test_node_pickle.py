"""IR nodes sent to another process (the tuner's workers) stay equal to their twins there."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

from workbench import ops


def test_pickle_drops_the_cached_hash():
    func = ops.matmul(8, 8, 8)
    hash(func)  # caches the structural hash on the node
    assert "_structural_hash" in vars(func)
    loaded = pickle.loads(pickle.dumps(func))
    assert "_structural_hash" not in vars(loaded) and loaded == func


def test_a_pickled_function_equals_a_fresh_one_in_a_process_with_other_string_hashes(tmp_path):
    func = ops.matmul(8, 8, 8)
    hash(func)
    for node in [func.body, *func.params]:
        hash(node)
    path = tmp_path / "func.pkl"
    path.write_bytes(pickle.dumps(func))
    code = (
        "import pickle, sys; from workbench import ops; "
        f"f = pickle.load(open({str(path)!r}, 'rb')); "
        "sys.exit(0 if f == ops.matmul(8, 8, 8) and f.body == ops.matmul(8, 8, 8).body else 1)"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(sys.path)}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0
