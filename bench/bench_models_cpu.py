"""Real models on the CPU: ``wb.compile`` against torch eager, Inductor and onnxruntime.

Every zoo model (``tests/graph/zoo_models.py``: torchvision resnet18, mobilenet_v2,
efficientnet_b0, a ViT; transformers GPT-2, BERT, Llama) at bench sizes, batch 1 and 16
(vision 224x224; text 128 tokens, small configs: width 256, 4 layers, 4 heads), 2 threads
everywhere (torch, Numba, onnxruntime's intra-op pool). Per model and batch:

- torch eager under ``torch.no_grad``; ``torch.compile`` (Inductor); onnxruntime's CPU
  provider on the ONNX export (``torch.onnx.export``, TorchScript exporter); ``wb.compile``
  (default schedules), its output checked against eager first (max relative error);
- interleaved rounds (``benchlib.interleaved_rounds``), medians of the per-round medians;
- the compile times (wb: first ``wb.compile`` of that model in this process, with the
  kernel cache of the run; Inductor: its first call);
- where wb's time goes: the three slowest kernels of ``latency_report``.

``--compile``: cold and warm ``wb.compile`` of resnet18 (batch 1) in fresh processes, cold
with an empty kernel cache folder, warm with the one the cold run filled.

Run: ``.venv/bin/python bench/bench_models_cpu.py [--models resnet18,gpt2] [--batches 1,16]
[--compile]`` (``--quick``: batch 1, 2 rounds, prints only).
"""

from __future__ import annotations

import os

# Before torch, Numba and onnxruntime start their thread pools (see bench_graph_models.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")
THREADS = 2

import io  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

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

import workbench as wb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "graph"))
VISION = ("resnet18", "mobilenet_v2", "efficientnet_b0", "vit")
TEXT = ("gpt2", "bert", "llama")


def vision_model(name: str):
    from zoo_models import import_torchvision, randomize_bn

    models = import_torchvision()
    if models is None:
        raise RuntimeError("torchvision is not installed")
    torch.manual_seed(0)
    if name == "vit":  # ViT-Tiny's shape (timm vit_tiny_patch16_224) through torchvision
        net = models.VisionTransformer(image_size=224, patch_size=16, num_layers=12,
                                       num_heads=3, hidden_dim=192, mlp_dim=768)
    else:
        net = getattr(models, name)()
    return randomize_bn(net)


def text_model(name: str):
    from zoo_models import import_transformers  # torchvision made importable first

    tf = import_transformers()
    if tf is None:
        raise RuntimeError("transformers is not installed")

    torch.manual_seed(0)
    small = dict(vocab_size=2048, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                 intermediate_size=1024, max_position_embeddings=128)
    if name == "gpt2":
        net = tf.GPT2Model(tf.GPT2Config(vocab_size=2048, n_embd=256, n_layer=4, n_head=4,
                                         n_positions=128))
    elif name == "bert":
        net = tf.BertModel(tf.BertConfig(**small), add_pooling_layer=False)
    else:
        net = tf.LlamaModel(tf.LlamaConfig(**small, num_key_value_heads=2))
    net.config.use_cache = False
    net.config.return_dict = False
    return net.eval()


def model_and_input(name: str, batch: int):
    if name in VISION:
        return vision_model(name), torch.randn(batch, 3, 224, 224)
    return text_model(name), torch.randint(0, 2048, (batch, 128))


def first(output):
    while isinstance(output, tuple | list):
        output = output[0]
    if isinstance(output, dict):
        output = next(iter(output.values()))
    return output.detach().numpy() if hasattr(output, "detach") else np.asarray(output)


