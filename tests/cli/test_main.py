"""The command line: JSON keys and values from the course text, and one-line errors with exit 2."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpucost_lab.cli.main import main

SCRIPT = Path(sys.executable).with_name("gpucost-lab")


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def test_ledger_course_example(capsys):
    out = run_json(capsys, "ledger", "--microbatch", "32")
    assert set(out) >= {"budget_gb", "peak_gb", "fits", "headroom_gb", "max_microbatch", "blocks"}
    assert out["budget_gb"] == pytest.approx(21.6)
    assert out["peak_gb"] == pytest.approx(14.08)
    assert out["headroom_gb"] == pytest.approx(7.52)
    assert out["fits"] is True and out["max_microbatch"] == 54
    assert [b["block"] for b in out["blocks"]] == list(range(1, 11))
    assert [b["activations_gb"] for b in out["blocks"]] == pytest.approx([1.088 * k for k in range(1, 11)])
    assert set(out["blocks"][0]) == {"block", "activations_gb", "total_gb", "state"}


def test_ledger_over_budget(capsys):
    out = run_json(capsys, "ledger", "--microbatch", "60", "--device-gb", "24", "--reserve", "0.1")
    assert out["fits"] is False
    assert out["peak_gb"] == pytest.approx(3.2 + 0.34 * 60)
    assert out["blocks"][-1]["state"] == "over budget"


def test_ledger_human_output_names_the_verdict(capsys):
    assert main(["ledger", "--microbatch", "55"]) == 0
    assert "does NOT fit" in capsys.readouterr().out


def test_predict_course_question(capsys):
    out = run_json(capsys, "predict", "--throughput-gain", "0.20", "--steps-change", "0.25")
    assert out["relative_cost"] == pytest.approx(1.25 / 1.20)
    assert out["verdict"] == "more expensive"
    priced = run_json(
        capsys,
        "predict",
        "--throughput-gain",
        "0.20",
        "--steps-change",
        "0.25",
        "--price-per-hour",
        "2.10",
        "--baseline-hours",
        "8",
        "--window-hours",
        "8",
    )
    assert priced["baseline_cost_usd"] == pytest.approx(16.80)
    assert priced["candidate_cost_usd"] == pytest.approx(17.50)
    assert priced["candidate_fits_window"] is False


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["ledger", "--microbatch", "0"], "--microbatch"),
        (["ledger", "--microbatch", "8", "--reserve", "1"], "--reserve"),
        (["ledger", "--microbatch", "8", "--device-gb", "-24"], "--device-gb"),
        (["ledger", "--microbatch", "8", "--static-gb", "nan"], "--static-gb"),
        (["ledger", "--microbatch", "eight"], "--microbatch"),
        (["predict", "--throughput-gain", "inf", "--steps-change", "0.1"], "--throughput-gain"),
        (["predict", "--throughput-gain", "0.2", "--steps-change", "0.1", "--price-per-hour", "0"], "--price-per-hour"),
        (["predict", "--throughput-gain", "0.2", "--steps-change", "-1"], "--steps-change"),
        (["profile-to-cost", "--device", "tpu"], "--device"),
        (["profile-to-cost", "--price-per-hour", "-2"], "--price-per-hour"),
        (["profile-to-cost", "--repeats", "1"], "--repeats"),
        (["ledger"], "--microbatch"),
        (["ledger", "--microbatch", "8", "--device-gb", "1e308"], "--device-gb"),  # the largest microbatch overflows
        (["ledger", "--microbatch", "8", "--blocks", "10000000"], "--blocks"),  # at most 1,000 rows
        (
            [
                "predict",
                "--throughput-gain",
                "0.2",
                "--steps-change",
                "0.1",
                "--price-per-hour",
                "1e308",
                "--baseline-hours",
                "10",
                "--json",
            ],
            "--price-per-hour",
        ),  # the cost overflows
        (["simulate", "-o", "."], "--output"),  # a folder
        (["plan", "--report", "."], "--report"),  # a folder, refused before the plan runs
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, flag):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors (missing or unparsable flags) exit directly
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in captured.err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_cuda_on_a_cpu_only_machine_is_refused_cleanly():
    proc = subprocess.run(
        [str(SCRIPT), "profile-to-cost", "--device", "cuda", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "CUDA is not available" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_console_script_profile_to_cost_json():
    proc = subprocess.run(
        [str(SCRIPT), "profile-to-cost", "--device", "cpu", "--repeats", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    c = out["contract"]
    assert c["model_name"] == "Linear(1024, 1024)" and c["parameter_count"] == 1024 * 1024 + 1024
    assert c["input_shapes"] == [[256, 1024]] and c["units_per_step"] == 256
    assert (c["warmup_steps"], c["measured_steps"], c["repeats"]) == (5, 20, 3)
    assert c["device"] == "cpu" and c["dtype"] == "float32"
    assert out["price_per_hour_usd"] == 2.10
    sps, cps = out["samples_per_second"], out["cost_per_sample_usd"]
    assert sps["ci95_low"] <= sps["geomean"] <= sps["ci95_high"]
    assert cps["ci95_low"] <= cps["geomean"] <= cps["ci95_high"]
    # each repeat is 20 steps x 256 samples; the figures are geometric means over the repeats, so the cost per
    # sample is the price per second over the samples per second
    geomean_s = math.prod(out["repeat_times_s"]) ** (1 / 3)
    assert sps["geomean"] == pytest.approx(20 * 256 / geomean_s)
    assert cps["geomean"] == pytest.approx(2.10 / 3600 / sps["geomean"])
    # forward + weight-gradient matmuls: 2 x (2 x 256 x 1024 x 1024)
    assert out["flops_per_step"] == 2 * 2 * 256 * 1024 * 1024
    # resident: weight + bias (4,198,400 B) and input + target (2 x 1,048,576 B), plus the step's own allocations
    assert out["peak_memory_bytes"] > 4_198_400 + 2 * 1_048_576 + 4_194_304  # + at least a weight gradient
    names = [op["name"] for op in out["top_ops"]]
    assert {"aten::mm", "aten::addmm"} & set(names)
    assert all(set(op) == {"name", "calls", "self_time_s", "total_time_s", "self_time_share"} for op in out["top_ops"])
    assert math.isfinite(sps["geomean"]) and sps["geomean"] > 0


def test_python_dash_m_runs_the_cli():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpucost_lab",
            "predict",
            "--throughput-gain",
            "0.25",
            "--steps-change",
            "0.2",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert json.loads(proc.stdout)["verdict"] == "cheaper"


# ----------------------------------------------------------------------------------------------- InputError -> flag
def cli_error(capsys, *argv):
    """The one stderr line of a refused command (exit status 2, nothing on stdout)."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1, captured
    return captured.err


