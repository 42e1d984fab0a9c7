"""``gpucost-lab profile-to-cost`` as installed, in a fresh process that imports torch and measures: the worked
example's contract and its cost per sample from its own repeat times, and CUDA asked for on a CPU-only machine
refused in one line with exit status 2."""

import json
import math
import subprocess

import pytest
import torch

from .helpers import SCRIPT

pytestmark = pytest.mark.slow


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_cuda_on_a_cpu_only_machine_is_refused_cleanly():
    proc = subprocess.run(
        [str(SCRIPT), "profile-to-cost", "--device", "cuda", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "CUDA is not available" in proc.stderr and "Traceback" not in proc.stderr


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
