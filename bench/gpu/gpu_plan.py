"""Issue 20: the next GPU session's measurements in one command, under one deadline, in
priority order, one JSON rewritten after every row (what ran survives a kill or a timeout).

    python3 bench/gpu/gpu_plan.py --out $OUT --deadline 540          # on the H200
    NUMBA_ENABLE_CUDASIM=1 python3 bench/gpu/gpu_plan.py --dry-run --out /tmp/plan
                                                                      # no GPU: tiny sizes

Parts (``--only tests,sgemm`` picks some; a part is skipped, with the reason written, when
less than its ``min_s`` is left; each runs in ``try`` and writes its error there):

1. ``tests``: the CUDA test suite on the real GPU (``pytest -m cuda``, the simulator off;
   the recipes' and the tuner's tests first) in a subprocess, capped at ``--tests-s``;
   passed/failed/skipped counted from the log as it goes (a cut run still counts), the
   failed tests named.
2. ``attn``: ``bench_attn.py`` as a child, capped at ``--script-s``: every attention
   variant (``warp_tiles``, the default since 2026-12-05, chosen without a GPU; ``warp_rows``
   before it; the decomposed ``bmm_tiled`` form) against torch's sdpa, its JSON kept here.
3. ``conv2``: ``bench_conv2.py`` likewise: resnet18's convolutions, the ``register_tiled``
   default (also chosen without a GPU) against the ``tiled`` one before it and cuDNN.
4. ``sgemm``: ``ops.matmul`` at 4000^3, 1000x3000x2000, 511x257x129, the graph's default
   cuda schedule (``recipes.graph_cuda.graph_schedule``, what ``wb.compile`` uses) and the
   ``register_blocked`` recipe's default, built with ``wb.build``, checked against float64,
   timed with CUDA events against ``torch.mm`` (TF32 off); the graph default also under
   each ``--sgemm-variants`` (``CONV_VARIANTS``' matmul flags: the swizzled B tile, the
   prefetch stored on the last iteration, no launch bounds).
   ``linear``: GPT-2's projections (M 1024) and the block's (M 2048) as one-layer models
   through ``wb.compile(target="cuda")`` under each matmul policy
   (``graph_cuda_ops.MATMUL_POLICIES``: the tile and K split of a matmul with an epilogue)
   and torch eager; ``policy``: GPT-2 b8 and the block d 256 b16 whole under each policy;
   ``sweep``: every tile (``--sweep-tiles``) and K split of the models' linears, beside the
   ``"waves"`` policy's prediction (its calibration); ``convgemm``: resnet18 at batch 16
   and 1 (or any model of part ``models``, ``--convgemm``) built once per
   ``--conv-variants`` (``CONV_VARIANTS``: the conv recipes; ``im2col`` + matmul with the
   ``v4`` or the ``planes`` schedule of ``im2col``; the swizzled B tile of the SGEMM,
   ``matmul_cuda.SWIZZLE_B``; planes and the swizzle together).
5. ``rows``: softmax and layernorm at 8192^2, 4096x3000, 30000x768, the graph's defaults,
   against ``torch.softmax`` / ``F.layer_norm``. ``reduce``: the inverse RMS of rows
   (``rsqrt(mean(x * x) + eps)``, widths 4096 and 768, 1024 rows) and a mean over the
   trailing axes (16 x 512 x 7 x 7) through ``wb.compile``, with the warp-per-row rule
   (``graph_cuda_ops.row_reduce``) and without it (the baseline: a thread per row); Llama's
   whole RMSNorm (one ``rms_norm`` kernel, ``block_per_row``) at both widths; eager beside.
6. ``models``: resnet18 b16 (224^2), GPT-2 small b8 (128 tokens; transformers, random
   weights), the pre-norm block of ``tests/graph/graph_models.py`` at d 768 b1 (128 tokens):
   ``wb.compile(target="cuda")`` called with torch CUDA tensors (graph replay) against
   torch eager and ``torch.compile(mode="reduce-overhead")``; device ms and host us per
   call, host us per kernel, every kernel's time and shapes.
7. ``launch``: host time per kernel of a compiled block (d 256, b1, 16 tokens) in each
   launch mode of ``graph.compiled_cuda`` (``kernels``, ``lean``, ``graph``).
8. ``tune``: ``tune_model`` on the block d 256 b16 (the three slowest kernels, within
   ``--tune-s``): default vs tuned per kernel.
9. ``fold``: GPT-2 b8 again with ``wb.compile(..., layout=False)`` (no ``fold_views``: the
   slice/transpose copies kept), beside part 6's row.

``--dry-run`` runs the same code at tiny sizes on torch's CPU tensors and the CUDA
simulator (timings are host wall clock, meaningless; torch.compile and the pytest run
skipped: the command is recorded): it checks the plan's plumbing without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable

import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for _path in (ROOT, HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

SIZES = {
    "gpu": {
        "sgemm": [(4000, 4000, 4000), (1000, 3000, 2000), (511, 257, 129)],
        # GPT-2 small at batch 8 x 128 tokens (qkv, proj, fc1 + GELU, fc2), the block d 256 b16
        "linear": [(1024, 768, 2304, False), (1024, 768, 768, False), (1024, 768, 3072, True),
                   (1024, 3072, 768, False), (2048, 256, 768, False), (2048, 1024, 256, False)],
        "rows": [(8192, 8192), (4096, 3000), (30000, 768)],
        "reduce": [("inverse_rms", (8, 128, 4096)), ("inverse_rms", (8, 128, 768)),
                   ("mean", (16, 512, 7, 7)), ("rmsnorm", (8, 128, 4096)),
                   ("rmsnorm", (8, 128, 768))],
        "models": ["resnet18 b16", "gpt2-small b8", "block d768 b1"],
        "policy": ["gpt2-small b8", "block d256 b16"],
        "convgemm": ["resnet18 b16", "resnet18 b1"],
        # GPT-2 b8, the block d 256 b16, BERT-base b16 x 128 (M 2048, d 768), 1000 x 3000 x 2000
        "sweep": [(1024, 768, 2304), (1024, 768, 768), (1024, 768, 3072), (1024, 3072, 768),
                  (2048, 256, 768), (2048, 1024, 256), (2048, 768, 3072), (2048, 3072, 768),
                  (1000, 2000, 3000)],
        "launch": (256, 4, 1, 16),
        "tune": (256, 4, 16, 128),
    },
    "dry": {
        "sgemm": [(17, 9, 5), (7, 33, 4)],
        "linear": [(10, 64, 36, True)],
        "rows": [(5, 40), (3, 7)],
        "reduce": [("inverse_rms", (2, 3, 40)), ("mean", (2, 3, 6, 7)),
                   ("rmsnorm", (2, 3, 40))],
        "models": ["block d16 b1"],
        "policy": ["block d16 b1"],
        "convgemm": ["convnet b2"],
        "sweep": [(10, 64, 36)],
        "launch": (16, 2, 1, 5),
        "tune": (16, 2, 1, 5),
    },
}
"""What each part measures, on the GPU and in a ``--dry-run``."""


@dataclasses.dataclass
class Part:
    """One step of the plan: ``run(ctx, entry)`` fills ``entry`` (saving as it goes);
    skipped when less than ``min_s`` seconds are left."""

    name: str
    run: Callable
    min_s: float


class Plan:
    """Runs parts in order under a deadline, writing ``path`` (JSON) after every change."""

    def __init__(self, path: str, deadline_s: float, clock=time.perf_counter, info=None):
        self.path, self.deadline_s, self.clock = path, deadline_s, clock
        self.start = clock()
        self.result = {"started": time.strftime("%F %T"), "deadline_s": deadline_s,
                       **(info or {}), "parts": {}}

    def left(self) -> float:
        return self.deadline_s - (self.clock() - self.start)

    def save(self) -> None:
        """Write the JSON atomically (a kill mid-write leaves the previous version)."""
        self.result["elapsed_s"] = round(self.clock() - self.start, 1)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.result, handle, indent=1, default=str)
        os.replace(tmp, self.path)

    def run(self, parts: list[Part], ctx, only: tuple[str, ...] = ()) -> dict:
        for part in parts:
            entry: dict = {}
            self.result["parts"][part.name] = entry
            if only and part.name not in only:
                entry["skipped"] = "not in --only"
            elif self.left() < part.min_s:
                entry["skipped"] = (f"deadline: {self.left():.0f} s left, the part needs "
                                    f"{part.min_s:.0f} s")
            else:
                entry["status"] = "running"
                self.save()
                begin = self.clock()
                try:
                    part.run(ctx, entry)
                    entry["status"] = "done"
                except Exception as err:  # noqa: BLE001 - recorded, the plan goes on
                    entry.update(status="error", error=f"{type(err).__name__}: {err}"[:800],
                                 traceback=traceback.format_exc()[-3000:])
                entry["wall_s"] = round(self.clock() - begin, 1)
            print(part.name, json.dumps({k: v for k, v in entry.items()
                                         if k not in ("rows", "traceback")})[:300],
                  flush=True)
            self.save()
        return self.result


# ---------------------------------------------------------------------------- the device


class Context:
    """Where the plan runs: torch CUDA tensors timed by CUDA events on the GPU; torch CPU
    tensors (host arrays for the kernels) timed by the host's clock in a dry run."""

    def __init__(self, args, plan: Plan):
        import torch

        self.args, self.plan, self.torch = args, plan, torch
        self.dry = args.dry_run
        self.sizes = dict(SIZES["dry" if self.dry else "gpu"])
        for part in ("models", "convgemm"):
            if getattr(args, part, ""):
                self.sizes[part] = getattr(args, part).split(",")
        if getattr(args, "sweep", None):  # parsed and checked by parse_args
            self.sizes["sweep"] = list(args.sweep)
        self.device = "cpu" if self.dry else "cuda"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def left(self) -> float:
        return self.plan.left()

    def save(self) -> None:
        self.plan.save()

    def randn(self, *shape):
        return self.torch.randn(*shape, device=self.device)

    def arg(self, tensor):
        """A kernel argument for ``tensor``: the device array itself (no copy) on the GPU."""
        if self.dry:
            return tensor.numpy()
        from numba import cuda

        return cuda.as_cuda_array(tensor)

    def sync(self) -> None:
        if not self.dry:
            self.torch.cuda.synchronize()

    def time_s(self, fn, repeats: int = 20) -> float:
        """Median seconds of ``fn()``: CUDA events (3 warm-ups), or one host-timed call."""
        if self.dry:
            fn()
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        from bench_cudamem import cuda_time

        return cuda_time(fn, repeats=repeats)

    def measure(self, fn, kernels: int | None = None, n: int = 30) -> dict:
        """Device ms and host us per call (``bench_gpu_e2e.measure``); one call in a dry run."""
        if self.dry:
            start = time.perf_counter()
            fn()
            ms = (time.perf_counter() - start) * 1e3
            row = {"device_ms": ms, "host_us": ms * 1e3}
            if kernels:
                row.update(kernels=kernels, host_us_per_kernel=ms * 1e3 / kernels)
            return row
        from bench_gpu_e2e import measure

        row = measure(self.torch, fn, kernels, n=n)
        return {k: v for k, v in row.items() if not k.endswith("_all")}


