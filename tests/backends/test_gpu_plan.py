"""``bench/gpu/gpu_plan.py``, the next GPU session's measurement plan (issue 20): its logic
without a GPU -- arguments, parts run in order under a deadline (skipped with the reason
once too little is left), an error in one part written to the JSON while the next parts
still run, the JSON rewritten after every part (what ran survives a kill), the pytest log
counted even when the run was cut short. ``WB_GPU_PLAN_DRY=1`` adds the ``--dry-run`` of
the sgemm and rows parts on the simulator (kernels built and checked)."""

from __future__ import annotations

import json
import os
import sys

import pytest
from bench_scripts import bench_module


@pytest.fixture(scope="module")
def plan_module():
    with bench_module("gpu_plan") as module:
        yield module


class Clock:
    """A fake clock: every part advances it by what it says it took."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_parts_run_in_order_skip_past_the_deadline_and_keep_errors(plan_module, tmp_path):
    clock, seen = Clock(), []
    path = tmp_path / "plan.json"

    def step(name, seconds, fail=False):
        def run(ctx, entry):
            seen.append(name)
            # the JSON on disk already says this part is running (a kill leaves that)
            assert json.loads(path.read_text())["parts"][name]["status"] == "running"
            clock.now += seconds
            entry["rows"] = {"a": 1}
            if fail:
                raise RuntimeError("no device")
        return run

    parts = [plan_module.Part("tests", step("tests", 50), 30),
             plan_module.Part("sgemm", step("sgemm", 10, fail=True), 20),
             plan_module.Part("rows", step("rows", 30), 20),
             plan_module.Part("models", step("models", 1), 20),
             plan_module.Part("tune", step("tune", 1), 5)]
    plan = plan_module.Plan(str(path), 100.0, clock=clock)
    result = plan.run(parts, ctx=None)
    assert seen == ["tests", "sgemm", "rows", "tune"]
    parts_out = json.loads(path.read_text())["parts"]
    assert parts_out == result["parts"]
    assert parts_out["tests"]["status"] == "done" and parts_out["tests"]["wall_s"] == 50
    assert parts_out["sgemm"]["status"] == "error"
    assert parts_out["sgemm"]["error"] == "RuntimeError: no device"
    assert parts_out["sgemm"]["rows"] == {"a": 1}  # what it measured before failing
    assert parts_out["models"] == {"skipped": "deadline: 10 s left, the part needs 20 s"}
    assert parts_out["tune"]["status"] == "done"
    assert not os.path.exists(str(path) + ".tmp")


def test_only_runs_the_parts_named(plan_module, tmp_path):
    seen = []
    parts = [plan_module.Part(n, lambda ctx, entry, n=n: seen.append(n), 1)
             for n in ("tests", "sgemm", "rows")]
    plan = plan_module.Plan(str(tmp_path / "p.json"), 50.0)
    result = plan.run(parts, ctx=None, only=("sgemm",))
    assert seen == ["sgemm"]
    assert result["parts"]["tests"] == {"skipped": "not in --only"}


def test_arguments(plan_module):
    args = plan_module.parse_args(["--deadline", "300", "--only", "tests,models", "--dry-run"])
    assert (args.deadline, args.only, args.dry_run) == (300.0, "tests,models", True)
    assert args.tests.split()[-1] == "tests" and args.tests_s > 0 and args.trials > 0
    with pytest.raises(SystemExit):
        plan_module.parse_args(["--only", "sgem"])
    with pytest.raises(SystemExit):
        plan_module.parse_args(["--deadline", "0"])
    assert args.conv_variants == ["im2col v4", "im2col planes"]
    assert (args.sweep_tiles, args.sweep_splits) == ((64, 128), (1, 2, 3, 4, 6, 8))
    chosen = plan_module.parse_args(["--conv-variants", "conv recipes", "--sweep",
                                     "64,576,50176;8,16,24", "--sweep-tiles", "32",
                                     "--convgemm", "resnet18 b16", "--models", "resnet18 b1,block d16 b2"])
    assert chosen.conv_variants == ["conv recipes"] and chosen.sweep_tiles == (32,)
    sizes = plan_module.Context(chosen, plan_module.Plan("unused.json", 1.0)).sizes
    assert sizes["convgemm"] == ["resnet18 b16"] and sizes["models"] == ["resnet18 b1", "block d16 b2"]
    assert sizes["sweep"] == [(64, 576, 50176), (8, 16, 24)]
    for bad in (["--conv-variants", "im2col v5"], ["--sweep-tiles", "48"],
                ["--sweep-splits", "two"], ["--sweep", "64,576"],
                ["--models", "resnet18 b16,mobilenet b16"], ["--convgemm", "resnet18"]):
        with pytest.raises(SystemExit):
            plan_module.parse_args(bad)
    assert [p.name for p in plan_module.PARTS] == ["tests", "attn", "conv2", "sgemm", "linear", "policy", "sweep", "convgemm",
                                                   "rows", "reduce", "models", "launch", "tune", "fold"]
    assert set(plan_module.SIZES["gpu"]) == set(plan_module.SIZES["dry"])
    command = plan_module.tests_command(args)
    assert command[1:4] == ["-m", "pytest", "-v"] and command[-1] == "tests"
    assert "cuda" in command and "--continue-on-collection-errors" in command


def test_a_cut_pytest_log_is_still_counted(plan_module):
    log = ("tests/a.py::test_one PASSED  [ 10%]\n"
           "tests/a.py::test_two[x-1] FAILED  [ 20%]\n"
           "tests/b.py::test_three SKIPPED (simulator only)  [ 30%]\n")
    counts = plan_module.count_tests(log)
    assert (counts["passed"], counts["failed"], counts["skipped"]) == (1, 1, 1)
    assert counts["failed_tests"] == ["tests/a.py::test_two[x-1]"]
    assert counts["summary"].startswith("cut short")
    done = log + "=========== 1 failed, 1 passed, 1 skipped in 12.50s ===========\n"
    assert plan_module.count_tests(done)["summary"] == "1 failed, 1 passed, 1 skipped in 12.50s"
    assert plan_module.count_tests("a\n3 tests collected in 0.51s\n")["summary"] == \
        "3 tests collected in 0.51s"  # the dry run's --collect-only -q


@pytest.mark.cuda
@pytest.mark.skipif(os.environ.get("WB_GPU_PLAN_DRY") != "1",
                    reason="WB_GPU_PLAN_DRY=1 runs the dry run's kernels on the simulator")
def test_the_dry_run_builds_and_checks_kernels(plan_module, tmp_path):
    assert plan_module.main(["--dry-run", "--out", str(tmp_path), "--only", "sgemm,rows"]) == 0
    parts = json.loads((tmp_path / "plan.json").read_text())["parts"]
    for name in ("sgemm", "rows"):
        assert parts[name]["status"] == "done", parts[name]
        rows = parts[name]["rows"]
        assert rows and all(r.get("rel_err", 1) < 1e-5 for r in rows.values()), rows


class _Args:
    dry_run, out, sgemm_variants = True, ".", ()


def _dry_context(plan_module, tmp_path, sizes: dict):
    plan = plan_module.Plan(str(tmp_path / "plan.json"), 100.0)
    ctx = plan_module.Context(_Args(), plan)
    ctx.sizes = {**ctx.sizes, **sizes}
    return plan, ctx


def test_a_row_whose_torch_side_fails_is_an_error_row_and_the_part_goes_on(plan_module,
                                                                             tmp_path):
    """The torch reference or timing of one size failing (out of memory on the GPU) is
    that row's error, written to the JSON; the part goes on with its next rows."""
    plan, ctx = _dry_context(plan_module, tmp_path, {"sgemm": [(7, 1, 1), (2, 3, 2)],
                                                     "rows": [(7, 1)]})
    randn = ctx.randn

    def randn_or_oom(*shape):
        if 7 in shape:
            raise RuntimeError("CUDA out of memory")
        return randn(*shape)

    ctx.randn = randn_or_oom
    for name, part in (("sgemm", plan_module.part_sgemm), ("rows", plan_module.part_rows)):
        part(ctx, plan.result["parts"].setdefault(name, {}))
    parts = json.loads((tmp_path / "plan.json").read_text())["parts"]
    oom = {"error": "RuntimeError: CUDA out of memory"}
    assert parts["sgemm"]["rows"]["7x1x1"] == oom
    assert parts["rows"]["rows"] == {"softmax 7x1": oom, "layernorm 7x1": oom}
    done = [r for n, r in parts["sgemm"]["rows"].items() if n.startswith("2x3x2")]
    assert len(done) == 2 and all(r["rel_err"] < 1e-5 for r in done), done