@pytest.mark.parametrize(
    "argv, line",
    [
        # plan_fixes checks the price (gpucost_lab.memory.fixes), two calls below the command
        (
            ["fix-oom", "--global-batch", "60", "--price-per-hour", "0"],
            "gpucost-lab fix-oom: error: --price-per-hour must be > 0, got 0.0\n",
        ),
        # MemoryLedger checks the share selective recomputation saves, under the flag's own name
        (
            ["ledger", "--microbatch", "8", "--selective-saving", "1"],
            "gpucost-lab ledger: error: --selective-saving must be in [0, 1), got 1.0\n",
        ),
        (
            ["ledger", "--microbatch", "8", "--reserve", "-0.5"],
            "gpucost-lab ledger: error: --reserve must be in [0, 1), got -0.5\n",
        ),
    ],
)
def test_an_input_error_deep_inside_names_the_flag_typed(capsys, argv, line):
    assert cli_error(capsys, *argv) == line


def test_the_flag_comes_from_the_error_field_not_from_its_wording(capsys, monkeypatch):
    from gpucost_lab import InputError, cost

    def refuse(*args, **kwargs):
        raise InputError("price_per_hour_usd", "the price must be > 0 with baseline_hours=8.0, got -1.0")

    monkeypatch.setattr(cost, "predict", refuse)
    err = cli_error(capsys, "predict", "--throughput-gain", "0.2", "--steps-change", "0.25")
    assert err == (
        "gpucost-lab predict: error: --price-per-hour: the price must be > 0 with --baseline-hours=8.0, got -1.0\n"
    )


def test_a_plain_value_error_still_names_its_first_word_as_the_flag(capsys, monkeypatch):
    from gpucost_lab import cost

    def refuse(*args, **kwargs):
        raise ValueError("window_hours must be > 0, got 0.0")

    monkeypatch.setattr(cost, "predict", refuse)
    err = cli_error(capsys, "predict", "--throughput-gain", "0.2", "--steps-change", "0.25")
    assert err == "gpucost-lab predict: error: --window-hours must be > 0, got 0.0\n"