def _error(err: Exception, limit: int = 500) -> dict:
    """A row's record of ``err``: its class and message, cut to ``limit`` characters."""
    return {"error": f"{type(err).__name__}: {err}"[:limit]}


def _block(ctx: Context, part: str):
    """(the pre-norm block of ``ctx.sizes[part]`` with seeded weights, an input on the CPU)."""
    from tests.graph.graph_models import Block

    dim, heads, batch, tokens = ctx.sizes[part]
    ctx.torch.manual_seed(0)
    return Block(dim, heads).eval(), ctx.torch.randn(batch, tokens, dim)


def rel_err(torch, got, want) -> float:
    got, want = torch.as_tensor(got).double().cpu(), torch.as_tensor(want).double().cpu()
    if torch.isnan(got).any():
        return float("nan")
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


# ---------------------------------------------------------------------------- parts


def tests_command(args) -> list[str]:
    """``pytest -v -m cuda`` over ``--tests``; a module that cannot be imported there (a
    package the device lacks) is an error of its own, not the end of the run."""
    return [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "cuda",
            "--continue-on-collection-errors", "-W", "ignore::DeprecationWarning",
            "-W", "ignore::FutureWarning", *args.tests.split()]


def count_tests(log: str) -> dict:
    """Outcome counts of a ``pytest -v`` log, complete or cut short."""
    counts = {k.lower(): len(re.findall(rf"::\S+ {k}\b", log))
              for k in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL")}
    counts["failed_tests"] = re.findall(r"^(\S+::\S+) (?:FAILED|ERROR)", log, re.M)[:40]
    summary = re.findall(r"^=*\s*(\d[^=]* in [\d.]+s\b[^=]*?)\s*=*$", log, re.M)
    counts["summary"] = summary[-1] if summary else "cut short (no summary line)"
    return counts


SHIM = ("import numpy as np\nif not hasattr(np, 'row_stack'):\n"
        "    np.row_stack = np.vstack\n")
"""The ``sitecustomize.py`` of every child process (numpy 2.5 has no ``row_stack``, which
numba-cuda 0.30 overloads: ``workbench.backends.cuda`` restores it too, this covers a child
that imports ``numba.cuda`` first, e.g. a conftest)."""


def child_shim() -> str:
    """A folder holding ``SHIM`` as ``sitecustomize.py``, put first on this process's
    ``sys.path`` and ``PYTHONPATH``: the pytest run and the tuner's workers (which start
    with this process's ``sys.path``) import numba-cuda on numpy 2.5 without failing."""
    shim = tempfile.mkdtemp(prefix="plan_site_")
    with open(os.path.join(shim, "sitecustomize.py"), "w") as handle:
        handle.write(SHIM)
    sys.path.insert(0, shim)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [shim, ROOT, os.environ.get("PYTHONPATH", "")] if p)
    return shim