def test_a_model_row_keeps_what_it_measured_before_failing(plan_module, tmp_path, monkeypatch):
    plan, ctx = _dry_context(plan_module, tmp_path, {"models": ["block d16 b1"]})
    entry = plan.result["parts"].setdefault("models", {})

    def run_model(ctx, name, row, layout=True):
        row["torch eager"] = {"device_ms": 1.0}
        raise RuntimeError("no kernel image is available for execution on the device")

    monkeypatch.setattr(plan_module, "run_model", run_model)
    plan_module.part_models(ctx, entry)
    row = json.loads((tmp_path / "plan.json").read_text())["parts"]["models"]["rows"][
        "block d16 b1"]
    assert row["torch eager"] == {"device_ms": 1.0}
    assert row["error"].startswith("RuntimeError: no kernel image")
    plan_module.part_fold(ctx, entry)
    (row,) = entry["rows"].values()
    assert row["torch eager"] == {"device_ms": 1.0} and "error" in row


def test_child_processes_get_the_numpy_shim(plan_module, monkeypatch):
    """The tuner's workers and the pytest run are new Python processes: they import
    numba-cuda on the GPU machine's numpy 2.5 only with ``np.row_stack`` back."""
    import subprocess

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    shim = plan_module.child_shim()
    assert sys.path[0] == shim and os.environ["PYTHONPATH"].split(os.pathsep)[0] == shim
    code = ("import numpy as np, sys; np.row_stack; "
            "print('sitecustomize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout
    assert out.strip() == "True"


FAKE_BENCH = """import json, sys, time
args = sys.argv[1:]
out = args[args.index("--out") + 1]
json.dump({"rows": {"a": {"ms": 1.5}}, "deadline": float(args[args.index("--deadline") + 1]),
           "dry": "--dry-run" in args}, open(out, "w"))
print("row a done", flush=True)
time.sleep(float(args[args.index("--sleep") + 1]))
"""


def test_a_bench_script_part_keeps_its_json_and_log_even_when_cut(plan_module, tmp_path,
                                                                 monkeypatch):
    (tmp_path / "fake_bench.py").write_text(FAKE_BENCH)
    monkeypatch.setattr(plan_module, "HERE", str(tmp_path))
    plan, ctx = _dry_context(plan_module, tmp_path, {})
    ctx.args.out = str(tmp_path)
    path = str(tmp_path / "fake.json")
    entry = {"name": "fake"}
    plan_module.run_script(ctx, entry, "fake_bench.py", ["--out", path, "--sleep", "0"], 60.0,
                           path)
    assert entry["returncode"] == 0 and "row a done" in entry["tail"]
    assert entry["result"]["rows"] == {"a": {"ms": 1.5}} and entry["result"]["dry"] is True
    assert entry["result"]["deadline"] == entry["budget_s"] - 15  # the child's own deadline
    assert (tmp_path / "plan_fake.log").exists()
    cut = {"name": "cut"}
    plan_module.run_script(ctx, cut, "fake_bench.py", ["--out", path, "--sleep", "30"], 20.0,
                           path)
    assert cut["returncode"] == "timeout" and cut["result"]["rows"] == {"a": {"ms": 1.5}}


@pytest.mark.cuda
def test_part_reduce_times_the_rule_and_the_baseline_on_the_same_model(plan_module, tmp_path):
    """Part ``reduce`` (dry, simulator): a row statistic compiled with the warp-per-row rule
    and without it, both checked against eager, the rule restored afterwards; the whole
    RMSNorm once (one ``rms_norm`` kernel)."""
    from workbench.recipes import graph_cuda_ops

    rules = graph_cuda_ops.RULES
    plan, ctx = _dry_context(plan_module, tmp_path, {"reduce": [("inverse_rms", (1, 5, 40)),
                                                                ("rmsnorm", (1, 5, 40))]})
    plan_module.part_reduce(ctx, plan.result["parts"].setdefault("reduce", {}))
    assert graph_cuda_ops.RULES is rules
    rows = json.loads((tmp_path / "plan.json").read_text())["parts"]["reduce"]["rows"]
    row = rows["inverse_rms 1x5x40"]
    assert row["default"]["rel_err"] < 1e-5 and row["baseline"]["rel_err"] < 1e-5, row
    kernels = {label: {k["pattern"] for k in row[label]["kernels_by_time"]}
               for label in ("default", "baseline")}
    assert kernels["default"] == kernels["baseline"] and "mean+add+rsqrt" in kernels["default"]
    norm = rows["rmsnorm 1x5x40"]
    assert "baseline" not in norm and norm["default"]["rel_err"] < 1e-5
    assert [k["pattern"] for k in norm["default"]["kernels_by_time"]] == ["rms_norm"]


def test_a_model_name_is_one_make_model_builds(plan_module):
    """A misspelt model is refused by name (it once fell through to GPT-2)."""
    assert plan_module.parse_args(["--models", "mobilenet_v2 b16,block d768 b1"]).models
    with pytest.raises(ValueError, match="no model 'mobilenet b16'"):
        plan_module.make_model("mobilenet b16")
    model, x = plan_module.make_model("convnet b2")
    assert tuple(x.shape) == (2, 3, 7, 9) and model(x).shape[0] == 2

