"""numpy in a subprocess, for ``benchlib.NumpyWorker`` (one JSON request per stdin line).

Started with the OpenBLAS variables unset; it must not import workbench (nor anything that
would change the BLAS configuration) before numpy.
"""

import json
import sys
import time

import numpy as np


def _operands(op: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    if op == "matmul":
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        c = np.empty((n, n), np.float32)
        return (lambda: np.matmul(a, b, out=c)), (lambda: a.astype(np.float64) @ b), c
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    run = reference = out = None
    limiter = None
    for line in sys.stdin:
        request = json.loads(line)
        try:
            op = request["op"]
            if op == "setup":
                run, reference, out = _operands(request["what"], request["n"], request["seed"])
                answer = {"ok": True}
            elif op == "check":
                run()
                expected = reference()
                error = float(np.abs(out - expected).max() / np.abs(expected).max())
                answer = {"max_rel_error": error}
            elif op == "time":
                for _ in range(request.get("warmup", 1)):
                    run()
                times = []
                for _ in range(request["repeats"]):
                    start = time.perf_counter_ns()
                    run()
                    times.append((time.perf_counter_ns() - start) * 1e-9)
                answer = {"median_s": float(np.median(times)), "times_s": times}
            elif op == "threads":  # None: back to the default
                import threadpoolctl

                if limiter is not None:
                    limiter.restore_original_limits()
                    limiter = None
                if request["n"] is not None:
                    limiter = threadpoolctl.threadpool_limits(request["n"], user_api="blas")
                answer = {"ok": True}
            elif op == "info":
                import threadpoolctl

                keys = ("internal_api", "version", "architecture", "num_threads",
                        "threading_layer")
                answer = {"blas": [{k: e.get(k) for k in keys}
                                   for e in threadpoolctl.threadpool_info()
                                   if e.get("user_api") == "blas"]}
            else:
                answer = {"error": f"unknown request {op!r}"}
        except Exception as exc:  # report to the parent instead of dying silently
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