def part_tests(ctx: Context, entry: dict) -> None:
    command = tests_command(ctx.args)
    entry["command"] = " ".join(command[1:])
    if ctx.dry:
        command = command[:2] + ["pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                 "-m", "cuda", "tests/tune/test_cuda_space_candidates.py"]
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if ctx.dry else "0")
    budget = max(10.0, min(ctx.args.tests_s, ctx.left() - ctx.args.reserve_s))
    log_path = os.path.join(ctx.args.out, "plan_tests.log")
    entry["budget_s"] = round(budget, 1)
    with open(log_path, "w") as log:
        try:
            code = subprocess.run(command, cwd=ROOT, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=budget).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    with open(log_path) as log:
        text = log.read()
    entry["returncode"] = code
    entry.update(count_tests(text))
    entry["tail"] = text[-1500:]


def run_script(ctx: Context, entry: dict, script: str, argv: list[str], cap_s: float,
               json_path: str) -> None:
    """Run a bench script of this folder as a child (its own ``--deadline``: the part's
    budget less a margin for the start), its log beside the plan; its JSON (written by the
    script row by row) is copied into ``entry["result"]``, whatever the exit."""
    budget = max(20.0, min(cap_s, ctx.left() - 30))
    command = [sys.executable, os.path.join(HERE, script), *argv,
               "--deadline", str(round(budget - 15)), *(["--dry-run"] if ctx.dry else [])]
    entry.update(command=" ".join(command[1:]), budget_s=round(budget, 1))
    log_path = os.path.join(ctx.args.out, f"plan_{entry['name']}.log")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if ctx.dry else "0")
    with open(log_path, "w") as log:
        try:
            entry["returncode"] = subprocess.run(command, cwd=ROOT, env=env, stdout=log,
                                                 stderr=subprocess.STDOUT,
                                                 timeout=budget).returncode
        except subprocess.TimeoutExpired:
            entry["returncode"] = "timeout"
    with open(log_path) as log:
        entry["tail"] = log.read()[-1500:]
    if os.path.exists(json_path):
        with open(json_path) as handle:
            entry["result"] = json.load(handle)


def part_attn(ctx: Context, entry: dict) -> None:
    """``bench_attn.py``: every attention variant (the ``warp_tiles`` default, ``warp_rows``,
    the decomposed ``bmm_tiled`` form) against torch's sdpa: is the default the fastest?"""
    path = os.path.join(ctx.args.out, "attn.json")
    entry["name"] = "attn"
    run_script(ctx, entry, "bench_attn.py", ["--out", path], ctx.args.script_s, path)


CONV2_JSON = "conv2.json"
"""The file ``bench_conv2.py`` writes in its ``--out`` folder."""


def part_conv2(ctx: Context, entry: dict) -> None:
    """``bench_conv2.py``: resnet18's convolutions, the ``register_tiled`` default against
    the ``tiled`` one before it and cuDNN."""
    folder = os.path.join(ctx.args.out, "conv2")
    os.makedirs(folder, exist_ok=True)
    entry["name"] = "conv2"
    run_script(ctx, entry, "bench_conv2.py", ["--out", folder], ctx.args.script_s,
               os.path.join(folder, CONV2_JSON))


def _run_kernel(ctx, sch, tensors, out, ref) -> dict:
    import workbench as wb

    start = time.perf_counter()
    kernel = wb.build(sch, target="cuda")
    args = [ctx.arg(t) for t in tensors]
    out.fill_(float("nan"))
    kernel(*args)
    ctx.sync()
    row = {"first_call_s": round(time.perf_counter() - start, 2),
           "rel_err": rel_err(ctx.torch, out, ref), "launches": str(kernel.launches)[:200]}
    row["ms"] = ctx.time_s(lambda: kernel(*args)) * 1e3
    return row


def _ratio(row: dict, theirs_ms: float) -> dict:
    row["torch_ms"] = theirs_ms
    if "ms" in row:
        row["torch_over_workbench"] = round(theirs_ms / row["ms"], 3)
    return row


