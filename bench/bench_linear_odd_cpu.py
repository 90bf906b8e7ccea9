"""Linear layers whose widths no register tile divides, on the CPU: ``wb.compile`` of an
``nn.Linear`` (+ GELU) against torch eager (``out=``-free: ``nn.Linear`` has none) and
``torch.compile`` (Inductor), 2 threads.

Shapes (rows x in -> out): a 1000-class head (16 x 512 -> 1000, resnet18's ``fc`` at batch
16), 1000-wide hidden layers at odd row counts (128 x 1000 -> 1000, 7 x 1000 -> 1000), an
MLP's 3000 units (512 x 768 -> 3000 + GELU), 511 rows (511 x 768 -> 768) and a GPT-2-sized
vocabulary (8 x 256 -> 50257). Each model's output is checked against eager first (max
relative error). Interleaved rounds (``benchlib.interleaved_rounds``), medians of the
per-round medians; ``vs X`` is X's time over wb's (> 1: wb faster).

``--small``: weights under a MiB (a transformer's 256-wide projections at 2048 rows, 128 ->
512, 256 -> 768, a 96-wide fused QKV + GELU, the tutorials' 32 -> 128), packed in panels
since 2026-12-08 where ``register_tile`` read them in place before. ``--one-row``: batch 1
(a classifier head, a decoder's token against a 3072-wide MLP, a 2048-wide layer, GPT-2's
vocabulary).

Run: ``.venv/bin/python bench/bench_linear_odd_cpu.py`` (``--quick``: two small shapes, 2
rounds, prints only).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")
THREADS = 2

import numpy as np  # noqa: E402
import torch  # noqa: E402
from benchlib import (  # noqa: E402
    command_line,
    interleaved_rounds,
    load_average,
    machine_lines,
    markdown_table,
    median,
    parser,
    ratios,
    time_calls,
    write_section,
)
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402

SHAPES = ((16, 512, 1000, False), (128, 1000, 1000, False), (7, 1000, 1000, False),
          (512, 768, 3000, True), (511, 768, 768, False), (8, 256, 50257, False))
SMALL = ((2048, 256, 256, False), (512, 128, 512, False), (64, 256, 768, False),
         (128, 96, 288, True), (32, 32, 128, False))
ONE_ROW = ((1, 512, 1000, False), (1, 768, 3072, True), (1, 2048, 2048, False),
           (1, 256, 50257, False))
QUICK = ((16, 64, 1000, False), (7, 100, 100, True))


def bench_shape(rows: int, k: int, n: int, gelu: bool, rounds: int) -> dict:
    torch.manual_seed(0)
    layers = [nn.Linear(k, n)] + ([nn.GELU()] if gelu else [])
    model = nn.Sequential(*layers).eval()
    x = torch.randn(rows, k)
    compiled = wb.compile(model, (x,), target="cpu")
    inductor = torch.compile(model)
    xn = x.numpy()
    with torch.no_grad():
        want = model(x).numpy()
        inductor(x)
    error = float(np.abs(compiled(xn) - want).max() / np.abs(want).max())
    repeats = 5

    def eager():
        with torch.no_grad():
            return time_calls(model, (x,), repeats)

    def compiled_inductor():
        with torch.no_grad():
            return time_calls(inductor, (x,), repeats)

    result = interleaved_rounds({"eager": eager, "inductor": compiled_inductor,
                                 "wb": lambda: time_calls(compiled, (xn,), repeats)}, rounds)
    m = result.medians
    return {"shape": f"{rows} x {k} -> {n}" + (" + GELU" if gelu else ""),
            "eager": median(m["eager"]), "inductor": median(m["inductor"]),
            "wb": median(m["wb"]), "vs eager": median(ratios(m["eager"], m["wb"])),
            "vs inductor": median(ratios(m["inductor"], m["wb"])), "max rel err": error,
            "kernels": " + ".join(k.pattern for k in compiled.kernels)}


def main():
    cli = parser(__doc__.splitlines()[0])
    sets = cli.add_mutually_exclusive_group()
    sets.add_argument("--small", action="store_true", help="weights under a MiB (SMALL)")
    sets.add_argument("--one-row", action="store_true", help="batch 1 (ONE_ROW)")
    args = cli.parse_args()
    torch.set_num_threads(THREADS)
    rounds = args.rounds or (2 if args.quick else 5)
    rows = []
    shapes = QUICK if args.quick else SMALL if args.small else ONE_ROW if args.one_row else SHAPES
    for shape in shapes:
        print(f"{shape} (load {load_average()})", flush=True)
        rows.append(bench_shape(*shape, rounds))
        print(rows[-1], flush=True)
    header = ["shape", "eager", "inductor", "wb", "vs eager", "vs inductor", "max rel err",
              "kernels"]

    def fmt(row, key):
        value = row[key]
        if key.startswith("vs"):
            return f"{value:.2f}x"
        if key == "max rel err":
            return f"{value:.1e}"
        return f"{value * 1e3:.3f}" if isinstance(value, float) else str(value)

    table = markdown_table(header, [[fmt(r, h) for h in header] for r in rows])
    title = ("Linear layers with weights under a MiB" if args.small
             else "Linear layers at batch 1" if args.one_row else "Linear layers of odd widths")
    body = "\n".join([f"## {title} on the CPU: wb.compile vs eager, Inductor",
                      "", f"Command: `{command_line()}`", "", *machine_lines(),
                      f"- load average at the end: {load_average()}", "",
                      "Times in ms (medians of per-round medians).", "", table, ""])
    print(body)
    if not (args.quick or args.no_write):
        suffix = "_small" if args.small else "_one_row" if args.one_row else ""
        write_section("bench_linear_odd_cpu" + suffix, body)


if __name__ == "__main__":
    main()
