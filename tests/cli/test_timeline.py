"""`gpucost-lab analyze` and `gpucost-lab simulate` (gpucost_lab.cli.timeline) from the command line: the analysis
against HolisticTraceAnalysis's figures and by hand, and bad input in one line with exit status 2.
"""

import gzip
import json

import pytest
import torch

from gpucost_lab.cli.main import main
from gpucost_lab.measure.profiling import profile_window
from gpucost_lab.timeline import example_trace

from .helpers import assert_one_line_naming

FIXTURES = example_trace("a100_alexnet_train").parent
ANALYZE_KEYS = {
    "device",
    "span_ms",
    "busy_ms",
    "idle_ms",
    "gaps",
    "sync_points",
    "memcpy",
    "top_ops",
    "peak_memory_bytes",
    "phases",
    "steps",
}


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def analyze_json(capsys, path, *extra):
    code, out, err = run(capsys, "analyze", str(path), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_analyze_gpu_fixture_matches_the_reference_tool(capsys):
    # HolisticTraceAnalysis 0.6.1 temporal breakdown of this trace (see tests/timeline/hta_figures.py):
    # idle 321,378 us, compute 106,252 us + non-compute 172,428 us = 278,680 us busy
    out = analyze_json(capsys, FIXTURES / "sampled_rank0_gpu.json.gz", "--top", "5")
    assert set(out) >= ANALYZE_KEYS
    assert out["device"] == "cuda"
    assert out["busy_ms"] == pytest.approx(278.680, rel=0.01)
    assert out["idle_ms"] == pytest.approx(321.378, rel=0.01)
    assert len(out["gaps"]) == 5
    widths = [g["duration_ms"] for g in out["gaps"]]
    assert widths == sorted(widths, reverse=True)
    assert set(out["gaps"][0]) == {"start_ms", "duration_ms", "before", "after"}


def test_analyze_cpu_fixture(capsys):
    out = analyze_json(capsys, FIXTURES / "cpu_only_small.json.gz")
    assert out["device"] == "cpu" and out["memcpy"] == []


def test_analyze_fresh_cpu_trace_counts_item_calls_as_sync_points(capsys, tmp_path):
    x = torch.randn(64)

    def step():
        for _ in range(2):
            x.sum().item()  # 2 sync points per step

    path = tmp_path / "items.json.gz"
    profile_window(step, wait=0, warmup=1, active=3, trace_path=path)
    out = analyze_json(capsys, path)
    assert out["device"] == "cpu"
    assert len(out["sync_points"]) == 2 * 3
    assert out["steps"] == 3
    assert all(set(p) == {"name", "ts_ms", "duration_ms"} for p in out["sync_points"])


def test_simulate_is_deterministic_and_knobs_override_the_scenario(capsys, tmp_path):
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    for path in (a, b):
        code, out, err = run(
            capsys, "simulate", "--scenario", "dataloader_stall", "--steps", "5", "-o", str(path), "--json"
        )
        assert code == 0, err
    assert a.read_bytes() == b.read_bytes()
    written = json.loads(out)
    assert written["config"]["num_workers"] == 0 and written["config"]["steps"] == 5
    assert analyze_json(capsys, b)["steps"] == 5


def test_simulated_fix_shows_in_the_analysis(capsys, tmp_path):
    stall, fixed = tmp_path / "stall.json", tmp_path / "fixed.json"
    run(capsys, "simulate", "--scenario", "dataloader_stall", "-o", str(stall))
    run(capsys, "simulate", "--scenario", "dataloader_stall", "--num-workers", "4", "-o", str(fixed))
    before, after = analyze_json(capsys, stall), analyze_json(capsys, fixed)
    assert after["busy_ms"] / after["span_ms"] > before["busy_ms"] / before["span_ms"]
    assert (after["gaps"][0]["duration_ms"] if after["gaps"] else 0) < before["gaps"][0]["duration_ms"]


def _truncated(tmp_path):
    full = gzip.compress(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]}).encode())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(full[: len(full) // 2])
    return p


@pytest.mark.parametrize(
    "make",
    [
        lambda d: d,  # a directory
        lambda d: d / "missing.json",
        _truncated,
        lambda d: (d / "empty.json").write_text('{"traceEvents": []}') and d / "empty.json",
        lambda d: (d / "bad.json").write_text('{"traceEvents": [{"ph": "X",') and d / "bad.json",
    ],
)
def test_bad_trace_is_one_line_naming_the_file(capsys, tmp_path, make):
    path = make(tmp_path)
    code, out, err = run(capsys, "analyze", str(path), "--json")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err


def test_bad_simulate_knob_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "simulate", "--batch-size", "0", "-o", str(tmp_path / "x.json"))
    assert code == 2 and "--batch-size" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()  # nothing half-written


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["simulate", "-o", "."], "--output"),  # a folder
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, flag):
    assert_one_line_naming(capsys, argv, flag)