def part_sgemm(ctx: Context, entry: dict) -> None:
    from workbench import ops, recipes
    from workbench.recipes.graph_cuda import graph_schedule

    torch = ctx.torch
    rows = entry.setdefault("rows", {})
    for m, n, k in ctx.sizes["sgemm"]:
        name = f"{m}x{n}x{k}"
        if ctx.left() < 25:
            rows[name] = {"skipped": "deadline"}
            continue
        try:  # torch's side of the row: a failure here is the row's error, not the part's
            a, b = ctx.randn(m, k), ctx.randn(k, n)
            ref = a.double() @ b.double()
            mine = torch.empty(m, n, device=ctx.device)
            theirs = ctx.time_s(lambda: torch.mm(a, b, out=mine)) * 1e3  # noqa: B023
        except Exception as err:  # noqa: BLE001
            rows[name] = _error(err)
            ctx.save()
            continue
        func = ops.matmul(m, n, k)
        builds = [("graph default", graph_schedule, None),
                  ("register_blocked default", recipes.get("matmul", "register_blocked", "cuda"),
                   None)]
        builds += [(f"graph default, {v}", graph_schedule, v) for v in ctx.args.sgemm_variants]
        for label, make, variant in builds:
            try:
                c = torch.empty(m, n, device=ctx.device)
                with _flags(variant) if variant else contextlib.nullcontext():
                    sch = make(func)
                row = _run_kernel(ctx, sch, (a, b, c), c, ref)
                row["TFLOP/s"] = 2 * m * n * k / row["ms"] / 1e9
            except Exception as err:  # noqa: BLE001
                row = _error(err)
            rows[f"{name} {label}"] = _ratio(row, theirs)
            ctx.save()


def part_linear(ctx: Context, entry: dict) -> None:
    """``nn.Linear`` (+ tanh GELU) of the models' shapes as one-layer models through
    ``wb.compile(target="cuda")``, called with torch CUDA tensors (graph replay), under each
    of ``graph_cuda_ops.MATMUL_POLICIES`` (the tile and the K split of a matmul with an
    epilogue) and, under the default policy, each ``--sgemm-variants``, beside torch eager
    (cuBLAS, TF32 off)."""
    import copy

    from workbench.recipes import graph_cuda_ops

    torch = ctx.torch
    rows = entry.setdefault("rows", {})
    for m, k, n, gelu in ctx.sizes["linear"]:
        name = f"{m}x{k}->{n}{' gelu' if gelu else ''}"
        if ctx.left() < 30:
            rows[name] = {"skipped": "deadline"}
            continue
        rows[name] = row = {"gflop": 2 * m * n * k / 1e9}
        torch.manual_seed(0)
        layers = [torch.nn.Linear(k, n)] + ([torch.nn.GELU(approximate="tanh")] if gelu else [])
        model = torch.nn.Sequential(*layers).eval()
        x = torch.randn(m, k)
        xd, device_model = x.to(ctx.device), copy.deepcopy(model).to(ctx.device)
        try:
            with torch.no_grad():
                want = device_model(xd).clone()
                row["torch eager"] = ctx.measure(lambda: device_model(xd))  # noqa: B023
                builds = [(f"workbench {p}", p, None) for p in graph_cuda_ops.MATMUL_POLICIES]
                builds += [(f"workbench, {v}", None, v) for v in ctx.args.sgemm_variants]
                for label, policy, variant in builds:
                    row[label] = result = {
                        "plan": graph_cuda_ops.matmul_plan(m, n, k, True, policy)}
                    with _flags(variant) if variant else contextlib.nullcontext():
                        result.update(_compiled_row(ctx, model, x, xd, want, policy))
                    result["vs_eager"] = row["torch eager"]["device_ms"] / result["device_ms"]
                    ctx.save()
        except Exception as err:  # noqa: BLE001
            row.update(_error(err, 800))
        ctx.save()


def _compiled_row(ctx: Context, model, x, xd, want, policy: str | None,
                  report: bool = False) -> dict:
    """``wb.compile(model)`` for cuda under matmul ``policy`` (None: the default), called on
    the device input, timed (graph replay) and checked against ``want``; ``report``: with
    every kernel's time and operand shapes, slowest first (``latency_report``)."""
    import workbench as wb
    from workbench.recipes import graph_cuda_ops

    torch = ctx.torch
    saved = graph_cuda_ops.MATMUL_POLICY
    graph_cuda_ops.MATMUL_POLICY = policy or saved
    try:
        start = time.perf_counter()
        compiled = wb.compile(model, (x,), target="cuda", progress=False)
        compile_s = round(time.perf_counter() - start, 1)
    finally:
        graph_cuda_ops.MATMUL_POLICY = saved
    with torch.no_grad():
        got = _first(compiled(xd))
        ctx.sync()
        result = ctx.measure(lambda: compiled(xd), len(compiled.kernels))
    result.update(rel_err=rel_err(torch, got, want), compile_s=compile_s,
                  launches=sum(len(getattr(c.kernel, "launches", ()) or ())
                               for c in compiled.kernels))
    if report:
        result["kernels_by_time"] = _kernel_table(ctx, compiled, xd)
    return result


def _kernel_table(ctx: Context, compiled, xd) -> list[dict]:
    """Every kernel of ``compiled`` with its device time (``latency_report``) and operand
    shapes, slowest first."""
    frame = compiled.latency_report(xd, repeat=1 if ctx.dry else 5)
    shapes = {k.node: [list(s) for s in k.shapes] for k in compiled.kernels}
    slow = frame.sort_values("median_us", ascending=False)
    return [{"kernel": k, "pattern": p, "median_us": round(float(u), 2), "shapes": shapes[k]}
            for k, p, u in zip(slow["kernel"], slow["pattern"], slow["median_us"],
                               strict=True)]


def _eager_row(ctx: Context, name: str, row: dict):
    """``make_model(name)``, its input on the device, eager's output (the reference) and
    eager's time in ``row``: ``(model, x, x on the device, want)``."""
    import copy

    model, x = make_model(name)
    device_model = copy.deepcopy(model).to(ctx.device)
    xd = x.to(ctx.device)
    with ctx.torch.no_grad():
        want = _first(device_model(xd)).clone()
        row["torch eager"] = ctx.measure(lambda: device_model(xd))
    ctx.save()
    return model, x, xd, want


def _variant(ctx: Context, row: dict, label: str, least_s: float, build) -> None:
    """``row[label]``: ``build()``'s timed row with its speed against ``row``'s eager, an
    error row if it raised, skipped with fewer than ``least_s`` seconds left; saved."""
    if ctx.left() < least_s and not ctx.dry:
        row[label] = {"skipped": f"deadline ({ctx.left():.0f} s left)"}
        return
    try:
        row[label] = build()
        row[label]["vs_eager"] = row["torch eager"]["device_ms"] / row[label]["device_ms"]
    except Exception as err:  # noqa: BLE001
        row[label] = _error(err, 800)
    ctx.save()