def onnx_session(model, x, dynamo: bool = False):
    """onnxruntime's CPU provider on the export of ``model``: the TorchScript exporter for the
    vision models, the dynamo one (onnxscript) for transformers, where the TorchScript one
    fails (docs/decisions.md, "the ONNX route for transformers")."""
    import onnxruntime as ort

    buffer = io.BytesIO()
    if dynamo:
        program = torch.onnx.export(model, (x,), dynamo=True, verbose=False)
        program.save(buffer)
    else:
        torch.onnx.export(model, (x,), buffer, dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = THREADS, 1
    session = ort.InferenceSession(buffer.getvalue(), options,
                                   providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    feed = {name: x.numpy()}
    return lambda: session.run(None, feed)


def bench_model(name: str, batch: int, rounds: int, calls: int, log) -> dict:
    row = {"model": name, "batch": batch}
    model, x = model_and_input(name, batch)
    with torch.no_grad():
        want = first(model(x))

    def eager():
        with torch.no_grad():
            return model(x)

    candidates = {"eager": lambda: time_calls(eager, (), calls)}
    try:
        start = time.perf_counter()
        compiled = wb.compile(model, (x,))
        row["wb compile s"] = time.perf_counter() - start
        got = first(compiled(x))
        row["max rel err"] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        candidates["wb"] = lambda: time_calls(compiled, (x,), calls)
    except Exception as error:  # noqa: BLE001 -- reported in the table
        row["wb"] = f"fails: {type(error).__name__}: {str(error).splitlines()[0][:120]}"
        compiled = None
    try:
        inductor = torch.compile(model)
        start = time.perf_counter()
        with torch.no_grad():
            inductor(x)
        row["inductor compile s"] = time.perf_counter() - start

        def run_inductor():
            with torch.no_grad():
                return inductor(x)

        candidates["inductor"] = lambda: time_calls(run_inductor, (), calls)
    except Exception as error:  # noqa: BLE001
        row["inductor"] = f"fails: {type(error).__name__}"
    try:
        ort_run = onnx_session(model, x, dynamo=name in TEXT)
        candidates["onnxruntime"] = lambda: time_calls(ort_run, (), calls)
    except Exception as error:  # noqa: BLE001
        row["onnxruntime"] = f"fails: {type(error).__name__}"
    result = interleaved_rounds(candidates, rounds, log)
    for key, times in result.medians.items():
        row[key] = median(times)
    if "wb" in result.medians:
        for other in ("eager", "inductor", "onnxruntime"):
            if other in result.medians:
                row[f"vs {other}"] = median(ratios(result.medians[other], result.medians["wb"]))
        report = compiled.latency_report(x, repeat=3)
        top = report.sort_values("median_us", ascending=False).head(3)
        row["slowest kernels"] = ", ".join(
            f"{r.pattern} {r.median_us / 1e3:.1f} ms ({r.share:.0%})" for r in top.itertuples())
    return row


def compile_times(log) -> list[str]:
    """Cold and warm ``wb.compile`` of resnet18 (batch 1), each in a fresh process."""
    code = ("import time, torch, sys; sys.path.insert(0, {bench!r}); import bench_models_cpu "
            "as b; import workbench as wb; m, x = b.model_and_input('resnet18', 1); "
            "t = time.perf_counter(); c = wb.compile(m, (x,), progress=False); "
            "print(f'{time.perf_counter() - t:.1f} s,', c.build_stats)")
    code = code.replace("{bench!r}", repr(str(ROOT / "bench")))
    lines = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "WORKBENCH_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        for label in ("cold", "warm"):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=False)
            text = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else \
                "fails: " + (out.stderr.strip().splitlines() or ["?"])[-1]
            log(f"  resnet18 {label} compile: {text}")
            lines.append(f"- resnet18 batch 1, {label} `wb.compile` (fresh process, "
                         f"{'empty' if label == 'cold' else 'filled'} kernel cache): "
                         f"{text}")
    return lines


def fmt(value, key: str = "") -> str:
    if key == "max rel err" and isinstance(value, float):
        return f"{value:.1e}"
    if key.endswith("compile s") and isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, float):
        return f"{value * 1e3:.1f}" if value < 10 else f"{value:.1f}"
    return str(value)


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(VISION + TEXT))
    p.add_argument("--batches", default="1,16")
    p.add_argument("--compile", action="store_true", help="cold/warm compile of resnet18")
    args = p.parse_args()
    torch.set_num_threads(THREADS)
    batches = [1] if args.quick else [int(b) for b in args.batches.split(",")]
    rounds = args.rounds or (2 if args.quick else 5)
    rows = []
    for name in args.models.split(","):
        for batch in batches:
            print(f"{name} batch {batch} (load {load_average()})", flush=True)
            try:
                rows.append(bench_model(name, batch, rounds, 3, print))
            except Exception as error:  # noqa: BLE001 -- a model that does not even import
                rows.append({"model": name, "batch": batch,
                             "wb": f"fails: {type(error).__name__}: {error}"[:160]})
            print(rows[-1], flush=True)
    header = ["model", "batch", "eager", "inductor", "onnxruntime", "wb", "vs eager",
              "vs inductor", "vs onnxruntime", "max rel err", "wb compile s",
              "inductor compile s", "slowest kernels"]
    table = markdown_table(header, [[fmt(r.get(h, ""), h) if not h.startswith("vs") or
                                     h not in r else f"{r[h]:.2f}x" for h in header]
                                    for r in rows])
    lines = ["## Real models on the CPU: wb.compile vs eager, Inductor, onnxruntime", "",
             f"Command: `{command_line()}`", "", *machine_lines(),
             f"- load average at the end: {load_average()}", "",
             "Times in ms (medians of per-round medians); `vs X` = X time / wb time (>1: wb "
             "faster); compile times in s.", "", table, ""]
    if args.compile:
        lines += compile_times(print)
    body = "\n".join(lines)
    print(body)
    if not (args.quick or args.no_write):
        write_section("bench_models_cpu", body)


if __name__ == "__main__":
    main()