_OPS = "workbench.recipes.graph_cuda_ops"
_MM = "workbench.recipes.matmul_cuda"
_ON_LAST = ((_MM, "PREFETCH_STORE_ON_LAST", True), (_MM, "BLOCKS_PER_SM", 2))
CONV_VARIANTS = {
    "conv recipes": (("workbench.graph.passes.conv_gemm", "CONV_AS_GEMM", False),),
    "im2col v4": ((_OPS, "IM2COL_SCHEDULE", "v4"),),
    "im2col planes": ((_OPS, "IM2COL_SCHEDULE", "planes"),),
    "swizzle B": ((_MM, "SWIZZLE_B", True),),
    "planes + swizzle B": ((_OPS, "IM2COL_SCHEDULE", "planes"), (_MM, "SWIZZLE_B", True)),
    "unbounded": ((_MM, "BLOCKS_PER_SM", 0),),
    "prefetch on last": ((_MM, "PREFETCH_STORE_ON_LAST", True),),
    "prefetch on last unbounded": ((_MM, "PREFETCH_STORE_ON_LAST", True),
                                    (_MM, "BLOCKS_PER_SM", 0)),
    "planes + all matmul": ((_OPS, "IM2COL_SCHEDULE", "planes"), (_MM, "SWIZZLE_B", True),
                            *_ON_LAST),
    "split on whole k steps": ((_MM, "SPLIT_K_WHOLE_STEPS", True),),
    "64 tile as 8x8": ((_MM, "TILE_64_AS_8X8", True), *_ON_LAST),
    "64 tile as 8x8 + swizzle B": ((_MM, "TILE_64_AS_8X8", True), (_MM, "SWIZZLE_B", True),
                                   *_ON_LAST),
}
"""Builds under module flags (restored after): part ``convgemm``'s (``--conv-variants``)
and part ``sgemm``'s (``--sgemm-variants``, beside the defaults)."""


@contextlib.contextmanager
def _flags(label: str):
    """The module flags of ``CONV_VARIANTS[label]`` set for the ``with`` body."""
    import importlib

    flags = [(importlib.import_module(module_name), flag, value)
             for module_name, flag, value in CONV_VARIANTS[label]]
    saved = [(module, flag, getattr(module, flag)) for module, flag, _ in flags]
    for module, flag, value in flags:
        setattr(module, flag, value)
    try:
        yield
    finally:
        for module, flag, value in saved:
            setattr(module, flag, value)


def part_convgemm(ctx: Context, entry: dict) -> None:
    """The models of ``ctx.sizes["convgemm"]`` compiled once per ``--conv-variants``
    (``CONV_VARIANTS``: the convolution recipes, ``im2col`` + matmul with each ``im2col``
    schedule), beside eager of the same run, with each build's kernels by time."""

    rows = entry.setdefault("rows", {})
    for name in ctx.sizes["convgemm"]:
        rows[name] = row = {}
        model, x, xd, want = _eager_row(ctx, name, row)
        for label in ctx.args.conv_variants:

            def build(label=label):
                with _flags(label):
                    return _compiled_row(ctx, model, x, xd, want, None, report=True)  # noqa: B023 - called at once

            _variant(ctx, row, label, 60, build)


def part_sweep(ctx: Context, entry: dict) -> None:
    """Calibration of the ``"waves"`` policy: each linear of ``ctx.sizes["sweep"]`` (M, K, N,
    with bias) through ``wb.compile`` with every tile (64, 128) and K split of
    ``graph_cuda_ops.WIDE_SPLITS`` that fits, forced by replacing ``matmul_plan`` for the
    compile; each row beside ``predicted_matmul_s`` (the model the policy minimises) and eager."""
    import copy

    from workbench.recipes import graph_cuda_ops as g

    torch = ctx.torch
    rows = entry.setdefault("rows", {})
    chosen = g.matmul_plan
    for m, k, n in ctx.sizes["sweep"]:
        name = f"{m}x{k}->{n}"
        torch.manual_seed(0)
        model = torch.nn.Linear(k, n).eval()
        x = torch.randn(m, k)
        xd, device_model = x.to(ctx.device), copy.deepcopy(model).to(ctx.device)
        with torch.no_grad():
            want = device_model(xd).clone()
            rows[name] = row = {"torch eager": ctx.measure(lambda: device_model(xd)),  # noqa: B023
                                "default plan": chosen(m, n, k, True)}
        for side, (threads, per) in ((32, (8, 4)), (64, (16, 4)), (128, (16, 8))):
            if side not in ctx.args.sweep_tiles:
                continue
            for split in ctx.args.sweep_splits:
                if k % split or (k // split) % 8 or k // split < 32:
                    continue
                label = f"tile {side} split {split}"
                if ctx.left() < 20:
                    row[label] = {"skipped": "deadline"}
                    continue
                g.matmul_plan = (lambda *a, t=threads, p=per, s=split, **kw: (t, p, 8, s))
                try:
                    row[label] = _compiled_row(ctx, model, x, xd, want, g.MATMUL_POLICY)
                    row[label]["predicted_ms"] = g.predicted_matmul_s(m, n, k, side, split) * 1e3
                except Exception as err:  # noqa: BLE001
                    row[label] = _error(err, 400)
                finally:
                    g.matmul_plan = chosen
                ctx.save()


def part_policy(ctx: Context, entry: dict) -> None:
    """Whole models (``ctx.sizes["policy"]``) compiled under each matmul policy of
    ``graph_cuda_ops.MATMUL_POLICIES``, beside torch eager of the same run: which policy
    becomes the default."""
    from workbench.recipes import graph_cuda_ops

    rows = entry.setdefault("rows", {})
    for name in ctx.sizes["policy"]:
        rows[name] = row = {}
        model, x, xd, want = _eager_row(ctx, name, row)
        for policy in graph_cuda_ops.MATMUL_POLICIES:
            _variant(ctx, row, policy, 40,  # the lambda is called at once
                     lambda policy=policy: _compiled_row(ctx, model, x, xd, want, policy))  # noqa: B023


def part_rows(ctx: Context, entry: dict) -> None:
    from workbench import ops
    from workbench.recipes.graph_cuda import graph_schedule

    torch = ctx.torch
    rows = entry.setdefault("rows", {})
    for op in ("softmax", "layernorm"):
        for m, n in ctx.sizes["rows"]:
            name = f"{op} {m}x{n}"
            if ctx.left() < 15:
                rows[name] = {"skipped": "deadline"}
                continue
            try:  # torch's side of the row
                x, out, mine = ctx.randn(m, n), ctx.randn(m, n), ctx.randn(m, n)
                if op == "softmax":
                    ref = torch.softmax(x.double(), 1)
                    theirs = ctx.time_s(
                        lambda: torch.ops.aten._softmax.out(x, 1, False, out=mine))  # noqa: B023
                    tensors = (x, out)
                else:
                    g, b = ctx.randn(n), ctx.randn(n)
                    ref = torch.nn.functional.layer_norm(x.double(), (n,), g.double(),
                                                         b.double())
                    theirs = ctx.time_s(
                        lambda: torch.nn.functional.layer_norm(x, (n,), g, b))  # noqa: B023
                    tensors = (x, g, b, out)
            except Exception as err:  # noqa: BLE001
                rows[name] = _error(err)
                ctx.save()
                continue
            try:
                row = _run_kernel(ctx, graph_schedule(getattr(ops, op)(m, n)), tensors, out,
                                  ref)
                row["GB/s"] = 2 * 4 * m * n / row["ms"] / 1e6
            except Exception as err:  # noqa: BLE001
                row = _error(err)
            rows[name] = _ratio(row, theirs * 1e3)
            ctx.save()


def _reduce_model(torch, kind: str, width: int):
    """Part ``reduce``'s module: Llama's RMSNorm (as transformers writes it) of ``width``,
    its statistic alone (the inverse RMS of each row), or the mean over the last two axes."""

    class RMSNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(width))

        def forward(self, x):
            variance = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(variance + 1e-6))

    class Statistic(torch.nn.Module):
        def forward(self, x):
            if kind == "mean":
                return x.mean((2, 3))
            return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    return RMSNorm() if kind == "rmsnorm" else Statistic()


def part_reduce(ctx: Context, entry: dict) -> None:
    """Row reductions through ``wb.compile``: the default (``graph_cuda_ops.row_reduce``
    for the statistics) and, but for the whole RMSNorm, without that rule
    (``"baseline"``), beside eager of the same run."""
    import copy

    from workbench.recipes import graph_cuda_ops as g

    torch = ctx.torch
    rows = entry.setdefault("rows", {})
    for kind, shape in ctx.sizes["reduce"]:
        rows[name := f"{kind} {'x'.join(map(str, shape))}"] = row = {}
        try:
            torch.manual_seed(0)
            model = _reduce_model(torch, kind, shape[-1]).eval()
            x = torch.randn(*shape)
            xd, device_model = x.to(ctx.device), copy.deepcopy(model).to(ctx.device)
            with torch.no_grad():
                want = device_model(xd).clone()
                row["torch eager"] = ctx.measure(lambda: device_model(xd))  # noqa: B023
        except Exception as err:  # noqa: BLE001
            rows[name] = _error(err)
            ctx.save()
            continue

        def compiled(rules=None):
            saved = g.RULES
            g.RULES = saved if rules is None else rules
            try:
                return _compiled_row(ctx, model, x, xd, want, None, report=True)  # noqa: B023
            finally:
                g.RULES = saved

        _variant(ctx, row, "default", 15, compiled)
        if kind != "rmsnorm":  # its rms_norm kernel is the rows rule's, not row_reduce's
            _variant(ctx, row, "baseline", 15,
                     lambda: compiled(tuple(r for r in g.RULES if r is not g.row_reduce)))


MODEL_NAMES = re.compile(r"^(block d\d+|convnet|resnet18|mobilenet_v2|efficientnet_b0|gpt2-small)"
                         r" b\d+$")
"""The models ``make_model`` builds (``--models``, ``--convgemm``): a kind and a batch."""


def make_model(name: str):
    """(model, example input on the CPU) for a model row of ``SIZES``."""
    if not MODEL_NAMES.match(name):
        raise ValueError(f"no model {name!r} (names match {MODEL_NAMES.pattern})")
    import torch

    from tests.graph.graph_models import Block

    torch.manual_seed(0)
    if name.startswith("block"):
        dim, batch = (int(s) for s in re.findall(r"\d+", name)[:2])
        tokens = 128 if dim >= 256 else 7
        return Block(dim, max(2, dim // 64)).eval(), torch.randn(batch, tokens, dim)
    if name.startswith("convnet"):  # the dry run's: conv, folded BN, residual, stride 2
        nn = torch.nn
        body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                             nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1))
        return body.eval(), torch.randn(int(name.rsplit("b", 1)[1]), 3, 7, 9)
    if name.split()[0] in ("resnet18", "mobilenet_v2", "efficientnet_b0"):
        import torchvision

        batch = int(name.rsplit("b", 1)[1])
        model = getattr(torchvision.models, name.split()[0])(weights=None)
        return model.eval(), torch.randn(batch, 3, 224, 224)
    import transformers

    config = transformers.GPT2Config(n_layer=12, n_head=12, n_embd=768, n_positions=128,
                                     use_cache=False)
    model = transformers.GPT2Model(config).eval()
    model.config.return_dict = False
    return model, torch.randint(0, 50257, (int(name.rsplit("b", 1)[1]), 128))


def _first(out):
    return out[0] if isinstance(out, tuple | list) else out


def run_model(ctx: Context, name: str, row: dict, layout: bool = True) -> dict:
    """Fill ``row`` (already in the plan's JSON: each figure is saved as it comes, so a
    kill in torch.compile keeps the workbench figures; an error leaves what was measured)."""
    import copy

    import workbench as wb

    torch = ctx.torch
    model, x = make_model(name)
    row["shape"] = list(x.shape)
    device_model = copy.deepcopy(model).to(ctx.device)
    xd = x.to(ctx.device)
    with torch.no_grad():
        want = _first(device_model(xd)).clone()
        row["torch eager"] = ctx.measure(lambda: device_model(xd))
        ctx.save()
        start = time.perf_counter()
        compiled = wb.compile(model, (x,), target="cuda", progress=False, layout=layout)
        row["compile_s"] = round(time.perf_counter() - start, 1)
        kernels = len(compiled.kernels)
        row["kernels"] = kernels
        got = _first(compiled(xd))
        ctx.sync()
        wb_row = ctx.measure(lambda: compiled(xd), kernels)
        wb_row["rel_err"] = rel_err(torch, got, want)
        row["workbench"] = wb_row
        ctx.save()
        row["kernels_by_time"] = _kernel_table(ctx, compiled, xd)
        ctx.save()
        label = "torch.compile reduce-overhead"
        if ctx.dry or not layout:
            row[label] = {"skipped": "--dry-run" if ctx.dry else "measured in part models"}
        elif ctx.left() < 60:
            row[label] = {"skipped": f"deadline ({ctx.left():.0f} s left)"}
        else:
            try:
                fn = torch.compile(copy.deepcopy(device_model), mode="reduce-overhead")
                start = time.perf_counter()
                out = _first(fn(xd)).clone()  # reduce-overhead reuses its output buffer
                ctx.sync()
                step = torch.compiler.cudagraph_mark_step_begin

                def call():
                    step()
                    return fn(xd)

                row[label] = ctx.measure(call)
                row[label].update(compile_s=round(time.perf_counter() - start, 1),
                                  rel_err=rel_err(torch, out, want))
            except Exception as err:  # noqa: BLE001
                row[label] = _error(err)
    eager = row["torch eager"]["device_ms"]
    for key in ("workbench", label):
        if "device_ms" in row.get(key, {}):
            row[key]["speed_vs_eager"] = eager / row[key]["device_ms"]
    return row


def part_models(ctx: Context, entry: dict) -> None:
    rows = entry.setdefault("rows", {})
    for name in ctx.sizes["models"]:
        if ctx.left() < 60 and not ctx.dry:
            rows[name] = {"skipped": f"deadline ({ctx.left():.0f} s left)"}
            continue
        rows[name] = row = {}
        try:
            run_model(ctx, name, row)
        except Exception as err:  # noqa: BLE001
            row.update(_error(err, 800), traceback=traceback.format_exc()[-2000:])
        ctx.save()


def part_launch(ctx: Context, entry: dict) -> None:
    import workbench as wb

    model, x = _block(ctx, "launch")
    compiled = wb.compile(model, (x,), target="cuda", progress=False)
    kernels = len(compiled.kernels)
    entry["kernels"] = kernels
    xd = x.to(ctx.device)
    rows = entry.setdefault("rows", {})
    with ctx.torch.no_grad():
        compiled(xd)
        for mode in ("kernels", "lean", "graph"):
            compiled.runtime.mode = mode
            try:
                compiled(xd)
                ctx.sync()
                rows[mode] = ctx.measure(lambda: compiled(xd), kernels, n=50)
            except Exception as err:  # noqa: BLE001
                rows[mode] = _error(err)
            ctx.save()


def part_tune(ctx: Context, entry: dict) -> None:
    from workbench.graph.tune_model import tune_model
    from workbench.tune.runner import LocalRunner

    model, x = _block(ctx, "tune")
    db = os.path.join(ctx.args.out, "plan_tune.jsonl")
    budget = max(10.0, min(ctx.args.tune_s, ctx.left() - 60))
    entry["budget_s"] = round(budget, 1)
    top = 1 if ctx.dry else 3
    with LocalRunner(n_build=1 if ctx.dry else 4, measure_timeout_s=60) as runner:
        result = tune_model(model, (x,), target="cuda", db=db, time_budget_s=budget, top=top,
                            trials=2 if ctx.dry else ctx.args.trials, runner=runner,
                            repeat=1 if ctx.dry else 10, resume=False)
    entry["table"] = json.loads(result.table().to_json(orient="records"))
    entry["tuned"] = {node: {"records": len(r.records), "ok": sum(x.ok for x in r.records)}
                      for node, r in result.tuned.items()}
    entry["tune_wall_s"] = round(result.wall_s, 1)


TESTS = "tests/recipes tests/tune tests/backends tests/graph tests"
"""The CUDA tests' folders, the kernels' own first (pytest skips a path given twice): a run
cut by ``--tests-s`` has covered the recipes and the tuner."""

def part_fold(ctx: Context, entry: dict) -> None:
    """GPT-2 (the models part's second row) compiled with ``layout=False``: the slice and
    transpose kernels kept, the attention reading ``(B, H, T, D)`` copies; beside the
    models part's folded row it says what ``fold_views`` gains or loses on the GPU (on the
    CPU the strided reads once cost more than the copies: ``graph.lower.lower_graph``)."""
    name = ctx.sizes["models"][min(1, len(ctx.sizes["models"]) - 1)]
    row: dict = {}
    entry["rows"] = {f"{name} layout=False": row}
    try:
        run_model(ctx, name, row, layout=False)
    except Exception as err:  # noqa: BLE001
        row.update(_error(err, 800), traceback=traceback.format_exc()[-2000:])


PARTS = [
    Part("tests", part_tests, 30),
    Part("attn", part_attn, 60),
    Part("conv2", part_conv2, 60),
    Part("sgemm", part_sgemm, 40),
    Part("linear", part_linear, 40),
    Part("policy", part_policy, 60),
    Part("sweep", part_sweep, 60),
    Part("convgemm", part_convgemm, 90),
    Part("rows", part_rows, 30),
    Part("reduce", part_reduce, 30),
    Part("models", part_models, 90),
    Part("launch", part_launch, 30),
    Part("tune", part_tune, 90),
    Part("fold", part_fold, 90),
]
"""The plan, in priority order."""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".", help="folder of plan.json and the logs")
    parser.add_argument("--deadline", type=float, default=540.0,
                        help="seconds for the whole plan (parts past it are skipped)")
    parser.add_argument("--only", default="", help="comma-separated parts, e.g. tests,sgemm")
    parser.add_argument("--dry-run", action="store_true",
                        help="tiny sizes on the CPU and the CUDA simulator (no GPU)")
    parser.add_argument("--tests", default=TESTS,
                        help="paths given to pytest -m cuda, in the order they run")
    parser.add_argument("--tests-s", type=float, default=150.0,
                        help="the most seconds the test run may take")
    parser.add_argument("--reserve-s", type=float, default=240.0,
                        help="seconds the test run leaves to the measurements")
    parser.add_argument("--tune-s", type=float, default=90.0, help="tuning budget, seconds")
    parser.add_argument("--trials", type=int, default=8, help="candidates per tuned kernel")
    parser.add_argument("--script-s", type=float, default=150.0,
                        help="the most seconds each bench script (attn, conv2) may take")
    parser.add_argument("--models", default="",
                        help="comma-separated models of part models (default: all of SIZES)")
    parser.add_argument("--sweep", default="",
                        help="part sweep's linears 'M,K,N;M,K,N' (default: all of SIZES)")
    parser.add_argument("--sweep-tiles", default="64,128",
                        help="part sweep's tile sides, of 32, 64, 128")
    parser.add_argument("--sweep-splits", default=",".join(map(str, (1, 2, 3, 4, 6, 8))),
                        help="part sweep's K splits")
    parser.add_argument("--convgemm", default="",
                        help="comma-separated models of part convgemm (default: all of SIZES)")
    parser.add_argument("--conv-variants", default="im2col v4,im2col planes",
                        help=f"part convgemm's builds, of {', '.join(CONV_VARIANTS)}")
    parser.add_argument("--waves", default="",
                        help="a JSON of fit_waves.py --json: the 'waves' policy's constants "
                             "set from it for every part")
    parser.add_argument("--sgemm-variants", default="",
                        help="part sgemm's graph default also built under these "
                             "(of --conv-variants' names)")
    args = parser.parse_args(argv)
    for option in ("conv_variants", "sgemm_variants"):
        chosen = [v.strip() for v in getattr(args, option).split(",") if v.strip()]
        if not set(chosen) <= set(CONV_VARIANTS):
            parser.error(f"--{option.replace('_', '-')}: of {', '.join(CONV_VARIANTS)}, got "
                         f"{chosen}")
        setattr(args, option, chosen)
    try:
        args.sweep_tiles = tuple(int(v) for v in args.sweep_tiles.split(","))
        args.sweep_splits = tuple(int(v) for v in args.sweep_splits.split(","))
        shapes = [tuple(int(v) for v in shape.split(",")) for shape in args.sweep.split(";")
                  if args.sweep]
    except ValueError as err:
        parser.error(f"--sweep, --sweep-tiles, --sweep-splits take integers: {err}")
    if any(len(shape) != 3 for shape in shapes):
        parser.error(f"--sweep: shapes of three integers 'M,K,N;...', got {args.sweep!r}")
    args.sweep = shapes
    if not set(args.sweep_tiles) <= {32, 64, 128}:
        parser.error(f"--sweep-tiles: sides of 32, 64, 128, got {args.sweep_tiles}")
    for option in ("models", "convgemm"):
        bad = [m for m in getattr(args, option).split(",") if m and not MODEL_NAMES.match(m)]
        if bad:
            parser.error(f"--{option}: no model {bad}; names match {MODEL_NAMES.pattern}")
    unknown = set(filter(None, args.only.split(","))) - {p.name for p in PARTS}
    if unknown:
        parser.error(f"--only: no part {sorted(unknown)}; parts: "
                     f"{', '.join(p.name for p in PARTS)}")
    if args.deadline <= 0:
        parser.error(f"--deadline must be positive, got {args.deadline}")
    if args.waves:
        try:
            args.waves = wave_constants(args.waves)
        except (OSError, ValueError, KeyError, TypeError) as err:
            parser.error(f"--waves {args.waves}: not a JSON of fit_waves.py --json ({err})")
    return args


def wave_constants(path: str) -> dict[int, tuple[int, float]]:
    """``{tile: (blocks a multiprocessor, us per unit of K)}`` of a ``fit_waves.py --json``
    file; ValueError for a tile the policy has no constant of or a count that is not
    positive."""
    from workbench.recipes import graph_cuda_ops as g

    with open(path) as handle:
        fitted = json.load(handle)
    constants = {int(tile): (int(fitted["per_sm"][tile]), float(fitted["us_per_k"][tile]))
                 for tile in fitted["per_sm"]}
    for tile, (per_sm, us_per_k) in constants.items():
        if tile not in g.WAVE_US_PER_K or per_sm <= 0 or us_per_k <= 0:
            raise ValueError(f"tile {tile}: {per_sm} blocks a multiprocessor at {us_per_k} us "
                             f"per unit of K (tiles {sorted(g.WAVE_US_PER_K)}, both positive)")
    return constants


def set_wave_constants(constants: dict[int, tuple[int, float]]) -> None:
    """Set ``graph_cuda_ops.WAVE_SLOTS`` and ``WAVE_US_PER_K`` of each tile of ``constants``
    (this process only: the plan's ``--waves``)."""
    from workbench.recipes import graph_cuda_ops as g
    from workbench.recipes.matmul_cuda import MIN_BLOCKS

    for tile, (per_sm, us_per_k) in constants.items():
        g.WAVE_SLOTS[tile] = per_sm * MIN_BLOCKS
        g.WAVE_US_PER_K[tile] = us_per_k


def main(argv=None) -> int:
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.dry_run:
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    plan = Plan(os.path.join(args.out, "plan.json"), args.deadline,
                info={"argv": sys.argv if argv is None else argv, "dry_run": args.dry_run})
    plan.result["child_shim"] = child_shim()
    if args.waves:
        set_wave_constants(args.waves)
        plan.result["waves"] = {str(t): list(c) for t, c in args.waves.items()}
    with contextlib.suppress(Exception):
        import torch

        plan.result.update(torch=torch.__version__, device=(
            "cpu + CUDA simulator" if args.dry_run else torch.cuda.get_device_name()))
    plan.run(PARTS, Context(args, plan), tuple(filter(None, args.only.split(","))))
    summary = {name: part.get("status", part.get("skipped"))
               for name, part in plan.result["parts"].items()}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
